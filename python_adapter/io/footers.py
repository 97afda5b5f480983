"""Rows and key range of staged Parquet files from their footers, without a Spark job.

On an embedded session writing to local disk, the jar of fast_local_fs also holds
`sizedspark.fs.StagedFiles`, which lists a staging directory and reads every footer in one
call. Elsewhere (a cluster, HDFS, S3) `None` is returned and the caller reads the files with
a Spark job, which spreads the footer reads over the executors.
"""
from typing import List, Optional, Tuple

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
