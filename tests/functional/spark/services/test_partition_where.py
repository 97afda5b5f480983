"""A table service's `where`: a condition on the partition columns, evaluated on each
partition's values typed as the table types them; anything else is refused naming the key
and the value."""
import pytest

from python_adapter.errors import ConfigError
from python_adapter.spark.catalog.tables import TableRef, describe_table
from python_adapter.spark.services.partition_where import partition_where

DIRS = {"day=2025-02-28/n=100", "day=2025-03-01/n=9", "day=2025-03-01/n=10",
        "day=2025-03-10/n=10", "day=__HIVE_DEFAULT_PARTITION__/n=50"}


@pytest.fixture
def info(spark, schema):
    spark.sql(f"CREATE TABLE {schema}.w (id bigint, amount double, day date, n int) "
              f"USING parquet PARTITIONED BY (day, n)")
    return describe_table(spark, TableRef(schema, "w"))


@pytest.mark.parametrize("where,selected", [
    # ints compare as numbers (as text, '9' > '10'), dates as dates
    ("n > 9", {"day=2025-02-28/n=100", "day=2025-03-01/n=10", "day=2025-03-10/n=10",
               "day=__HIVE_DEFAULT_PARTITION__/n=50"}),
    ("day >= '2025-03-01' and n >= 10", {"day=2025-03-01/n=10", "day=2025-03-10/n=10"}),
    ("day between date'2025-03-01' and date_add(date'2025-03-01', 5)",
     {"day=2025-03-01/n=9", "day=2025-03-01/n=10"}),
    ("day is null", {"day=__HIVE_DEFAULT_PARTITION__/n=50"}),
    ("month(day) = 2 or N = 50", {"day=2025-02-28/n=100", "day=__HIVE_DEFAULT_PARTITION__/n=50"}),
])
def test_where_selects_partitions_by_their_typed_values(spark, schema, info, where, selected):
    assert partition_where(spark, info, f"{schema}.w", where)(DIRS) == selected


@pytest.mark.parametrize("where,message", [
    ("amount > 1", "where: 'amount > 1' names `amount`, which is not a partition column of "
                   r"t_\w+\.w; it is evaluated against partition values only \(partition "
                   r"columns: day, n\)"),
    ("day >=", "where: 'day >=' is not a SQL condition Spark can parse"),
    ("n > 1; drop table x", "where: 'n > 1; drop table x' is not a SQL condition"),
    ("day", "where: 'day' is not a condition on the partition columns .*not a boolean"),
    ("", "where: expected a SQL condition on the partition columns, got ''"),
    (7, "where: expected a SQL condition on the partition columns, got 7"),
])
def test_a_where_that_is_no_condition_on_partition_values_is_refused(spark, schema, info, where,
                                                                      message):
    with pytest.raises(ConfigError, match=message):
        partition_where(spark, info, f"{schema}.w", where)


def test_where_on_an_unpartitioned_table_is_refused(spark, schema):
    spark.sql(f"CREATE TABLE {schema}.flat (id bigint) USING parquet")
    info = describe_table(spark, TableRef(schema, "flat"))
    with pytest.raises(ConfigError, match=r"where: 'id > 1' given, but t_\w+\.flat is not "
                                          r"partitioned"):
        partition_where(spark, info, f"{schema}.flat", "id > 1")
    assert partition_where(spark, info, f"{schema}.flat", None) is None
