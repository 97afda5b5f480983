"""bytes_per_row by writing a sample of the new data to Parquet and measuring the files.

In-memory size estimates say little about compressed Parquet, so we write. A first sample
gives a rough rate; then a second sample is written as files of about one target file's
rows each, because Parquet's compression and its per-file overhead depend on file size: a
rate measured on a file far bigger or smaller than the target misjudges target-size files.

Before any sample, a bound: the rows' raw size (each fixed-width value its width, each
string or binary its bytes and PLAIN encoding's 4-byte length, a byte a value for
definition levels), with room for page headers, the footer and compression's worst case on
bytes that do not compress, is more than their Parquet files can weigh. When every
partition's bound fits one target file, each is one file whatever a sample would say, and
no sample is written (~1.4 s of a 30-day first build at 128 MB).
"""
import math
from typing import Optional, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from python_adapter.io.footers import staged_footers
from python_adapter.io.interfaces import FileSystem
from python_adapter.spark.job import quoted, select_names

FIRST_SAMPLE_ROWS = 20_000
MAX_SAMPLE_ROWS = 1_000_000
MAX_SAMPLE_FILES = 16
SEED = 7
# How far the rate of target-size files may be from the first sample's (one file of 20,000
# rows): a partition whose rows fit a target even at this multiple is one file either way.
ROUGH_RATE_MARGIN = 2
# Parquet's bytes for a value at most: its width (plus a byte of definition level); strings
# and binaries add their bytes and PLAIN's 4-byte length. Decimals: 16 bytes at most.
_FIXED_WIDTH = {"boolean": 1, "byte": 1, "short": 2, "integer": 4, "date": 4, "float": 4,
                "long": 8, "double": 8, "timestamp": 8, "timestamp_ntz": 8, "decimal": 16}
_VARIABLE = {"string": "octet_length", "binary": "length"}
BOUNDED_COLUMNS = 200            # wider rows are sampled: one expression per column


def raw_row_bytes(df: DataFrame, columns: Sequence[str]) -> Optional[Column]:
    """An expression of each row's raw size (see the module's doc), or None when a column's
    type has no bound here (nested types) or the row is too wide to sum cheaply."""
    if len(columns) > BOUNDED_COLUMNS:
        return None
    fixed, terms = 0, []  # the fixed widths of a row summed once, here
    for name in columns:
        kind = df.schema[name].dataType.typeName()
        if kind in _FIXED_WIDTH:
            fixed += _FIXED_WIDTH[kind] + 1
        elif kind in _VARIABLE:
            terms.append(f"cast(coalesce({_VARIABLE[kind]}({quoted(name)}), 0) + 5 as bigint)")
        else:
            return None
    return F.expr(" + ".join([f"cast({fixed} as bigint)", *terms]))


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


def measure_bytes_per_row(fs: FileSystem, df: DataFrame, data_columns: Sequence[str],
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
