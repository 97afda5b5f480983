"""A write's staging area: what was written there (rows and key range of each staged file),
the same for the files of a table being adopted, and the bytes per row a write plans with."""
from typing import Dict, List, Optional, Sequence, Tuple
from urllib.parse import unquote

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from python_adapter.core.keys import encode_key
from python_adapter.io.footers import staged_footers
from python_adapter.io.interfaces import FileSystem
from python_adapter.spark.job import WriteJob
from python_adapter.spark.measure import measure_bytes_per_row
from python_adapter.spark.slot_write import staged_file
from python_adapter.spark.table_files import read_files
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
        stats = _job_stats(spark, staging, rels, key_col)
        footers = [(f.path, f.size, *stats.get(rel, (-1, "", ""))) for f, rel in zip(files, rels)]
    entries = []
    for path, size, rows, kmin, kmax in sorted(footers):
        partition, rel = staged_file(path[len(staging):].lstrip("/"))
        entries.append(file_entry(partition, rel, rows, size, staged_path=path,
                                  key_range=(kmin, kmax)))
    return entries


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
        stats.update(_job_stats(spark, location, rest, key_col))
    return {rel: stats.get(rel, (0, "", "")) for rel in rel_paths}


def _job_stats(spark, base, rel_paths, key_col):
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
