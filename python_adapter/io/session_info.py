"""What the engine asks of the Spark session and of a query's plan, for both kinds of
session: each call goes to the session's backend (io/backend.py), py4j into the driver's JVM
(`method: session`) or the Connect server's extension (`method: connect`). The write path
above asks here and never looks at which it runs on.
"""
import re
from typing import Any, Optional, Sequence

from python_adapter.io.backend import backend
from python_adapter.io.interfaces import PlanStats

__all__ = ["PlanStats", "plan_stats", "default_parallelism", "num_partitions", "sql_type",
           "session_copy", "job_description", "describe_jobs", "select_exprs",
           "read_parquet", "conf_bytes", "case_sensitive", "byte_string_bytes"]


def plan_stats(df: Any, optimized: bool = False, executed: bool = False) -> PlanStats:
    """Spark's estimates of df's plan (and its text, when asked)."""
    return backend(df.sparkSession).plans.stats(df, optimized, executed)


def default_parallelism(spark: Any) -> int:
    """The session's default parallelism (the cores of its executors)."""
    return backend(spark).session.default_parallelism()


def num_partitions(df: Any) -> int:
    """The number of tasks the plan of df reads or computes in its last stage."""
    return backend(df.sparkSession).plans.partitions(df)


def sql_type(df: Any, column: str) -> str:
    """The SQL type of one of df's columns, as a CAST takes it."""
    return backend(df.sparkSession).plans.sql_type(df, column)


def session_copy(spark: Any) -> Optional[Any]:
    """A copy of the session sharing its catalog and cache, with settings of its own
    (`cloneSession`); None over Connect, where a server-side clone gets a class loader of
    its own and compiles every write's generated code again (spark/session_conf.own_session)."""
    return backend(spark).session.session_copy()


def job_description(spark: Any) -> Optional[str]:
    """What describes the Spark jobs this thread starts on the session (None: nothing)."""
    return backend(spark).session.job_description()


def describe_jobs(spark: Any, text: Optional[str]) -> None:
    """Describe the Spark jobs this thread starts from now on (None: no description), so
    the Spark UI ties them to a model: the job description with a JVM here, a job tag over
    Connect (a client cannot set a description)."""
    backend(spark).session.describe_jobs(text)


def select_exprs(df: Any, exprs: Sequence[str]) -> Any:
    """df.selectExpr(*exprs), the expressions sent to the JVM in one call (py4j sends a list
    one element per round trip)."""
    return backend(df.sparkSession).plans.select_exprs(df, exprs)


def read_parquet(spark: Any, reader: Any, paths: Sequence[str]) -> Any:
    """reader.parquet(*paths), the paths sent to the JVM as one string split there: py4j
    sends a Python list one element per round trip (~0.07 ms each: 0.2 s for the 3,000
    files of a compaction)."""
    return backend(spark).plans.read_parquet(reader, paths)


def conf_bytes(spark: Any, key: str, default: str) -> int:
    """A size setting of the session in bytes, parsed as Spark parses it."""
    return byte_string_bytes(spark.conf.get(key, default))


def case_sensitive(spark: Any) -> bool:
    return str(spark.conf.get("spark.sql.caseSensitive", "false")).lower() == "true"


_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "g": 1 << 30, "gb": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "p": 1 << 50,
          "pb": 1 << 50}
_BYTE_STRING = re.compile(r"\s*(-?\d+)\s*([a-zA-Z]*)\s*")


def byte_string_bytes(text: str) -> int:
    """Spark's JavaUtils.byteStringAsBytes: '64MB', '10m', '1g', '-1', '1024' (bytes)."""
    m = _BYTE_STRING.fullmatch(str(text))
    if m is None or m.group(2).lower() not in _UNITS:
        raise ValueError(f"not a size in bytes: {text!r}")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]
