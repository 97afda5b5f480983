"""The tables of a run: the source table and view every method reads (materialize_source),
the batches table (materialize_batches), dbt-spark's plain Parquet table and its INSERT
OVERWRITE, ours' configs, and a table's data files: location, listing, copy, what a batch
changed (measure_batch)."""
import os
from collections import defaultdict

from benchmarks.lib.data import (BATCHES, COLS, DATA_COLS, DAYS, SCHEMA, SOURCE, SOURCE_VIEW,
                                 START, batch_rows, daily_events)
from benchmarks.lib.session import conf_set
from python_adapter.api import TableRef, layout, parse_config


# ----------------------------------------------------------------------------------------
# Source and batches
# ----------------------------------------------------------------------------------------
def save_table(spark, df, name, partition_by=()):
    """df as the Parquet table `name` (replaced if it exists)."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    writer = df.write.format("parquet")
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.saveAsTable(name)


def materialize_source(spark, rows, input_partitions, days=DAYS, start=START):
    """Write the input once as an unpartitioned Parquet table of `input_partitions` files, then
    read it with one split per file into an eager local checkpoint (in memory, spilling to
    disk) registered as the temp view SOURCE_VIEW: every method reads exactly these rows in
    exactly these sPartitions, like dbt-spark reads its `<model>__dbt_tmp` view.

    A checkpoint rather than CACHE TABLE: a cached plan would be matched by the engine's own
    persist of the same columns, sparing ours its caching cost; and the file-split setting
    only applies while the checkpoint is taken, so no later read in any method sees it."""
    save_table(spark, daily_events(spark, rows, input_partitions, days=days, start=start), SOURCE)
    files = layout(spark, TableRef(SCHEMA, "source")).files
    biggest = max(f.bytes for f in files)
    with conf_set(spark, **{"spark.sql.files.maxPartitionBytes": biggest + 1}):
        src = spark.table(SOURCE).localCheckpoint(eager=True)
    src.createOrReplaceTempView(SOURCE_VIEW)
    return src, {
        "rows": sum(f.rows for f in files),
        "bytes": sum(f.bytes for f in files),
        "files": len(files),
        "splits": src.rdd.getNumPartitions(),
    }


def rows_by_date(spark):
    """{event_date: rows} of the source table."""
    return {r[0]: r[1] for r in spark.table(SOURCE).groupBy("event_date").count().collect()}


def first_week_view(spark, first_day, name="warmup_src"):
    """The temp view `name` of the source view's rows in the 7 days from first_day (for the
    untimed warm-up writes)."""
    spark.sql(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM {SOURCE_VIEW} "
              f"WHERE event_date < DATE'{first_day.isoformat()}' + INTERVAL 7 DAYS")


def drop_engine_cache(spark, view):
    """write_dataframe persists its input and never unpersists it (see README, known engine
    issue): drop that cache entry so the next method does not start from a warm copy."""
    spark.table(view).select(*DATA_COLS, "event_date").unpersist(blocking=True)


def materialize_batches(spark, shape, plans, base_rows, by_date, input_partitions):
    """Write every batch once, in one job, into the Parquet table BATCHES partitioned by
    batch: shape.batch_files files per batch (round robin, so every file holds every date of
    its batch, as arriving data does). Each batch is then the temp view batch_NN that every
    method reads. The rows: data.batch_rows (by_date = rows of the source per date).
    Returns per batch: rows, updates, bytes as Parquet (the bytes ingested), dates touched."""
    from pyspark.sql import functions as F

    df = batch_rows(spark, shape, plans, base_rows, by_date, input_partitions)
    save_table(spark, df.repartition(shape.batch_files), BATCHES, partition_by=("batch",))
    bytes_of, files_of = defaultdict(int), defaultdict(int)
    for rel, size in listing(spark, table_location(spark, BATCHES.split(".")[1])).items():
        b = int(partition_of(rel).split("=")[1])
        bytes_of[b] += size
        files_of[b] += 1
    counts = defaultdict(lambda: defaultdict(int))   # batch -> date -> rows
    updates = defaultdict(int)
    for r in (spark.table(BATCHES).groupBy("batch", "event_date",
                                           (F.col("event_id") < base_rows).alias("upd"))
              .count().collect()):
        counts[r[0]][r[1]] += r[3]
        if r[2]:
            updates[r[0]] += r[3]
    info = []
    for p in plans:
        b = p["batch"]
        view = f"batch_{b:02d}"
        spark.sql(f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT {COLS} FROM {BATCHES} "
                  f"WHERE batch = {b}")
        rows = sum(counts[b].values())
        info.append({**p, "table": view, "rows": rows, "updates": updates[b],
                     "new": rows - updates[b], "bytes": bytes_of[b], "files": files_of[b],
                     "touched": {f"event_date={d.isoformat()}" for d in counts[b]}})
    return info


# ----------------------------------------------------------------------------------------
# What the methods write
# ----------------------------------------------------------------------------------------
def create_plain_table(spark, name):
    """The table dbt-spark's incremental model lives in: parquet, partitioned by event_date."""
    spark.sql(f"DROP TABLE IF EXISTS {SCHEMA}.{name}")
    spark.sql(f"CREATE TABLE {SCHEMA}.{name} (event_id bigint, user_id bigint, "
              f"session_id string, event_type string, amount double, payload string, "
              f"event_date date) USING parquet PARTITIONED BY (event_date)")


def dynamic_overwrite(spark):
    """What dbt-spark sets before its INSERT OVERWRITE: replace only the partitions written."""
    return conf_set(spark, **{"spark.sql.sources.partitionOverwriteMode": "dynamic"})


def insert_overwrite_sql(spark, name, hint="", source=SOURCE_VIEW):
    """The SQL dbt-spark's insert_overwrite strategy generates (dynamic partition overwrite)."""
    with dynamic_overwrite(spark):
        spark.sql(f"INSERT OVERWRITE TABLE {SCHEMA}.{name} PARTITION (event_date) "
                  f"SELECT {hint}{COLS} FROM {source}")


def insert_overwrite_df(spark, name, df):
    with dynamic_overwrite(spark):
        df.select(*DATA_COLS, "event_date").write.insertInto(f"{SCHEMA}.{name}", overwrite=True)


def backfill_config(target, distribution):
    """Ours in backfill.py: insert_overwrite of the daily partitions."""
    return parse_config({"partition_by": ["event_date"], "incremental_strategy": "insert_overwrite",
                         "target_file_size": target, "distribution": distribution})


def upsert_config(target, small_file_limit=None, index_scope="global"):
    """Ours in upsert.py and scale.py: upsert on event_id, distribution exact."""
    raw = {"partition_by": ["event_date"], "unique_key": "event_id",
           "incremental_strategy": "upsert", "target_file_size": target, "distribution": "exact",
           "index_scope": index_scope}
    if small_file_limit is not None:
        raw["small_file_limit"] = small_file_limit
    return parse_config(raw)


# ----------------------------------------------------------------------------------------
# Files of a table
# ----------------------------------------------------------------------------------------
def table_location(spark, name):
    from python_adapter.io.fs import HadoopFS
    from python_adapter.spark.catalog.tables import describe_table

    fs = HadoopFS(spark)
    return fs.qualify(describe_table(spark, TableRef(SCHEMA, name)).location).rstrip("/")


def listing(spark, location):
    """{rel path: bytes} of the table's data files (hidden entries, e.g. .sized/, skipped).
    A local warehouse is walked with os.walk: HadoopFS.list_files makes several py4j calls
    per file, seconds per listing at these file counts, and this runs 6 times per batch."""
    from urllib.parse import unquote, urlparse

    from python_adapter.io.fs import HadoopFS

    url = urlparse(location)
    if url.scheme == "file":
        root = unquote(url.path).rstrip("/")
        out = {}
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x[:1] not in (".", "_")]
            rel_dir = os.path.relpath(d, root)
            for n in names:
                if n[:1] not in (".", "_") and n.endswith(".parquet"):
                    rel = n if rel_dir == "." else f"{rel_dir}/{n}"
                    out[rel] = os.path.getsize(os.path.join(d, n))
        return out
    return {f.path[len(location):].lstrip("/"): f.size
            for f in HadoopFS(spark).list_files(location) if f.name.endswith(".parquet")}


def copy_files(spark, src_location, dst_location, rel_paths):
    """Copy data files byte for byte (Hadoop FileUtil, so any warehouse filesystem works)."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for rel in rel_paths:
        src = jvm.org.apache.hadoop.fs.Path(f"{src_location}/{rel}")
        dst = jvm.org.apache.hadoop.fs.Path(f"{dst_location}/{rel}")
        jvm.org.apache.hadoop.fs.FileUtil.copy(src.getFileSystem(conf), src,
                                               dst.getFileSystem(conf), dst, False, conf)


def partition_of(rel):
    return os.path.dirname(rel)


def measure_batch(before, after, touched, small_limit):
    """What one write changed in a table's files ({rel path: bytes} before and after it):
    files, small files, files written and replaced, and what it did outside the partitions
    it touched."""
    written = {p: s for p, s in after.items() if before.get(p) != s}
    removed = [p for p in before if p not in after or after[p] != before[p]]
    small_by_part = defaultdict(int)
    for p, s in after.items():
        if s < small_limit:
            small_by_part[partition_of(p)] += 1
    untouched_before = {p: s for p, s in before.items() if partition_of(p) not in touched}
    untouched_after = {p: s for p, s in after.items() if partition_of(p) not in touched}
    changed_untouched = (set(untouched_before.items()) ^ set(untouched_after.items()))
    kept_touched = sum(1 for p, s in before.items()
                       if partition_of(p) in touched and after.get(p) == s)
    return {
        "files": len(after),
        "small": sum(small_by_part.values()),
        "written": len(written),
        "removed": len(removed),
        "bytes_written": sum(written.values()),
        "bytes": sum(after.values()),
        "max_small_touched": max((small_by_part.get(t, 0) for t in touched), default=0),
        "touched_over_one": sum(1 for t in touched if small_by_part.get(t, 0) > 1),
        "changed_untouched": len({p for p, _ in changed_untouched}),
        "untouched_files": len(untouched_before),
        "kept_touched": kept_touched,
        "files_touched_before": sum(1 for p in before if partition_of(p) in touched),
    }
