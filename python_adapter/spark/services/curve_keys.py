"""Curve keys as Spark expressions: each `cluster_by` column becomes a rank in
[0, 2**bits), the ranks become a Z-order or Hilbert value, all inside the JVM.

Ranks come from one sample of the columns (quantile cut points, computed on the driver)
and a binary search written as `bits` chained projections, so ranking costs no shuffle
and no Python worker. The cut points only steer the layout: a rank that is off by one
moves a row to a neighbouring file, it never changes what is written.
"""
import math
import re
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple, cast

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from python_adapter.core import curves
from python_adapter.core.clustering import Cell, CellTable, Split, cell_table
from python_adapter.errors import ConfigError

SAMPLE_PER_BUCKET = 20      # as Spark's RangePartitioner samples per output partition
KEY = "__sized_curve"
_SEPARATORS = ("\x1f", "\x1e", "\x1d", "\x1c", "\x00")   # rare in text: split on one absent
_RANKABLE = (T.NumericType, T.StringType, T.DateType, T.TimestampType, T.BooleanType)


@dataclass(frozen=True)
class CurveKey:
    """Rows with their place on the curve: `df` holds the bigint column `key` ordering
    rows along it and, per clustering column, its rank column (`ranks`, in [0, 2**bits));
    `sample` is the ranks of the sample the cut points came from (where to cut the rows
    into files), `carried` the values of the `carry` columns of each of its rows."""
    df: DataFrame
    key: str
    ranks: Tuple[str, ...]
    sample: Tuple[Tuple[int, ...], ...]
    bits: int
    carried: Tuple[tuple, ...] = ()


@dataclass(frozen=True)
class Sampling:
    """What with_curve_key samples besides the clustering columns: `carry`, columns whose
    values come back with each sampled row (a group's id, to cut each group apart), and
    `at_least` rows (several groups' files need their share of points each); `rows`, df's
    rows where the caller knows them (else a job counts them); `source`, the same rows as
    df to sample instead of df."""
    carry: Tuple[str, ...] = ()
    at_least: int = 0
    rows: Optional[int] = None    # df's rows when known (the files' recorded counts): no count
    # the rows to sample when not df itself (the same rows, read in fewer, larger tasks)
    source: Optional[DataFrame] = None


def with_curve_key(df: DataFrame, cluster_by: Sequence[str], strategy: str,
                   bits: int, sampling: Sampling = Sampling()) -> CurveKey:
    """df with a Z-order or Hilbert key. Each column gets `curves.key_bits` bits (fewer
    than `bits` past 6 columns), so the value fits a bigint; both curves equal the pure
    functions of `core/curves.py` over the ranks."""
    try:
        bits = curves.key_bits(len(cluster_by), bits)
    except ValueError as e:
        raise ConfigError(f"cluster_by: {e}") from None
    ranked, ranks, sample, carried = _with_ranks(df, cluster_by, bits, sampling)
    keyed = ranked.withColumn(KEY, _morton(ranks, bits))
    if strategy != "zorder" and len(ranks) > 1:
        keyed = _with_hilbert(keyed, len(ranks), bits)
    return CurveKey(keyed, KEY, tuple(ranks), sample, bits, carried)


def _with_hilbert(keyed: DataFrame, dims: int, bits: int) -> DataFrame:
    """KEY (a Morton code) turned into the Hilbert index: by state tables where they stay
    small, else level by level in arithmetic."""
    steps = curves.hilbert_table_levels(dims, bits)
    if steps:
        return _hilbert_by_tables(keyed, dims, bits, steps)
    return _hilbert_by_arithmetic(keyed, dims, bits)


def cell_column(cell: Cell, curve: CurveKey) -> Column:
    """The file number core/clustering.cell_of gives each row, from its rank columns: by
    the cells' lookup tables (core/clustering.CellTable) where they fit, else by a CASE
    per split."""
    by_table = group_cell_column([cell], curve)
    return _cell_by_splits(cell, curve.ranks) if by_table is None else by_table


def group_cell_column(cells: Sequence[Cell], curve: CurveKey,
                      group: Optional[str] = None) -> Optional[Column]:
    """The file number of each row of several groups, group i (the int column `group`;
    None: one group) cut by cells[i]: the groups' CellTables stacked into one table per
    lookup and indexed by the group, so the expression is a few array reads however many
    groups there are (a CASE of a branch per group made the stage's generated method too
    long for whole-stage codegen: Spark ran it without, every projection copying whole
    rows). None when a group's cells do not fit a table."""
    tables = [cell_table(c, len(curve.ranks), curve.bits) for c in cells]
    if any(t is None for t in tables):
        return None
    stacked = cast(List[CellTable], tables)

    def of_group(values: Sequence[int]) -> Column:   # values[i]: group i's
        if group is None:
            return F.lit(values[0])
        return _lookup(_literal_array(values, T.IntegerType()), F.col(group).cast("int"))
    index = None
    for d, rank in enumerate(curve.ranks):
        slabs = [s for t in stacked for s in t.slabs[d]]
        at = F.col(rank) if group is None else of_group(
            [i << curve.bits for i in range(len(stacked))]) + F.col(rank)
        term = _lookup(_literal_array(slabs, T.IntegerType()), at) * \
            of_group([math.prod(t.sizes[d + 1:]) for t in stacked])
        index = term if index is None else index + term
    starts = [sum(len(t.files) for t in stacked[:i]) for i in range(len(stacked))]
    files = _literal_array([f for t in stacked for f in t.files], T.IntegerType())
    return _lookup(files, of_group(starts) + cast(Column, index))  # a curve has a rank


def _cell_by_splits(cell: Cell, ranks: Sequence[str]) -> Column:
    if not isinstance(cell, Split):
        return F.lit(cell)
    return F.when(F.col(ranks[cell.dim]) < cell.below, _cell_by_splits(cell.low, ranks)) \
        .otherwise(_cell_by_splits(cell.high, ranks))


def _with_ranks(df: DataFrame, cluster_by: Sequence[str], bits: int, sampling: Sampling):
    """(df with a rank column per clustering column, their names, the sample's ranks, the
    sample's carried values)."""
    buckets = 1 << bits
    types = {f.name.lower(): f.dataType for f in df.schema.fields}
    sample = _sample(df if sampling.source is None else sampling.source,
                     [*cluster_by, *sampling.carry],
                     max(buckets * SAMPLE_PER_BUCKET, sampling.at_least), sampling.rows)
    ranks, sample_ranks = [], []
    for i, col in enumerate(cluster_by):
        if not isinstance(types[col.lower()], _RANKABLE):
            raise ConfigError(f"cluster_by: column {col!r} is {types[col.lower()].simpleString()}; "
                              "curves rank numbers, strings, dates, timestamps and booleans")
        values = sorted((r[i] for r in sample if r[i] is not None), key=_sort_key)
        levels = curves.search_levels(
            curves.quantile_boundaries(values, buckets), bits) if values else []
        df = _with_rank(df, col, (levels, types[col.lower()]), f"__sized_rank{i}")
        ranks.append(f"__sized_rank{i}")
        sample_ranks.append(_ranks_of([r[i] for r in sample], levels))
    carried = tuple(tuple(r[len(cluster_by):]) for r in sample)
    return df, ranks, tuple(zip(*sample_ranks)), carried


def _ranks_of(values: Sequence, levels: Sequence[Sequence]) -> List[int]:
    """curves.rank_of of each value in Spark's order (nulls first: 0; NaN above all)."""
    if not levels:
        return [0] * len(values)
    keyed = [[_sort_key(v) for v in level] for level in levels]
    return [0 if v is None else curves.rank_of(_sort_key(v), keyed) for v in values]


def _sample(df: DataFrame, cols: Sequence[str], size: int, rows: Optional[int]) -> list:
    rows = df.count() if rows is None else rows
    fraction = min(1.0, size / rows) if rows else 1.0
    picked = df.select(*cols)
    if fraction < 1.0:
        picked = picked.sample(fraction=fraction, seed=7)
    return picked.collect()


def _sort_key(v):
    # Spark orders NaN above every other double; Python cannot sort it at all
    return (isinstance(v, float) and math.isnan(v), v)


def _with_rank(df: DataFrame, col: str, search: Tuple[Sequence[Sequence], T.DataType],
               name: str) -> DataFrame:
    """rank = number of cut points below the value (nulls first: 0), one projection per
    level of `search` (curves.search_levels, the column's type); each level's expression
    uses the last one twice, so Spark keeps them apart (CollapseProject does not inline a
    non-trivial expression used twice). The levels are one array, level L from 2**L (after
    a pad at 0), so the rank so far ORed with 2**L is its cut's index. Shifts, ORs and
    `get` have no overflow or bounds errors to generate code for under ANSI mode: whole-stage
    codegen fuses every level of every column into one method, and past 8,000 bytes the JIT
    leaves it interpreted (3x slower)."""
    levels, data_type = search
    df = df.withColumn(name, F.lit(0))
    if not levels:
        return df
    flat = [v for level in levels for v in level]
    cuts = _literal_array(flat[:1] + flat, data_type)
    for depth in range(len(levels)):
        cut = F.get(cuts, F.col(name).bitwiseOR(1 << depth))
        above = F.when(F.col(col) > cut, 1).otherwise(0)   # null > cut is null: 0
        df = df.withColumn(name, F.shiftleft(F.col(name), 1).bitwiseOR(above))
    return df


def _literal_array(values: Sequence, data_type: T.DataType) -> Column:
    """values as an array of the column's type. Where each value has a text that casts back
    to it exactly, the texts are joined into one string, split and cast: the optimizer folds
    that into one constant, built with one py4j call instead of one per value (~0.3 s per
    column of 1023 cut points). Otherwise (timestamps, strings holding every separator) one
    literal per value."""
    texts = _texts(values, data_type)
    sep = None if texts is None else next(
        (s for s in _SEPARATORS if not any(s in t for t in texts)), None)
    if sep is None:
        return F.array(*[F.lit(v) for v in values])
    joined = sep.join(cast(List[str], texts))  # a separator is only found among texts
    return F.split(F.lit(joined), re.escape(sep)).cast(T.ArrayType(data_type))


def _texts(values: Sequence, data_type: T.DataType) -> Optional[List[str]]:
    if isinstance(data_type, T.StringType):
        return list(values)
    if isinstance(data_type, T.BooleanType):
        return ["true" if v else "false" for v in values]
    if isinstance(data_type, (T.IntegralType, T.DateType)):
        return [v.isoformat() if isinstance(data_type, T.DateType) else str(v) for v in values]
    if isinstance(data_type, T.DecimalType):
        return [format(v, "f") for v in values]
    if isinstance(data_type, (T.FloatType, T.DoubleType)):
        return [repr(v) for v in values]    # shortest text that parses back; 'nan', 'inf'
    return None


def _lookup(table: Column, index: Column) -> Column:
    """table[index], 0-based (no bounds error to generate code for, as in _with_rank)."""
    return F.get(table, index)


def _morton(ranks: Sequence[str], bits: int) -> Column:
    """curves.z_value: each rank's bits spread `k` apart by one lookup
    (curves.spread_table), shifted to the rank's place, ORed."""
    k = len(ranks)
    if k == 1:
        return F.col(ranks[0]).cast("long")
    spread = _literal_array(curves.spread_table(k, bits), T.LongType())
    out = None
    for i, rank in enumerate(ranks):
        term = F.shiftleft(_lookup(spread, F.col(rank)), k - 1 - i)
        out = term if out is None else out.bitwiseOR(term)
    return cast(Column, out)  # k > 1 ranks: the loop ran


def _hilbert_by_tables(df: DataFrame, dims: int, bits: int, steps: Sequence[int]) -> DataFrame:
    """curves.hilbert_index_by_tables over the Morton code in KEY: per step, the next digits
    of the Morton code and the last state index the step's table (one lookup); the looked-up
    values, one column per step, hold the index's digits. Each step's column is used by the
    next step and by the final key, so Spark keeps the steps as chained projections."""
    looked_up: List[Tuple[str, int, int]] = []
    shift, width = dims * bits, 0
    for k, levels in enumerate(steps):
        prev, width = width, levels * dims
        shift -= width
        digits = F.shiftright(F.col(KEY), shift).bitwiseAND((1 << width) - 1)
        index = digits if k == 0 else F.shiftleft(
            F.shiftright(F.col(looked_up[-1][0]), prev), width).bitwiseOR(digits)
        name = f"__sized_hilbert{k}"
        table = _literal_array(curves.hilbert_table(dims, levels), T.IntegerType())
        df = df.withColumn(name, _lookup(table, index))
        looked_up.append((name, width, shift))
    key = None
    for name, width, at in looked_up:
        part = F.shiftleft(F.col(name).bitwiseAND((1 << width) - 1).cast("long"), at)
        key = part if key is None else key.bitwiseOR(part)
    return df.withColumn(KEY, cast(Column, key))  # one column per step, steps not empty


def _hilbert_by_arithmetic(df: DataFrame, dims: int, bits: int) -> DataFrame:
    """curves.hilbert_index level by level with the frame (e, d) in columns, for more columns
    than `hilbert_table_levels` makes tables for: three projections per level (the digit in
    the frame, its Gray rank, the next frame and index), mirroring curves.hilbert_step."""
    e, d, h = "__sized_he", "__sized_hd", "__sized_hh"
    df = df.select("*", F.lit(0).cast("long").alias(e), F.lit(0).alias(d),
                   F.lit(0).cast("long").alias(h))
    for level in range(bits - 1, -1, -1):
        framed, rank, nxt = _hilbert_level_sql(dims, level)
        df = df.withColumn("__sized_ht", F.expr(framed)).withColumn("__sized_hw", F.expr(rank))
        df = df.select("*", *[F.expr(sql).alias(c + "2") for c, sql in zip((e, d, h), nxt)])
        df = df.drop(e, d, h)      # by exact name: data columns may hold dots
        for c in (e, d, h):
            df = df.withColumnRenamed(c + "2", c)
    return df.withColumn(KEY, F.col(h))


def _hilbert_level_sql(dims: int, level: int) -> Tuple[str, str, Tuple[str, str, str]]:
    """SQL of one level of curves.hilbert_step over columns __sized_he / hd / hh (frame e,
    d, index so far), __sized_ht (the digit in the frame) and __sized_hw (its Gray rank):
    (t, w, (next e, next d, next index))."""
    e, d, h, t, w = "__sized_he", "__sized_hd", "__sized_hh", "__sized_ht", "__sized_hw"
    turn = f"(({d} + 1) % {dims})"
    digit = f"((shiftright({KEY}, {level * dims}) & {(1 << dims) - 1}) ^ {e})"
    entry = f"(({w} - 1) & -2)"         # curves.hilbert_entry before its Gray code
    gray_entry = f"(CASE WHEN {w} = 0 THEN 0 ELSE {entry} ^ shiftright({entry}, 1) END)"
    odd_up = f"({w} - 1 + ({w} & 1))"   # w when odd, w - 1 when even
    direction = f"(CASE WHEN {w} = 0 THEN 0 ELSE bit_count({odd_up} & ~({odd_up} + 1)) END)"
    return (_rotate_right_sql(digit, turn, dims),
            " ^ ".join(f"shiftright({t}, {s})" for s in range(dims)),
            (f"{e} ^ {_rotate_right_sql(gray_entry, f'({dims} - {turn})', dims)}",
             f"({d} + {direction} + 1) % {dims}",
             f"shiftleft({h}, {dims}) | {w}"))


def _rotate_right_sql(x: str, r: str, dims: int) -> str:
    """curves.rotate_right as SQL over expressions x and r (0 <= r <= dims)."""
    return f"((shiftright({x}, {r}) | shiftleft({x}, {dims} - {r})) & {(1 << dims) - 1})"
