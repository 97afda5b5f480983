"""Sized writes of a model's result: full builds and insert_overwrite, through the commit
protocol. Orchestration only: planning is in planning/config, routing in distribution,
file and timeline work in fs/commit.
"""
import time
from urllib.parse import unquote
from dataclasses import asdict, dataclass, field, replace

from pyspark import StorageLevel
from pyspark.sql import functions as F
from pyspark.sql import types as T

from python_adapter.spark.catalog import (TableRef, add_columns, create_table, describe_table,
                                    drop_definition, set_data_columns, show_create,
                                    sync_partitions, table_location)
from python_adapter.table.commit import file_entry
from python_adapter.table.faults import fault_point
from python_adapter.core.partitions import NULL_LIKE, check_partition_texts
from python_adapter.spark.locking import (DEFINES_TABLE, PREVIOUS_DDL, PREVIOUS_LOCATION,
                                        PREVIOUS_TYPE, WriteError, current_files,
                                        locked_locations, locked_table, open_table,
                                        restore_definitions)
from python_adapter.core.config import ConfigError, SchemaChangeError, check_columns
from python_adapter.spark.distribution import distribute
from python_adapter.io.footers import staged_footers
from python_adapter.io.fs import HadoopFS
from python_adapter.core.layout import Layout, LayoutFile
from python_adapter.spark.measure import measure_bytes_per_row
from python_adapter.core.planning import plan_partitions, plan_static
from python_adapter.core.schema import keeps_values, normal_type
from python_adapter.core.sizes import format_duration, format_size
from python_adapter.spark.slot_write import staged_file
from python_adapter.spark.table_files import partitions_of, read_files, sync_changed_partitions
from python_adapter.table.timeline import Timeline, meta_dir_of
from python_adapter.spark.upsert import KeyCheck, encode_key, stage_upsert, validate_keys
from python_adapter.spark.cluster_exec import pending_plan_files, run_clustering

__all__ = ["TableRef", "WriteError", "WriteResult", "write_model", "write_dataframe", "read_layout",
           "recover_table", "timeline_rows", "rollback_last_commit", "TIMELINE_COLUMNS"]


@dataclass
class WriteResult:
    operation: str
    instant: str
    partitions: int
    files_planned: int
    files_written: int
    files_removed: int
    rows: int
    bytes: int
    bytes_per_row: float
    seconds: float

    @property
    def message(self):
        return (f"{self.operation}: {self.files_written} files, {format_size(self.bytes)}, "
                f"{self.rows} rows in {self.partitions} partitions")

    def as_dict(self):
        return {**asdict(self), "message": self.message}


class _Progress:
    """Logs each phase with the time since the write started."""

    def __init__(self, log, name):
        self.log, self.name, self.start = log, name, time.monotonic()

    def __call__(self, text):
        self.log(f"[{self.name}] {text} ({format_duration(time.monotonic() - self.start)})")

    @property
    def elapsed(self):
        return time.monotonic() - self.start


def write_model(spark, sql, table, cfg, full_refresh=False, log=print):
    return write_dataframe(spark, spark.sql(sql), table, cfg, full_refresh=full_refresh, log=log)


def _resolve_names(cfg_cols, df_cols):
    lookup = {c.lower(): c for c in df_cols}
    return tuple(lookup[c.lower()] for c in cfg_cols)


def write_dataframe(spark, df, table, cfg, full_refresh=False, log=print):
    """Write df into `table` as cfg says; returns a WriteResult. Everything that changes
    the table, its definition in the metastore included, happens under its writer lock."""
    check_columns(cfg, df.columns)
    pcols = _resolve_names(cfg.partition_by, df.columns)
    progress = _Progress(log, f"{table.schema}.{table.identifier}")
    fs = HadoopFS(spark)
    target = fs.qualify(table_location(spark, table))
    for _attempt in range(3):
        existing = describe_table(spark, table)
        if existing is not None and existing.table_type == "VIEW":
            drop_table_or_view(spark, table)
            existing = None
        here = fs.qualify(existing.location) if existing is not None else None
        operation = "full_refresh" if full_refresh or existing is None else cfg.incremental_strategy
        with locked_locations(spark, table, operation, [target] + [here] * (here is not None),
                              log=progress) as protos:
            existing = describe_table(spark, table)  # recovery may have restored or dropped it
            now = fs.qualify(existing.location) if existing is not None else None
            if now is not None and now not in (target, here):
                continue  # recovery put back a definition elsewhere: lock that place too
            job = WriteJob(spark, fs, protos[0], df, table, cfg, pcols, (), "full_refresh",
                           progress)
            if existing is None or (full_refresh and _needs_new_definition(existing, df, pcols, now, target)):
                result = _define_write(job, existing)
            else:
                if now != target:  # location_root changed: it takes effect on a full refresh
                    job = replace(job, proto=next(p for p in protos if p.location == now))
                result = _write_existing(job, existing, full_refresh)
        break
    else:
        raise WriteError(f"{table.quoted} kept moving while it was being locked; try again")
    if cfg.cluster_every_n_commits and cfg.cluster_by:
        since = commits_since_clustering(job.proto.timeline)
        if since >= cfg.cluster_every_n_commits:
            progress(f"inline clustering: {since} commits since the last clustering")
            run_clustering(spark, table, cfg.cluster_by, cfg.cluster_strategy, log=progress,
                           target_file_size=cfg.target_file_size,
                           write_small_file_limit=cfg.small_file_limit or None)
    return result


@dataclass(frozen=True)
class WriteJob:
    """One write of a model's result: where, what, how, and its progress log."""
    spark: object
    fs: HadoopFS
    proto: object            # CommitProtocol of the table's location, its lock held
    df: object               # the rows, columns in the table's order (data, then partition)
    table: TableRef
    cfg: object              # SizedConfig
    pcols: tuple             # partition columns, as the model names them
    data_cols: tuple
    operation: str
    progress: object
    extra: dict = field(default_factory=dict)   # the instant's extra, once requested


def _shaped(job, column_names):
    """The job with its rows in the table's column order: data columns, then partitions."""
    pset = {c.lower() for c in job.pcols}
    data_cols = tuple(c for c in column_names if c.lower() not in pset)
    return replace(job, df=job.df.select(*data_cols, *job.pcols), data_cols=data_cols)


def _needs_new_definition(existing, df, pcols, location, target):
    """A full refresh recreates the table's definition when its partitioning, format,
    location or columns (names or types) change; otherwise it replaces the files only."""
    def columns(pairs):
        return sorted((name.lower(), type_name) for name, type_name in pairs)
    model = [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
    return ([c.lower() for c in existing.partition_columns] != [c.lower() for c in pcols]
            or existing.provider != "parquet" or location != target
            or columns(existing.columns) != columns(model))


def _write_existing(job, existing, full_refresh):
    """An incremental run, or a full refresh that keeps the table's definition."""
    operation = "full_refresh" if full_refresh else job.cfg.incremental_strategy
    if not full_refresh:
        if [c.lower() for c in existing.partition_columns] != [c.lower() for c in job.pcols]:
            raise ConfigError(
                f"partition_by: the table is partitioned by {list(existing.partition_columns)}, "
                f"the model by {list(job.pcols)}; run with --full-refresh to change it")
        df, existing = _apply_schema_change(job.spark, job.table, job.df, existing, job.cfg,
                                            job.pcols, job.progress)
        job = replace(job, df=df)
    job = _shaped(replace(job, operation=operation), existing.column_names)
    return _commit_write(job)


def _define_write(job, existing):
    """A first build, or a full refresh that changes the table's definition: the new files
    and the new definition are one instant. The old definition is recorded in it (its
    CREATE statement), the old files are set aside, and the old definition is dropped
    without its files only after the new files are in place; a crash at any point is
    rolled back to the old table by the next writer (restore_definitions)."""
    spark, fs, proto, table = job.spark, job.fs, job.proto, job.table
    _check_location_is_free(fs, proto, table, existing)
    extra = {DEFINES_TABLE: "true"}
    if existing is not None:
        job.progress(f"the table's definition changes: recreating {table.quoted}")
        extra.update({PREVIOUS_DDL: show_create(spark, table),
                      PREVIOUS_LOCATION: fs.qualify(existing.location),
                      PREVIOUS_TYPE: existing.table_type})
    same_place = existing is not None and fs.qualify(existing.location) == proto.location
    managed = existing.table_type == "MANAGED" if same_place else not table.location_root

    def define(instant):
        if existing is not None:
            drop_definition(spark, table)
            fault_point("dropped")
        create_table(spark, table, job.df.schema, job.pcols, proto.location, instant.instant,
                     managed)
        fault_point("defined")

    job = _shaped(replace(job, operation="full_refresh"), job.df.columns)
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
                         f"holds {len(leftovers)} files of no table; move them away first")


def commits_since_clustering(timeline):
    n = 0
    for inst in reversed(timeline.completed()):
        if inst.action == "replacecommit":
            break
        if inst.action == "commit":
            n += 1
    return n


def recover_table(spark, table, log=print):
    """Roll back any unfinished instant of a table (what every writer does first): at the
    table's location, and at the location a table of its name gets, where a full refresh
    that changed its definition and crashed before defining it again left its instant."""
    fs = HadoopFS(spark)
    places = [fs.qualify(table_location(spark, table))]
    info = describe_table(spark, table)
    if info is not None and info.table_type != "VIEW":
        places.append(fs.qualify(info.location))
    with locked_locations(spark, table, "recover", places, log=log) as protos:
        return [inst for proto in protos for inst in proto.rolled_back]


def drop_table_or_view(spark, table):
    spark.sql(f"DROP VIEW IF EXISTS {table.quoted}")


def _apply_schema_change(spark, table, df, existing, cfg, pcols, log):
    """on_schema_change as dbt users know it; returns df shaped like the (new) table."""
    table_types = {c.lower(): t for c, t in existing.columns}
    pset = {c.lower() for c in pcols}
    new_fields = [f for f in df.schema.fields if f.name.lower() not in table_types]
    missing = [c for c in existing.column_names if c.lower() not in {d.lower() for d in df.columns}]
    retyped = [(f.name, f.dataType.simpleString(), table_types[f.name.lower()])
               for f in df.schema.fields if f.name.lower() in table_types
               and normal_type(table_types[f.name.lower()]) != normal_type(f.dataType.simpleString())]
    changed = [f"{name} ({table} -> {model})" for name, model, table in retyped]
    if not new_fields and not missing and not changed:
        return df, existing
    _refuse_lossy_casts(retyped)
    what = (f"new columns: {[f.name for f in new_fields] or 'none'}, missing columns: "
            f"{missing or 'none'}, changed types: {changed or 'none'}")
    mode = cfg.on_schema_change
    if mode == "fail" or (mode == "ignore" and missing):
        raise SchemaChangeError(f"on_schema_change: the model's columns differ from the table's "
                          f"({what}) and on_schema_change is {mode!r}; set it to "
                          f"append_new_columns or sync_all_columns, or run with --full-refresh")
    if changed:  # each keeps its values in the table's type (_refuse_lossy_casts)
        log(f"schema change: new rows cast to the table's types ({', '.join(changed)})")
    if mode in ("append_new_columns", "sync_all_columns") and new_fields:
        log(f"schema change: adding columns {[f.name for f in new_fields]}")
        add_columns(spark, table, new_fields)
    if mode == "sync_all_columns" and missing:
        log(f"schema change: dropping columns {missing}")
        keep = [f for f in spark.table(f"{table.schema}.{table.identifier}").schema.fields
                if f.name not in missing and f.name.lower() not in pset]
        set_data_columns(spark, table, keep)
    existing = describe_table(spark, table)
    # Shape the data like the table: extra columns dropped (ignore), absent ones null.
    out = []
    present = {c.lower(): c for c in df.columns}
    for name, type_name in existing.columns:
        col = F.col(present[name.lower()]) if name.lower() in present else F.lit(None)
        out.append(col.cast(type_name).alias(name))
    return df.select(*out), existing


def _refuse_lossy_casts(retyped):
    """Fail, under every on_schema_change mode, when casting a column of the new rows to the
    table's type could turn values into NULL or lose precision; widenings go ahead."""
    for name, model, table in retyped:
        if not keeps_values(model, table):
            raise SchemaChangeError(
                f"on_schema_change: column {name} is {model} in the model but {table} in the "
                f"table; casting the new rows to {table} could turn values into NULL or lose "
                f"precision, so nothing was written. Run with --full-refresh to give the table "
                f"the model's types, or cast {name} to {table} in the model")


def learned_bytes_per_row(timeline):
    """bytes written / rows written over completed write commits (clustering not counted),
    since the table's definition was last created (other columns write other rows)."""
    rows = size = 0
    for inst in timeline.completed(actions=("commit",)):
        if inst.extra.get(DEFINES_TABLE) == "true":
            rows = size = 0
        if inst.rows_written > 0 and inst.operation != "repair":
            rows += inst.rows_written
            size += inst.bytes_written
    return size / rows if rows else None


def _count_by_partition(df, pcols):
    """{partition value texts: rows} in one aggregation ({(): rows} when unpartitioned);
    partition values as the texts Spark names their directories by (partitions.py)."""
    if not pcols:
        return {(): df.count()}
    texts = [F.col(c).cast("string").alias(c) for c in pcols]
    counts = {tuple(r[:-1]): r[-1] for r in df.groupBy(*texts).count().collect()}
    check_partition_texts(pcols, counts)
    return counts


def _refuse_null_like_partitions(df, pcols):
    """check_partition_texts where no count is made (distribution none, or a static
    file_count): one query for the first row holding such a value, string columns only."""
    strings = [c for c in pcols if isinstance(df.schema[c].dataType,
                                              (T.StringType, T.CharType, T.VarcharType))]
    if not strings:
        return
    cond = None
    for c in strings:
        term = F.col(c).isin(*NULL_LIKE)
        cond = term if cond is None else cond | term
    row = df.where(cond).select(*strings).first()
    if row is not None:
        check_partition_texts(strings, [tuple(row)])


def _plan(job, df, instant):
    """(plans or None, total_files, bytes_per_row or None, total_rows or None)."""
    cfg, progress = job.cfg, job.progress
    need_counts = cfg.distribution != "none" and (
        cfg.file_count is None or cfg.distribution in ("exact", "hash"))
    if not need_counts:
        _refuse_null_like_partitions(df, job.pcols)
    if cfg.distribution == "none":
        return None, 0, None, None
    rows_by_partition = None
    total_rows = None
    if need_counts:
        progress("counting rows per partition")
        rows_by_partition = _count_by_partition(df, job.pcols)
        total_rows = sum(rows_by_partition.values())
        progress(f"counted {total_rows} rows in {len(rows_by_partition)} partitions")
    if cfg.file_count is not None:
        if rows_by_partition is None:
            return None, cfg.file_count, None, None
        plans = plan_static(rows_by_partition, cfg.file_count)
        return plans, sum(p.files for p in plans.values()), None, total_rows
    bpr, source = _bytes_per_row(job, df, instant, total_rows)
    if not total_rows:
        return {}, 0, bpr, 0
    plans = plan_partitions(rows_by_partition, bpr, cfg.target_file_size, cfg.insert_split_size)
    progress(f"bytes per row {bpr:.1f} B (from {source})")
    return plans, sum(p.files for p in plans.values()), bpr, total_rows


def _bytes_per_row(job, df, instant, total_rows):
    """(bytes per row or None, where it came from): the config, the table's earlier commits
    (not across a new definition), or a sample of df written to Parquet."""
    if job.cfg.bytes_per_row is not None:
        return job.cfg.bytes_per_row, "config"
    learned = None if job.operation == "full_refresh" and _defines(job) else \
        learned_bytes_per_row(job.proto.timeline)
    if learned is not None:
        return learned, "earlier commits"
    if total_rows is None:
        total_rows = df.count()
    if not total_rows:
        return None, "no rows"
    job.progress("sampling to measure bytes per row")
    bpr = measure_bytes_per_row(job.fs, df, job.data_cols, total_rows, job.cfg.target_file_size,
                                job.proto.staging_dir(instant.instant) + "/_sample")
    return bpr, "sample written to Parquet"


def _defines(job):
    return job.extra.get(DEFINES_TABLE) == "true"


def _staged_entries(spark, fs, staging, key_col=None):
    """FileEntry per Parquet file written under staging: rows from the footers, and the
    min / max of the first unique_key column, kept in the timeline to prune tagging."""
    staging = fs.qualify(staging)
    footers = staged_footers(spark, staging, key_col)
    if footers is None:  # not local, or no jar: a Spark job reads them
        files = [f for f in fs.list_files(staging) if f.name.endswith(".parquet")]
        if not files:
            return []
        rels = [f.path[len(staging):].lstrip("/") for f in files]
        stats = file_stats(read_files(spark, staging, None, rels), key_col)
        footers = [(f.path, f.size, *stats.get(unquote(f.path), (-1, "", ""))) for f in files]
    entries = []
    for path, size, rows, kmin, kmax in sorted(footers):
        partition, rel = staged_file(path[len(staging):].lstrip("/"))
        entries.append(file_entry(partition, rel, rows, size, staged_path=path,
                                  key_min=kmin, key_max=kmax))
    return entries


def file_stats(df, key_col=None):
    """{unquoted file URI: (rows, key min, key max)}. Without a key column only the Parquet
    footers are read. Task file names repeat across partition directories, so the key is
    the whole path."""
    aggs = [F.count(F.lit(1))]
    if key_col:
        aggs += [F.min(key_col), F.max(key_col)]
    out = {}
    for r in df.groupBy(F.col("_metadata.file_path").alias("p")).agg(*aggs).collect():
        kmin, kmax = (encode_key(r[2]), encode_key(r[3])) if key_col else ("", "")
        out[unquote(r[0])] = (r[1], kmin, kmax)
    return out


def _commit_write(job, extra=None, define=None):
    """The write's instant: request, stage, inflight, publish, (define the table,) sync
    partitions, complete; an ordinary failure is rolled back at once."""
    spark, fs, proto, cfg, progress = job.spark, job.fs, job.proto, job.cfg, job.progress
    instant = proto.request(job.operation, job.pcols, extra={
        "target_file_size": cfg.target_file_size, "small_file_limit": cfg.small_file_limit,
        "distribution": cfg.distribution, **(extra or {})})
    job = replace(job, extra=instant.extra)
    try:
        added, removed, total_files, bpr, registered = _stage(job, instant)
        inflight = proto.mark_inflight(instant, added, removed)
        progress(f"publishing {len(added)} files, replacing {len(removed)}")
        proto.publish(inflight)
        if define is not None:
            define(instant)
        # A new definition holds no partition yet: only those of the new files concern it.
        changed = partitions_of(added) if define is not None else partitions_of(added, removed)
        sync_changed_partitions(spark, fs, proto.location, job.table, changed,
                                registered=registered, filled=partitions_of(added))
        done = proto.complete(inflight, extra={"bytes_per_row": f"{bpr or 0:.3f}"})
    except Exception:
        # An ordinary failure (not a crash): undo now rather than leave it to the next run.
        proto.abort(instant)
        restore_definitions(spark, job.table, [instant], log=progress)
        info = describe_table(spark, job.table)
        if info is not None:
            sync_partitions(spark, job.table, bool(info.partition_columns))
        raise
    proto.cleanup(done)
    result = WriteResult(
        operation=job.operation, instant=done.instant,
        partitions=len({a.partition for a in added}), files_planned=total_files,
        files_written=len(added), files_removed=len(removed), rows=done.rows_written,
        bytes=done.bytes_written, bytes_per_row=bpr or 0.0, seconds=progress.elapsed)
    progress(f"done: {result.message}, replaced {len(removed)} files")
    return result


def _table_name(table):
    return f"{table.schema}.{table.identifier}"


def _stage(job, instant):
    """Plan and write the new files to the instant's staging area; returns (adds, removes,
    files planned, bytes per row, the partitions that held files before)."""
    if job.operation in ("upsert", "insert"):
        return _stage_upsert(job, instant)
    cfg, df, pcols, progress = job.cfg, job.df, job.pcols, job.progress
    full = job.operation == "full_refresh"
    # A full refresh replaces every file, so files changed outside the timeline do not
    # matter to it; insert_overwrite keeps the other partitions' files and checks them.
    current = current_files(job.fs, job.proto.location, job.proto.timeline,
                            check=None if full else _table_name(job.table))
    if cfg.incremental_strategy == "upsert":
        df, _, _ = validate_keys(df, _resolve_names(cfg.unique_key, df.columns), cfg.precombine_column)
    if cfg.delete_column:
        df = df.where(~F.coalesce(F.col(cfg.delete_column).cast("boolean"), F.lit(False)))
    cache = cfg.distribution != "none" and df.storageLevel == StorageLevel.NONE
    cached = df.persist(StorageLevel.MEMORY_AND_DISK) if cache else df
    try:
        plans, total_files, bpr, total_rows = _plan(job, cached, instant)
        progress(f"plan: {len(plans) if plans is not None else '?'} partitions, "
                 f"{total_files or 'Spark-chosen'} files, "
                 f"target {format_size(cfg.target_file_size)}, distribution {cfg.distribution}")
        staging = job.proto.staging_dir(instant.instant) + "/data"
        if total_rows != 0:
            progress("writing files to staging")
            out = distribute(job.spark, cached, pcols, cfg.distribution, total_files, plans,
                             bytes_per_row=bpr)
            out.write.partitionBy(*pcols).mode("overwrite").parquet(staging)
        added = _staged_entries(job.spark, job.fs, staging, _key_column(cfg, df))
        progress(f"wrote {len(added)} files, {format_size(sum(a.bytes for a in added))}")
    finally:
        if cache:  # persist() returns the same object: remember whether we cached it
            cached.unpersist()
    if full or not pcols:
        removed = current
    else:
        touched = {a.partition for a in added}
        removed = [f for f in current if f.partition in touched]
    # A full refresh may follow a table recreated over files of no table: register everything.
    registered = set() if full else {f.partition for f in current}
    return added, removed, total_files, bpr, registered


def _stage_upsert(job, instant):
    """Upsert / insert: bin-pack into the partitions' small files, rewrite updated files."""
    df, cfg, proto, progress = job.df, job.cfg, job.proto, job.progress
    current = current_files(job.fs, proto.location, proto.timeline, check=_table_name(job.table))
    cache = df.storageLevel == StorageLevel.NONE  # a caller's cache is the caller's to drop
    cached = df.persist(StorageLevel.MEMORY_AND_DISK) if cache else df
    key_check = None
    try:
        key_check = KeyCheck(job.spark, cached, cfg, job.pcols, progress)  # runs while we plan
        bpr, source = _bytes_per_row(job, cached, instant, None)
        bpr = bpr or 1.0
        progress(f"bytes per row {bpr:.1f} B (from {source})")
        staging = proto.staging_dir(instant.instant) + "/data"
        removed_rels, summary = stage_upsert(
            job.spark, proto.location, _table_name(job.table), key_check, cfg, job.pcols,
            job.data_cols, bpr, staging, progress, current,
            excluded=pending_plan_files(proto.timeline))
        added = _staged_entries(job.spark, job.fs, staging, _key_column(cfg, df))
    finally:
        if key_check is not None:
            key_check.wait()  # its job reads the cached data
        if cache:
            cached.unpersist()
    by_path = {f.path: f for f in current}
    removed = [by_path[r] for r in removed_rels]
    progress(f"wrote {len(added)} files, {format_size(sum(a.bytes for a in added))}, "
             f"rewriting {format_size(sum(f.bytes for f in removed))} of existing files")
    return (added, removed, summary["new_files"] + summary["files_rewritten"], bpr,
            {f.partition for f in current})


def _key_column(cfg, df):
    return _resolve_names(cfg.unique_key[:1], df.columns)[0] if cfg.unique_key else None


def read_layout(spark, table, cluster_by=None):
    """Layout of a table's files: rows from the Parquet footers and, per file, the min / max
    of the cluster columns (given, or those of the table's last clustering)."""
    info, fs, location = open_table(spark, table)
    timeline = Timeline(fs, location)
    current = current_files(fs, location)
    last = next((i for i in reversed(timeline.completed(actions=("commit",)))), None)
    target = int(last.extra["target_file_size"]) if last and "target_file_size" in last.extra else None
    small = int(last.extra["small_file_limit"]) if last and "small_file_limit" in last.extra else None
    if cluster_by is None:
        clustered = next((i for i in reversed(timeline.completed(actions=("replacecommit",)))), None)
        cluster_by = clustered.extra["cluster_by"].split(",") if clustered else []
    cluster_by = _resolve_names([cluster_by] if isinstance(cluster_by, str) else cluster_by,
                                info.column_names) if cluster_by else ()
    stats = {}
    if current:
        df = spark.table(f"{table.schema}.{table.identifier}")
        aggs = [F.count(F.lit(1))]
        for c in cluster_by:
            aggs += [F.min(c), F.max(c)]
        for r in df.groupBy(F.col("_metadata.file_path").alias("p")).agg(*aggs).collect():
            stats[unquote(r[0])] = (r[1], tuple((c, r[2 + 2 * i], r[3 + 2 * i])
                                                for i, c in enumerate(cluster_by)))
    files = []
    for f in current:
        rows, ranges = stats.get(unquote(f"{location}/{f.path}"), (0, ()))
        files.append(LayoutFile(partition=f.partition, path=f.path, bytes=f.bytes, rows=rows,
                                ranges=ranges))
    return Layout(files=tuple(files), target_file_size=target, small_file_limit=small,
                  cluster_by=tuple(cluster_by))


TIMELINE_COLUMNS = ["instant", "time", "action", "state", "operation", "files_added",
                    "files_removed", "rows", "bytes", "size"]


def timeline_rows(spark, table):
    """One row per instant of the table, oldest first (TIMELINE_COLUMNS)."""
    _info, fs, location = open_table(spark, table)
    rows = []
    for inst in Timeline(fs, location).instants():
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(inst.created_at_ms / 1000))
        rows.append([inst.instant, when, inst.action, inst.state, inst.operation,
                     len(inst.added), len(inst.removed), inst.rows_written, inst.bytes_written,
                     format_size(inst.bytes_written)])
    return rows


def rollback_last_commit(spark, table, log=print):
    """Restore the table to its state before its last completed commit, as a new
    `rollback` instant through the commit protocol (so it is crash safe too)."""
    with locked_table(spark, table, "rollback", log=log) as (info, fs, proto):
        pcols = info.partition_columns
        completed = proto.timeline.completed()
        undone = {i.extra.get("rolled_back") for i in completed if i.action == "rollback"}
        last = next((i for i in reversed(completed)
                     if i.action != "rollback" and i.instant not in undone), None)
        if last is None:
            raise WriteError(f"{table.quoted} has no completed commit to roll back")
        later = [i for i in completed if i.instant > last.instant and i.action != "rollback"
                 and i.instant not in undone]
        if later:
            raise WriteError(f"{last.instant} is not the last commit of {table.quoted}")
        if last.extra.get(PREVIOUS_DDL):
            raise WriteError(
                f"cannot roll back {last.instant}: that full refresh changed the table's "
                f"definition (columns, partitioning, format or location), which sized_rollback "
                f"does not restore; run the model as it was with --full-refresh instead")
        restore = [replace(f, moved_path=f"{proto.aside_dir(last.instant)}/{f.path}")
                   for f in last.removed]
        gone = [f.path for f in restore if not fs.exists(f.moved_path)]
        if gone:
            raise WriteError(
                f"cannot roll back {last.instant}: {len(gone)} of the files it replaced are no "
                f"longer kept (only the last commit's replaced files are), e.g. {gone[0]}")
        instant = proto.request("rollback", pcols, action="rollback",
                                extra={"rolled_back": last.instant})
        try:
            current = {f.path: f for f in current_files(fs, proto.location, proto.timeline,
                                                        check=_table_name(table))}
            removed = [current[f.path] for f in last.added if f.path in current]
            inflight = proto.mark_inflight(instant, restore, removed)
            proto.publish(inflight)
            sync_changed_partitions(spark, fs, proto.location, table,
                                    partitions_of(restore, removed))
            done = proto.complete(inflight)
        except Exception:
            proto.abort(instant)
            sync_partitions(spark, table, bool(pcols))
            raise
        proto.cleanup(done)
    log(f"rolled back {last.operation} {last.instant}: restored {len(restore)} files, "
        f"removed {len(removed)}")
    return last.instant
