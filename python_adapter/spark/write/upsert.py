"""Algorithm 3 on Spark: upsert and insert by Hudi copy-on-write bin-packing.

Tag each incoming key with the file that holds it, plan what goes where
(`core.upsert_plan`: updates rewrite their file, inserts top up small files, the rest go
to new files), then write every planned output file ("slot") from exactly one Spark task
(`slot_write`). Files that receive nothing are neither read nor rewritten.
"""
import threading
from dataclasses import dataclass, replace
from typing import (Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple,
                    cast)
from urllib.parse import unquote

import pyspark
from pyspark import StorageLevel, inheritable_thread_target
from pyspark.sql import Column, DataFrame, Observation, Row, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from python_adapter.core.config import SizedConfig, kept_on_update
from python_adapter.core.keys import KeyRowShape, may_hold_keys, summarize_keys
from python_adapter.core.partitions import (check_partition_texts, parse_partition_path,
                                            partition_path)
from python_adapter.core.sizes import count_of, format_size
from python_adapter.core.upsert_plan import Sizing, TagGroup, UpsertPlan, plan_upsert
from python_adapter.errors import ConfigError
from python_adapter.spark.write.bloom import BloomIndex, bloom_key, write_options
from python_adapter.spark.write.constraints import check_null_counts, null_counts
from python_adapter.spark.job import (Progress, Route, RowChanges, Staged, WriteJob, cache_batch,
                                      delete_flag, quoted, resolve_names, select_names,
                                      worth_caching)
from python_adapter.io.session_info import select_exprs, sql_type
from python_adapter.spark.local_table import local_table
from python_adapter.spark.session_conf import session_conf, shuffle_conf
from python_adapter.spark.write.slot_write import (FIRST_ROW, SLOT, SlotWrite, broadcast_limit,
                                              cached_size, estimated_bytes, kept_old_rows,
                                              write_slots)
from python_adapter.spark.write.small_batch import (files_to_top_up, small_estimate,
                                              stage_small_insert, write_one_task)
from python_adapter.spark.write.staging import bytes_per_row, known_bytes_per_row, staged_entries
from python_adapter.spark.table_files import read_files, with_file_values
from python_adapter.table.faults import fault_point
from python_adapter.table.timeline import FileEntry, pending_plan_files

SEED = 4242
_ORDERABLE = (T.NumericType, T.StringType, T.DateType, T.TimestampType)
# {partition values as Spark's writer names their directories: (min, max) of the first key
# column of the batch's rows in that partition}
PartitionKeyRanges = Dict[Tuple[Optional[str], ...], Tuple[Any, Any]]


class KeysFound(NamedTuple):
    """What validate_keys finds: the rows to write, (min, max) of the first key column
    ((None, None) when it has no order), the same per partition of the rows, and the rows
    (an upper bound; -1 unknown)."""
    df: DataFrame
    key_range: Tuple[Any, Any]
    partitions: PartitionKeyRanges
    rows: int


@dataclass(frozen=True)
class KeyRules:
    """What validate_keys checks new data by: the key columns; the column whose largest
    value wins among rows of one key (None: such rows fail); the columns a key is unique
    within (key_scope: the same key with other values of them is another row); the
    partition columns whose values it collects (none: it collects none)."""
    keys: Sequence[str]
    precombine_column: Optional[str]
    within: Sequence[str] = ()
    pcols: Sequence[str] = ()


# A batch Spark estimates at most DRIVER_KEY_BYTES has its keys checked in the driver, up
# to DRIVER_KEY_ROWS rows: one collect of its key columns and no shuffle, ~0.14 s for 1,000
# rows where the aggregation's stages take ~0.5 s (benchmarks/README.md, session 44).
DRIVER_KEY_BYTES = 2 * 1024 * 1024
DRIVER_KEY_ROWS = 20_000


def _same_in_python(dtype: T.DataType) -> bool:
    """Whether Python's values of a Spark type are equal, hash and order exactly as Spark's
    are: not floats (NaN, -0.0), not timestamps (a local time repeats when clocks go back),
    not strings of a collation other than binary (pyspark 4)."""
    if isinstance(dtype, T.StringType):
        return getattr(dtype, "collation", "UTF8_BINARY") == "UTF8_BINARY"
    return isinstance(dtype, (T.IntegralType, T.DateType, T.DecimalType, T.BooleanType))


def keys_in_driver(df: DataFrame, rules: KeyRules, batch_bytes: int) -> Optional[KeysFound]:
    """validate_keys of a small batch without nulls or duplicate keys, from its key columns
    collected to the driver; None when the batch is not such a one (larger, keys of other
    types, a null or repeated key: validate_keys names the error or dedupes)."""
    identity = [*rules.keys, *rules.within]
    if batch_bytes > DRIVER_KEY_BYTES or \
            not all(_same_in_python(df.schema[c].dataType) for c in identity):
        return None
    texts = [F.col(c).cast("string") for c in rules.pcols]
    # one task reads the batch (a limit alone scans one partition, then more, a job each)
    rows = df.select(*identity, *texts).coalesce(1).limit(DRIVER_KEY_ROWS + 1).collect()
    if len(rows) > DRIVER_KEY_ROWS:
        return None
    orderable = isinstance(df.schema[rules.keys[0]].dataType, _ORDERABLE)
    found = summarize_keys(rows, KeyRowShape(len(rules.keys), len(identity), orderable,
                                             bool(rules.pcols)))
    return None if found is None else KeysFound(df, *found)  # the same fields, in order


def validate_keys(df: DataFrame, rules: KeyRules) -> KeysFound:
    """Null keys fail; duplicate keys fail unless a precombine column picks the latest.
    One aggregation finds all of what it returns."""
    keys, precombine_column = rules.keys, rules.precombine_column
    pcols, within = rules.pcols, rules.within
    null_cond = None
    for k in keys:
        cond = F.col(k).isNull()
        null_cond = cond if null_cond is None else null_cond | cond
    # partition values as Spark's writer names their directories (partitions.py)
    part = [F.collect_set(F.struct(*[F.col(c).cast("string") for c in pcols])).alias("__sized_parts")] \
        if pcols else []
    identity = [*keys, *within]
    groups = df.groupBy(*identity).agg(F.count(F.lit(1)).alias("count"), *part)
    first = keys[0]
    orderable = isinstance(df.schema[first].dataType, _ORDERABLE)
    # keys is not empty (keys[0] above): the loop made null_cond
    aggs = [F.sum(F.when(cast(Column, null_cond), 1).otherwise(0)).alias("__sized_nulls"),
            F.sum(F.when(F.col("count") > 1, 1).otherwise(0)).alias("__sized_dups"),
            F.sum("count").alias("__sized_rows"),
            (F.min(first) if orderable else F.lit(None)).alias("__sized_kmin"),
            (F.max(first) if orderable else F.lit(None)).alias("__sized_kmax")]
    found, partitions = _key_aggregates(groups, aggs, bool(pcols))
    if found["__sized_nulls"]:
        raise ConfigError(f"unique_key: the new data has rows with a null {' / '.join(keys)}; "
                          f"a unique key must not be null")
    if found["__sized_dups"] and not precombine_column:
        dups = groups.where("count > 1").limit(3).collect()
        # a key of several columns by name and value as the user writes it (2025-01-02, not
        # Python's datetime.date(2025, 1, 2))
        shown = ", ".join(str(r[0]) if len(identity) == 1 else
                          "(" + ", ".join(f"{c}={r[c]}" for c in identity) + ")" for r in dups)
        where = f" in one partition ({', '.join(within)})" if within else ""
        raise ConfigError(
            f"unique_key: the new data holds the same key more than once{where} (e.g. "
            f"{shown}); set precombine_column to the column whose largest value wins, or "
            f"dedupe the model")
    key_range = (found["__sized_kmin"], found["__sized_kmax"])
    if precombine_column and found["__sized_dups"]:
        w = Window.partitionBy(*identity).orderBy(F.col(precombine_column).desc_nulls_last())
        df = (df.withColumn("__sized_rn", F.row_number().over(w))
                .where("__sized_rn = 1").drop("__sized_rn"))
    return KeysFound(df, key_range, partitions, found["__sized_rows"] or 0)


def _key_aggregates(groups: DataFrame, aggs: List[Column], partitioned: bool
                    ) -> Tuple[dict, PartitionKeyRanges]:
    """(aggs over every key group, {partition values: (__sized_kmin, __sized_kmax) of the
    groups with rows in it}). Partitioned, a rollup over each key group's partitions gives
    both in one job: a key in two partitions counts twice in the total's sums, which are
    only tested for zero or taken as an upper bound."""
    none = {"__sized_nulls": 0, "__sized_dups": 0, "__sized_rows": 0, "__sized_kmin": None,
            "__sized_kmax": None}
    if not partitioned:
        return cast(Row, groups.agg(*aggs).first()).asDict(), {}  # no groups: one row
    total_row = F.grouping("__sized_part").alias("__sized_all")
    rows = (groups.select("*", F.explode("__sized_parts").alias("__sized_part"))
                  .rollup("__sized_part").agg(*aggs, total_row).collect())
    total = next((r.asDict() for r in rows if r["__sized_all"]), none)  # no rows: no total
    return total, {tuple(r["__sized_part"]): (r["__sized_kmin"], r["__sized_kmax"])
                   for r in rows if not r["__sized_all"]}


def match_condition(cfg: SizedConfig) -> Optional[str]:
    """incremental_predicates as one SQL condition on the table's rows: only rows that hold
    it are matched by an incoming key (dbt's merge); None without predicates."""
    if not cfg.incremental_predicates:
        return None
    return " AND ".join(f"({p})" for p in cfg.incremental_predicates)


def check_predicates(df: DataFrame, cfg: SizedConfig) -> None:
    """Each of incremental_predicates must parse and name the model's columns (the table's
    rows have them): checked on the model's schema before anything is written."""
    key = "incremental_predicates"
    for p in cfg.incremental_predicates:
        try:
            df.limit(0).where(F.expr(p)).schema
        except Exception as exc:  # ParseException, AnalysisException through py4j
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigError(f"{key}: {p!r} is not a condition on the model's columns "
                              f"({first}); nothing was written") from None


def upsert_keys(cfg: SizedConfig, columns: Sequence[str]) -> Tuple[str, ...]:
    """The model's columns that make the unique key, in the config's order (the first is
    the one whose range the timeline keeps); () unless the strategy is upsert."""
    return resolve_names(cfg.unique_key, columns) if cfg.incremental_strategy == "upsert" else ()


class KeyCheck:
    """The key check of an upsert's new data (keys_in_driver for a small batch, else
    validate_keys), run in a background thread: its Spark job runs while the driver lists
    the table and reads its timeline. result() returns what validate_keys returns (without
    a key: the data as it is) or raises its error; wait() waits for the job without
    raising, so the data is not unpersisted under it."""

    def __init__(self, spark: SparkSession, df: DataFrame, cfg: SizedConfig,
                 pcols: Sequence[str], progress: Progress) -> None:
        self.keys = upsert_keys(cfg, df.columns)
        self.batch_bytes = cached_size(df)  # the plan's estimate, no job
        self._done = threading.Event()
        self._result, self._error = KeysFound(df, (None, None), {}, -1), None
        if not self.keys:
            self._done.set()
            return
        progress("checking keys of the new data", phase="key check")
        settings = shuffle_conf(spark, self.batch_bytes)

        def run():
            try:
                with session_conf(spark, settings):
                    rules = KeyRules(self.keys, cfg.precombine_column,
                                     key_scope(cfg, pcols), pcols)
                    found = keys_in_driver(df, rules, self.batch_bytes)
                    self._result = found if found is not None else validate_keys(df, rules)
                    self.batch_bytes = _measured_size(df, self.batch_bytes)
            except BaseException as exc:  # handed to the caller by result()
                self._error = exc
            finally:
                self._done.set()

        threading.Thread(target=_in_thread(spark, run), name="sized-key-check",
                         daemon=True).start()

    def wait(self) -> None:
        self._done.wait()

    def result(self) -> KeysFound:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._result


def _measured_size(df: DataFrame, estimate: int) -> int:
    """A cached batch's size once a job has filled its cache: Spark's estimate of a plan
    that joins is often far above its rows (1 PB for a snapshot's 20,000 staging rows),
    and the shuffles sized by it then run 200 tasks of nothing. A fresh plan of the
    cache reads the size it measured; `estimate` for a batch that is not cached."""
    if df.storageLevel == StorageLevel.NONE:
        return estimate
    return min(estimate, cached_size(df.select("*")))


def _in_thread(spark: SparkSession, fn: Callable[[], None]) -> Callable[[], None]:
    """fn, to run in a new thread with the session's local properties: pyspark 4 takes the
    session too (its job tags; without it a warning per call), pyspark 3.5 only fn."""
    if int(pyspark.__version__.split(".")[0]) >= 4:
        return inheritable_thread_target(spark)(fn)
    return inheritable_thread_target(fn)


def _union(frames):
    """The union of some DataFrames of the same columns, None for none."""
    out = None
    for df in frames:
        if df is not None:
            out = df if out is None else out.unionByName(df)
    return out


def _unit_hash(columns):
    """A number in [0, 1) per row from its columns: which insert range a row falls in must
    not depend on evaluation order, since the rows are read by more than one Spark job."""
    return F.pmod(F.xxhash64(F.lit(SEED), *[F.col(c) for c in columns]), F.lit(1 << 30)) / float(1 << 30)


def _tag_columns(pcols):
    return ["__sized_file", "__sized_same", *[f"__sized_op{i}" for i in range(len(pcols))]]


class Tagger:
    """Tags the batch's rows with the file that holds their key (Hudi's index lookup)."""

    def __init__(self, job: WriteJob, keys: Sequence[str], batch_bytes: int,
                 batch_rows: int = -1) -> None:
        self.spark, self.location, self.pcols = job.spark, job.proto.location, job.pcols
        self.keys, self.batch_bytes, self.progress = keys, batch_bytes, job.progress
        self.batch_rows = batch_rows
        self.schema = job.read_schema()
        # dbt's merge options: what a matched row keeps of the table's row, and which of the
        # table's rows can be matched at all
        self.kept = kept_on_update(job.cfg, [*job.data_cols, *job.pcols]) if keys else ()
        self.match = match_condition(job.cfg)
        self.not_null = resolve_names(job.cfg.not_null_columns, job.df.columns)
        self.bloom = BloomIndex(job.spark, self.location, keys[0], self.pcols) \
            if keys and job.cfg.index_type == "bloom" else None
        self.across_table = looks_across_partitions(job.cfg)
        # what an old row carries for replaced_keys to name it by: its file, when the
        # index matches a key in its own partition only
        self.old_row_file = () if self.across_table else ("__sized_file",)

    def rule_out(self, batch: DataFrame, first: List[FileEntry], rest: List[FileEntry],
                 key_range: Tuple[Any, Any]) -> Tuple[List[FileEntry], List[FileEntry], str]:
        """With the bloom index, the files to tag against and those left to the second pass,
        and what the probe did (for the log); without it (first, rest, "").
        index_scope partition: each first-pass file is probed with the keys of its
        partition's rows. global: every file in the batch's key range is probed with every
        key, so the files that may hold a key from elsewhere (one that changed partition, or
        a false positive) join the one tagging pass, and only files without a filter are
        left to the second."""
        if self.bloom is None or not self.bloom.usable or not (first or rest):
            return first, rest, ""
        if not self.across_table:
            answer = self.bloom.probe(batch, first, [])
            if answer is None:
                return first, rest, ""
            kept = [f for f, a in zip(first, answer[0]) if a != "0"]
            return kept, rest, f"Bloom filters ruled out {len(first) - len(kept)} of them"
        others = [f for f in rest if may_hold_keys(f, *key_range)]
        answer = self.bloom.probe(batch, [], first + others)
        if answer is None:
            return first, rest, ""
        own, other = answer[1][:len(first)], answer[1][len(first):]
        kept = [f for f, a in zip(first, own) if a != "0"]
        extra = [f for f, a in zip(others, other) if a == "1"]
        unknown = [f for f, a in zip(others, other) if a == "2"]
        return kept + extra, unknown, (
            f"Bloom filters ruled out {len(first) - len(kept)} of them, {len(extra)} others "
            f"may hold a key, {len(unknown)} have no filter")

    def tag(self, batch: DataFrame, candidates: Sequence[str]) -> DataFrame:
        """The batch with, per row, the file holding its key among `candidates` (rel paths):
        __sized_file (null when none), that file's partition values (__sized_op<i>) and
        whether the row stays in that partition (__sized_same)."""
        keys, pcols = self.keys, self.pcols
        if not candidates:
            tagged = (batch.withColumn("__sized_file", F.lit(None).cast("string"))
                           .withColumn("__sized_same", F.lit(False)))
            for i, c in enumerate(pcols):
                tagged = tagged.withColumn(f"__sized_op{i}", F.col(c))
            return tagged
        key_names = [f"__sized_k{i}" for i in range(len(keys))]
        kept_names = [f"__sized_old{i}" for i in range(len(self.kept))]
        existing = read_files(self.spark, self.location, self.schema, candidates)
        if self.match is not None:
            existing = existing.where(self.match)
        renamed = [*zip(keys, key_names), *[(c, f"__sized_op{i}") for i, c in enumerate(pcols)],
                   *zip(self.kept, kept_names)]
        existing = select_exprs(existing, [f"{quoted(c)} AS {n}" for c, n in renamed] +
                                ["_metadata.file_path AS __sized_file"])
        # Keep only the table's rows whose key comes in before the outer join: the batch's
        # keys are small next to the table, so this streams the table past them once.
        probe = batch.select(*[F.col(k).alias(key_names[i]) for i, k in enumerate(keys)])
        # Spark sizes the keys by their share of the batch's bytes in memory; from the row
        # count they are often small enough to broadcast, and then the candidate files' rows
        # are filtered where they are read: only the matched ones reach a shuffle.
        if 0 <= estimated_bytes(probe, self.batch_rows) <= broadcast_limit(self.spark):
            probe = F.broadcast(probe)
        existing = existing.join(probe, key_names, "left_semi")
        cond = None
        for i, k in enumerate(keys):
            c = batch[k] == existing[key_names[i]]
            cond = c if cond is None else cond & c
        for i, c in enumerate(pcols if not self.across_table else ()):
            # index_scope partition: a key is matched in its own partition only (Hudi's
            # non-global index keys a record by key and partition), so a key that two
            # partitions hold (one that moved: written twice) never matches twice
            cond = cond & batch[c].eqNullSafe(existing[f"__sized_op{i}"])
        tagged = batch.join(existing, cond, "left").drop(*key_names)
        if self.kept:
            tagged = _keeping(batch, tagged, dict(zip(self.kept, kept_names)))
        same = F.lit(True)
        for i, c in enumerate(pcols):
            same = same & F.col(c).eqNullSafe(F.col(f"__sized_op{i}"))
        return tagged.withColumn("__sized_same", F.col("__sized_file").isNotNull() & same)

    def stats(self, tagged: DataFrame) -> List[Row]:
        """What goes where, in one aggregation: rows per (new partition, old partition, file,
        stays, deleted), with the key range of each group (to look for unfound keys) and
        the nulls of the not_null columns (check_not_null_groups).
        Partition values come as the texts Spark's writer names their directories by."""
        keys, pcols = self.keys, self.pcols
        aggs = [F.count(F.lit(1)).alias("count"), *null_counts(self.not_null)]
        orderable = keys and isinstance(tagged.schema[keys[0]].dataType, _ORDERABLE)
        aggs += [F.min(keys[0]).alias("__sized_kmin"), F.max(keys[0]).alias("__sized_kmax")] \
            if orderable else [F.lit(None).alias("__sized_kmin"), F.lit(None).alias("__sized_kmax")]
        texts = [F.col(c).cast("string").alias(c) for c in pcols] + \
            [F.col(f"__sized_op{i}").cast("string").alias(f"__sized_op{i}") for i in range(len(pcols))]
        return tagged.groupBy(*texts, "__sized_file", "__sized_same", "__sized_del").agg(*aggs).collect()

    def tag_persisted(self, batch: DataFrame, candidates: List[FileEntry]
                      ) -> Tuple[DataFrame, List[Row]]:
        """(the tagged batch, persisted, and its stats): one join, cached by its stats job."""
        conf = shuffle_conf(self.spark, self.batch_bytes + sum(f.bytes for f in candidates))
        with session_conf(self.spark, conf):  # persist() plans the join at once
            tagged = self.tag(batch, [f.path for f in candidates]).persist()
        fault_point("tagging")  # a writer killed while the server tags (tests over Connect)
        try:
            with session_conf(self.spark, conf):
                return tagged, self.stats(tagged)
        except BaseException:
            tagged.unpersist()
            raise

    def tag_the_unfound(self, tagged: DataFrame, stats: List[Row], rest: List[FileEntry]
                        ) -> Tuple[DataFrame, List[Row]]:
        """Second pass: the keys no file of their own partition held, against the other files
        whose key range may hold them. Returns the (persisted) tagged rows and their stats."""
        unfound = [r for r in stats if r["__sized_file"] is None]
        lows = [r["__sized_kmin"] for r in unfound if r["__sized_kmin"] is not None]
        highs = [r["__sized_kmax"] for r in unfound if r["__sized_kmax"] is not None]
        lo, hi = (min(lows), max(highs)) if lows and len(lows) == len(unfound) else (None, None)
        second = [f for f in rest if may_hold_keys(f, lo, hi)] if unfound else []
        self.progress(f"{count_of(sum(r['count'] for r in unfound), 'key')} not in their "
                      f"partitions' files: looking in {len(second)} of the other "
                      f"{count_of(len(rest), 'file')}")
        if not second:
            return tagged, stats
        found = tagged.where("__sized_file is not null")
        untagged = tagged.where("__sized_file is null").drop(*_tag_columns(self.pcols))
        conf = shuffle_conf(self.spark, self.batch_bytes + sum(f.bytes for f in second))
        with session_conf(self.spark, conf):  # before persist(), which plans the join
            retagged = found.unionByName(self.tag(untagged, [f.path for f in second])).persist()
        try:
            with session_conf(self.spark, conf):
                stats = self.stats(retagged)  # also fills retagged's cache from tagged's
        except BaseException:
            retagged.unpersist()
            raise
        tagged.unpersist()
        return retagged, stats

    def replaced_keys(self, tagged: DataFrame, batch: Optional[DataFrame] = None
                      ) -> DataFrame:
        """The keys whose old rows the write removes from the files it rewrites. global: every
        incoming key (keys are unique across the table: its old row goes wherever it was),
        taken from `batch` when given (the untagged rows: a tagging not persisted is not run
        again for them). partition: the keys the tagging matched, with the file it matched
        them in (__sized_file), as the old rows carry it (with_file_path): a key's row in a
        partition the batch does not bring it to stays."""
        if self.across_table:
            return (tagged if batch is None else batch).select(*self.keys)
        return tagged.where("__sized_file IS NOT NULL").select(*self.keys, "__sized_file")

    def with_file_path(self, old: DataFrame) -> DataFrame:
        """old rows (read_files) with the file each is read from, as the tagging names it,
        when replaced_keys gives the files (index_scope partition)."""
        return old if self.across_table else old.withColumn("__sized_file",
                                                            F.col("_metadata.file_path"))

    def check_not_null_groups(self, stats: Iterable[Row]) -> None:
        """Fail when a not_null column is null in rows the write keeps (deletes are not
        written), before anything is written."""
        check_null_counts(self.not_null, [r for r in stats if not r["__sized_del"]])

    def groups(self, stats: Iterable[Row]) -> Tuple[List[TagGroup], dict]:
        """The stats as TagGroups (files by rel path), and {rel path: the path Spark reports}."""
        n = len(self.pcols)
        prefix = unquote(self.location)
        groups, spark_path_of = [], {}
        for r in stats:
            uri = r["__sized_file"]
            rel = unquote(uri)[len(prefix):].lstrip("/") if uri is not None else None
            if rel is not None:
                spark_path_of[rel] = uri
            groups.append(TagGroup(tuple(r[:n]), tuple(r[n:2 * n]), rel, bool(r["__sized_same"]),
                                   bool(r["__sized_del"]), r["count"]))
        return groups, spark_path_of


def _keeping(batch: DataFrame, tagged: DataFrame, kept: Dict[str, str]) -> DataFrame:
    """The tagged rows where a matched row keeps the table's values of the kept columns
    ({column: the column of the table's value}; partition columns included: then it stays
    where it was). One select of SQL text: a withColumn per column analyzes the whole plan
    each time, O(columns^2) for a snapshot of a wide table (merge_update_columns: every
    column but one kept, issue 46)."""
    types = {f.name: f.dataType for f in tagged.schema.fields}
    olds = set(kept.values())
    exprs = []
    for c in types:
        if c in olds:
            continue
        if c not in kept:
            exprs.append(quoted(c))
            continue
        old = quoted(kept[c])
        if types[kept[c]] != types[c]:  # the batch's type: a schema change casts the batch
            old = f"CAST({old} AS {sql_type(batch, c)})"
        exprs.append(f"CASE WHEN __sized_file IS NOT NULL THEN {old} ELSE {quoted(c)} END "
                     f"AS {quoted(c)}")
    return select_exprs(tagged, exprs)


def looks_across_partitions(cfg: SizedConfig) -> bool:
    """index_scope global: keys are unique across the table, so a key not in its partition's
    files is looked for in the others; partition: a key is matched in its own partition."""
    return cfg.index_scope == "global"


def key_scope(cfg: SizedConfig, pcols: Sequence[str]) -> Tuple[str, ...]:
    """The columns a key is unique within: none (global), or the partition columns
    (index_scope partition, as Hudi's non-global index keys a record by key and partition:
    a batch may bring a key to two partitions, as a lookback window replaying the days a
    moved key is in does, and each is its own row)."""
    return () if looks_across_partitions(cfg) else tuple(pcols)


def _first_pass(pcols, current, key_range, batch_parts):
    """(the files of the batch's partitions whose key range may hold a key of their own
    partition's rows, the others that may hold one of the batch's keys). Keys are unique
    across the table, so with index_scope 'global' a key not found in the first is then
    looked for in the others (Tagger.tag_the_unfound): for keys that grow with time (new
    keys above every file's range, late arrivals in recent partitions) that is no file."""
    own = {partition_path(pcols, p): r for p, r in batch_parts.items()} if pcols else None
    first, rest = [], []
    for f in current:
        lo, hi = key_range if own is None else own.get(f.partition, (None, None))
        if (own is None or f.partition in own) and may_hold_keys(f, lo, hi):
            first.append(f)
        elif may_hold_keys(f, *key_range):
            rest.append(f)
    return first, rest


def stage_upsert(job: WriteJob, staging: str, current: List[FileEntry]) -> Staged:
    """Upsert / insert: bin-pack into the partitions' small files, rewrite updated files;
    the output files are staged under `staging`. current: the table's files now, with the
    key ranges the timeline recorded."""
    df, cfg, progress = job.df, job.cfg, job.progress
    cache = df.storageLevel == StorageLevel.NONE and _worth_caching_batch(job, df)
    cached = cache_batch(job.spark, df) if cache else df
    key_check = None
    try:
        key_check = KeyCheck(job.spark, cached, cfg, job.pcols, progress)  # runs while we plan
        passes = _passes(job.pcols, key_check, current)
        new_keys = _as_insert_of_new_keys(replace(job, df=cached), key_check, passes, staging,
                                          current)
        if new_keys is not None:
            return new_keys
        merged = _as_small_merge(replace(job, df=cached), key_check, passes, staging, current)
        if merged is not None:
            return merged
        bpr, source = bytes_per_row(job, cached, None)
        bpr = bpr or 1.0
        progress(f"bytes per row {bpr:.1f} B (from {source})")
        plan = _write_upsert(replace(job, df=cached), key_check, passes, bpr, staging, current)
        key_col = key_check.keys[0] if key_check.keys else (
            resolve_names(cfg.unique_key[:1], df.columns)[0] if cfg.unique_key else None)
        added = staged_entries(job.spark, job.fs, staging, key_col)
    finally:
        if key_check is not None:
            key_check.wait()  # its job reads the cached data
        if cache:
            cached.unpersist()
    by_path = {f.path: f for f in current}
    removed = [by_path[s.file] for s in plan.rewrites]
    like = cfg.target_file_size
    progress(f"wrote {count_of(len(added), 'file')}, "
             f"{format_size(sum(a.bytes for a in added), like)}, "
             f"rewriting {format_size(sum(f.bytes for f in removed), like)} of existing files")
    summary = plan.summary
    return Staged(added, removed, summary["new_files"] + summary["files_rewritten"], bpr,
                  len(current), RowChanges(**plan.rows), Route.BIN_PACKED)


def _worth_caching_batch(job: WriteJob, df: DataFrame) -> bool:
    """Whether an upsert caches its batch. Not a small batch whose plan only scans (no
    shuffle, deterministic: job.worth_caching) and that Spark estimates small without a
    cache (small_batch.small_estimate: no generator): the key check, the tagging and the
    write read it again for less than a cache of every column costs to build (7 s for 50
    rows of 2,000 columns, issue 46). Others are cached, and a small batch of unknown size
    (rows from Python) then measured by its cache. Asked of a plan of its own: df's plan,
    once planned, would not read a cache made after."""
    probe = df.select("*")
    return worth_caching(probe) or small_estimate(job, probe) is None


def _passes(pcols, key_check: KeyCheck, current: List[FileEntry]
            ) -> Tuple[List[FileEntry], List[FileEntry]]:
    """_first_pass over the table's files by the key check's ranges (waiting for it);
    ([], []) without a key or a file."""
    if not key_check.keys or not current:
        return [], []
    found = key_check.result()
    return _first_pass(pcols, current, found.key_range, found.partitions)


def _as_insert_of_new_keys(job: WriteJob, key_check: KeyCheck, passes, staging: str,
                           current: List[FileEntry]) -> Optional[Staged]:
    """A small upsert whose keys no file may hold (by the key ranges the timeline keeps:
    keys that grow with time; hashed keys overlap every range) matches no row: an insert,
    written as a small insert is (each touched partition's small file topped up by one
    task), without tagging or a slot plan. Staged, or None when that does not hold."""
    if job.operation != "upsert" or not key_check.keys:
        return None
    found = key_check.result()  # the key errors come first, whatever the path
    first, rest = passes
    if first or (rest and looks_across_partitions(job.cfg)):
        return None
    # stage_small_insert checks the size, the partition values and the not_null columns,
    # and drops the rows flagged deleted (their keys are in no file: nothing to delete).
    # The key check found the batch's partitions (and whether it has rows), so no query
    # looks for them again; a partition of deleted rows only gets its file written as it was.
    staged = stage_small_insert(replace(job, df=found.df, operation="insert"), staging,
                                current, _touched(job, found))
    if staged is None:
        return None
    job.progress("no file holds an incoming key (the timeline's key ranges): "
                 "written as an insert")
    return replace(staged, route=Route.NEW_KEYS)


def _as_small_merge(job: WriteJob, key_check: KeyCheck, passes, staging: str,
                    current: List[FileEntry]) -> Optional[Staged]:
    """A small upsert whose files that may hold its keys, with each
    touched partition's small file, are small together: one job reads them with the batch
    and one task writes each of their partitions' file again (the rows the batch does not
    replace, then the batch's rows), where the planned way tags and counts, plans, and
    writes the slots. What is counted (rows inserted, updated, deleted; nulls of the
    not_null columns) is observed in that job. Staged, or None when that does not hold
    (the caller plans the write)."""
    cfg = job.cfg
    if job.operation != "upsert" or not key_check.keys:
        return None
    found = key_check.result()
    estimate = small_estimate(job, found.df) if found.rows > 0 else None
    if estimate is None:
        return None
    texts = _touched(job, found)
    check_partition_texts(job.pcols, texts)
    bpr = known_bytes_per_row(job)[0]  # the rows' Parquet size; the estimate is in memory
    batch_bytes = max(estimate, found.rows * bpr) if bpr else estimate
    files = _small_merge_files(job, passes, found, texts, batch_bytes, current)
    if files is None:
        return None
    held, topped = files
    candidates, target = held + topped, cfg.target_file_size
    read = format_size(sum(f.bytes for f in candidates), target)
    job.progress(f"small upsert (Spark estimates {format_size(estimate, target)}): one task "
                 f"writes each partition's file again, reading {count_of(len(candidates), 'file')}"
                 f" of {read} ({len(held)} of {count_of(len(current), 'file')} may hold a key, "
                 f"{count_of(len(topped), 'more small file')} topped up)", phase="merge")
    rows, changes, nulls = _merged_rows(job, key_check, found, candidates)
    added = write_one_task(job, rows, staging)
    if added is None:
        return None
    if nulls is not None:  # staged only: refused before anything reaches the table
        check_null_counts(resolve_names(cfg.not_null_columns, job.df.columns), [nulls.get])
    counted = changes.get
    written = sum(a.rows for a in added)
    job.progress(f"wrote {count_of(len(added), 'file')}, "
                 f"{format_size(sum(a.bytes for a in added), target)}, rewriting {read} of "
                 f"existing files")
    return Staged(added, candidates, len(added), sum(a.bytes for a in added) / written
                  if written else None, len(current),
                  RowChanges(**{k: counted[k] or 0 for k in ("inserted", "updated", "deleted")}),
                  Route.SMALL_UPSERT)


def _touched(job: WriteJob, found: KeysFound) -> list:
    """The partitions' texts the batch writes to (as the key check found them); unpartitioned:
    one empty tuple when the batch has rows, none when it has not."""
    return list(found.partitions) if job.pcols else [()] * (found.rows > 0)


def _small_merge_files(job: WriteJob, passes, found: KeysFound, texts, batch_bytes: float,
                       current) -> Optional[Tuple[List[FileEntry], List[FileEntry]]]:
    """The files a small merge reads and writes again: (those the tagging would look for
    the batch's keys in: the first pass's, and with index_scope global the others whose key
    range may hold a key; the other small files the batch's inserts top up: each touched
    partition's emptiest); None when they and the batch's bytes are above the target
    together, or one is in a pending clustering plan (the planned way keeps it)."""
    first, rest = passes
    topped = files_to_top_up(job, {partition_path(job.pcols, t) for t in texts}, current)
    if topped is None:
        return None
    rest = rest if looks_across_partitions(job.cfg) else []
    held = [*first, *[f for f in rest if may_hold_keys(f, *found.key_range)]]
    topped = [f for f in topped if f.path not in {h.path for h in held}]
    if sum(f.bytes for f in held + topped) + batch_bytes > job.cfg.target_file_size:
        return None
    excluded = pending_plan_files(job.proto.timeline)
    return None if any(f.path in excluded for f in held + topped) else (held, topped)


def _merged_rows(job: WriteJob, key_check: KeyCheck, found: KeysFound, files: List[FileEntry]
                 ) -> Tuple[DataFrame, Observation, Optional[Observation]]:
    """(the rows of `files` the batch does not replace, then the batch's rows that are not
    deleted, as the tagging would update them; the Observation of the rows inserted,
    updated and deleted; that of the nulls in the not_null columns of the rows written from
    the batch, or None without such columns). Both are read after the write."""
    cfg, keys = job.cfg, key_check.keys
    columns = [*job.data_cols, *job.pcols]
    tagger = Tagger(job, keys, key_check.batch_bytes, found.rows)
    batch = found.df.withColumn("__sized_del", delete_flag(cfg))
    matched, deleted = F.col("__sized_file").isNotNull(), F.col("__sized_del")
    changes = Observation()
    tagging = tagger.tag(batch, [f.path for f in files])
    tagged = tagging.observe(
        changes, *[F.sum(F.when(cond, 1).otherwise(0)).alias(name) for name, cond in (
            ("inserted", ~matched & ~deleted), ("updated", matched & ~deleted),
            ("deleted", matched & deleted))])
    new = tagged.where(~deleted)
    nulls = Observation() if tagger.not_null else None
    if nulls is not None:
        new = new.observe(nulls, *null_counts(tagger.not_null))
    new = select_names(new, columns)
    if not files:  # the batch's rows alone (no file to read)
        return new, changes, nulls
    old = tagger.with_file_path(read_files(job.spark, job.proto.location, tagger.schema,
                                           [f.path for f in files]))
    keys_df = tagger.replaced_keys(tagging, batch)
    kept = kept_old_rows(old, keys_df, tagger.match).where("__sized_hit is null")
    return select_names(kept, columns).unionByName(new), changes, nulls


def _write_upsert(job, key_check, passes, bpr, staging, current):
    """Tag, plan and write the slots; returns the plan. passes: _passes' files."""
    cfg, progress, keys = job.cfg, job.progress, key_check.keys
    batch_bytes = key_check.batch_bytes
    batch, key_range, _parts, batch_rows = key_check.result()
    batch = batch.withColumn("__sized_del", delete_flag(cfg))
    tagger = Tagger(job, keys, batch_bytes, batch_rows)
    first, rest, probed = tagger.rule_out(batch, *passes, key_range)
    if keys and current:
        bloom = "" if tagger.bloom is None else (
            f"; {probed}" if probed else
            "; Bloom filters not probed: the driver has no helper jar (a cluster), or it "
            "could not read them")
        progress(f"tagging incoming keys against {len(first)} of "
                 f"{count_of(len(current), 'file')} (the batch's partitions; index scope "
                 f"{cfg.index_scope}{bloom})")
    progress.phase("tag")
    tagged, stats = tagger.tag_persisted(batch, first)
    try:
        tagger.check_not_null_groups(stats)
        if keys and rest and tagger.across_table:
            tagged, stats = tagger.tag_the_unfound(tagged, stats, rest)
        groups, spark_path_of = tagger.groups(stats)
        window = window_condition(cfg)
        if window is not None:
            groups += _window_groups(job, tagger, current, window)
        sizing = Sizing(bpr, cfg.target_file_size, cfg.small_file_limit, cfg.insert_split_size)
        plan = plan_upsert(groups, {f.path: f.bytes for f in current}, job.pcols, sizing,
                           excluded=pending_plan_files(job.proto.timeline),
                           file_rows={f.path: f.rows for f in current})
        summary = plan.summary
        progress(f"plan: {count_of(summary['files_rewritten'], 'file')} rewritten, "
                 f"{count_of(summary['new_files'], 'new file')}, "
                 f"{count_of(summary['inserts_into_existing'], 'insert')} packed into small "
                 f"files, {summary['inserts_into_new']} into new files, "
                 f"{count_of(summary['updates'], 'row')} updated or deleted")
        if plan.slots:
            slots = _slot_write(job, plan, tagged, tagger, spark_path_of, current, staging)
            bloom = write_options(bloom_key(cfg, job.df.columns), cfg.target_file_size, bpr)
            write_slots(job.spark, replace(slots, drop=window, options=bloom), progress)
        return plan
    finally:
        tagged.unpersist()


def window_condition(cfg: SizedConfig) -> Optional[str]:
    """A microbatch batch's window as a SQL condition on the table's rows, written as dbt
    filters the model's inputs by event_time (so a date and a timestamp column compare as
    they do there); None outside a batch."""
    if cfg.incremental_strategy != "microbatch" or cfg.batch_window is None:
        return None
    col = "`" + cast(str, cfg.event_time).replace("`", "``") + "`"  # microbatch requires it
    start, end = (t.replace("'", "\\'") for t in cfg.batch_window)
    return f"{col} >= '{start}' AND {col} < '{end}'"


def _window_groups(job, tagger, current, window) -> List[TagGroup]:
    """The files holding rows of the batch's window, as groups of deleted rows (one per
    file, its rows in the window): the plan rewrites them without those rows. One job reads
    the event_time column of the table's files, Parquet statistics skipping row groups
    outside the window."""
    if not current:
        return []
    rows = (read_files(job.spark, tagger.location, tagger.schema, [f.path for f in current])
            .where(window).groupBy(F.col("_metadata.file_path").alias("f")).count().collect())
    prefix = unquote(tagger.location)
    by_path = {f.path: f for f in current}
    groups = []
    for r in rows:
        rel = unquote(r["f"])[len(prefix):].lstrip("/")
        values = tuple(text for _c, text in parse_partition_path(by_path[rel].partition))
        groups.append(TagGroup(values, values, rel, True, True, r["count"]))
    job.progress(f"window {job.cfg.batch_window[0]} .. {job.cfg.batch_window[1]}: "
                 f"{count_of(sum(g.rows for g in groups), 'row')} in "
                 f"{count_of(len(groups), 'file')} replaced")
    return groups


def _slot_write(job, plan: UpsertPlan, tagged, tagger, spark_path_of, current,
                staging) -> SlotWrite:
    """The rows of every slot (rewritten files' old rows, batch rows bound for them, batch
    rows bound for new files) and how to write them."""
    spark, pcols, keys = job.spark, job.pcols, tagger.keys
    columns = [*job.data_cols, *pcols]
    rewrites = plan.rewrites
    old = keys_df = None
    bound = []
    if rewrites:
        # Old rows of the rewritten files only: the file list prunes every other file before
        # it is opened.
        # a rewrite's slot names its file (UpsertPlan.rewrites)
        rewritten = [cast(str, s.file) for s in rewrites]
        files = read_files(spark, job.proto.location, tagger.schema, rewritten)
        files = tagger.with_file_path(
            files.withColumn(FIRST_ROW, F.col("_metadata.row_index") == 0))
        old = with_file_values(spark, files, pcols, {cast(str, s.file): s.slot for s in rewrites},
                               SLOT)
        old = select_names(old, [*columns, SLOT, FIRST_ROW, *tagger.old_row_file])
        if keys:  # an incoming key replaces (or deletes) its old row
            keys_df = tagger.replaced_keys(tagged)
        updated = [(spark_path_of[s.file], s.slot) for s in rewrites if s.file in spark_path_of]
        if updated:
            upd_map = F.broadcast(local_table(spark, [("__sized_file", "string"), (SLOT, "bigint")],
                                              updated))
            updates = tagged.where("__sized_same and not __sized_del").join(upd_map, "__sized_file")
            bound.append(select_names(updates, [*columns, SLOT]))
    to_rewrites, to_new = _insert_rows(spark, plan, tagged, keys or columns, columns, pcols)
    entry = {f.path: f for f in current}
    return SlotWrite(old=old, keys=keys_df, bound=_union(bound + [to_rewrites]), fresh=to_new,
                     columns=columns, pcols=pcols, weights=plan.weights, match=tagger.match,
                     rewrite_slots={s.slot for s in rewrites}, batch_bytes=cached_size(tagged),
                     key_bytes=-1 if keys_df is None else estimated_bytes(keys_df, tagger.batch_rows),
                     rows_unknown=any(entry[s.file].rows <= 0 for s in rewrites),
                     largest_file=max((entry[s.file].bytes for s in rewrites), default=0),
                     staging=staging)


def _insert_rows(spark, plan, tagged, hashed, columns, pcols):
    """(inserts bound for rewritten files, inserts bound for new files), each with its slot:
    per partition, each slot takes a range of a hash of the key; one table of ranges for
    each side, each joined once."""
    out = {True: None, False: None}
    if not plan.ranges:
        return out[True], out[False]
    ins = tagged.where("not __sized_del and not __sized_same").withColumn(
        "__sized_u", _unit_hash(hashed))
    range_columns = [*[(f"__sized_p{i}", "string") for i in range(len(pcols))],
                     ("__sized_lo", "double"), ("__sized_hi", "double"), (SLOT, "bigint")]
    for to_rewrite in (True, False):
        rows = [r.values + (r.lo, r.hi, r.slot) for r in plan.ranges if r.rewrites_file == to_rewrite]
        if not rows:
            continue
        imap = F.broadcast(local_table(spark, range_columns, rows))
        cond = (ins["__sized_u"] >= imap["__sized_lo"]) & (ins["__sized_u"] < imap["__sized_hi"])
        for i, col in enumerate(pcols):
            cond = cond & ins[col].cast("string").eqNullSafe(imap[f"__sized_p{i}"])
        out[to_rewrite] = select_names(ins.join(imap, cond), [*columns, SLOT])
    return out[True], out[False]
