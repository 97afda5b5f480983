"""What the engine asks of the Spark session and of a query's plan, for both kinds of
session: py4j into the driver's JVM (`method: session`), or the Connect server's extension
(`method: connect`, python_adapter/io/connect_client.py). The write path above asks here and
never looks at which it runs on.
"""
import re
import threading
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from python_adapter.io.connect_client import call, is_connect

_PARALLELISM = {}  # {id of a Connect session: the server's default parallelism}


@dataclass(frozen=True)
class PlanStats:
    size: int                       # the optimizer's estimate of the rows' bytes
    default_size: int               # bytes a row of the plan's columns takes by default
    deterministic: bool
    optimized: Optional[str] = None  # the optimized plan's text, when asked for
    executed: Optional[str] = None   # the physical plan's text, when asked for


def plan_stats(df: Any, optimized: bool = False, executed: bool = False) -> PlanStats:
    """Spark's estimates of df's plan (and its text, when asked)."""
    if is_connect(df.sparkSession):
        got = call(df.sparkSession, "plan.stats", on=df, plan_text=optimized,
                   executed_text=executed)
        return PlanStats(int(got["size"]), int(got["default_size"]), bool(got["deterministic"]),
                         got.get("plan_text"), got.get("executed_text"))
    query = df._jdf.queryExecution()
    plan = query.optimizedPlan()
    size = plan.stats().sizeInBytes()
    return PlanStats(int(size if isinstance(size, int) else str(size.toString())),
                     int(df._jdf.schema().defaultSize()), bool(plan.deterministic()),
                     str(plan.toString()) if optimized else None,
                     str(query.executedPlan().toString()) if executed else None)


def default_parallelism(spark: Any) -> int:
    """The session's default parallelism (the cores of its executors)."""
    if not is_connect(spark):
        return int(spark.sparkContext.defaultParallelism)
    key = id(spark)
    if key not in _PARALLELISM:
        _PARALLELISM[key] = int(call(spark, "session.info")["parallelism"])
    return _PARALLELISM[key]


def num_partitions(df: Any) -> int:
    """The number of tasks the plan of df reads or computes in its last stage."""
    if is_connect(df.sparkSession):
        return int(call(df.sparkSession, "plan.partitions", on=df)["partitions"])
    return int(df.rdd.getNumPartitions())


def sql_type(df: Any, column: str) -> str:
    """The SQL type of one of df's columns, as a CAST takes it."""
    if is_connect(df.sparkSession):
        return df.schema[column].dataType.simpleString()
    return str(df._jdf.schema().apply(column).dataType().sql())


def session_copy(spark: Any) -> Optional[Any]:
    """A copy of the session sharing its catalog and cache, with settings of its own
    (`cloneSession`); None over Connect, where a server-side clone gets a class loader of
    its own and compiles every write's generated code again (spark/session_conf.own_session)."""
    if is_connect(spark):
        return None
    return type(spark)(spark.sparkContext, spark._jsparkSession.cloneSession())


# The job tag of this thread's jobs over Connect, per session: the one we added, so that
# setting the next phase removes it and leaves the caller's own tags alone.
_TAGS = threading.local()
_DESCRIPTION = "spark.job.description"


def job_description(spark: Any) -> Optional[str]:
    """What describes the Spark jobs this thread starts on the session (None: nothing)."""
    if is_connect(spark):
        return getattr(_TAGS, "by_session", {}).get(id(spark))
    return spark.sparkContext.getLocalProperty(_DESCRIPTION)


def describe_jobs(spark: Any, text: Optional[str]) -> None:
    """Describe the Spark jobs this thread starts from now on (None: no description), so
    the Spark UI ties them to a model. With a JVM here: the job description, a property of
    the calling thread (dbt's threads do not mix; pyspark pins a JVM thread to each Python
    thread). Over Connect a client cannot set a description: the text becomes a job tag
    (thread-local in the client as well; commas, which separate tags, become spaces)."""
    if not is_connect(spark):
        spark.sparkContext.setLocalProperty(_DESCRIPTION, text)
        return
    tags = _TAGS.__dict__.setdefault("by_session", {})
    old = tags.pop(id(spark), None)
    if old is not None:
        spark.removeTag(old)
    if text:
        tags[id(spark)] = text.replace(",", " ")
        spark.addTag(tags[id(spark)])


def _string_seq(spark: Any, items: Sequence[str]) -> Any:
    """A Scala Seq of strings built in one call into the JVM: py4j sends a Python list one
    element per round trip. None when an item holds a newline (the separator), or over
    Spark Connect (no JVM here: the list goes in the plan, no round trip per item)."""
    if is_connect(spark) or any("\n" in item for item in items):
        return None
    jvm = spark.sparkContext._jvm
    listed = jvm.java.util.regex.Pattern.compile("\n").splitAsStream("\n".join(items)) \
        .collect(jvm.java.util.stream.Collectors.toList())
    return jvm.PythonUtils.toSeq(listed)


def select_exprs(df: Any, exprs: Sequence[str]) -> Any:
    """df.selectExpr(*exprs), the expressions sent to the JVM in one call (py4j sends a list
    one element per round trip)."""
    seq = _string_seq(df.sparkSession, exprs)
    if seq is None or not exprs:
        return df.selectExpr(*exprs)
    return type(df)(df._jdf.selectExpr(seq), df.sparkSession)


def read_parquet(spark: Any, reader: Any, paths: Sequence[str]) -> Any:
    """reader.parquet(*paths), the paths sent to the JVM as one string split there: py4j
    sends a Python list one element per round trip (~0.07 ms each: 0.2 s for the 3,000
    files of a compaction). Paths holding a newline (legal, but no writer of ours makes
    one) go as a list."""
    seq = _string_seq(spark, paths)
    if seq is None:
        return reader.parquet(*paths)
    return reader._df(reader._jreader.parquet(seq))


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
