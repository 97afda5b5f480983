"""Read exactly some files of a table, and their rows and key ranges.

Readers of a subset of files (tagging, rewriting, clustering) name the files themselves
instead of filtering the table: a filter with one term per file grows with the table (deep
expression trees overflow the driver's stack, and the Hive metastore refuses to prune
partitions by it), while a file list costs one file status per file and opens nothing else.
"""
import os
import re
from typing import Dict, Mapping, Optional, Sequence, Tuple, Union
from urllib.parse import unquote

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from python_adapter.core.keys import encode_key
from python_adapter.io.footers import staged_footers
from python_adapter.io.session_info import read_parquet
from python_adapter.spark.job import select_names
from python_adapter.spark.local_table import local_table
from python_adapter.core.partitions import parse_partition_path
from python_adapter.spark.session_conf import raise_on_own_session, session_conf


_DISCOVERY = "spark.sql.sources.parallelPartitionDiscovery.threshold"
# Filesystems whose file status is a cheap metadata call: the driver looks the named files up
# itself (milliseconds) instead of Spark's parallel listing job (a second or more per read).
# Object stores keep Spark's default, where a parallel lookup pays off.
_CHEAP_STATUS_SCHEMES = ("file", "hdfs", "viewfs")


def read_files(spark: SparkSession, location: str, schema: Optional[T.StructType],
               rel_paths: Sequence[str]) -> DataFrame:
    """A DataFrame of the rows of these files (paths relative to the table's location),
    with the table's schema (None: the files' own); partition columns come from the directory
    names, as when Spark reads the table."""
    if not rel_paths:
        raise ValueError("read_files needs at least one file")
    base = location.rstrip("/")
    reader = spark.read.option("basePath", base)
    if schema is not None:
        reader = reader.schema(schema)
    paths = [f"{base}/{rel}" for rel in rel_paths]
    if base.split(":", 1)[0].lower() not in _CHEAP_STATUS_SCHEMES:
        return read_parquet(spark, reader, paths)
    # The setting must hold whenever the plan is analyzed: over Spark Connect that is at
    # each action, not here (a parallel listing job costs ~0.5 s an action), so on a write's
    # own session it stays for the write's life; on any other it is set for this call,
    # where the embedded session builds the file index.
    if raise_on_own_session(spark, _DISCOVERY, len(paths) + 1):
        return read_parquet(spark, reader, paths)
    with session_conf(spark, {_DISCOVERY: max(len(paths) + 1, 32)}):
        return read_parquet(spark, reader, paths)


def rows_per_file(spark: SparkSession, location: str, rel_paths: Sequence[str]) -> Dict[str, int]:
    """{rel path: rows} of some files of a table, in one job over their row counts (a
    file Spark cannot read fails it, naming the file)."""
    df = read_files(spark, location, None, rel_paths)
    counts = df.groupBy(F.col("_metadata.file_path")).count().collect()
    prefix = unquote(location.rstrip("/")) + "/"
    rows = {unquote(path)[len(prefix):]: n for path, n in counts}
    return {rel: rows.get(rel, 0) for rel in rel_paths}


def with_file_values(spark: SparkSession, df: DataFrame, pcols: Sequence[str],
                     value_of_file: Mapping[str, Union[int, Tuple[int, ...]]],
                     column: Union[str, Tuple[str, ...]],
                     file_name: Optional[str] = None) -> DataFrame:
    """Rows of df (read by read_files) with a long `column` (or several) set per file from
    value_of_file {rel path: value (or a tuple, one per column)}; rows of other files are
    dropped. A broadcast join on (partition values, file name), since file names repeat
    across partitions, rather than a branch per file in one expression. file_name: a column
    of df holding each row's file name (a union of scans has no _metadata: each scan adds
    it); None: _metadata.file_name."""
    n = len(pcols)
    columns = (column,) if isinstance(column, str) else tuple(column)
    rows = [tuple(text for _, text in parse_partition_path(os.path.dirname(rel)))
            + (os.path.basename(rel),) + tuple(int(v) for v in _values(value))
            for rel, value in value_of_file.items()]
    names = [*[(f"__sized_t{i}", "string") for i in range(n)], ("__sized_fname", "string"),
             *[(c, "bigint") for c in columns]]
    files = local_table(spark, names, rows).select(
        *[F.col(f"__sized_t{i}").cast(df.schema[c].dataType).alias(f"__sized_p{i}")
          for i, c in enumerate(pcols)], "__sized_fname", *columns)
    named = df.withColumn("__sized_name", F.col(file_name or "_metadata.file_name"))
    files = F.broadcast(files)
    cond = named["__sized_name"] == files["__sized_fname"]
    for i, c in enumerate(pcols):
        cond = cond & named[c].eqNullSafe(files[f"__sized_p{i}"])
    return select_names(named.join(files, cond), [*df.columns, *columns])


def _values(value):
    return value if isinstance(value, tuple) else (value,)


# Spark names the file a failed scan task was reading ("Encountered error while reading
# file file:///.../part-0.parquet. SQLSTATE: KD001"), or whose footer it could not read
# ("Could not read footer for file: file:/.../part-0.parquet. Please ensure ...").
# Spark 3.5 may give only Parquet's own error: "file:/.../part-0.parquet is not a Parquet file".
_READ_FAILED = re.compile(r"(?:rror while reading file|Could not read footer for file:) "
                          r"(\S+?)\.?(?:\s|$)|(\S+) is not a Parquet file")


def unreadable_file(exc: BaseException) -> Optional[str]:
    """The file a Spark read failed on, from its error (a py4j or Spark exception), or None."""
    m = _READ_FAILED.search(str(exc))
    return (m.group(1) or m.group(2)) if m else None


def table_file_stats(spark: SparkSession, location: str, rel_paths: Sequence[str],
                     key_col: Optional[str] = None) -> Dict[str, Tuple[int, str, str]]:
    """{rel path: (rows, key min, key max)} of files of a table (`location` qualified; the
    key range is '' when unknown, and without key_col): from their footers where the helper
    reads them (an embedded session on local disk), the others (every file elsewhere, and
    files not named *.parquet, as Hive writes them) in one Spark job that counts the rows and
    takes the key range together."""
    prefix = location.rstrip("/") + "/"
    footers = staged_footers(spark, location, key_col) or []
    stats = {uri[len(prefix):]: (rows, kmin, kmax)
             for uri, _size, rows, kmin, kmax in footers if uri.startswith(prefix)}
    rest = [rel for rel in rel_paths if rel not in stats]
    if rest:
        stats.update(stats_by_job(spark, location, rest, key_col))
    return {rel: stats.get(rel, (0, "", "")) for rel in rel_paths}


def stats_by_job(spark: SparkSession, base: str, rel_paths: Sequence[str],
                 key_col: Optional[str]) -> Dict[str, Tuple[int, str, str]]:
    """{rel path below base: (rows, key min, key max)} of some files, in one Spark job."""
    by_uri = file_stats(read_files(spark, base, None, rel_paths), key_col)
    prefix = unquote(base.rstrip("/")) + "/"
    return {uri[len(prefix):]: stats for uri, stats in by_uri.items()}


def file_stats(df: DataFrame, key_col: Optional[str] = None) -> dict:
    """{unquoted file URI: (rows, key min, key max)}. Without a key column only the Parquet
    footers are read. Task file names repeat across partition directories, so the key is
    the whole path."""
    aggs = [F.count(F.lit(1))]
    if key_col:
        aggs += [F.min(key_col), F.max(key_col)]
    out = {}
    for r in df.groupBy(F.col("_metadata.file_path").alias("p")).agg(*aggs).collect():
        kmin, kmax = (encode_key(r[2]), encode_key(r[3])) if key_col else ("", "")
        out[unquote(r[0])] = (r[1], kmin, kmax)
    return out
