"""Rows and key range of staged Parquet files from their footers, without a Spark job.

On an embedded session writing to local disk, the jar of fast_local_fs also holds
`sizedspark.fs.StagedFiles`, which lists a staging directory and reads every footer in one
call. Elsewhere (a cluster, HDFS, S3) `None` is returned and the caller reads the files with
a Spark job, which spreads the footer reads over the executors.
"""
from python_adapter.fast_local_fs import helper_loadable
from python_adapter.fs import _local_path


def staged_footers(spark, staging, key_col=None):
    """[(uri, bytes, rows, key min, key max)] of the visible Parquet files below `staging`
    (a qualified URI), or None when the footers are to be read by a Spark job."""
    if _local_path(staging) is None or not helper_loadable(spark):
        return None
    jvm = spark.sparkContext._jvm
    text = jvm.sizedspark.fs.StagedFiles.scan(
        spark.sparkContext._jsc.hadoopConfiguration(), staging, key_col)
    fields = parse_fields(str(text))
    return [(fields[i], int(fields[i + 1]), int(fields[i + 2]), fields[i + 3], fields[i + 4])
            for i in range(0, len(fields), 5)]


def parse_fields(text):
    """The fields of StagedFiles.scan's "<length>:<text>" encoding."""
    out, pos = [], 0
    while pos < len(text):
        colon = text.index(":", pos)
        length = int(text[pos:colon])
        out.append(text[colon + 1:colon + 1 + length])
        pos = colon + 1 + length
    if len(out) % 5:
        raise ValueError(f"StagedFiles.scan: {len(out)} fields is not 5 per file")
    return out

