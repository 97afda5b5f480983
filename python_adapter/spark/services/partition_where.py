"""A table service's `where`: a SQL predicate over the partition columns, evaluated by Spark
against each partition's values (not against data rows), so dates, numbers and timestamps
compare as values, not as directory text.

The predicate is checked when the call is made, before the table is locked or anything is
written: on a one-row table of the partition columns, typed as the table types them, so a
predicate that does not parse, names another column or is not a condition fails there,
naming the key and the value.
"""
import re
from contextlib import contextmanager
from typing import Callable, Collection, Iterator, Optional, Set

from pyspark.errors import AnalysisException, ParseException
from pyspark.sql import DataFrame, SparkSession

from python_adapter.core.partitions import parse_partition_path
from python_adapter.errors import ConfigError
from python_adapter.spark.catalog.tables import TableInfo
from python_adapter.spark.local_table import local_table

_DIR = "__sized_partition_dir"
# Spark 3.5 and 4.x: "... with name `amount` cannot be resolved ..."
_UNRESOLVED = re.compile(r"with name (`[^`]+`(?:\.`[^`]+`)*) cannot be resolved")


def partition_where(spark: SparkSession, info: TableInfo, name: str, where: Optional[str]
                    ) -> Optional[Callable[[Collection[str]], Set[str]]]:
    """None when `where` is None; else a function {partition dirs} -> the dirs whose values
    satisfy it. ConfigError naming `where` and its value when it is not a predicate over the
    partition columns of the table `name`."""
    if where is None:
        return None
    pcols = list(info.partition_columns)
    if not isinstance(where, str) or not where.strip():
        raise ConfigError(f"where: expected a SQL condition on the partition columns, "
                          f"got {where!r}")
    if not pcols:
        raise ConfigError(f"where: {where!r} given, but {name} is not partitioned")
    types = dict(info.columns)
    columns = [(c, types[c]) for c in pcols]
    _check(local_table(spark, columns, [(None,) * len(pcols)]), where, name, pcols)

    def select(dirs: Collection[str]) -> Set[str]:
        if not dirs:
            return set()
        rows = [tuple(text for _col, text in parse_partition_path(d)) + (d,) for d in dirs]
        values = local_table(spark, columns + [(_DIR, "string")], rows)
        return {r[0] for r in values.where(where).select(_DIR).collect()}
    return select


def _check(probe: DataFrame, where: str, name: str, pcols) -> None:
    """Spark parses and analyses the filter when it is built: errors come out here."""
    shown = ", ".join(pcols)
    try:
        with _unlogged_sql_errors():
            probe.where(where).schema  # analysed: over Spark Connect only now
    except ParseException as exc:
        raise ConfigError(f"where: {where!r} is not a SQL condition Spark can parse "
                          f"({_first_line(exc)})") from None
    except AnalysisException as exc:
        unresolved = _UNRESOLVED.search(str(exc))
        if unresolved:
            raise ConfigError(f"where: {where!r} names {unresolved.group(1)}, which is not a "
                              f"partition column of {name}; it is evaluated against partition "
                              f"values only (partition columns: {shown})") from None
        raise ConfigError(f"where: {where!r} is not a condition on the partition columns of "
                          f"{name} ({shown}): {_first_line(exc)}") from None


@contextmanager
def _unlogged_sql_errors() -> Iterator[None]:
    """PySpark 4 logs every SQL error it raises at ERROR, Java stack and all, before the
    caller sees it; here the error is the user's input, reported as a ConfigError."""
    try:
        from pyspark.logger import PySparkLogger  # PySpark 4; 3.5 logs nothing
    except ImportError:
        yield
        return
    logger = PySparkLogger.getLogger("SQLQueryContextLogger")
    was = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = was


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0]
