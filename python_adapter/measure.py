"""bytes_per_row by writing a sample of the new data to Parquet and measuring the files.

In-memory size estimates say little about compressed Parquet, so we write. A first small
sample gives a rough rate; when a target-size file holds many more rows than that sample,
a second sample of about one target file's rows is written, because Parquet compresses a
full-size file better than a small one.
"""
FIRST_SAMPLE_ROWS = 20_000
MAX_SAMPLE_ROWS = 1_000_000
SEED = 7


def _write_sample(fs, df, total_rows, rows, path):
    fraction = min(1.0, rows * 1.2 / max(total_rows, 1))
    sample = df.sample(fraction=fraction, seed=SEED) if fraction < 1.0 else df
    sample.limit(rows).coalesce(1).write.mode("overwrite").parquet(path)
    files = [f for f in fs.list_files(path) if f.name.endswith(".parquet")]
    written_rows = df.sparkSession.read.parquet(path).count()
    fs.delete(path)
    return sum(f.size for f in files), written_rows


def measure_bytes_per_row(fs, df, data_columns, total_rows, target_file_size, scratch_dir):
    """Bytes per row of `df` as Parquet files near the target size; None when df is empty."""
    if total_rows <= 0:
        return None
    data = df.select(*data_columns)
    size, rows = _write_sample(fs, data, total_rows, min(total_rows, FIRST_SAMPLE_ROWS),
                               f"{scratch_dir}/sample1")
    if rows == 0:
        return None
    rate = size / rows
    rows_per_file = int(target_file_size / rate)
    if rows_per_file > 2 * rows and total_rows > 2 * rows:
        second = min(total_rows, rows_per_file, MAX_SAMPLE_ROWS)
        size2, rows2 = _write_sample(fs, data, total_rows, second, f"{scratch_dir}/sample2")
        if rows2:
            rate = size2 / rows2
    return rate
