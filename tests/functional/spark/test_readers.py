"""Other engines read exactly the table Spark reads: DuckDB (`read_parquet('<t>/**/*.parquet',
hive_partitioning=true)`), polars (the same glob, and a scan of the directory) and pyarrow
(a Hive-partitioned dataset), after upserts with deletes, clustering, a full refresh and a
rollback. Rows are compared one by one, plus a checksum."""
import hashlib

import pytest
from pyspark.sql import functions as F

from python_adapter.core.config import parse_config
from python_adapter.io.fs import HadoopFS
from python_adapter.spark.catalog.tables import TableRef, describe_table
from python_adapter.spark.services.cluster_exec import run_clustering
from python_adapter.spark.services.rollback import rollback_last_commit
from python_adapter.api import write_dataframe
from python_adapter.spark.job import Route
from tests.functional.readers import (duckdb_rows, local_dir, parquet_files, polars_rows,
                                      pyarrow_rows)

QUIET = dict(log=lambda m: None)
COLUMNS = ["id", "day", "payload", "amount", "tag"]
CFG = parse_config({"partition_by": ["day"], "unique_key": "id", "target_file_size": "24KB",
                    "delete_column": "gone"})


def _normal(rows):
    """Rows as text, sorted: engines differ in how they type a Hive partition value."""
    return sorted(tuple("" if v is None else str(v) for v in r) for r in rows)


def _checksum(rows):
    return hashlib.sha256(repr(_normal(rows)).encode()).hexdigest(), len(rows)


def _polars_directory(table_dir, columns):
    import polars as pl
    frame = pl.scan_parquet(table_dir, hive_partitioning=True,
                            try_parse_hive_dates=False).select(columns).collect()
    return frame.rows()


def _same_everywhere(spark, table, step):
    spark_rows = [tuple(r) for r in spark.table(f"{table.schema}.{table.identifier}")
                  .select(*COLUMNS).collect()]
    fs = HadoopFS(spark)
    table_dir = local_dir(fs.qualify(describe_table(spark, table).location))
    assert all(p.endswith(".parquet") for p in parquet_files(table_dir))
    expected = _checksum(spark_rows)
    for read in (duckdb_rows, polars_rows, pyarrow_rows, _polars_directory):
        got = read(table_dir, COLUMNS)
        assert _normal(got) == _normal(spark_rows), f"{read.__name__} after {step}"
        assert _checksum(got) == expected, f"{read.__name__} after {step}"


@pytest.fixture
def batches(spark, events):
    def batch(tag, where, gone="false"):
        return events(days=6, tag=tag).where(where).selectExpr(*COLUMNS, f"{gone} as gone")
    return batch


def test_every_engine_reads_the_table_spark_reads(spark, schema, batches):
    table = TableRef(schema, "readers")
    write_dataframe(spark, batches("v1", "true"), table, CFG, **QUIET)
    _same_everywhere(spark, table, "the first build")
    write_dataframe(spark, batches("v2", "id % 7 = 0"), table, CFG, **QUIET)
    write_dataframe(spark, batches("v3", "id % 11 = 0", gone="id % 2 = 0"), table, CFG, **QUIET)
    _same_everywhere(spark, table, "upserts with deletes")
    run_clustering(spark, table, ["payload"], "zorder", log=lambda m: None)
    _same_everywhere(spark, table, "clustering")
    rollback_last_commit(spark, table, **QUIET)
    _same_everywhere(spark, table, "a rollback")
    write_dataframe(spark, batches("v4", "id % 3 = 0"), table, CFG, full_refresh=True, **QUIET)
    _same_everywhere(spark, table, "a full refresh")


def test_every_engine_reads_the_files_a_small_upsert_writes(spark, schema, batches):
    """An upsert with deletes small enough to be merged by one task (upsert._as_small_merge):
    the partitions' files it writes again hold exactly the rows Spark reads."""
    table = TableRef(schema, "readers_small")
    cfg = parse_config({"partition_by": ["day"], "unique_key": "id",
                        "target_file_size": "4MB", "delete_column": "gone"})
    write_dataframe(spark, batches("v1", "id % 5 = 0"), table, cfg, **QUIET)
    logged = []
    result = write_dataframe(spark, batches("v2", "id % 15 = 0", gone="id % 2 = 0"), table,
                             cfg, log=logged.append)
    assert result.route == Route.SMALL_UPSERT, logged
    _same_everywhere(spark, table, "a small upsert")


@pytest.mark.parametrize("target", ["24KB", "4MB"], ids=["planned", "small"])
def test_every_engine_reads_a_partition_scoped_table(spark, schema, batches, target):
    """index_scope partition: a key that moves to the next day is written there and its old
    row stays (Hudi's non-global index); a later upsert of it, with other rows of its old
    day, updates the new day's row only. Every engine reads both copies, and nothing else,
    as Spark does; both ways of writing an upsert (planned, and the small one-task merge)."""
    table = TableRef(schema, f"readers_scoped_{target.lower()}")
    cfg = parse_config({"partition_by": ["day"], "unique_key": "id", "target_file_size": target,
                        "delete_column": "gone", "index_scope": "partition"})
    write_dataframe(spark, batches("v1", "id % 5 = 0"), table, cfg, **QUIET)
    moved = batches("v2", "id % 35 = 0").selectExpr("id", "date_add(day, 1) as day",
                                                     *COLUMNS[2:], "gone")
    write_dataframe(spark, moved, table, cfg, **QUIET)
    _same_everywhere(spark, table, "keys moved to the next day")
    again = moved.withColumn("tag", F.lit("v3")).unionByName(batches("v3", "id % 35 = 10"))
    logged = []
    result = write_dataframe(spark, again, table, cfg, log=logged.append)
    assert (result.route == Route.SMALL_UPSERT) == (target == "4MB"), logged
    held = spark.table(f"{table.schema}.{table.identifier}").where("id % 35 = 0")
    expected = batches("v1", "id % 35 = 0").unionByName(again.where("id % 35 = 0"))
    assert sorted(held.select("id", "day", "tag").collect()) == \
        sorted(expected.select("id", "day", "tag").collect())
    _same_everywhere(spark, table, "an upsert of moved keys beside their old days' rows")
