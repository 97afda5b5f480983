"""Small driver-side tables (file -> slot maps, routing keys) as Spark inline tables.

An inline `VALUES` table is a LocalRelation: it is parsed in the driver, where a DataFrame
made with createDataFrame is a Python RDD. Broadcasting one is not free, though: in Spark
4.3's event log each such table an upsert batch broadcasts ran a short job of its own
(2 tasks, the session's parallelism), started together with the others when the plan is
prepared.
"""
import datetime
import decimal
from typing import Any, Sequence, Tuple

from pyspark.sql import DataFrame, SparkSession


def _text(value):
    if isinstance(value, datetime.datetime):
        # A naive datetime is local time in Python and session time in Spark: refuse it.
        raise TypeError("local_table does not take timestamps")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    return str(value)


_LONG = range(-2**63 + 1, 2**63)


def _literal(value, sql_type):
    if value is None:
        return f"CAST(NULL AS {sql_type})"
    # Parsing and analysing the casts is most of a large table's cost (a compaction's
    # table of 3,000 files: ~5 s with three per cell, ~1.5 s so): a bigint is a literal.
    if sql_type == "bigint" and isinstance(value, int) and not isinstance(value, bool) \
            and value in _LONG:
        return f"{value}L"
    # The UTF-8 text as a hex binary literal: no quoting that depends on the parser's
    # escape settings.
    text = f"CAST(X'{_text(value).encode().hex()}' AS STRING)"
    return text if sql_type == "string" else f"CAST({text} AS {sql_type})"


def local_table(spark: SparkSession, columns: Sequence[Tuple[str, str]],
                rows: Sequence[Sequence[Any]]) -> DataFrame:
    """A DataFrame of `rows` (tuples of None, bool, int, float, str, date or Decimal) with
    `columns` [(name, Spark SQL type)]; at least one row."""
    if not rows:
        raise ValueError("local_table needs at least one row")
    values = ", ".join("(" + ", ".join(_literal(v, t) for v, (_, t) in zip(row, columns)) + ")"
                       for row in rows)
    names = ", ".join(f"`{name.replace('`', '``')}`" for name, _ in columns)
    return spark.sql(f"SELECT * FROM VALUES {values} AS t({names})")
