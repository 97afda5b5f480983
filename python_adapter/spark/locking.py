"""What every writer of a table does around its work: take the writer lock, recover
unfinished instants (restoring the table's definition in the metastore when a rolled-back
instant had changed it, and resyncing its partitions) and settle completed ones a crash
left unsettled (their statistics), list the table's files again for
plans analyzed before the lock (a model that reads its own table), release the lock.

An InjectedCrash (a simulated kill) passes through without releasing, like a real crash.
"""
from contextlib import contextmanager
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

from pyspark.sql import SparkSession

from python_adapter.core.sizes import count_of
from python_adapter.errors import WriteError
from python_adapter.io.filesystems import filesystem
from python_adapter.io.fs import HadoopFS
from python_adapter.spark.catalog import (TableInfo, TableRef, describe_table,
                                          refresh_relation_in_place, registered_partitions,
                                          require_parquet)
from python_adapter.spark.catalog_sync import SparkCatalog
from python_adapter.spark.staging import table_file_stats
from python_adapter.table.commit import CommitProtocol
from python_adapter.table.files import current_files, file_entry
from python_adapter.table.timeline import DEFERRED, PARTITION_STATS
from python_adapter.table.transaction import Transaction
from python_adapter.table.lock import LockOptions, WriterLock, break_lock, describe_holder


def open_table(spark: SparkSession, table: TableRef, info: Optional[TableInfo] = None
               ) -> Tuple[TableInfo, HadoopFS, str]:
    """(TableInfo, HadoopFS, qualified location) of an existing table; readers use it as is."""
    info = info or describe_table(spark, table)
    if info is None:
        raise WriteError(f"table {table.quoted} does not exist")
    fs = filesystem(spark)
    return info, fs, fs.qualify(info.location)


@contextmanager
def locked_locations(spark: SparkSession, table: TableRef, operation: str,
                     locations: Sequence[str], log: Callable[[str], None] = print,
                     lock: LockOptions = LockOptions()) -> Iterator[List[CommitProtocol]]:
    """Yields [CommitProtocol] for the table's locations (qualified; the first is where the
    write goes), each with its writer lock held and its unfinished instants rolled back."""
    fs = filesystem(spark)
    protos = [CommitProtocol(fs, loc, log=log) for loc in dict.fromkeys(locations)]
    held = []
    try:
        for proto in sorted(protos, key=lambda p: p.location):  # one order: no deadlock
            proto.acquire_lock(operation, lock)
            held.append(proto)
        rolled = []
        for proto in protos:
            proto.rolled_back = proto.recover()
            rolled += proto.rolled_back
        # before after_rollback, whose metadata changes drop the relation from the cache
        refresh_relation_in_place(spark, table)
        if rolled:
            SparkCatalog(spark, fs, table, protos[0].location, log).after_rollback(
                rolled, protos[0].timeline.file_index())
        for proto in protos:
            _settle_unsettled(spark, table, proto)
        yield protos
    except Exception:  # not an InjectedCrash: a crash keeps its locks, as a dead process does
        for proto in held:
            proto.release_lock()
        raise
    for proto in held:
        proto.release_lock()


def _settle_unsettled(spark: SparkSession, table: TableRef, proto: CommitProtocol) -> None:
    """Completed instants a crash stopped before their settling (table/settle.py): their
    statistics written from the files the timeline records, then their cleanup."""
    if not proto.unsettled:
        return
    SparkCatalog(spark, proto.fs, table, proto.location, proto.log).settle(
        proto.unsettled, proto.timeline.file_index())
    for instant in proto.unsettled:
        proto.cleanup(instant)
    proto.unsettled = []


@contextmanager
def locked_table(spark: SparkSession, table: TableRef, operation: str,
                 log: Callable[[str], None] = print, info: Optional[TableInfo] = None,
                 lock: LockOptions = LockOptions()
                 ) -> Iterator[Tuple[TableInfo, HadoopFS, CommitProtocol]]:
    """Yields (info, fs, proto) of an existing table with the writer lock held and
    recovery done."""
    info, fs, location = open_table(spark, table, info)
    require_parquet(info, table, operation)
    with locked_locations(spark, table, operation, [location], log=log, lock=lock) as (proto,):
        info = describe_table(spark, table) or info
        adopt_if_foreign(spark, table, info, proto)
        yield info, fs, proto


def adopt_if_foreign(spark: SparkSession, table: TableRef, info: TableInfo,
                     proto: CommitProtocol, key_col: Optional[str] = None) -> None:
    """A Parquet table this adapter never committed to (dbt-spark's incremental, a Spark
    job, Hive) that holds data files: record them, where they are, as its first instant
    (`adopt`: sizes, rows and, given the model's key column, its min / max per file, from
    their footers), so writes and table services from now on see them as the table's files,
    a file deleted outside its commits is noticed, and upsert tagging rules files out by key
    range instead of reading them. Runs under the writer lock, after recovery. The files
    do not change, so the table's registered partitions keep the statistics their writer
    left until the next commit, which writes them for every partition."""
    if proto.timeline.completed():
        return
    files = current_files(proto.fs, proto.location)
    if not files:
        return
    stats = table_file_stats(spark, proto.location, [f.path for f in files], key_col)
    rows = count_of(sum(n for n, _kmin, _kmax in stats.values()), "row")
    ranged = sum(1 for _n, kmin, _kmax in stats.values() if kmin)
    keys = f", the {key_col} range of {ranged}" if key_col else ""
    proto.log(f"adopting {table.schema}.{table.identifier}: {count_of(len(files), 'file')} not "
              f"written by this adapter recorded as its first commit ({rows}{keys})")
    catalog = SparkCatalog(spark, proto.fs, table, proto.location, proto.log)
    with Transaction(proto, catalog, "adopt", info.partition_columns,
                     extra={PARTITION_STATS: DEFERRED}) as txn:
        txn.add([file_entry(f.partition, f.path, stats[f.path][0], f.bytes,
                            key_range=stats[f.path][1:]) for f in files])
        # the partitions its writer registered need nothing now (their statistics come
        # with the next commit: transaction.py); others are registered, with theirs
        if info.partition_columns:
            txn.registered = registered_partitions(spark, table)


def unlock_table(spark: SparkSession, table: TableRef, force: bool = False) -> str:
    """Who holds the table's writer lock (host, pid, operation, age, lease); with force,
    break it: the next write rolls back the holder's unfinished instant."""
    _info, fs, location = open_table(spark, table)
    path = CommitProtocol(fs, location).lock_path
    holder = WriterLock(fs, path).read() if fs.exists(path) else {}
    if not holder and not fs.exists(path):
        return f"{table.quoted} is not locked"
    shown = describe_holder(holder, path) if holder else f"an unreadable lock; lock file {path}"
    if not force:
        return f"{table.quoted} is locked by {shown}. Add force: true to break the lock"
    ended = break_lock(fs, path)
    return (f"broke the writer lock of {table.quoted} ({shown}); the next write rolls back "
            f"its unfinished work" + (f"; {ended}" if ended else ""))
