"""Every sized feature on S3 through S3A (a real S3 server, SeaweedFS on 127.0.0.1) gives
what it gives on local disk (issue 64, goal 2): one scenario of writes and table services
runs on a table in the warehouse on local disk and on one on S3, and each step's figures
(files written and replaced, rows, the changes), the files' sizes per partition and the
rows are the same on both. After every step on S3, Spark through the metastore, pyarrow's
S3 filesystem, polars and DuckDB read exactly the table's rows, and nothing but its live
data files is below the table."""
import os
import tempfile

import pytest
from pyspark.sql import functions as F

from python_adapter import api
from python_adapter.core.config import parse_config
from python_adapter.spark.catalog.tables import TableRef
from python_adapter.table import faults, lock
from python_adapter.table.faults import InjectedCrash
from tests.functional import object_store
from tests.functional.conftest import events_of
from tests.functional.readers import not_live

QUIET = dict(log=lambda m: None)
COLUMNS = ["id", "day", "tag"]
BASE = {"partition_by": ["day"], "unique_key": "id", "target_file_size": 16_000,
        "small_file_limit": 12_000, "delete_column": "gone"}


def _cfg(**more):
    return parse_config({**BASE, **more})


def _write(spark, df, table, **more):
    result = api.write_dataframe(spark, df.withColumn("gone", F.col("gone") if "gone" in
                                                      df.columns else F.lit(False)),
                                 table, _cfg(**more), **QUIET)
    return (result.operation, result.route.value, result.files_written, result.files_removed,
            result.rows, result.changes)


def _crash_then_recover(spark, df, table, point):
    """A write killed at `point` (the process gone with its lock), then sized_recover."""
    os.environ["SIZED_SPARK_FAULT"] = point
    faults.reset()
    try:
        with pytest.raises(InjectedCrash):
            _write(spark, df, table)
    finally:
        del os.environ["SIZED_SPARK_FAULT"]
        lock.forget_held_locks()
        faults.reset()
    return len(api.recover(spark, table, **QUIET).instants)


def scenario(spark, events, table, drop_a_file, check):
    """The steps, each one's figures, and check(step) after each: a build, insert_overwrite,
    an upsert packing small files, deletes, a microbatch window, Z-order clustering,
    compaction, rollback, restore, clean, repair of a file deleted outside, a crash
    recovered, the lock's state, the layout, the report, and the adoption of a table Spark
    wrote by its first compaction."""
    seen = {}

    def step(name, outcome):
        seen[name] = outcome
        check(name)

    step("build", _write(spark, events(days=8), table))
    first = api.timeline(spark, table)[-1][0]
    step("insert_overwrite", _write(spark, events(days=2, start="2025-01-03", id_offset=10_000_000, tag="v2"), table,
                                    incremental_strategy="insert_overwrite"))
    upsert = events(days=8, base=60, tag="v3").unionByName(
        events(days=8, base=30, id_offset=90_000, tag="new"))
    step("upsert", _write(spark, upsert, table))
    doomed = spark.table(table.quoted).where("id % 7 = 1").drop("gone") \
        .withColumn("gone", F.lit(True))
    step("deletes", _write(spark, doomed, table))
    window = {"event_time_start": "2025-01-05 00:00:00+00:00",
              "event_time_end": "2025-01-06 00:00:00+00:00"}
    step("microbatch", _write(spark, events(days=1, start="2025-01-05", base=50, id_offset=20_000_000, tag="mb"),
                              table, incremental_strategy="microbatch", event_time="day",
                              **window))
    clustered = api.cluster(spark, table, ["amount", "id"], "zorder", **QUIET)
    step("cluster", (clustered.files_replaced, clustered.files_written))
    compacted = api.compact(spark, table, {"target_file_size": 24_000}, **QUIET)
    step("compact", (compacted.files_replaced, compacted.files_written))
    step("rollback", api.rollback(spark, table, **QUIET).instant is not None)
    step("restore", api.restore(spark, table, first, **QUIET).restored_to == first)
    cleaned = api.clean(spark, table, {"retain_commits": 1, "retain_hours": 0}, **QUIET)
    step("clean", (cleaned.set_aside_dirs, cleaned.unrecorded))
    drop_a_file()
    repaired = api.repair(spark, table, **QUIET)
    step("repair", (repaired.files_missing, repaired.rows_lost))
    step("recovered", _crash_then_recover(spark, events(days=3, tag="crashed"), table,
                                          "publish:3"))
    step("unlocked", api.unlock(spark, table).state.value)
    layout = api.layout(spark, table)
    step("layout", sorted((f.partition, f.rows, f.bytes) for f in layout.files))
    report = api.report(spark, table, os.path.join(tempfile.mkdtemp(), "report.html"), **QUIET)
    step("report", "day=2025-01-05" in open(report.path.replace("file:", "")).read())
    step("adopted", _adopt(spark, events, table))
    return seen


def _adopt(spark, events, table):
    """A Parquet table Spark wrote itself (a file per task and partition, as dbt-spark's
    `table` writes it) beside the scenario's, adopted and bin-packed by its first
    compaction: (files before, files replaced, files written, rows)."""
    plain = TableRef(table.schema, "plain")
    events(days=4).repartition(3).write.partitionBy("day").format("parquet") \
        .saveAsTable(plain.quoted)
    before = len(api.layout(spark, plain).files)
    compacted = api.compact(spark, plain, {"target_file_size": 16_000}, **QUIET)
    return (before, compacted.files_replaced, compacted.files_written,
            spark.table(plain.quoted).count())


def _local_check(spark, table, rows):
    def check(name):
        rows[name] = _spark_rows(spark, table)
    return check


def _spark_rows(spark, table):
    spark.catalog.refreshTable(table.quoted)
    return sorted(tuple(r) for r in spark.table(table.quoted).select(*COLUMNS).collect())


@pytest.fixture(scope="module")
def both(spark, s3):
    """The scenario on local disk and on S3: (figures, rows after each step) of each, and
    the readers' complaints on S3 (empty when every reader read exactly the rows)."""
    local_db, s3_db = "scenario_local", "scenario_s3"
    spark.sql(f"CREATE DATABASE {local_db}")
    spark.sql(f"CREATE DATABASE {s3_db} LOCATION 's3a://{s3.bucket}/warehouse/{s3_db}.db'")
    local, remote = TableRef(local_db, "events"), TableRef(s3_db, "events")
    local_rows, remote_rows, complaints = {}, {}, []
    events = events_of(spark)

    def drop_local():
        location = spark.sql(f"DESCRIBE FORMATTED {local.quoted}").where(
            "col_name = 'Location'").first()["data_type"]
        folder = location.replace("file:", "")
        first = sorted(os.path.join(r, f) for r, _, fs in os.walk(folder) for f in fs
                       if f.endswith(".parquet") and "/." not in r)[0]
        os.remove(first)

    def drop_remote():
        prefix = f"{s3.bucket}/warehouse/{s3_db}.db/events"
        object_store.arrow_store(s3).delete_file(
            sorted(k for k in object_store.keys(s3, prefix) if k.endswith(".parquet"))[0])

    def check_remote(name):
        rows = remote_rows[name] = _spark_rows(spark, remote)
        uri = f"s3a://{s3.bucket}/warehouse/{s3_db}.db/events"
        for reader in (object_store.pyarrow_rows, object_store.polars_rows,
                       object_store.duckdb_rows):
            got = sorted((i, str(d), t) for i, d, t in reader(s3, uri, COLUMNS))
            if got != sorted((i, str(d), t) for i, d, t in rows):
                complaints.append(f"{name}: {reader.__name__} read {len(got)} rows of "
                                  f"{len(rows)}")
        prefix = object_store.bucket_path(uri)
        for key in object_store.keys(s3, prefix):
            why = not_live(key, prefix)
            if why:
                complaints.append(f"{name}: {why}")

    try:
        figures_local = scenario(spark, events, local, drop_local,
                                 _local_check(spark, local, local_rows))
        figures_s3 = scenario(spark, events, remote, drop_remote, check_remote)
        yield (figures_local, local_rows), (figures_s3, remote_rows), complaints
    finally:
        for db in (local_db, s3_db):
            spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")


def test_every_step_on_s3_gives_the_figures_it_gives_on_local_disk(both):
    (local, _), (remote, _), _ = both
    assert list(remote) == list(local)
    for name in local:
        assert remote[name] == local[name], name
    assert local["upsert"][1] == "bin-packed" and local["recovered"] == 1


def test_every_step_on_s3_leaves_the_rows_it_leaves_on_local_disk(both):
    (_, local_rows), (_, remote_rows), _ = both
    for name, rows in local_rows.items():
        assert remote_rows[name] == rows, name
    assert len({len(rows) for rows in local_rows.values()}) > 3  # the steps change rows


def test_pyarrow_polars_and_duckdb_read_exactly_the_rows_on_s3_after_every_step(both):
    *_, complaints = both
    assert complaints == []
