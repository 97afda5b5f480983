"""A write's staging area: what was written there (rows and key range of each staged file),
and the bytes per row a write plans with."""
from typing import List, Optional, Tuple

from pyspark.sql import DataFrame, SparkSession

from python_adapter.io.footers import staged_footers
from python_adapter.io.interfaces import FileSystem
from python_adapter.spark.job import WriteJob
from python_adapter.spark.write.measure import measure_bytes_per_row
from python_adapter.spark.write.slot_write import staged_file
from python_adapter.spark.table_files import stats_by_job
from python_adapter.table.files import file_entry
from python_adapter.table.timeline import DEFINES_TABLE, FileEntry, learned_bytes_per_row


def staged_entries(spark: SparkSession, fs: FileSystem, staging: str,
                   key_col: Optional[str] = None) -> List[FileEntry]:
    """FileEntry per Parquet file written under staging: rows from the footers, and the
    min / max of the first unique_key column, kept in the timeline to prune tagging."""
    staging = fs.qualify(staging)
    footers = staged_footers(spark, staging, key_col)
    if footers is None:  # not local, or no jar: a Spark job reads them
        files = [f for f in fs.list_files(staging) if f.name.endswith(".parquet")]
        if not files:
            return []
        rels = [f.path[len(staging):].lstrip("/") for f in files]
        stats = stats_by_job(spark, staging, rels, key_col)
        footers = [(f.path, f.size, *stats.get(rel, (-1, "", ""))) for f, rel in zip(files, rels)]
    entries = []
    for path, size, rows, kmin, kmax in sorted(footers):
        partition, rel = staged_file(path[len(staging):].lstrip("/"))
        entries.append(file_entry(partition, rel, rows, size, staged_path=path,
                                  key_range=(kmin, kmax)))
    return entries


def known_bytes_per_row(job: WriteJob) -> Tuple[Optional[float], str]:
    """(bytes per row, where it came from) from the config or the table's earlier commits
    (not across a new definition); (None, "") when neither tells."""
    if job.cfg.bytes_per_row is not None:
        return job.cfg.bytes_per_row, "config"
    defines = job.extra.get(DEFINES_TABLE) == "true"
    learned = None if defines else learned_bytes_per_row(job.proto.timeline)
    return (learned, "earlier commits") if learned is not None else (None, "")


def bytes_per_row(job: WriteJob, df: DataFrame, total_rows: Optional[int],
                  largest_rows: Optional[int] = None) -> Tuple[Optional[float], str]:
    """(bytes per row or None, where it came from): the config, the table's earlier commits
    (not across a new definition), or a sample of df written to Parquet (docs/design.md,
    Algorithms 1). largest_rows: the rows of df's largest partition, when counted."""
    known, source = known_bytes_per_row(job)
    if known is not None:
        return known, source
    if total_rows is None:
        total_rows = df.count()
    if not total_rows:
        return None, "no rows"
    job.progress("sampling to measure bytes per row", phase="sample")
    bpr = measure_bytes_per_row(job.fs, df, job.data_cols, total_rows, job.cfg.target_file_size,
                                job.staging + "/_sample", largest_rows)
    return bpr, "sample written to Parquet"
