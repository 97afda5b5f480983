"""A real S3 for the tests: SeaweedFS on 127.0.0.1 (`sized-spark serve s3`'s code,
python_adapter/cli/object_store.py) and the test session's S3A settings for it, and what
other engines read there (pyarrow's S3 filesystem; polars and DuckDB through it).

The tests of tests/functional/s3 start their Spark session with the S3A jars
(`session_conf`); the JVM takes them only at its launch, so they run in a pytest process of
their own (scripts/test.sh runs them after the rest). The `s3` fixture starts one server per
pytest worker and points the session at it. pyspark 3.5's run leaves tests/functional/s3 out:
its Hadoop (3.3.4) has no conditional writes, and the engine refuses S3 there."""
import os
import time
from contextlib import contextmanager
from typing import Iterator, Tuple

from python_adapter.cli import object_store
from python_adapter.cli.jars import hadoop_version, s3a_jars
from python_adapter.errors import ConfigError
from benchmarks.lib.session import free_port

BUCKET = "sized"


def conditional_writes() -> bool:
    """Whether the installed pyspark's Hadoop makes S3's conditional writes (3.4.2+)."""
    version = tuple(int(part) for part in hadoop_version(os.environ).split("."))
    return version >= (3, 4, 2)


def session_conf() -> Tuple[Tuple[str, str], ...]:
    """The S3A jars on the test session's classpath (fetched once by `sized-spark jars s3a`,
    which scripts/setup.sh runs)."""
    return (("spark.jars", ",".join(s3a_jars(os.environ))),)


def s3a_missing_from_driver() -> bool:
    """Whether this process's JVM is up without S3A: another module's Spark session launched
    it, and jars given to a later session reach its tasks but not the driver."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is None:
        return False
    conf = gateway.jvm.org.apache.hadoop.conf.Configuration()
    return conf.getClassByNameOrNull("org.apache.hadoop.fs.s3a.S3AFileSystem") is None


@contextmanager
def running_s3_server(state: str) -> Iterator[object_store.S3Server]:
    server = _started(state)
    try:
        yield server
    finally:
        object_store.stop(server)


def _started(state: str, attempts: int = 3) -> object_store.S3Server:
    """A started server. Each pytest worker starts one, on ports chosen free
    (python_adapter/cli/object_store.py pins `weed mini`'s inner ones too); a port chosen
    free can still be taken by another process before the server binds it, and that server
    exits at start: it is started again, with new ports."""
    for attempt in range(attempts):
        server = object_store.S3Server(state=os.path.join(state, f"start-{attempt}"),
                                       port=free_port(), bucket=BUCKET,
                                       access_key="sized", secret_key="sized-secret")
        try:
            object_store.start(server)
            return server
        except ConfigError as exc:
            if "exited at start" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(2 + attempt * 3)
    raise AssertionError("unreachable")


def point_session_at(spark, server: object_store.S3Server) -> None:
    """The running session's S3A settings for `server` (before its first S3A call: S3A's
    filesystems are cached by bucket)."""
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in server.hadoop_settings().items():
        conf.set(key, value)


def arrow_store(server: object_store.S3Server):
    """pyarrow's own S3 filesystem on the server (no Hadoop, no JVM)."""
    from pyarrow import fs

    return fs.S3FileSystem(access_key=server.access_key, secret_key=server.secret_key,
                           endpoint_override=f"127.0.0.1:{server.port}", scheme="http",
                           region="us-east-1", allow_bucket_creation=True)


def keys(server: object_store.S3Server, prefix: str) -> list:
    """Every object below `prefix` ('bucket/path'), as pyarrow lists it."""
    from pyarrow import fs

    store = arrow_store(server)
    return sorted(i.path for i in store.get_file_info(fs.FileSelector(prefix, recursive=True,
                                                                      allow_not_found=True))
                  if i.type == fs.FileType.File)


def bucket_path(uri: str) -> str:
    """'bucket/path' of an s3a:// URI."""
    assert uri.startswith("s3a://"), uri
    return uri[len("s3a://"):].rstrip("/")


def pyarrow_rows(server, uri, columns):
    import pyarrow.dataset as ds
    table = ds.dataset(bucket_path(uri), filesystem=arrow_store(server), format="parquet",
                       partitioning="hive").to_table(columns=columns)
    return sorted(zip(*[table.column(c).to_pylist() for c in columns]), key=repr)


def polars_rows(server, uri, columns):
    import polars as pl
    options = {"aws_access_key_id": server.access_key, "aws_secret_access_key": server.secret_key,
               "aws_endpoint_url": server.endpoint, "aws_region": "us-east-1",
               "aws_allow_http": "true"}
    frame = pl.scan_parquet(f"s3://{bucket_path(uri)}/**/*.parquet", hive_partitioning=True,
                            try_parse_hive_dates=False, storage_options=options
                            ).select(columns).collect()
    return sorted(frame.rows(), key=repr)


def duckdb_rows(server, uri, columns):
    """DuckDB reading `<table>/**/*.parquet` through fsspec over pyarrow's S3 filesystem
    (its own httpfs extension is published for DuckDB 1.4 only)."""
    import duckdb
    from fsspec.implementations.arrow import ArrowFSWrapper

    class S3Wrapper(ArrowFSWrapper):
        protocol = "s3"   # the scheme DuckDB hands to it

    fs = S3Wrapper(arrow_store(server))
    con = duckdb.connect()
    con.register_filesystem(fs)
    sql = (f"select {', '.join(columns)} from read_parquet('s3://{bucket_path(uri)}/**/*.parquet', "
           f"hive_partitioning=true, hive_types_autocast=false)")
    return sorted(con.sql(sql).fetchall(), key=repr)
