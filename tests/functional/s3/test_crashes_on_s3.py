"""A write on S3 killed at every step of the commit protocol (issue 64, goal 3): the process
gone with its lock at the fault point (an InjectedCrash; tests/functional/s3/test_dbt_on_s3.py
kills a real dbt process mid-publish), then sized_recover as the next writer runs it. The
table then holds exactly the rows of its last completed commit, by Spark and by pyarrow's
own S3 reader, and nothing but its live data files is below it. The publish's points fall
between the copies and the deletes of the object-store steps: publish:1 leaves the first
replaced file at both paths, in the table and set aside."""
import os

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

CFG = parse_config({"partition_by": ["day"], "unique_key": "id", "target_file_size": 16_000,
                    "small_file_limit": 12_000})
DB = "crashes_s3"
# (fault point, whether the write has completed when it is killed there)
# (the crash matrix of tests/unit/table kills every point on LocalFS(copying=True); here, on
# a real S3, before any data file, in the publish between a copy and its delete, after the
# publish, and after the commit)
POINTS = [("requested", False), ("publish:1", False), ("published", False),
          ("completed", True)]


@pytest.fixture(scope="module")
def table(spark, s3):
    spark.sql(f"CREATE DATABASE {DB} LOCATION 's3a://{s3.bucket}/warehouse/{DB}.db'")
    ref = TableRef(DB, "events")
    events = events_of(spark)
    api.write_dataframe(spark, events(days=4), ref, CFG, log=lambda m: None)
    yield ref, f"s3a://{s3.bucket}/warehouse/{DB}.db/events"
    spark.sql(f"DROP DATABASE IF EXISTS {DB} CASCADE")


def _batch(spark):
    """Updates in every day (their files rewritten and replaced) and new rows: applied
    once or twice, the table's rows are the same."""
    return events_of(spark)(days=4, base=40, tag="v2").unionByName(
        events_of(spark)(days=4, base=20, id_offset=50_000, tag="new"))


def _rows(spark, ref):
    spark.catalog.refreshTable(ref.quoted)
    return sorted(tuple(r) for r in spark.table(ref.quoted).select("id", "tag").collect())


@pytest.fixture(scope="module")
def upserted(spark, table):
    """The rows the batch leaves, computed apart (the same upsert on a local table)."""
    spark.sql("CREATE DATABASE crashes_local")
    local = TableRef("crashes_local", "events")
    api.write_dataframe(spark, events_of(spark)(days=4), local, CFG, log=lambda m: None)
    api.write_dataframe(spark, _batch(spark), local, CFG, log=lambda m: None)
    yield _rows(spark, local)
    spark.sql("DROP DATABASE IF EXISTS crashes_local CASCADE")


@pytest.mark.parametrize("point, completed", POINTS)
def test_a_write_killed_at_any_step_on_s3_leaves_the_last_commit_after_recovery(
        spark, s3, table, upserted, monkeypatch, point, completed):
    ref, uri = table
    before = _rows(spark, ref)
    monkeypatch.setenv("SIZED_SPARK_FAULT", point)
    faults.reset()
    with pytest.raises(InjectedCrash):
        api.write_dataframe(spark, _batch(spark), ref, CFG, log=lambda m: None)
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    lock.forget_held_locks()   # the writer is gone, as a killed process is
    faults.reset()
    api.recover(spark, ref, log=lambda m: None)
    expected = upserted if completed else before
    assert _rows(spark, ref) == expected
    read = object_store.pyarrow_rows(s3, uri, ["id", "tag"])
    assert sorted(read) == expected
    prefix = object_store.bucket_path(uri)
    assert [not_live(k, prefix) for k in object_store.keys(s3, prefix)
            if not_live(k, prefix)] == []
