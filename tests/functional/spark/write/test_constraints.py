"""not_null_columns on every write path, on a real local Spark: the nulls are counted by
the aggregation the path already runs (or one of its own where it runs none), the error
names the column and the rows, and the table is left as it was."""
import pytest
from pyspark.sql import functions as F

from python_adapter.core.config import parse_config
from python_adapter.errors import ConstraintError
from python_adapter.spark.catalog.tables import TableRef, describe_table
from python_adapter.api import write_dataframe
from tests.functional.helpers import files_by_partition, rows_of, rows_of_df

QUIET = dict(log=lambda m: None)


def cfg(**kw):
    base = {"partition_by": ["day"], "target_file_size": 16_000, "bytes_per_row": 60,
            "not_null_columns": ["TAG", "day"]}
    base.update(kw)
    return parse_config(base)


def with_null_tags(df, every):
    return df.withColumn("tag", F.when(F.col("id") % every == 1, None).otherwise(F.col("tag")))


def refused(spark, df, table, config, full_refresh=False, nulls=None):
    """The write fails naming tag and its null rows (`nulls`, else counted here)."""
    nulls = nulls if nulls is not None else df.where("tag is null").count()
    assert nulls > 0
    with pytest.raises(ConstraintError, match=f"column tag is null in {nulls:,} rows; "
                                              f"nothing was written"):
        write_dataframe(spark, df, table, config, full_refresh=full_refresh, **QUIET)


def test_full_builds_count_nulls_with_the_partition_counts(spark, schema, events):
    table = TableRef(schema, "fb")
    refused(spark, with_null_tags(events(days=3), 7), table, cfg())
    assert describe_table(spark, table) is None  # a first build that fails leaves no table
    good = events(days=3)
    write_dataframe(spark, good, table, cfg(), **QUIET)
    files = files_by_partition(spark, schema, "fb")
    # distribution none (and range with a static file_count) makes no count: one of its own
    refused(spark, with_null_tags(events(days=2), 5), table, cfg(distribution="none"),
            full_refresh=True)
    refused(spark, with_null_tags(events(days=2), 3), table,
            cfg(incremental_strategy="insert_overwrite"))
    assert rows_of(spark, schema, "fb") == rows_of_df(good)
    assert files_by_partition(spark, schema, "fb") == files


def test_unpartitioned_full_build(spark, schema, events):
    table = TableRef(schema, "np")
    refused(spark, with_null_tags(events(days=2), 9), table,
            cfg(partition_by=None, not_null_columns="tag"))
    assert describe_table(spark, table) is None


def test_upserts_and_inserts_count_nulls_with_the_tag_statistics(spark, schema, events):
    table = TableRef(schema, "up")
    c = cfg(unique_key="id", delete_column="gone", small_file_limit=12_000)
    base = events(days=3).withColumn("gone", F.lit(False))
    write_dataframe(spark, base, table, c, **QUIET)
    files = files_by_partition(spark, schema, "up")
    batch = with_null_tags(base.where("id % 4 = 1"), 3)
    # a row the batch deletes is not written: its null does not count
    deleted = batch.where("tag is null").limit(1).withColumn("gone", F.lit(True))
    batch = batch.join(deleted.select("id"), "id", "left_anti").unionByName(deleted)
    refused(spark, batch, table, c, nulls=batch.where("tag is null and not gone").count())
    inserts = with_null_tags(events(days=2, id_offset=10**9), 11).withColumn("gone", F.lit(False))
    refused(spark, inserts, table, cfg(incremental_strategy="insert", small_file_limit=12_000))
    assert rows_of(spark, schema, "up") == rows_of_df(base)
    assert files_by_partition(spark, schema, "up") == files
    # (writes whose rows hold no null go ahead: the adapter tests' incremental runs of
    # contracted models, tests/adapter/test_constraints_sized.py)
