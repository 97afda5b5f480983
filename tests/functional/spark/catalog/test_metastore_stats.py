"""Table and partition statistics in the metastore (numFiles, totalSize, numRows) after
every commit, read where Trino's Hive connector and Spark read them: the metastore's own
database and Spark's plan. They must equal the table's files on disk and its rows."""
import os
from collections import defaultdict
from contextlib import contextmanager

import pytest
from pyspark.sql import functions as F

from python_adapter.core.config import parse_config
from python_adapter.io.fs import HadoopFS
from python_adapter.spark.catalog.tables import TableRef, describe_table
from python_adapter.spark.services.rollback import recover_table, rollback_last_commit
from python_adapter.api import write_dataframe
from python_adapter.table import faults, lock, settle
from python_adapter.table.commit import CommitProtocol
from python_adapter.table.faults import InjectedCrash
from tests.functional.helpers import STATS, crash_points, metastore_params, rows_of, rows_of_df
from tests.functional.readers import local_dir

QUIET = dict(log=lambda m: None)


def cfg(**kw):
    base = {"partition_by": ["day"], "unique_key": "id", "target_file_size": 16_000,
            "small_file_limit": 12_000, "delete_column": "gone"}
    base.update(kw)
    return parse_config(base)


def truth(spark, schema, name, partitioned=True):
    """The same figures from the table's directory and its rows."""
    root = local_dir(describe_table(spark, TableRef(schema, name)).location)
    parts = defaultdict(lambda: {"numFiles": 0, "totalSize": 0, "numRows": 0})
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            if f.endswith(".parquet"):
                stats = parts[os.path.relpath(dirpath, root) if partitioned else ""]
                stats["numFiles"] += 1
                stats["totalSize"] += os.path.getsize(os.path.join(dirpath, f))
    if partitioned:
        for r in spark.table(f"{schema}.{name}").groupBy("day").count().collect():
            parts[f"day={r.day}"]["numRows"] = r["count"]
    else:
        parts[""]["numRows"] = spark.table(f"{schema}.{name}").count()
    table = {k: sum(p[k] for p in parts.values()) for k in STATS}
    return ({p: dict(s) for p, s in parts.items()} if partitioned else {}), table


def assert_stats(spark, schema, name, partitioned=True):
    spark.catalog.refreshTable(f"{schema}.{name}")
    want_parts, want_table = truth(spark, schema, name, partitioned)
    assert metastore_params(spark, schema, name) == (want_parts, want_table)
    described = {r[0]: r[1] for r in spark.sql(f"DESCRIBE TABLE EXTENDED {schema}.{name}")
                 .collect()}
    assert described["Statistics"] == f"{want_table['totalSize']} bytes, " \
                                      f"{want_table['numRows']} rows"
    # what Spark's optimizer plans a scan of the table with (a join's broadcast choice)
    plan = spark.table(f"{schema}.{name}")._jdf.queryExecution().optimizedPlan()
    assert plan.stats().sizeInBytes() == want_table["totalSize"]


def test_statistics_follow_builds_upserts_deletes_and_rollbacks(spark, schema, events):
    table = TableRef(schema, "st")
    base = events(days=5).withColumn("gone", F.lit(False))
    write_dataframe(spark, base, table, cfg(), **QUIET)
    assert_stats(spark, schema, "st")
    before, _ = metastore_params(spark, schema, "st")

    updates = base.where("day = date'2025-01-02' and id % 20 = 0").withColumn("tag", F.lit("v2"))
    new_day = events(days=1, start="2025-01-07", id_offset=10**9).withColumn("gone", F.lit(False))
    write_dataframe(spark, updates.unionByName(new_day), table, cfg(), **QUIET)
    assert_stats(spark, schema, "st")
    after, _ = metastore_params(spark, schema, "st")
    assert "day=2025-01-07" in after and after["day=2025-01-02"] != before["day=2025-01-02"]

    doomed = base.where("day = date'2025-01-01'").withColumn("gone", F.lit(True))
    write_dataframe(spark, doomed, table, cfg(), **QUIET)
    assert_stats(spark, schema, "st")
    assert "day=2025-01-01" not in metastore_params(spark, schema, "st")[0]

    rollback_last_commit(spark, table, **QUIET)
    assert_stats(spark, schema, "st")
    assert metastore_params(spark, schema, "st")[0]["day=2025-01-01"] == before["day=2025-01-01"]

    write_dataframe(spark, base.where("day < date'2025-01-03'"), table,
                    cfg(incremental_strategy="insert_overwrite", unique_key=None), **QUIET)
    assert_stats(spark, schema, "st")


def test_statistics_a_commit_leaves_the_same_are_not_written_again(spark, schema):
    """A partition rewritten with the same files, rows and bytes keeps its metastore record
    (altering a partition costs ~25 ms of the metastore's time): Hive's transient_lastDdlTime,
    which every alter sets, stays; the partitions and the table that did change get theirs."""
    import time

    table = TableRef(schema, "same")
    rows = ("select id, date_add(date'2025-01-01', cast(id % 3 as int)) as day, "
            "sha2(cast(id as string), 256) as payload, false as gone from range({n})")
    # a small batch: one task writes the rows in the same order, so the same bytes
    config = cfg(incremental_strategy="insert_overwrite", unique_key=None,
                 target_file_size="128MB")
    write_dataframe(spark, spark.sql(rows.format(n=3000)), table, config, **QUIET)
    ddl = ("transient_lastDdlTime",)
    first = metastore_params(spark, schema, "same", ddl)
    time.sleep(1.1)  # Hive keeps the time in seconds
    write_dataframe(spark, spark.sql(rows.format(n=3000)), table, config, **QUIET)
    assert metastore_params(spark, schema, "same", ddl) == first
    assert_stats(spark, schema, "same")

    time.sleep(1.1)
    day_two = "day = date'2025-01-02'"  # gains rows; the other days are rewritten the same
    write_dataframe(spark, spark.sql(rows.format(n=3000)).where(f"not {day_two}").unionByName(
        spark.sql(rows.format(n=3600)).where(day_two)), table, config, **QUIET)
    parts, whole = metastore_params(spark, schema, "same", ddl)
    assert {p for p in parts if parts[p] != first[0][p]} == {"day=2025-01-02"}
    assert whole != first[1]
    assert_stats(spark, schema, "same")


def test_statistics_of_an_unpartitioned_table(spark, schema, events):
    table = TableRef(schema, "flat")
    c = cfg(partition_by=[], incremental_strategy="append", unique_key=None)
    write_dataframe(spark, events(days=2).withColumn("gone", F.lit(False)), table, c, **QUIET)
    assert_stats(spark, schema, "flat", partitioned=False)
    write_dataframe(spark, events(days=1, id_offset=10**9).withColumn("gone", F.lit(False)),
                    table, c, **QUIET)
    assert_stats(spark, schema, "flat", partitioned=False)


def test_an_analyze_tables_statistics_do_not_outrank_those_of_later_commits(spark, schema, events):
    table = TableRef(schema, "an")
    base = events(days=2).withColumn("gone", F.lit(False))
    write_dataframe(spark, base, table, cfg(), **QUIET)
    spark.sql(f"ANALYZE TABLE {schema}.an COMPUTE STATISTICS")
    more = events(days=1, start="2025-01-05", id_offset=10**9).withColumn("gone", F.lit(False))
    write_dataframe(spark, more, table, cfg(), **QUIET)
    assert_stats(spark, schema, "an")


# CI: a crash once the catalog was told (the instant rolled back) and once the statistics were
# being written (the completed instant settled by recovery)
@pytest.mark.parametrize("point", crash_points(["synced", "completed", "settling", "statistics"],
                                               ci=["synced", "statistics"]))
def test_a_crash_after_the_metastore_was_told_leaves_the_statistics_of_the_table(
        spark, schema, events, monkeypatch, point):
    """The catalog learns a commit's new partitions before the commit completes, and the
    statistics of the others once it has (its settling): a crash anywhere between leaves
    the metastore with figures of neither state or of the old one, and recovery puts back
    those of the files the table holds (the rolled back instant's, or the unsettled
    completed instant's)."""
    table = TableRef(schema, f"cr_{point}")
    base = events(days=3).withColumn("gone", F.lit(False))
    write_dataframe(spark, base, table, cfg(), **QUIET)
    monkeypatch.setenv("SIZED_SPARK_FAULT", point)
    faults.reset()
    batch = base.where("id % 3 = 0").withColumn("tag", F.lit("v2")).unionByName(
        events(days=1, start="2025-01-09", id_offset=10**9).withColumn("gone", F.lit(False)))
    with pytest.raises(InjectedCrash):
        write_dataframe(spark, batch, table, cfg(), **QUIET)
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    lock.forget_held_locks()
    faults.reset()
    recover_table(spark, table, **QUIET)
    assert_stats(spark, schema, table.identifier)


def _the_next_days(events, start, offset):
    return events(days=2, start=start, id_offset=offset).withColumn("gone", F.lit(False))


def test_commits_settled_in_the_background_leave_every_figure_true(spark, schema, events):
    """A dbt command's commits write the statistics of the partitions registered already,
    and of the table, on the settle worker while the command goes on: a second write to
    the table waits for the first's settling (the lock is held until then), and once
    settled every figure is true, no commit is left unsettled and the lock is free."""
    table = TableRef(schema, "bg")
    write_dataframe(spark, events(days=3).withColumn("gone", F.lit(False)), table, cfg(), **QUIET)
    with settle.in_background():
        write_dataframe(spark, _the_next_days(events, "2025-01-02", 10**9), table, cfg(), **QUIET)
        write_dataframe(spark, _the_next_days(events, "2025-01-03", 2 * 10**9), table, cfg(),
                        **QUIET)
    settle.wait()
    assert_stats(spark, schema, "bg")
    fs = HadoopFS(spark)
    proto = CommitProtocol(fs, fs.qualify(describe_table(spark, table).location))
    assert proto.timeline.unsettled() == [] and not fs.exists(proto.lock_path)
    assert [i.state for i in proto.timeline.instants()] == ["completed"] * 3


def test_a_crash_while_settling_in_the_background_is_settled_by_the_next_writer(
        spark, schema, events, monkeypatch):
    """A process that dies after its commit completed, before its statistics were written
    (on the settle worker), leaves the table with the commit's rows, the metastore with the
    figures before it, and the commit unsettled: the next writer's recovery writes them."""
    table = TableRef(schema, "bgc")
    write_dataframe(spark, events(days=3).withColumn("gone", F.lit(False)), table, cfg(),
                    **QUIET)
    before = metastore_params(spark, schema, "bgc")
    monkeypatch.setenv("SIZED_SPARK_FAULT", "settling")
    faults.reset()
    with settle.in_background():
        write_dataframe(spark, _the_next_days(events, "2025-01-02", 10**9), table, cfg(),
                        **QUIET)
    with pytest.raises(InjectedCrash):
        settle.wait()
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    lock.forget_held_locks()
    faults.reset()
    spark.catalog.refreshTable(f"{schema}.bgc")
    assert metastore_params(spark, schema, "bgc") == before != truth(spark, schema, "bgc")
    fs = HadoopFS(spark)
    proto = CommitProtocol(fs, fs.qualify(describe_table(spark, table).location))
    assert [i.state for i in proto.timeline.unsettled()] == ["completed"]
    recover_table(spark, table, **QUIET)
    assert_stats(spark, schema, "bgc")
    assert proto.timeline.unsettled() == []


def _foreign(spark, schema, name, events):
    """A table written by plain Spark: two loads of three days, two files a day, the
    statistics its writer left in the metastore (Hive's numFiles / totalSize, no numRows)."""
    spark.sql(f"CREATE TABLE {schema}.{name} (id bigint, payload string, amount double, "
              f"tag string, gone boolean, day date) USING parquet PARTITIONED BY (day)")
    for k in range(2):
        events(days=3, id_offset=k * 10**6).withColumn("gone", F.lit(False)) \
            .select("id", "payload", "amount", "tag", "gone", "day").repartition(1) \
            .write.insertInto(f"{schema}.{name}")
    return TableRef(schema, name)


def test_an_adoption_leaves_partition_statistics_to_the_next_commit_across_a_crash(
        spark, schema, events, monkeypatch):
    """Adopting changes no file, so the partitions keep their writer's figures (altering
    hundreds of them costs seconds, and the compaction that adopted is about to change
    them): the next commit writes every partition's, also after a crash in between."""
    from python_adapter.spark.services.cluster_exec import run_compaction
    table = _foreign(spark, schema, "fa", events)
    written_by_spark, _ = metastore_params(spark, schema, "fa")
    monkeypatch.setenv("SIZED_SPARK_FAULT", "clustering_staged")  # adopted, then a crash
    faults.reset()
    with pytest.raises(InjectedCrash):
        run_compaction(spark, table, {}, **QUIET)
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    lock.forget_held_locks()
    faults.reset()
    spark.catalog.refreshTable(f"{schema}.fa")
    parts, table_stats = metastore_params(spark, schema, "fa")
    assert parts == written_by_spark and table_stats == truth(spark, schema, "fa")[1]
    result = run_compaction(spark, table, {}, **QUIET)  # executes the plan left behind
    assert result.executed_plans == 1 and result.files_replaced == 6
    assert_stats(spark, schema, "fa")


def test_an_incremental_run_that_adopts_a_table_writes_every_partitions_statistics(
        spark, schema, events):
    table = _foreign(spark, schema, "fi", events)
    one_day = events(days=1, id_offset=10**9).withColumn("gone", F.lit(False))
    write_dataframe(spark, one_day, table, cfg(), **QUIET)
    assert_stats(spark, schema, "fi")


def test_partition_records_are_the_same_with_and_without_the_helper_jar(spark, schema):
    """A cluster session has no helper jar: its records, built by a few py4j calls each,
    must be those the jar's one call builds (spec, directory, statistics)."""
    from python_adapter.io.fast_local_fs import jar_loaded
    from python_adapter.io.session_catalog import SessionCatalog
    from python_adapter.spark.catalog.stats import _rows
    from python_adapter.table.files import FileStats

    assert jar_loaded(spark._jvm), "the test session is started with the helper jar"
    spark.sql(f"CREATE TABLE {schema}.rec (id int, region string, day date) USING parquet "
              f"PARTITIONED BY (region, day)")
    parts = {"region=x%2Fy/day=2025-01-01": FileStats(2, 300, 7),
             "region=it's/day=2025-01-02": FileStats(1, 20, None)}
    metastore = SessionCatalog(spark)
    rows = _rows({p: (f"file:/tmp/t/{p}", s) for p, s in parts.items()})

    def described(seq):
        out = []
        for i in range(seq.size()):
            r = seq.apply(i)
            out.append((r.spec().toString(), r.storage().toString(), r.parameters().toString()))
        return out

    by_jar = described(metastore.partition_records(schema, "rec", rows))
    by_py4j = described(metastore.records_by_py4j(
        spark._jsparkSession.sharedState().externalCatalog().getTable(schema, "rec").storage(),
        rows))
    assert by_jar == by_py4j
    assert "x/y" in by_jar[1][0] and "numRows -> 7" in by_jar[1][2]
    assert "numRows" not in by_jar[0][2] and "it's" in by_jar[0][0]


@contextmanager
def driver_log(spark, logger="org.apache.hadoop.hive.metastore.RetryingHMSHandler"):
    """The lines the driver JVM logs meanwhile (log4j2), `logger` at ERROR as a dbt run's
    configuration (python_adapter/io/log4j2.properties: org.apache.hadoop.hive at error)
    has it: Spark's default configuration, the test session's, silences it (SPARK-9183)."""
    jvm = spark._jvm
    core, levels = jvm.org.apache.logging.log4j.core, jvm.org.apache.logging.log4j.Level
    configurator = core.config.Configurator
    before = jvm.org.apache.logging.log4j.LogManager.getLogger(logger).getLevel()
    writer = jvm.java.io.StringWriter()
    appender = core.appender.WriterAppender.createAppender(
        core.layout.PatternLayout.newBuilder().withPattern("%p %c{1}: %m%n").build(), None,
        writer, "sized-test-log", False, True)
    appender.start()
    context = jvm.org.apache.logging.log4j.LogManager.getContext(False)
    root = context.getConfiguration().getRootLogger()
    root.addAppender(appender, None, None)
    configurator.setLevel(logger, levels.ERROR)
    lines = []
    try:
        yield lines
    finally:
        configurator.setLevel(logger, before)
        root.removeAppender("sized-test-log")
        context.updateLoggers()
        appender.stop()
        lines.extend(str(writer.toString()).splitlines())


def test_a_rollback_registers_only_missing_partitions_and_hive_logs_no_error(spark, schema,
                                                                             events):
    """A rollback puts files back into partitions the metastore holds (an upsert's rewrite)
    and into one the commit emptied and dropped: only that one is created, so Hive logs no
    `AlreadyExistsException` stack trace for a rollback that succeeds; nor does the commit
    that empties a partition log Hive's failure to delete its directory (already gone)."""
    table = TableRef(schema, "rbparts")
    base = events(days=3).withColumn("gone", F.lit(False))
    write_dataframe(spark, base, table, cfg(), **QUIET)
    days = sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {schema}.rbparts").collect())
    emptied = base.where("day = date'2025-01-01'").withColumn("gone", F.lit(True))
    updated = base.where("day = date'2025-01-02' and id % 10 = 0").withColumn("tag", F.lit("v2"))
    with driver_log(spark) as dropped:  # the commit removed the directory: Hive finds none
        write_dataframe(spark, emptied.unionByName(updated), table, cfg(), **QUIET)
    assert "day=2025-01-01" not in metastore_params(spark, schema, "rbparts")[0]
    assert not [line for line in dropped if line.startswith("ERROR ")], dropped

    with driver_log(spark) as lines:
        rollback_last_commit(spark, table, **QUIET)
    assert not [line for line in lines if "AlreadyExists" in line or line.startswith("ERROR ")
                ], lines
    assert sorted(r[0] for r in spark.sql(f"SHOW PARTITIONS {schema}.rbparts").collect()) == days
    assert rows_of(spark, schema, "rbparts") == rows_of_df(base)
    assert_stats(spark, schema, "rbparts")
