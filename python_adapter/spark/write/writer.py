"""Sized writes of a model's result through the commit protocol: full builds and
insert_overwrite here (planned by `core.planning`, routed by `distribution`), upsert and
insert in `upsert`. Everything that changes the table, its definition in the metastore
included, happens under its writer lock, as one Transaction."""
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from typing import Callable, Dict, Iterator, List, Optional, Tuple, cast

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from python_adapter.io.session_info import default_parallelism
from python_adapter.core.config import SizedConfig, check_columns
from python_adapter.core.partitions import check_partition_texts
from python_adapter.core.planning import bounded_bytes_per_row, plan_partitions, plan_static
from python_adapter.core.sizes import count_of, format_size
from python_adapter.errors import ConfigError, WriteError
from python_adapter.io.filesystems import filesystem
from python_adapter.spark.catalog.tables import (TableInfo, TableRef, create_table, describe_table,
                                          drop_definition, show_create, require_parquet,
                                          table_location)
from python_adapter.spark.write.distribution import distribute, matched_by_value
from python_adapter.spark.job import (Progress, Route, RowChanges, Staged, WriteJob, WriteResult,
                                      Written, cache_batch, delete_flag, job_phases,
                                      resolve_names, worth_caching)
from python_adapter.spark.write.constraints import (check_not_null_rows, check_null_counts,
                                              null_count_names, null_counts,
                                              refuse_null_like_partitions)
from python_adapter.spark.handle import Locked, TableHandle, partitions_holding
from python_adapter.spark.locking import adopt_if_foreign, locked_locations
from python_adapter.spark.write.measure import raw_row_bytes
from python_adapter.spark.write.schema_change import apply_schema_change, needs_new_definition
from python_adapter.spark.session_conf import session_conf
from python_adapter.spark.write.small_batch import stage_small_insert, write_without_count
from python_adapter.spark.write.bloom import BLOOM_KEY, bloom_key, write_options
from python_adapter.spark.write.staging import bytes_per_row, known_bytes_per_row, staged_entries
from python_adapter.spark.write.upsert import (KeyRules, check_predicates, key_scope, stage_upsert,
                                        validate_keys)
from python_adapter.table.archive import RETAIN_COMMITS, RETAIN_HOURS
from python_adapter.table.faults import fault_point
from python_adapter.table.lock import LockOptions
from python_adapter.table.files import current_files
from python_adapter.table.timeline import (DEFINES_TABLE, PREVIOUS_DDL, PREVIOUS_LOCATION,
                                           PREVIOUS_TYPE, FileEntry, Instant, meta_dir_of,
                                           setting_aside_unreadable)
from python_adapter.table.transaction import TxnOptions


@contextmanager
def write_job(spark: SparkSession, df: DataFrame, table: TableRef, cfg: SizedConfig,
              log: Callable[[str], None] = print) -> Iterator[WriteJob]:
    """The job of one write of df into `table`, its config checked against df's columns;
    the Spark UI's job descriptions name its phases while it is open."""
    check_columns(cfg, df.columns)
    check_predicates(df, cfg)
    name = f"{table.schema}.{table.identifier}"
    with job_phases(spark, name, "prepare") as phases:
        progress = Progress(log, name, phases)
        yield WriteJob(spark, filesystem(spark), None, df, table, cfg,
                       resolve_names(cfg.partition_by, df.columns), progress)


def _open_for_write(job: WriteJob, target: str) -> TableHandle:
    """The table's handle as the write finds it (described once): a view of its name is
    dropped (a model that was a view becomes a table)."""
    info = describe_table(job.spark, job.table)
    if info is not None and info.table_type == "VIEW":
        job.spark.sql(f"DROP VIEW IF EXISTS {job.table.quoted}")
        info = None
    here = job.fs.qualify(info.location) if info is not None else target
    handle = TableHandle(job.spark, job.table, job.fs, here, info, job.progress)
    handle.note_timelines(dict.fromkeys([target, here]))
    return handle


def write_locked(job: WriteJob, full_refresh: bool = False) -> Tuple[WriteResult, str]:
    """The write under the table's lock, on the table as recovery leaves it; returns the
    result and the location written."""
    spark, fs, table, cfg, df = job.spark, job.fs, job.table, job.cfg, job.df
    target = fs.qualify(table_location(spark, table))
    handle = _open_for_write(job, target)
    for _attempt in range(3):
        existing = handle.info
        if existing is not None and not full_refresh:
            require_parquet(existing, table, f"an incremental run ({cfg.incremental_strategy})")
        here = fs.qualify(existing.location) if existing is not None else None
        operation = "full_refresh" if full_refresh or existing is None else cfg.incremental_strategy
        lock = LockOptions(lease=cfg.lock_lease, timeout=cfg.lock_timeout)
        # a full refresh replaces every file: an unreadable record of them is set aside
        aside = setting_aside_unreadable() if full_refresh else nullcontext()
        # here only when it is not None
        with aside, locked_locations(handle, operation,
                                     cast(List[str], [target] + [here] * (here is not None)),
                                     lock=lock) as protos:
            # recovery may have restored or dropped it, another writer redefined it
            existing = handle.info_under_lock(protos)
            now = fs.qualify(existing.location) if existing is not None else None
            if now is not None and now not in (target, here):
                continue  # recovery put back a definition elsewhere: lock that place too
            job = replace(job, locked=Locked(handle, protos[0], lock))
            if existing is None or (full_refresh and needs_new_definition(
                    existing, df, job.pcols, now, target)):
                return _define_write(job, existing), target
            if now != target:  # location_root changed: it takes effect on a full refresh
                job = replace(job, locked=Locked(
                    handle, next(p for p in protos if p.location == now), lock))
            # an existing table has a location: now is not None
            return _write_existing(job, existing, full_refresh), cast(str, now)
    raise WriteError(f"{table.quoted} kept moving while it was being locked; try again")


def _write_existing(job: WriteJob, existing: TableInfo, full_refresh: bool) -> WriteResult:
    """An incremental run, or a full refresh that keeps the table's definition."""
    operation = "full_refresh" if full_refresh else job.cfg.incremental_strategy
    if not full_refresh and operation == "microbatch" and job.cfg.batch_window is None:
        raise ConfigError("incremental_strategy: 'microbatch' runs in dbt's batches, which dbt "
                          "makes only for materialized='incremental'; this run has no batch "
                          "window, so nothing was written")
    if not full_refresh:
        if [c.lower() for c in existing.partition_columns] != [c.lower() for c in job.pcols]:
            raise ConfigError(
                f"partition_by: the table is partitioned by {list(existing.partition_columns)}, "
                f"the model by {list(job.pcols)}; run with --full-refresh to change it")
        # write_locked gives the job its Locked before it comes here
        adopt_if_foreign(cast(Locked, job.locked), _key_column(job.cfg, existing))
        df, existing = apply_schema_change(job, existing)
        job = replace(job, df=df)
    return _commit_write(replace(job, operation=operation, table_schema=existing.read_schema)
                         .shaped(existing.column_names))


def _key_column(cfg: SizedConfig, existing: TableInfo) -> Optional[str]:
    """The table's spelling of the first unique_key column, the one whose range per file the
    timeline keeps; None without a key or when the table lacks it (a column to be added)."""
    names = {c.lower(): c for c in existing.column_names}
    return names.get(cfg.unique_key[0].lower()) if cfg.unique_key else None


def _define_write(job: WriteJob, existing: Optional[TableInfo]) -> WriteResult:
    """A first build, or a full refresh that changes the table's definition: the new files
    and the new definition are one instant. The old definition is recorded in it (its
    CREATE statement), the old files are set aside, and the old definition is dropped
    without its files only after the new files are in place; a crash at any point is
    rolled back to the old table by the next writer (catalog.restore_definitions)."""
    spark, fs, proto, table = job.spark, job.fs, job.proto, job.table
    _check_location_is_free(fs, proto, table, existing)
    extra = {DEFINES_TABLE: "true"}
    if existing is not None:
        job.progress(f"the table's definition changes: recreating {table.quoted}")
        extra.update({PREVIOUS_DDL: show_create(spark, table),
                      PREVIOUS_LOCATION: fs.qualify(existing.location),
                      PREVIOUS_TYPE: existing.table_type})
    same_place = existing is not None and fs.qualify(existing.location) == proto.location
    # same_place only when existing is not None
    managed = cast(TableInfo, existing).table_type == "MANAGED" if same_place \
        else not table.location_root

    def define(instant):
        if existing is not None:
            drop_definition(spark, table)
            fault_point("dropped")
        create_table(spark, table, job.df.schema, job.pcols, proto.location, instant.instant,
                     managed)
        fault_point("defined")

    job = replace(job, operation="full_refresh").shaped(job.df.columns)
    result = _commit_write(job, extra=extra, define=define)
    if existing is not None and not same_place and existing.table_type == "MANAGED":
        # The old definition was managed: its DROP would have deleted its files.
        old = fs.qualify(existing.location)
        fs.delete(old)
        fs.delete(meta_dir_of(old))
    return result


def _check_location_is_free(fs, proto, table, existing):
    """A new definition's location must hold no files but those of the table it replaces."""
    if existing is not None and fs.qualify(existing.location) == proto.location:
        return
    leftovers = fs.list_files(proto.location) if fs.exists(proto.location) else []
    if leftovers:
        raise WriteError(f"cannot create {table.quoted}: its location {proto.location} already "
                         f"holds {count_of(len(leftovers), 'file')} of no table; move them "
                         f"away first")


def _commit_write(job: WriteJob, extra: Optional[dict] = None, define=None) -> WriteResult:
    """The write as one Transaction: stage the new files, then commit them."""
    cfg, proto = job.cfg, job.proto
    current = _current(job)
    # a full refresh may follow a table recreated over files of no table: it registers
    # every partition it writes; other writes know those that hold files now
    registered = frozenset() if job.operation == "full_refresh" else partitions_holding(current)
    with cast(Locked, job.locked).transaction(job.operation, TxnOptions(extra={
            "target_file_size": cfg.target_file_size, "small_file_limit": cfg.small_file_limit,
            "distribution": cfg.distribution, RETAIN_COMMITS: cfg.retain_commits,
            RETAIN_HOURS: cfg.retain_hours, BLOOM_KEY: bloom_key(cfg, job.df.columns) or "",
            **(extra or {})}, registered=registered, define=define),
            partition_columns=job.pcols) as txn:
        job = replace(job, extra=txn.extra, staging=proto.staging_dir(txn.id))
        staged = _stage(job, current)
        txn.add(staged.added)
        txn.remove(staged.removed)
        txn.note(bytes_per_row=f"{staged.bytes_per_row or 0:.3f}")
        job.progress(f"publishing {count_of(len(staged.added), 'file')}, replacing "
                     f"{len(staged.removed)}", phase="publish")
    done = cast(Instant, txn.done)  # the transaction completed
    result = WriteResult(
        operation=job.operation, instant=done.instant,
        partitions=len({a.partition for a in staged.added}), files_planned=staged.files_planned,
        files_written=len(staged.added), files_removed=len(staged.removed),
        files_before=staged.files_before, rows=done.rows_written, bytes=done.bytes_written,
        bytes_per_row=staged.bytes_per_row or 0.0, seconds=job.progress.elapsed,
        changes=staged.changes, target_file_size=cfg.target_file_size,
        partitioned=bool(job.pcols), route=staged.route)
    job.progress(f"done: {result.message}")
    return result


def _current(job: WriteJob) -> List[FileEntry]:
    """The table's files before the write, checked against the timeline's record unless
    the write replaces them all: a full refresh replaces every file, so files changed
    outside the timeline do not matter to it; the others keep some and check them."""
    full = job.operation == "full_refresh"
    return current_files(job.fs, job.proto.location, job.proto.timeline,
                         check=None if full else job.table_name)


def _stage(job: WriteJob, current: List[FileEntry]) -> Staged:
    """Plan and write the new files to the instant's staging area."""
    staging = job.staging + "/data"
    if job.operation in ("upsert", "insert", "microbatch"):
        small = stage_small_insert(job, staging, current) if job.operation == "insert" else None
        return small or stage_upsert(job, staging, current)
    full = job.operation == "full_refresh"
    df = _rows_to_write(job)
    written = write_without_count(job, df, staging) or _write_planned(job, df, staging)
    added = written.added
    touched = {a.partition for a in added}
    removed = current if full or not job.pcols else [f for f in current if f.partition in touched]
    rows = sum(max(a.rows, 0) for a in added)
    return Staged(added, removed, written.files_planned, written.bytes_per_row, len(current),
                  RowChanges(inserted=rows), written.route)


def _write_planned(job: WriteJob, df: DataFrame, staging: str) -> Written:
    """Count the rows per partition, plan the files and route the rows to them."""
    cfg, pcols, progress = job.cfg, job.pcols, job.progress
    cache = (cfg.distribution != "none" and df.storageLevel == StorageLevel.NONE
             and worth_caching(df))
    cached = cache_batch(job.spark, df) if cache else df
    try:
        plan = _plan(replace(job, df=cached))
        parts = count_of(len(plan.plans), "partition") if plan.plans is not None \
            else "? partitions"
        files = count_of(plan.total_files, "file") if plan.total_files else "Spark-chosen files"
        progress(f"plan: {parts}, {files}, "
                 f"target {format_size(cfg.target_file_size, cfg.target_file_size)}, "
                 f"distribution {cfg.distribution}")
        if plan.total_rows != 0:
            progress("writing files to staging", phase="write")
            out = distribute(job.spark, cached, pcols, cfg.distribution, plan.total_files,
                             plan.plans, bytes_per_row=plan.bytes_per_row)
            bloom = write_options(bloom_key(cfg, df.columns), cfg.target_file_size,
                                  plan.bytes_per_row)
            out.write.partitionBy(*pcols).options(**bloom).mode("overwrite").parquet(staging)
        key_col = resolve_names(cfg.unique_key[:1], df.columns)[0] if cfg.unique_key else None
        added = staged_entries(job.spark, job.fs, staging, key_col)
        progress(f"wrote {count_of(len(added), 'file')}, "
                 f"{format_size(sum(a.bytes for a in added), cfg.target_file_size)}")
    finally:
        if cache:  # persist() returns the same object: remember whether we cached it
            cached.unpersist()
    return Written(added, plan.total_files, plan.bytes_per_row, Route.PLANNED)


def _rows_to_write(job):
    """The model's rows as a full build or insert_overwrite writes them: keys checked (and
    deduped by precombine_column) when the model has an upsert key, deletes dropped."""
    cfg, df = job.cfg, job.df
    if cfg.incremental_strategy == "upsert":
        keys = resolve_names(cfg.unique_key, df.columns)
        df = validate_keys(df, KeyRules(keys, cfg.precombine_column, key_scope(cfg, job.pcols))).df
    if cfg.delete_column:
        df = df.where(~delete_flag(cfg))
    return df


@dataclass(frozen=True)
class _FilePlan:
    plans: Optional[Dict]           # partition texts -> PartitionPlan; None: Spark decides
    total_files: int
    bytes_per_row: Optional[float]
    total_rows: Optional[int]


def _plan(job: WriteJob) -> _FilePlan:
    """Files per partition: rows counted per partition, times bytes per row, over the
    target (docs/design.md, Algorithms 1); a static file_count is spread over the partitions."""
    cfg, progress, df = job.cfg, job.progress, job.df
    need_counts = cfg.distribution != "none" and (
        cfg.file_count is None or cfg.distribution in ("exact", "hash"))
    not_null = resolve_names(cfg.not_null_columns, df.columns)
    if not need_counts:
        refuse_null_like_partitions(df, job.pcols)
        check_not_null_rows(df, not_null)
    if cfg.distribution == "none":
        return _FilePlan(None, 0, None, None)
    rows_by_partition = total_rows = None
    # a first build counts the rows' raw size too: a bound that may spare the sample
    raw = raw_row_bytes(df, job.data_cols) if need_counts and cfg.file_count is None and \
        known_bytes_per_row(job)[0] is None else None
    if need_counts:
        progress("counting rows per partition", phase="count")
        rows_by_partition, raw_by_partition = _count_by_partition(df, job.pcols, not_null, raw)
        total_rows = sum(rows_by_partition.values())
        progress(f"counted {count_of(total_rows, 'row')} in "
                 f"{count_of(len(rows_by_partition), 'partition')}")
    if cfg.file_count is not None:
        if rows_by_partition is None:
            return _FilePlan(None, cfg.file_count, None, None)
        plans = plan_static(rows_by_partition, cfg.file_count)
        return _FilePlan(plans, sum(p.files for p in plans.values()), None, total_rows)
    assert rows_by_partition is not None  # file_count is None: need_counts, so counted
    bounded = bounded_bytes_per_row(rows_by_partition, raw_by_partition, len(job.data_cols),
                                    cfg.target_file_size) if raw is not None else None
    bpr, source = (bounded, "a bound of the rows' raw size: one file a partition") if bounded \
        else bytes_per_row(job, df, total_rows, max(rows_by_partition.values(), default=0))
    if not total_rows:
        return _FilePlan({}, 0, bpr, 0)
    # bytes_per_row gives None only for no rows, returned above
    plans = plan_partitions(rows_by_partition, cast(float, bpr), cfg.target_file_size,
                            cfg.insert_split_size)
    progress(f"bytes per row {bpr:.1f} B (from {source})")
    return _FilePlan(plans, sum(p.files for p in plans.values()), bpr, total_rows)


RAW_BYTES = "_sized_raw_bytes"


def _count_by_partition(df, pcols, not_null=(), raw=None):
    """({partition value texts: rows}, {the same: sum of `raw`, a Column, when given}) in
    one aggregation ({(): rows} when unpartitioned);
    partition values as the texts Spark names their directories by (core/partitions.py),
    grouped by value where each value has one text (distribution.matched_by_value), so only
    the distinct values are cast. Its shuffle carries one row per task and partition value, so it gets as many shuffle
    partitions as the session has cores, not the session's default (200 map outputs per
    task cost more than the count here). The same aggregation counts the nulls of the
    not_null columns, and fails the write when there are any."""
    sums = [F.sum(raw).alias(RAW_BYTES)] if raw is not None else []
    count = [F.count(F.lit(1)).alias("count"), *sums, *null_counts(not_null)]
    if not pcols:
        row = df.agg(*count).first()
        check_null_counts(not_null, [row])
        return {(): row["count"]}, ({(): row[RAW_BYTES] or 0} if sums else {})
    keys = [F.col(c) if matched_by_value(df.schema[c].dataType) else F.col(c).cast("string")
            for c in pcols]
    grouped = df.groupBy(*[k.alias(c) for k, c in zip(keys, pcols)]).agg(*count)
    texts = grouped.select(*[F.col(c).cast("string") for c in pcols], "count",
                           *([RAW_BYTES] if sums else []), *null_count_names(not_null))
    cores = default_parallelism(df.sparkSession)
    with session_conf(df.sparkSession, {"spark.sql.shuffle.partitions": cores}):
        rows = texts.collect()
    check_null_counts(not_null, rows)
    counts = {tuple(r[:len(pcols)]): r["count"] for r in rows}
    check_partition_texts(pcols, counts)
    raws = {tuple(r[:len(pcols)]): r[RAW_BYTES] or 0 for r in rows} if sums else {}
    return counts, raws
