"""What the engine reads of Parquet footers without a Spark job: rows and key range of
staged files, and the answers of files' Bloom filters to a batch's keys.

On an embedded session writing to local disk, the jar of fast_local_fs also holds
`sizedspark.fs.StagedFiles`, which lists a staging directory and reads every footer in one
call. Elsewhere (a cluster, HDFS, S3) `None` is returned and the caller reads the files with
a Spark job, which spreads the footer reads over the executors.
"""
from typing import Any, List, Optional, Tuple

from pyspark.sql import SparkSession

from python_adapter.io.connect_client import RemoteError, call, is_connect
from python_adapter.io.jvm_errors import Py4JJavaError
from python_adapter.io.fast_local_fs import decode_fields, jar_loaded
from python_adapter.io.fs import local_path


def staged_footers(spark: SparkSession, staging: str, key_col: Optional[str] = None
                   ) -> Optional[List[Tuple[str, int, int, str, str]]]:
    """[(uri, bytes, rows, key min, key max)] of the visible Parquet files below `staging`
    (a qualified URI), or None when the footers are to be read by a Spark job."""
    if is_connect(spark):  # read in the server, where the storage is
        try:
            text = call(spark, "fs.footers", path=staging, key=key_col)
        except RemoteError:
            return None
        return _rows(text)
    jvm = spark.sparkContext._jvm
    if local_path(staging) is None or not jar_loaded(jvm):
        return None
    try:
        text = jvm.sizedspark.fs.StagedFiles.scan(
            spark.sparkContext._jsc.hadoopConfiguration(), staging, key_col)
    except Py4JJavaError:  # e.g. a jar built against another Parquet: the Spark job reads them
        return None
    return _rows(text)


def _rows(text):
    return [(uri, int(size), int(rows), kmin, kmax)
            for uri, size, rows, kmin, kmax in decode_fields(str(text), 5)]


def bloom_probe_usable(spark: SparkSession) -> bool:
    """Whether bloom_probe can run: over Connect in the server's extension, with a JVM here
    where the jar of fast_local_fs is loaded (not a cluster's driver)."""
    return is_connect(spark) or jar_loaded(spark.sparkContext._jvm)


def bloom_probe(spark: SparkSession, keyed: Any, files: str, key: str) -> Optional[str]:
    """`sizedspark.fs.BloomProbe`'s answer for `files` (encode_fields of path, group pairs)
    probed with the (group, key) rows of `keyed`: a character per file, '0' ruled out, '1'
    may hold, '2' cannot tell. The keys stay in the JVM (collected there, deduplicated);
    None when the probe failed (e.g. a jar built against another Parquet: read them all)."""
    if is_connect(spark):
        try:
            return str(call(spark, "plan.bloom_probe", on=keyed, files=files, key=key))
        except RemoteError:
            return None
    keys = keyed._jdf.collectAsList()
    try:
        return str(spark.sparkContext._jvm.sizedspark.fs.BloomProbe.probe(
            spark.sparkContext._jsc.hadoopConfiguration(), files, key, keys))
    except Py4JJavaError:
        return None
