"""What every writer of a table does around its work: take the writer lock, recover
unfinished instants (restoring the table's definition in the metastore when a rolled-back
instant had changed it, and resyncing its partitions) and settle completed ones a crash
left unsettled (their statistics), list the table's files again for
plans analyzed before the lock (a model that reads its own table), release the lock.

An InjectedCrash (a simulated kill) passes through without releasing, like a real crash.
"""
from contextlib import contextmanager
from typing import Callable, ContextManager, Iterator, List, Optional, Sequence, cast

from pyspark.sql import SparkSession

from python_adapter.core.sizes import count_of
from python_adapter.spark.catalog.tables import (TableInfo, TableRef, refresh_relation_in_place,
                                          registered_partitions, require_parquet)
from python_adapter.spark.handle import Locked, TableHandle, open_table
from python_adapter.spark.table_files import table_file_stats
from python_adapter.spark.results import LockState, UnlockResult
from python_adapter.table.commit import CommitProtocol
from python_adapter.table.files import current_files, file_entry
from python_adapter.table.timeline import DEFERRED, PARTITION_STATS
from python_adapter.table.transaction import TxnOptions
from python_adapter.table.lock import LockOptions, WriterLock, break_lock, describe_holder


@contextmanager
def locked_locations(table: TableHandle, operation: str, locations: Sequence[str],
                     lock: LockOptions = LockOptions()) -> Iterator[List[CommitProtocol]]:
    """Yields [CommitProtocol] for the table's locations (qualified; the first is where the
    write goes), each with its writer lock held and its unfinished instants rolled back."""
    protos = [CommitProtocol(table.fs, loc, log=table.log) for loc in dict.fromkeys(locations)]
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
        refresh_relation_in_place(table.spark, table.ref)
        if rolled:
            table.catalog(protos[0].location).after_rollback(
                rolled, protos[0].timeline.file_index())
        for proto in protos:
            _settle_unsettled(table, proto)
        yield protos
    except Exception:  # not an InjectedCrash: a crash keeps its locks, as a dead process does
        for proto in held:
            proto.release_lock()
        raise
    for proto in held:
        proto.release_lock()


def _settle_unsettled(table: TableHandle, proto: CommitProtocol) -> None:
    """Completed instants a crash stopped before their settling (table/settle.py): their
    statistics written from the files the timeline records, then their cleanup."""
    if not proto.unsettled:
        return
    table.catalog(proto.location).settle(proto.unsettled, proto.timeline.file_index())
    for instant in proto.unsettled:
        proto.cleanup(instant)
    proto.unsettled = []


@contextmanager
def locked(table: TableHandle, operation: str, lock: LockOptions = LockOptions()
           ) -> Iterator[Locked]:
    """The commit template's first steps on an existing table: its writer lock taken, its
    unfinished instants rolled back, its description current, a table this adapter never
    committed to adopted. Every operation that changes the table then makes its
    transaction on the Locked yielded (Locked.transaction)."""
    # an existing table's handle (open_table): it has a description
    require_parquet(cast(TableInfo, table.info), table.ref, operation)
    with locked_locations(table, operation, [table.location], lock=lock) as protos:
        known = table.info
        table.info = table.info_under_lock(protos) or known
        here = Locked(table, protos[0], lock)
        adopt_if_foreign(here)
        yield here
        table.after_commits(protos, here.defined)


def locked_table(spark: SparkSession, table: TableRef, operation: str,
                 log: Callable[[str], None] = print, lock: LockOptions = LockOptions()
                 ) -> ContextManager[Locked]:
    """`locked` on the table opened now (an operation of one locked step)."""
    return locked(open_table(spark, table, log), operation, lock)


def adopt_if_foreign(here: Locked, key_col: Optional[str] = None) -> None:
    """A Parquet table this adapter never committed to (dbt-spark's incremental, a Spark
    job, Hive) that holds data files: record them, where they are, as its first instant
    (`adopt`: sizes, rows and, given the model's key column, its min / max per file, from
    their footers), so writes and table services from now on see them as the table's files,
    a file deleted outside its commits is noticed, and upsert tagging rules files out by key
    range instead of reading them. Runs under the writer lock, after recovery. The files
    do not change, so the table's registered partitions keep the statistics their writer
    left until the next commit, which writes them for every partition."""
    proto, info, table = here.proto, here.info, here.table
    if proto.timeline.completed():
        return
    files = current_files(proto.fs, proto.location)
    if not files:
        return
    stats = table_file_stats(here.spark, proto.location, [f.path for f in files], key_col)
    rows = count_of(sum(n for n, _kmin, _kmax in stats.values()), "row")
    ranged = sum(1 for _n, kmin, _kmax in stats.values() if kmin)
    keys = f", the {key_col} range of {ranged}" if key_col else ""
    proto.log(f"adopting {table.name}: {count_of(len(files), 'file')} not "
              f"written by this adapter recorded as its first commit ({rows}{keys})")
    # the partitions its writer registered need nothing now (their statistics come with the
    # next commit: transaction.py); others are registered, with theirs
    registered = registered_partitions(here.spark, table.ref) if info.partition_columns \
        else frozenset()
    with here.transaction("adopt", TxnOptions(extra={PARTITION_STATS: DEFERRED},
                                              registered=registered)) as txn:
        txn.add([file_entry(f.partition, f.path, stats[f.path][0], f.bytes,
                            key_range=stats[f.path][1:]) for f in files])


def unlock_table(spark: SparkSession, table: TableRef, force: bool = False) -> UnlockResult:
    """Who holds the table's writer lock (host, pid, operation, age, lease); with force,
    break it: the next write rolls back the holder's unfinished instant."""
    handle = open_table(spark, table, reading=True)
    fs = handle.fs
    path = CommitProtocol(fs, handle.location).lock_path
    holder = WriterLock(fs, path).holder()
    if holder is None:
        return UnlockResult(table.name, LockState.NOT_LOCKED, f"{table.quoted} is not locked")
    shown = describe_holder(holder, path) if holder else f"an unreadable lock; lock file {path}"
    if not force:
        return UnlockResult(table.name, LockState.HELD, f"{table.quoted} is locked by {shown}. "
                                                  f"Add force: true to break the lock")
    ended = break_lock(fs, path)
    return UnlockResult(table.name, LockState.BROKEN,
                        f"broke the writer lock of {table.quoted} ({shown}); the next write "
                        f"rolls back its unfinished work" + (f"; {ended}" if ended else ""))
