"""Full builds and insert_overwrite on a real local Spark: file counts, sizes, rows."""
import pytest
from pyspark.sql import functions as F

from python_adapter.spark.catalog.tables import TableRef, describe_table
from python_adapter.errors import ConfigError
from python_adapter.core.config import parse_config
from python_adapter.core.routing import routing_keys, spark_hash_long
from python_adapter.spark.job import worth_caching
from python_adapter.api import write_dataframe
from python_adapter.spark.job import Route
from tests.functional.helpers import files_by_partition, layout, rows_of, rows_of_df
from tests.functional.readers import duckdb_rows, polars_rows, pyarrow_rows

TARGET = 16_000


def cfg(**kw):
    base = {"partition_by": ["day"], "incremental_strategy": "insert_overwrite",
            "target_file_size": TARGET}
    base.update(kw)
    return parse_config(base)


def test_python_hash_port_matches_spark(spark):
    values = [0, 1, -1, 42, 2**31, -2**40, 2**62 + 12345, 987654321]
    got = spark.createDataFrame([(v,) for v in values], "v bigint") \
        .select("v", F.hash("v").alias("h")).collect()
    assert {r.v: r.h for r in got} == {v: spark_hash_long(v) for v in values}


def test_routing_keys_send_each_key_to_its_own_task(spark):
    n = 37
    keys = routing_keys(n)
    df = spark.createDataFrame([(i, k) for i, k in enumerate(keys)], "fid bigint, k bigint")
    got = df.repartition(n, "k").select("fid", F.spark_partition_id().alias("p")).collect()
    assert all(r.fid == r.p for r in got)


def test_exact_writes_the_planned_files_of_the_target_size(spark, schema, events):
    df = events()
    result = write_dataframe(spark, df, TableRef(schema, "ex"), cfg(distribution="exact"),
                             log=lambda m: None)
    assert rows_of(spark, schema, "ex") == rows_of_df(df)
    parts = files_by_partition(spark, schema, "ex")
    assert len(parts) == 12
    assert result.files_written == result.files_planned == sum(len(f) for f in parts.values())
    for files in parts.values():
        sizes = sorted(f.bytes for f in files)
        assert sizes[-1] <= 1.25 * TARGET
        # filled to the target, the last file takes the remainder: at most one small file
        assert sum(1 for s in sizes if s < 0.5 * TARGET) <= 1
    assert max(len(f) for f in parts.values()) > 1  # the test data really needs several files


def test_range_writes_at_most_files_plus_partitions(spark, schema, events):
    df = events()
    result = write_dataframe(spark, df, TableRef(schema, "rg"), cfg(distribution="range"),
                             log=lambda m: None)
    assert rows_of(spark, schema, "rg") == rows_of_df(df)
    assert result.files_written <= result.files_planned + 12
    assert max(f.bytes for f in layout(spark, schema, "rg").files) <= 1.25 * TARGET


@pytest.mark.parametrize("distribution", ["hash", "none"])
def test_naive_distributions_keep_every_row(spark, schema, events, distribution):
    df = events(days=4)
    write_dataframe(spark, df, TableRef(schema, "nv"), cfg(distribution=distribution),
                    log=lambda m: None)
    assert rows_of(spark, schema, "nv") == rows_of_df(df)


def test_static_overrides_skip_measuring(spark, schema, events):
    df = events(days=3)
    logs = []
    res = write_dataframe(spark, df, TableRef(schema, "st"),
                          cfg(distribution="exact", file_count=7), log=logs.append)
    assert res.files_written == 7
    assert not any("sampling" in m for m in logs)
    logs.clear()
    res = write_dataframe(spark, df, TableRef(schema, "bp"), cfg(bytes_per_row=TARGET / 100),
                          log=logs.append, full_refresh=True)
    assert any("from config" in m for m in logs) and not any("sampling" in m for m in logs)
    assert rows_of(spark, schema, "bp") == rows_of_df(df)


def test_unpartitioned_table(spark, schema, events):
    df = events(days=3)
    res = write_dataframe(spark, df, TableRef(schema, "up"),
                          parse_config({"target_file_size": TARGET, "distribution": "exact"}),
                          log=lambda m: None)
    assert res.partitions == 1 and res.files_written >= 2
    assert rows_of(spark, schema, "up") == rows_of_df(df)


def test_insert_overwrite_rewrites_only_touched_partitions(spark, schema, events):
    table = TableRef(schema, "io")
    write_dataframe(spark, events(days=6), table, cfg(), log=lambda m: None)
    before = files_by_partition(spark, schema, "io")
    # new data for days 4..7: two existing partitions replaced, two new ones added
    new = events(days=4, start="2025-01-05", id_offset=10**9, tag="v2")
    write_dataframe(spark, new, table, cfg(), log=lambda m: None)
    after = files_by_partition(spark, schema, "io")
    for day in ("2025-01-01", "2025-01-02", "2025-01-03", "2025-01-04"):
        key = f"day={day}"
        assert [(f.path, f.bytes) for f in after[key]] == [(f.path, f.bytes) for f in before[key]]
    tags = {r.day.isoformat(): r.tags for r in spark.sql(
        f"select day, collect_set(tag) as tags from {schema}.io group by day").collect()}
    assert tags["2025-01-04"] == ["v1"] and tags["2025-01-05"] == ["v2"]
    assert tags["2025-01-08"] == ["v2"] and len(tags) == 8
    expected = rows_of_df(events(days=4)) + rows_of_df(new)
    assert rows_of(spark, schema, "io") == sorted(expected)


def test_full_refresh_replaces_everything(spark, schema, events):
    table = TableRef(schema, "fr")
    write_dataframe(spark, events(days=5), table, cfg(), log=lambda m: None)
    new = events(days=2, tag="v2")
    write_dataframe(spark, new, table, cfg(), full_refresh=True, log=lambda m: None)
    assert rows_of(spark, schema, "fr") == rows_of_df(new)
    assert spark.sql(f"show partitions {schema}.fr").count() == 2


def test_bad_config_fails_before_anything_is_written(spark, schema, events):
    table = TableRef(schema, "bad")
    write_dataframe(spark, events(days=2), table, cfg(), log=lambda m: None)
    before = rows_of(spark, schema, "bad")
    with pytest.raises(ConfigError, match="partition_by.*month"):
        write_dataframe(spark, events(days=3, tag="v2"), table,
                        cfg(partition_by=["month"]), log=lambda m: None)
    with pytest.raises(ConfigError, match="partition_by"):
        write_dataframe(spark, events(days=3, tag="v2"), table,
                        cfg(partition_by=["tag"]), log=lambda m: None)
    assert rows_of(spark, schema, "bad") == before


def test_only_plans_that_shuffle_or_vary_are_cached_for_the_write(spark, schema, events):
    """A scan is read again (cheaper than a cache); a join, an aggregation or rand() runs once."""
    events(days=2, base=50).write.saveAsTable(f"{schema}.src")
    src = spark.table(f"{schema}.src")
    assert not worth_caching(src.where("id > 3").select("id", "day"))
    assert worth_caching(src.groupBy("day").count())
    assert worth_caching(src.join(src.select("id"), "id"))
    assert worth_caching(src.withColumn("r", F.rand()))


def test_exact_plans_every_partition_type_by_the_text_that_names_its_directory(spark, schema):
    """Rows find their partition's plan by value where a value has one text (ints, decimals,
    booleans, dates, strings), by text otherwise (doubles, timestamps): either way exactly
    the planned files."""
    df = spark.sql("""
        select cast(id as bigint) as id, 'v1' as tag,
               cast(id % 3 as int) as i, cast(id % 2 as decimal(5, 2)) as dec, id % 2 = 0 as b,
               date_add(date'2025-01-01', cast(id % 2 as int)) as d,
               (id % 2) / 3.0D as x,
               timestamp'2025-03-30 01:30:00' + make_interval(0, 0, 0, 0, id % 2, 0, 0) as ts
        from range(600)""")
    pcols = ["i", "dec", "b", "d", "x", "ts"]
    result = write_dataframe(spark, df, TableRef(schema, "ty"),
                             parse_config({"partition_by": pcols, "target_file_size": 2000,
                                           "distribution": "exact"}), log=lambda m: None)
    assert rows_of(spark, schema, "ty") == rows_of_df(df)
    parts = files_by_partition(spark, schema, "ty")
    assert len(parts) == 6
    assert result.files_written == result.files_planned == sum(len(f) for f in parts.values())


def test_a_partitioned_build_estimated_within_the_target_writes_a_file_a_partition_unplanned(
        spark, schema):
    """Spark estimates the rows at less than one target file (and above a small batch's
    quarter of it): each day's rows go to one task by their day, in one pass, without
    counting them first; the bytes per row the next runs plan by are those of the files
    written."""
    df = spark.range(20_000).selectExpr(
        "id", "date_add(date'2025-01-01', cast(id % 5 as int)) AS day",
        "sha2(cast(id as string), 256) AS payload", "'v' AS tag")
    logs = []
    # ~390 KB by Spark's estimate: above a small batch's quarter of the target
    result = write_dataframe(spark, df, TableRef(schema, "un"),
                             cfg(target_file_size="1MB"), log=logs.append)
    assert result.route == Route.FILE_A_PARTITION, logs
    assert not any("counting rows" in m for m in logs), logs
    assert rows_of(spark, schema, "un") == rows_of_df(df)
    parts = files_by_partition(spark, schema, "un")
    assert len(parts) == 5 and all(len(f) == 1 for f in parts.values())
    assert (result.files_written, result.files_planned) == (5, 5)
    written = sum(f.bytes for f in layout(spark, schema, "un").files)
    assert result.bytes_per_row == pytest.approx(written / result.rows)
    # plain Parquet: every reader of <table>/**/*.parquet sees exactly the rows
    location = describe_table(spark, TableRef(schema, "un")).location.replace("file:", "")
    expected = sorted(((r["id"], str(r["day"]), r["tag"]) for r in df.collect()), key=repr)
    for read in (duckdb_rows, pyarrow_rows, polars_rows):
        got = sorted(((i, str(d), t) for i, d, t in read(location, ["id", "day", "tag"])),
                     key=repr)
        assert got == expected, read.__name__


def test_an_estimate_below_the_rows_sends_the_write_the_planned_way(spark, schema):
    """Spark estimates 8,000 rows of 0.7 KB incompressible strings at ~170 KB (a string
    column's default size is 20 B): the one-pass write makes a file far above the 256 KB
    target, so the write is counted and planned instead, its files within the target. The
    strings are hashes of the id, the same at every evaluation of the query (the sample and
    the write read it again; uuid() gave other rows each time), and ~360 rows go to a file
    (rows reach a partition's files by hash: at ~180 a file the largest of 22 came within
    2% of the bound)."""
    target = 256 * 1024
    df = spark.range(8000).selectExpr(
        "id", "id % 2 AS day",
        "concat_ws('', transform(sequence(1, 11), x -> sha2(cast(id * 100 + x AS string), 256)))"
        " AS s")
    logs = []
    result = write_dataframe(spark, df, TableRef(schema, "lo"),
                             cfg(target_file_size=target), log=logs.append)
    assert any("writes each partition's file, no count" in m for m in logs), logs  # tried
    assert any("a file came out above the target" in m for m in logs), logs
    assert result.route == Route.PLANNED, logs
    assert spark.table(f"{schema}.lo").count() == 8000
    files = layout(spark, schema, "lo").files
    assert len(files) == result.files_written > 2
    assert max(f.bytes for f in files) <= 1.25 * target, (sorted(f.bytes for f in files), logs)


def test_a_build_without_a_count_refuses_nulls_before_its_files_reach_the_table(spark, schema):
    """What the count checks is observed in the one-pass write: a null in a not_null column
    fails the build and the table is not created."""
    from python_adapter.errors import ConstraintError
    df = spark.range(3000).selectExpr(
        "id", "date_add(date'2025-01-01', cast(id % 3 as int)) AS day",
        "IF(id % 500 = 7, NULL, id * 1.5) AS amount")
    logs = []
    with pytest.raises(ConstraintError, match="amount"):
        write_dataframe(spark, df, TableRef(schema, "nn"),
                        cfg(target_file_size="128KB", not_null_columns=["amount"]),
                        log=logs.append)
    assert any("writes each partition's file, no count" in m for m in logs), logs
    assert not spark.catalog.tableExists(f"{schema}.nn")
