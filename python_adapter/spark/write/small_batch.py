"""Small batches: rows that Spark estimates at a few megabytes are written by one task, one
file per partition, with no count, no bytes-per-row sample and no shuffle. The ideal layout
of a batch below the target is one file per partition, and for a 1,000-row model the count,
the plan and the routing of a planned write cost more than the write (benchmarks/startup.py).

- A full build or insert_overwrite writes the rows as they are (`write_without_count`).
- An insert tops up each touched partition's emptiest small file, as the bin-packing plan
  does when that file has room (`stage_small_insert`): the task reads that file and writes
  it again with the partition's new rows; partitions without a small file get a new file.
  When no partition of the table has a small file to top up, the batch is written as it
  is, with no query before the write to find its partitions.
- An upsert whose files are small together is merged by one task (`upsert._as_small_merge`,
  with `write_one_task`).

The estimate is the optimizer's (sizeInBytes of the optimized plan), which runs high for
scans, filters and joins: a partitioned table without statistics in the metastore is 8 EB
to it, a join the product of its sides. Above the target, the bytes of the files the plan
reads, scaled by the share of their columns the model keeps, stand in for it when every
leaf of the plan is a file source (`batch_size`): a model that filters, projects,
aggregates or looks rows up in a join writes about what it reads or less. A partitioned
build whose partitions each fit one target file (bounded by its source's directories when
it is partitioned as its source is) goes a file a partition in one pass. A plan that can
make more rows than it reads (a generator such as explode) is not trusted, and goes the
planned way. The files are checked after the write: one above the target sends the batch
the planned way after all, so the layout rules hold
whatever the estimate said. What the planned write's count checks on the way (not_null
columns, partition values that read back as NULL) is checked here too, before anything
reaches the table."""
import math
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Set, cast

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from python_adapter.io.fs import by_parent
from python_adapter.io.interfaces import FileSystem
from python_adapter.io.session_info import PlanStats, default_parallelism, plan_stats
from python_adapter.core.binpack import small_files
from python_adapter.core.partitions import (check_partition_texts, parse_partition_path,
                                            partition_path)
from python_adapter.core.planning import (is_small_batch, writes_a_file_a_partition,
                                          writes_small_batches)
from python_adapter.core.sizes import count_of, format_size
from python_adapter.spark.write.bloom import bloom_key, write_options
from python_adapter.spark.write.distribution import matched_by_value
from python_adapter.spark.write.constraints import (check_not_null_rows, check_null_counts,
                                              null_counts, refuse_null_like_partitions)
from python_adapter.spark.job import (Route, RowChanges, Staged, WriteJob, Written, delete_flag,
                                      resolve_names, select_names)
from python_adapter.spark.write.staging import known_bytes_per_row, staged_entries
from python_adapter.spark.table_files import read_files
from python_adapter.table.timeline import FileEntry, pending_plan_files

# A generator node in a plan's tree string (explode, posexplode, inline, stack, a UDTF).
_GENERATE = re.compile(r"(?m)^[\s:+\-]*Generate\b")
# The leaves a plan is sized from its files through: a file source's relation (a catalog
# table or a path; `RelationV2`, `HiveTableRelation`, `Range`, an RDD or a cache are not),
# and the leaves of one row or none.
_FILE_LEAF = re.compile(r"Relation |OneRowRelation|LocalRelation <empty>")
# A catalog table's relation: `Relation spark_catalog.db.t[id#1L,...] parquet`.
_RELATION_NAME = re.compile(r"Relation ([^\[\s]+)\[")
_RELATION_ATTRIBUTES = re.compile(r"\[([^\[\]]*)\] \w+$")
# The output list closing a plan's top line: `Project [a#1, b#2L]`, `Aggregate [..], [..]`.
_OUTPUT_LIST = re.compile(r"^(?:Project|Aggregate) .*\[([^\[\]]*)\]$")
# An attribute passed through as it is: `event_date#6`, `id#0L`.
_ATTRIBUTE = re.compile(r"[\w`.]+#\d+L?")
# Directories listed at most to size a plan from its files (a listing each): a plan that
# reads more keeps Spark's estimate.
_LISTED_DIRS = 64


@dataclass(frozen=True)
class BatchSize:
    """What a batch weighs in bytes before it is written (batch_size)."""
    total: int
    # its largest partition's bytes when the files its plan reads tell (largest_partition)
    largest_partition: Optional[int] = None


def batch_size(job: WriteJob, df: DataFrame) -> Optional[BatchSize]:
    """What df's rows come to in bytes as far as the write can tell before writing them:
    Spark's estimate, or when that is above the target, the bytes of the files its plan
    reads scaled by the share of their columns it keeps (read_sizes, width_share), and then
    also its largest partition's (largest_partition). An estimate may be low: the staged
    files are checked. None when the plan may make more rows than it reads (a generator's
    are in no estimate)."""
    stats = plan_stats(df, optimized=True)
    optimized = cast(str, stats.optimized)  # asked for
    if _GENERATE.search(optimized):
        return None
    if stats.size <= job.cfg.target_file_size:
        return BatchSize(stats.size)
    sizes = read_sizes(job.fs, df, optimized)
    if sizes is None:
        return BatchSize(stats.size)
    share = width_share(job.spark, stats)
    largest = largest_partition(df, job.pcols, sizes) if job.pcols else None
    return BatchSize(min(stats.size, math.ceil(sum(sizes.values()) * share)),
                     None if largest is None else math.ceil(largest * share))


def largest_partition(df: DataFrame, pcols: Sequence[str], sizes: Dict[str, int]
                      ) -> Optional[int]:
    """The bytes read for df's largest partition, when its partition columns are a source's
    partition columns passed through as they are (Project [event_date#6] over a
    Relation [..., event_date#6]): a partition's rows then come from the files under that
    partition's directories of the source, and from the files of the plan's unpartitioned
    tables (a lookup join), counted for every partition. None otherwise."""
    if not partitions_pass_through(df, pcols):
        return None
    names = [c.lower() for c in pcols]
    by_value: Dict[tuple, int] = {}
    shared = 0
    for directory, size in sizes.items():
        named = "/".join(seg for seg in directory.split("/") if "=" in seg)
        parts = {k.lower(): v for k, v in parse_partition_path(named)}
        if not any(n in parts for n in names):
            shared += size
        elif all(n in parts for n in names):
            key = tuple(parts[n] for n in names)
            by_value[key] = by_value.get(key, 0) + size
        else:
            return None
    return max(by_value.values(), default=0) + shared


def partitions_pass_through(df: DataFrame, pcols: Sequence[str]) -> bool:
    """Whether each of df's partition columns is a column of a relation the plan reads,
    passed through unchanged (the same attribute at the top of the optimized plan)."""
    top = cast(str, plan_stats(df.select(*pcols), optimized=True).optimized)  # asked for
    output = _OUTPUT_LIST.search(top.splitlines()[0]) if top.strip() else None
    if output is None:
        return False
    attributes = [a.strip() for a in output.group(1).split(",")]
    read: Set[str] = set()
    for leaf in plan_leaves(top):
        if leaf.startswith("Relation "):
            listed = _RELATION_ATTRIBUTES.search(leaf)
            if listed is None:
                return False
            read.update(listed.group(1).split(","))
    return len(attributes) == len(pcols) and all(
        _ATTRIBUTE.fullmatch(a) and a in read for a in attributes)


def width_share(spark: SparkSession, stats: PlanStats) -> float:
    """The share of its tables' row width the plan's rows keep, by Spark's default sizes of
    their columns (as Spark scales a projection's estimate): a model that reads four of a
    source's seven columns writes about that share of the files' bytes. At most 1; 1 when
    a leaf's table cannot be told (a path's relation)."""
    widths = []
    for leaf in plan_leaves(cast(str, stats.optimized)):  # batch_size asked for it
        if not leaf.startswith("Relation "):
            continue  # a leaf of one row or none
        named = _RELATION_NAME.match(leaf)
        if named is None:
            return 1.0
        try:
            widths.append(plan_stats(spark.table(named.group(1))).default_size)
        except AnalysisException:
            return 1.0
    return min(1.0, stats.default_size / sum(widths)) if sum(widths) > 0 else 1.0


def read_sizes(fs: FileSystem, df: DataFrame, plan_text: str) -> Optional[Dict[str, int]]:
    """{directory: bytes of the files df's plan reads in it} (after partition pruning), from
    a listing of each; None when a leaf of the plan is not a file source or the files lie
    in more than _LISTED_DIRS directories."""
    if not all(_FILE_LEAF.match(leaf) for leaf in plan_leaves(plan_text)):
        return None
    by_dir = by_parent(df.inputFiles())
    if len(by_dir) > _LISTED_DIRS:
        return None
    out = {}
    for directory, named in by_dir.items():
        sizes = {st.name: st.size for st in fs.list_dir(directory) if not st.is_dir}
        if any(name not in sizes for name, _ in named):
            return None  # a directory (a Hive table's location) or a file gone
        out[directory] = sum(sizes[name] for name, _ in named)
    return out


def plan_leaves(plan_text: str) -> List[str]:
    """The leaf nodes of a plan's tree string (`+- ` and `:- ` mark a child one level
    deeper): the lines the next line is not deeper than."""
    lines = [line for line in plan_text.splitlines() if line.strip()]
    depths = [len(line) - len(line.lstrip(" :+-")) for line in lines]
    return [line.lstrip(" :+-") for i, line in enumerate(lines)
            if i + 1 == len(lines) or depths[i + 1] <= depths[i]]


def small_estimate(job: WriteJob, df: DataFrame) -> Optional[int]:
    """batch_size of df (its total) when the write goes as a small batch, else None."""
    size = _size_without_count(job, df)
    if size is None or not is_small_batch(size.total, job.cfg.target_file_size):
        return None
    return size.total


def _size_without_count(job: WriteJob, df: DataFrame) -> Optional[BatchSize]:
    """batch_size of df when the write may go without a count, else None."""
    if not writes_small_batches(job.cfg, job.operation):
        return None
    if bloom_key(job.cfg, df.columns) and known_bytes_per_row(job)[0] is None:
        return None  # its Bloom filter is sized for a full file's rows: plan it
    return batch_size(job, df)


def write_one_task(job: WriteJob, rows: DataFrame, staging: str) -> Optional[List[FileEntry]]:
    """Write rows to staging from one task, a file per partition: the staged files (with
    rows), or None when one came out above the target (staging deleted: plan the batch)."""
    return _write_staged(job, rows.coalesce(1), rows.columns, staging)


def _write_staged(job: WriteJob, out: DataFrame, columns, staging: str
                  ) -> Optional[List[FileEntry]]:
    """write_one_task of rows already in the tasks that write them."""
    cfg, target = job.cfg, job.cfg.target_file_size
    key = bloom_key(cfg, columns)
    options = write_options(key, target, known_bytes_per_row(job)[0])
    out.write.partitionBy(*job.pcols).options(**options).mode("overwrite").parquet(staging)
    key_col = resolve_names(cfg.unique_key[:1], columns)[0] if cfg.unique_key else None
    added = [a for a in staged_entries(job.spark, job.fs, staging, key_col) if a.rows != 0]
    if any(a.bytes > target for a in added):
        job.progress("a file came out above the target: planning the batch")
        job.fs.delete(staging)
        return None
    return added


def write_without_count(job: WriteJob, df: DataFrame, staging: str) -> Optional[Written]:
    """A full build or insert_overwrite of df written to staging without a count when its
    size allows (batch_size): a small batch by one task, or a partitioned batch whose
    partitions each fit one target file a file a partition (write_a_file_a_partition).
    Written, or None when it is neither or a file came out above the target (the caller
    plans the write)."""
    size = _size_without_count(job, df)
    if size is None:
        return None
    cfg, partitioned = job.cfg, bool(job.pcols)
    if is_small_batch(size.total, cfg.target_file_size):
        return _write_as_it_is(job, df, staging, size.total)
    largest = size.total if size.largest_partition is None else size.largest_partition
    if writes_a_file_a_partition(cfg, job.operation, largest, partitioned):
        return write_a_file_a_partition(job, df, staging, size)
    return None


def write_a_file_a_partition(job: WriteJob, df: DataFrame, staging: str, size: BatchSize
                             ) -> Optional[Written]:
    """A partitioned full build or insert_overwrite whose rows come to within one target
    file (core/planning.writes_a_file_a_partition): its rows go to tasks by their partition
    values (each partition's rows in one task: one file) in one pass, without a count
    (the count is 1-3 s of a partitioned first build in benchmarks/daily.py); checked from
    the staged files as a small batch is. Written, or None when a file came out above the
    target (the caller plans the write)."""
    target = job.cfg.target_file_size
    largest = ("" if size.largest_partition is None else
               f", the largest partition {format_size(size.largest_partition, target)}")
    job.progress(f"the rows come to about {format_size(size.total, target)}{largest}: "
                 f"one task writes each partition's file, no count", phase="write")
    # rows of one directory's text hash alike (values of one text, distribution.py)
    keys = [F.col(c) if matched_by_value(df.schema[c].dataType) else F.col(c).cast("string")
            for c in job.pcols]
    out = df.repartition(default_parallelism(job.spark), *keys)
    return _checked(job, df, staging, _write_staged(job, out, df.columns, staging),
                    Route.FILE_A_PARTITION)


def _write_as_it_is(job: WriteJob, df: DataFrame, staging: str, estimate: int,
                    why: str = "") -> Optional[Written]:
    """df written to staging by one task, checked from the staged files: Written, or None
    when a file came out above the target (the caller plans the write)."""
    target = job.cfg.target_file_size
    job.progress(f"small batch (Spark estimates {format_size(estimate, target)}): "
                 f"one task writes each partition's file{why}", phase="write")
    return _checked(job, df, staging, write_one_task(job, df, staging), Route.SMALL_BATCH)


def _checked(job: WriteJob, df: DataFrame, staging: str, added: Optional[List[FileEntry]],
             route: Route) -> Optional[Written]:
    """The staged files of df checked as a count would check the rows (_check_staged):
    Written, or None when none were kept (a file above the target)."""
    target = job.cfg.target_file_size
    if added is None:
        return None
    _check_staged(job, df, staging, added)
    job.progress(f"wrote {count_of(len(added), 'file')}, "
                 f"{format_size(sum(a.bytes for a in added), target)}")
    rows = sum(a.rows for a in added)
    return Written(added, len(added), sum(a.bytes for a in added) / rows if rows > 0 else None,
                   route)


def stage_small_insert(job: WriteJob, staging: str, current: List[FileEntry],
                       touched: Optional[List[tuple]] = None) -> Optional[Staged]:
    """An insert of a small batch: each touched partition's emptiest small file (not in a
    pending clustering plan) read and written again with the partition's new rows by one
    task; Staged, or None when it is not a small batch (the caller plans the write).
    touched: the batch's partitions (values as the texts Spark names directories by) when
    a query has found them already; without not_null columns to count, no query runs."""
    cfg = job.cfg
    batch = job.df.where(~delete_flag(cfg))  # an insert writes no row flagged deleted
    estimate = small_estimate(job, batch)
    if estimate is None:
        return None
    not_null = resolve_names(cfg.not_null_columns, batch.columns)
    if touched is None and not not_null and _nothing_to_top_up(job, current):
        return _stage_new_files(job, batch, staging, estimate, current)
    if touched is None or not_null:  # the query finds the partitions and counts the nulls
        groups = _partition_groups(batch, job.pcols, not_null)
        texts = [tuple(g[:len(job.pcols)]) for g in groups]
    else:
        groups, texts = [], touched
    check_partition_texts(job.pcols, texts)
    topped = files_to_top_up(job, {partition_path(job.pcols, t) for t in texts}, current)
    if topped is None:
        return None
    if not texts:  # no rows: nothing to write
        return Staged([], [], 0, None, len(current), RowChanges(), Route.SMALL_INSERT)
    target = cfg.target_file_size
    job.progress(f"small batch (Spark estimates {format_size(estimate, target)}): one task "
                 f"writes each partition's file, topping up {count_of(len(topped), 'small file')}",
                 phase="write")
    check_null_counts(not_null, groups)
    added = write_one_task(job, _with_rows_of(job, batch, topped), staging)
    if added is None:
        return None
    written = sum(a.rows for a in added)
    job.progress(f"wrote {count_of(len(added), 'file')}, "
                 f"{format_size(sum(a.bytes for a in added), target)}, rewriting "
                 f"{format_size(sum(f.bytes for f in topped), target)} of existing "
                 f"files")
    return Staged(added, topped, len(added), sum(a.bytes for a in added) / written,
                  len(current), RowChanges(inserted=written - sum(f.rows for f in topped)),
                  Route.SMALL_INSERT)


def _nothing_to_top_up(job: WriteJob, current: List[FileEntry]) -> bool:
    """Whether no partition of the table has a small file to top up (packing off, or every
    file full): then which partitions the batch touches changes nothing, and no query needs
    to find them before the write."""
    return files_to_top_up(job, {f.partition for f in current}, current) == []


def _stage_new_files(job: WriteJob, batch: DataFrame, staging: str, estimate: int,
                     current: List[FileEntry]) -> Optional[Staged]:
    """An insert that tops up no file: the batch written as a small batch is, a new file in
    each partition it touches, its partitions read from the staged files."""
    written = _write_as_it_is(job, _with_rows_of(job, batch, []), staging, estimate,
                              why="; the table has no small file to top up")
    if written is None:
        return None
    return Staged(written.added, [], written.files_planned, written.bytes_per_row,
                  len(current),
                  RowChanges(inserted=sum(a.rows for a in written.added)), Route.SMALL_INSERT)


def _with_rows_of(job: WriteJob, batch: DataFrame, files: List[FileEntry]) -> DataFrame:
    """The batch's rows in the table's column order, after the rows of `files`."""
    columns = [*job.data_cols, *job.pcols]
    rows = select_names(batch, columns)
    if not files:
        return rows
    old = read_files(job.spark, job.proto.location, job.read_schema(), [f.path for f in files])
    return select_names(old, columns).unionByName(rows)


def _partition_groups(batch: DataFrame, pcols, not_null) -> List[Row]:
    """The batch's partitions in one query: per partition its values as the texts Spark
    names directories by, then its rows and the null counts of the not_null columns; []
    for no rows. The batch is small, so one task aggregates it: coalesce(1) leaves the
    aggregation no shuffle to make (one stage, where a distinct() ran two)."""
    texts = [F.col(c).cast("string").alias(c) for c in pcols]
    rows = batch.coalesce(1).groupBy(*texts).agg(
        F.count(F.lit(1)).alias("__sized_rows"), *null_counts(not_null)).collect()
    return [r for r in rows if r["__sized_rows"]]   # no rows: one group of 0 when unpartitioned


def files_to_top_up(job: WriteJob, touched: set, current: List[FileEntry]
                     ) -> Optional[List[FileEntry]]:
    """The emptiest small file of each touched partition (none in a pending clustering
    plan), as the bin-packing plan picks them; None when such a file's rows are not known
    (the inserted rows are the rows written less the file's)."""
    excluded = pending_plan_files(job.proto.timeline)
    by_partition: Dict[str, List[FileEntry]] = {}
    for f in current:
        if f.partition in touched and f.path not in excluded:
            by_partition.setdefault(f.partition, []).append(f)
    topped = []
    for files in by_partition.values():
        small = small_files([(f.path, f.bytes) for f in files], job.cfg.small_file_limit)
        if small:
            topped.append(next(f for f in files if f.path == small[0][1]))
    return None if any(f.rows < 0 for f in topped) else topped


def _check_staged(job: WriteJob, df: DataFrame, staging: str, added: List[FileEntry]) -> None:
    """The checks a planned write makes in its count: no null in a not_null column (read
    from the staged files), no partition value '' or '__HIVE_DEFAULT_PARTITION__' (they
    share NULL's directory, so only a staged NULL partition sends back to the rows)."""
    not_null = resolve_names(job.cfg.not_null_columns, df.columns)
    if not_null and added:
        pset = {c.lower() for c in job.pcols}
        # partition columns as the directory's text: no type is inferred from it
        schema = T.StructType([f for f in df.schema.fields if f.name.lower() not in pset] +
                              [T.StructField(c, T.StringType()) for c in job.pcols])
        check_not_null_rows(job.spark.read.schema(schema).parquet(staging), not_null)
    if any(text is None for a in added for _c, text in parse_partition_path(a.partition)):
        refuse_null_like_partitions(df, job.pcols)
