"""The backend of a session with a JVM here (`method: session`): py4j into the driver. Its
filesystem is io/fs.py's HadoopFS, its metastore io/session_catalog.py's SessionCatalog."""
import os
import re
from typing import Any, List, Optional, Sequence, Tuple

from python_adapter.io.interfaces import Backend, PlanStats, StagedFooter
from python_adapter.io.fast_local_fs import decode_fields, encode_fields, jar_loaded
from python_adapter.io.fs import HadoopFS, local_path
from python_adapter.io.jvm_errors import Py4JJavaError
from python_adapter.io.session_catalog import SessionCatalog

_DESCRIPTION = "spark.job.description"


def session_backend(spark: Any) -> Backend:
    return Backend(HadoopFS(spark), SessionCatalog(spark), SessionPlans(spark),
                   SessionFooters(spark), SessionJVM(spark))


def _string_seq(spark: Any, items: Sequence[str]) -> Any:
    """A Scala Seq of strings built in one call into the JVM: py4j sends a Python list one
    element per round trip. None when an item holds a newline (the separator)."""
    if any("\n" in item for item in items):
        return None
    jvm = spark.sparkContext._jvm
    listed = jvm.java.util.regex.Pattern.compile("\n").splitAsStream("\n".join(items)) \
        .collect(jvm.java.util.stream.Collectors.toList())
    return jvm.PythonUtils.toSeq(listed)


class SessionPlans:
    def __init__(self, spark: Any) -> None:
        self.spark = spark

    def stats(self, df: Any, optimized: bool = False, executed: bool = False) -> PlanStats:
        query = df._jdf.queryExecution()
        plan = query.optimizedPlan()
        size = plan.stats().sizeInBytes()
        return PlanStats(int(size if isinstance(size, int) else str(size.toString())),
                         int(df._jdf.schema().defaultSize()), bool(plan.deterministic()),
                         str(plan.toString()) if optimized else None,
                         str(query.executedPlan().toString()) if executed else None)

    def partitions(self, df: Any) -> int:
        return int(df.rdd.getNumPartitions())

    def sql_type(self, df: Any, column: str) -> str:
        return str(df._jdf.schema().apply(column).dataType().sql())

    def select_exprs(self, df: Any, exprs: Sequence[str]) -> Any:
        seq = _string_seq(df.sparkSession, exprs)
        if seq is None or not exprs:
            return df.selectExpr(*exprs)
        return type(df)(df._jdf.selectExpr(seq), df.sparkSession)

    def read_parquet(self, reader: Any, paths: Sequence[str]) -> Any:
        seq = _string_seq(self.spark, paths)
        if seq is None:
            return reader.parquet(*paths)
        return reader._df(reader._jreader.parquet(seq))


class SessionFooters:
    """On an embedded session writing to local disk, the jar of fast_local_fs also holds
    `sizedspark.fs.StagedFiles`, which lists a staging directory and reads every footer in
    one call, and `BloomProbe`. Elsewhere (a cluster, HDFS, S3) the footers are read by a
    Spark job, which spreads the reads over the executors."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark

    def staged(self, staging: str, key_col: Optional[str]) -> Optional[List[StagedFooter]]:
        jvm = self.spark.sparkContext._jvm
        if local_path(staging) is None or not jar_loaded(jvm):
            return None
        try:
            text = jvm.sizedspark.fs.StagedFiles.scan(
                self.spark.sparkContext._jsc.hadoopConfiguration(), staging, key_col)
        except Py4JJavaError:  # e.g. a jar built against another Parquet: a Spark job reads
            return None
        return footer_rows(text)

    def bloom_usable(self) -> bool:
        return jar_loaded(self.spark.sparkContext._jvm)

    def bloom_probe(self, keyed: Any, files: str, key: str) -> Optional[str]:
        keys = keyed._jdf.collectAsList()
        try:
            return str(self.spark.sparkContext._jvm.sizedspark.fs.BloomProbe.probe(
                self.spark.sparkContext._jsc.hadoopConfiguration(), files, key, keys))
        except Py4JJavaError:
            return None

    def plain_columns(self, files: Sequence[str]) -> Optional[List[str]]:
        jvm = self.spark.sparkContext._jvm
        if not jar_loaded(jvm):
            return None
        try:
            text = jvm.sizedspark.fs.Dictionaries.plainColumns(
                self.spark.sparkContext._jsc.hadoopConfiguration(), encode_fields(files))
        except Py4JJavaError:  # e.g. a file gone meanwhile: parquet-mr's defaults then
            return None
        return [name for (name,) in decode_fields(str(text), 1)]


def footer_rows(text: Any) -> List[StagedFooter]:
    return [(uri, int(size), int(rows), kmin, kmax)
            for uri, size, rows, kmin, kmax in decode_fields(str(text), 5)]


class SessionJVM:
    remote = False

    def __init__(self, spark: Any) -> None:
        self.spark = spark

    def default_parallelism(self) -> int:
        return int(self.spark.sparkContext.defaultParallelism)

    def session_copy(self) -> Optional[Any]:
        """A copy of the session sharing its catalog and cache, with settings of its own."""
        return type(self.spark)(self.spark.sparkContext,
                                self.spark._jsparkSession.cloneSession())

    def job_description(self) -> Optional[str]:
        return self.spark.sparkContext.getLocalProperty(_DESCRIPTION)

    def describe_jobs(self, text: Optional[str]) -> None:
        """The job description, a property of the calling thread (dbt's threads do not
        mix; pyspark pins a JVM thread to each Python thread)."""
        self.spark.sparkContext.setLocalProperty(_DESCRIPTION, text)

    def catalog_description(self) -> Tuple[str, bool]:
        conf = self.spark.conf
        if conf.get("spark.sql.catalogImplementation", "hive") != "hive":
            return "the in-memory catalog", False
        uris = conf.get("spark.hadoop.hive.metastore.uris", "") or ""
        if uris:
            return f"the Hive metastore service at {uris}", False
        url = conf.get("spark.hadoop.javax.jdo.option.ConnectionURL", "") or ""
        found = re.search(r"databaseName=([^;]+)", url)
        name = found.group(1) if found else "metastore_db"
        return f"the embedded Derby metastore {os.path.abspath(name)}", True

    def lost_server(self, exc: BaseException) -> Optional[str]:
        return None  # its JVM is this process's
