"""What a table looks like: its files (rows, sizes, ranges of the cluster columns) and its
timeline, for the layout and timeline operations, the layout test and the report."""
import time
from typing import List, Optional, Sequence, Union, cast
from urllib.parse import unquote

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from python_adapter.core.layout import Layout, LayoutFile
from python_adapter.core.sizes import format_size
from python_adapter.spark.catalog.tables import TableInfo, TableRef
from python_adapter.spark.job import resolve_names
from python_adapter.spark.handle import open_table
from python_adapter.table.files import current_files
from python_adapter.table.timeline import files_added, files_removed, is_clustering
from python_adapter.table.extra import CLUSTER_BY, SMALL_FILE_LIMIT, TARGET_FILE_SIZE

TIMELINE_COLUMNS = ["instant", "time", "action", "state", "operation", "files_added",
                    "files_removed", "rows", "bytes", "size"]


def _written_with(timeline):
    """(target_file_size, small_file_limit) of the table's last write, None when unknown."""
    extra = timeline.written_with()
    target, small = TARGET_FILE_SIZE.get(extra), SMALL_FILE_LIMIT.get(extra)
    return target, small


def read_layout(spark: SparkSession, table: TableRef,
                cluster_by: Optional[Union[str, Sequence[str]]] = None) -> Layout:
    """Layout of a table's files: rows from the Parquet footers and, per file, the min / max
    of the cluster columns (given, or those of the table's last clustering)."""
    handle = open_table(spark, table, reading=True)
    # open_table refuses a table without a description
    info, fs, location = cast(TableInfo, handle.info), handle.fs, handle.location
    timeline = handle.timeline
    current = current_files(fs, location)
    target, small = _written_with(timeline)
    if cluster_by is None:
        clustered = next((i for i in reversed(timeline.completed(actions=("replacecommit",)))
                          if is_clustering(i)), None)
        cluster_by = CLUSTER_BY.get(clustered.extra, []) if clustered else []
    cluster_by = resolve_names([cluster_by] if isinstance(cluster_by, str) else cluster_by,
                               info.column_names) if cluster_by else ()
    stats = {}
    if current:
        df = spark.table(f"{table.schema}.{table.identifier}")
        aggs = [F.count(F.lit(1))]
        for c in cluster_by:
            aggs += [F.min(c), F.max(c)]
        for r in df.groupBy(F.col("_metadata.file_path").alias("p")).agg(*aggs).collect():
            stats[unquote(r[0])] = (r[1], tuple((c, r[2 + 2 * i], r[3 + 2 * i])
                                                for i, c in enumerate(cluster_by)))
    files = []
    for f in current:
        rows, ranges = stats.get(unquote(f"{location}/{f.path}"), (0, ()))
        files.append(LayoutFile(partition=f.partition, path=f.path, bytes=f.bytes, rows=rows,
                                ranges=ranges))
    return Layout(files=tuple(files), target_file_size=target, small_file_limit=small,
                  cluster_by=tuple(cluster_by))


def timeline_rows(spark: SparkSession, table: TableRef) -> List[list]:
    """One row per instant of the table, oldest first (TIMELINE_COLUMNS), archived ones
    included."""
    rows = []
    timeline = open_table(spark, table, reading=True).timeline
    target, _small = _written_with(timeline)
    for inst in timeline.history():
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(inst.created_at_ms / 1000))
        rows.append([inst.instant, when, inst.action, inst.state, inst.operation,
                     files_added(inst), files_removed(inst), inst.rows_written,
                     inst.bytes_written, format_size(inst.bytes_written, target)])
    return rows
