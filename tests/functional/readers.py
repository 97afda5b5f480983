"""What other engines see of a table: DuckDB, polars and pyarrow reading its directory, and
a reader that lists the table's directory over and over while writes go on."""
import os
import threading
from urllib.parse import urlparse


def local_dir(location):
    """The local directory of a `file:` table location."""
    return urlparse(location).path if location.startswith("file:") else location


def parquet_files(directory):
    """Every `.parquet` file below a directory, hidden directories included: what
    `<dir>/**/*.parquet` globs of DuckDB and polars find."""
    out = []
    for root, _dirs, files in os.walk(directory):
        out += [os.path.join(root, f) for f in files if f.endswith(".parquet")]
    return sorted(out)


def not_live(path, table_dir):
    """Why a file below the table is not one a reader should see, or None: staged or
    set-aside files sit below a hidden directory, slot or temporary directories."""
    rel = os.path.relpath(path, table_dir)
    parts = rel.split(os.sep)
    for part in parts[:-1]:
        if part.startswith(".") or part.startswith("__sized") or part.startswith("_temporary"):
            return f"{rel} is below {part}"
        if "=" not in part:
            return f"{rel} is below {part}, not a partition directory"
    if parts[-1].startswith((".", "_")):
        return f"{rel} is a hidden file"
    return None


class DirectoryReader:
    """Lists a table's directory in a loop in a thread (as a DuckDB or polars glob does)
    and records every file it ever saw that is not a live data file."""

    def __init__(self, table_dir):
        self.table_dir = table_dir
        self.bad = set()
        self.listings = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            if os.path.isdir(self.table_dir):
                for root, _dirs, files in os.walk(self.table_dir):
                    for f in files:
                        why = not_live(os.path.join(root, f), self.table_dir)
                        if why:
                            self.bad.add(why)
                self.listings += 1
            self._stop.wait(0.01)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def duckdb_rows(table_dir, columns):
    import duckdb
    sql = (f"select {', '.join(columns)} from read_parquet('{table_dir}/**/*.parquet', "
           f"hive_partitioning=true, hive_types_autocast=false)")
    return sorted(duckdb.sql(sql).fetchall(), key=repr)


def pyarrow_rows(table_dir, columns):
    import pyarrow.dataset as ds
    table = ds.dataset(table_dir, format="parquet", partitioning="hive").to_table(columns=columns)
    return sorted(zip(*[table.column(c).to_pylist() for c in columns]), key=repr)


def polars_rows(table_dir, columns):
    import polars as pl
    frame = pl.scan_parquet(f"{table_dir}/**/*.parquet", hive_partitioning=True,
                            try_parse_hive_dates=False).select(columns).collect()
    return sorted(frame.rows(), key=repr)
