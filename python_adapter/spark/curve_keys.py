"""Curve keys as Spark expressions: each `cluster_by` column becomes a rank in
[0, 2**bits), the ranks become a Z-order or Hilbert value, all inside the JVM.

Ranks come from one sample of the columns (quantile cut points, computed on the driver)
and a binary search written as `bits` chained projections, so ranking costs no shuffle
and no Python worker. The cut points only steer the layout: a rank that is off by one
moves a row to a neighbouring file, it never changes what is written.
"""
import math
from typing import List, Sequence, Tuple

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from python_adapter.core import curves
from python_adapter.errors import ConfigError

SAMPLE_PER_BUCKET = 20      # as Spark's RangePartitioner samples per output partition
_RANKABLE = (T.NumericType, T.StringType, T.DateType, T.TimestampType, T.BooleanType)


def with_curve_key(df: DataFrame, cluster_by: Sequence[str], strategy: str,
                   bits: int) -> Tuple[DataFrame, str]:
    """(df with a bigint column ordering rows along the curve, that column's name)."""
    ranked, ranks = _with_ranks(df, cluster_by, bits)
    if strategy == "zorder" or len(ranks) == 1:
        return ranked.withColumn("__sized_curve", _interleave(ranks, bits)), "__sized_curve"
    return _with_hilbert(ranked, ranks, bits), "__sized_curve"


def _with_ranks(df: DataFrame, cluster_by: Sequence[str], bits: int):
    buckets = 1 << bits
    types = {f.name.lower(): f.dataType for f in df.schema.fields}
    sample = _sample(df, cluster_by, buckets * SAMPLE_PER_BUCKET)
    ranks = []
    for i, col in enumerate(cluster_by):
        if not isinstance(types[col.lower()], _RANKABLE):
            raise ConfigError(f"cluster_by: column {col!r} is {types[col.lower()].simpleString()}; "
                              "curves rank numbers, strings, dates, timestamps and booleans")
        values = sorted((r[i] for r in sample if r[i] is not None), key=_sort_key)
        levels = curves.search_levels(
            curves.quantile_boundaries(values, buckets), bits) if values else []
        df = _with_rank(df, col, levels, f"__sized_rank{i}")
        ranks.append(f"__sized_rank{i}")
    return df, ranks


def _sample(df: DataFrame, cols: Sequence[str], size: int) -> list:
    rows = df.count()
    fraction = min(1.0, size / rows) if rows else 1.0
    picked = df.select(*cols)
    if fraction < 1.0:
        picked = picked.sample(fraction=fraction, seed=7)
    return picked.collect()


def _sort_key(v):
    # Spark orders NaN above every other double; Python cannot sort it at all
    return (isinstance(v, float) and math.isnan(v), v)


def _with_rank(df: DataFrame, col: str, levels: Sequence[Sequence], name: str) -> DataFrame:
    """rank = number of cut points below the value (nulls first: 0), one projection per
    level; each level's expression uses the last one twice, so Spark keeps them apart
    (CollapseProject does not inline a non-trivial expression used twice)."""
    df = df.withColumn(name, F.lit(0).cast("long"))
    for level in levels:
        cut = F.element_at(F.array(*[F.lit(v) for v in level]), F.col(name).cast("int") + 1)
        above = F.when(F.col(col) > cut, 1).otherwise(0)   # null > cut is null: 0
        df = df.withColumn(name, F.col(name) * 2 + above)
    return df


def _interleave(ranks: Sequence[str], bits: int) -> Column:
    """curves.z_value as a Spark expression: bit j of rank i goes to j*k + (k-1-i)."""
    k = len(ranks)
    out = F.lit(0).cast("long")
    for j in range(bits):
        for i, c in enumerate(ranks):
            bit = F.shiftright(F.col(c), j).bitwiseAND(F.lit(1))
            out = out.bitwiseOR(F.shiftleft(bit, j * k + (k - 1 - i)))
    return out


def _with_hilbert(df: DataFrame, ranks: List[str], bits: int) -> DataFrame:
    """curves.hilbert_index (Skilling's transform) as chained projections over the ranks."""
    x = list(ranks)
    n = len(x)
    q = 1 << (bits - 1)
    while q > 1:        # inverse undo of excess work
        p = q - 1
        df = df.withColumn(x[0], F.when(F.col(x[0]).bitwiseAND(q) != 0,
                                        F.col(x[0]).bitwiseXOR(p)).otherwise(F.col(x[0])))
        for i in range(1, n):
            xi_set = F.col(x[i]).bitwiseAND(q) != 0
            t = F.col(x[0]).bitwiseXOR(F.col(x[i])).bitwiseAND(p)
            df = df.select("*", F.when(xi_set, F.col(x[0]).bitwiseXOR(p))
                                 .otherwise(F.col(x[0]).bitwiseXOR(t)).alias("__sized_x0"),
                           F.when(xi_set, F.col(x[i])).otherwise(F.col(x[i]).bitwiseXOR(t))
                           .alias("__sized_xi"))
            df = (df.drop(x[0], x[i]).withColumnRenamed("__sized_x0", x[0])
                    .withColumnRenamed("__sized_xi", x[i]))
        q >>= 1
    for i in range(1, n):   # Gray encode
        df = df.withColumn(x[i], F.col(x[i]).bitwiseXOR(F.col(x[i - 1])))
    t = F.lit(0).cast("long")
    q = 1 << (bits - 1)
    while q > 1:
        t = t.bitwiseXOR(F.when(F.col(x[n - 1]).bitwiseAND(q) != 0, q - 1).otherwise(0))
        q >>= 1
    df = df.withColumn("__sized_t", t)
    for i in range(n):
        df = df.withColumn(x[i], F.col(x[i]).bitwiseXOR(F.col("__sized_t")))
    return df.drop("__sized_t").withColumn("__sized_curve", _interleave(x, bits))
