"""bytes_per_row by writing a sample of the new data to Parquet and measuring the files.

In-memory size estimates say little about compressed Parquet, so we write. A first sample
gives a rough rate; then a second sample is written as files of about one target file's
rows each, because Parquet's compression and its per-file overhead depend on file size: a
rate measured on a file far bigger or smaller than the target misjudges target-size files.
"""
import math
from typing import Optional, Sequence

from pyspark.sql import DataFrame

from python_adapter.io.footers import staged_footers
from python_adapter.io.fs import HadoopFS
from python_adapter.spark.job import select_names

FIRST_SAMPLE_ROWS = 20_000
MAX_SAMPLE_ROWS = 1_000_000
MAX_SAMPLE_FILES = 16
SEED = 7
# How far the rate of target-size files may be from the first sample's (one file of 20,000
# rows): a partition whose rows fit a target even at this multiple is one file either way.
ROUGH_RATE_MARGIN = 2


def _write_sample(fs, df, total_rows, rows, path, num_files=1):
    fraction = min(1.0, rows * 1.2 / max(total_rows, 1))
    sample = df.sample(fraction=fraction, seed=SEED) if fraction < 1.0 else df
    sample = sample.limit(rows)
    sample = sample.repartition(num_files) if num_files > 1 else sample.coalesce(1)
    sample.write.mode("overwrite").parquet(path)
    written = _bytes_and_rows(fs, df.sparkSession, path)
    fs.delete(path)
    return written


def _bytes_and_rows(fs, spark, path):
    """(bytes, rows) of the Parquet files under path: from their footers on local disk,
    else (a cluster's filesystem) by a Spark job."""
    footers = staged_footers(spark, fs.qualify(path))
    if footers is not None:
        return sum(f[1] for f in footers), sum(f[2] for f in footers)
    files = [f for f in fs.list_files(path) if f.name.endswith(".parquet")]
    return sum(f.size for f in files), spark.read.parquet(path).count()


def measure_bytes_per_row(fs: HadoopFS, df: DataFrame, data_columns: Sequence[str],
                          total_rows: int, target_file_size: int, scratch_dir: str,
                          largest_rows: Optional[int] = None) -> Optional[float]:
    """Bytes per row of `df` as Parquet files near the target size; None when df is empty.
    largest_rows: the rows of its largest partition, when counted (None: total_rows)."""
    if total_rows <= 0:
        return None
    data = select_names(df, data_columns)
    first_rows = min(total_rows, FIRST_SAMPLE_ROWS)
    size, rows = _write_sample(fs, data, total_rows, first_rows, f"{scratch_dir}/sample1")
    if rows == 0:
        return None
    rate = size / rows
    rows_per_file = max(1, int(target_file_size / rate))
    if rows_per_file >= rows and total_rows <= rows:
        return rate  # the whole input was one file smaller than the target: nothing better
    if (largest_rows or total_rows) * rate * ROUGH_RATE_MARGIN <= target_file_size:
        # Every partition is one file whatever the finer rate says: the second sample (up to
        # a million rows in one task, ~4 s of a 30-day build at 128 MB) would change nothing.
        return rate
    num_files = max(1, min(MAX_SAMPLE_FILES, math.ceil(FIRST_SAMPLE_ROWS / rows_per_file)))
    second = min(total_rows, rows_per_file * num_files, MAX_SAMPLE_ROWS)
    num_files = max(1, min(num_files, second // rows_per_file))
    size2, rows2 = _write_sample(fs, data, total_rows, second, f"{scratch_dir}/sample2", num_files)
    return size2 / rows2 if rows2 else rate
