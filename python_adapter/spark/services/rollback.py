"""Undoing: recovery of unfinished instants now (what every writer does first), and the
rollback of the last completed commit as an instant of its own."""
from dataclasses import replace
from typing import Callable

from pyspark.sql import SparkSession

from python_adapter.core.sizes import count_of
from python_adapter.errors import WriteError
from python_adapter.io.filesystems import filesystem
from python_adapter.spark.catalog.tables import TableRef, describe_table, table_location
from python_adapter.spark.handle import TableHandle, partitions_holding
from python_adapter.spark.locking import locked_locations, locked_table
from python_adapter.table.files import current_files
from python_adapter.table.timeline import ARCHIVED, PREVIOUS_DDL
from python_adapter.table.transaction import TxnOptions


def recover_table(spark: SparkSession, table: TableRef,
                  log: Callable[[str], None] = print) -> list:
    """Roll back any unfinished instant of a table: at the table's location, and at the
    location a table of its name gets, where a full refresh that changed its definition and
    crashed before defining it again left its instant. Returns the instants rolled back."""
    fs = filesystem(spark)
    places = [fs.qualify(table_location(spark, table))]
    info = describe_table(spark, table)
    if info is not None and info.table_type != "VIEW":
        places.append(fs.qualify(info.location))
    handle = TableHandle(spark, table, fs, places[-1], info, log)
    with locked_locations(handle, "recover", places) as protos:
        return [inst for proto in protos for inst in proto.rolled_back]


def _last_commit(proto, table):
    """The last completed instant that a rollback may undo."""
    completed = proto.timeline.completed()
    undone = {i.extra.get("rolled_back") for i in completed if i.action == "rollback"}
    live = [i for i in completed if i.action != "rollback" and i.instant not in undone]
    if not live:
        raise WriteError(f"{table.quoted} has no completed commit to roll back")
    last = live[-1]
    if last.extra.get(ARCHIVED) == "true":
        raise WriteError(f"cannot roll back {last.instant}: it is archived, past the table's "
                         f"retention, and the files it replaced are no longer kept")
    if last.extra.get(PREVIOUS_DDL):
        raise WriteError(
            f"cannot roll back {last.instant}: that full refresh changed the table's "
            f"definition (columns, partitioning, format or location), which sized_rollback "
            f"does not restore; run the model as it was with --full-refresh instead")
    return last


def rollback_last_commit(spark: SparkSession, table: TableRef,
                         log: Callable[[str], None] = print) -> str:
    """Restore the table to its state before its last completed commit, as a new
    `rollback` instant through the commit protocol (so it is crash safe too)."""
    with locked_table(spark, table, "rollback", log=log) as here:
        fs, proto = here.fs, here.proto
        last = _last_commit(proto, table)
        restore = [replace(f, moved_path=f"{proto.aside_dir(last.instant)}/{f.path}")
                   for f in last.removed]
        gone = [f.path for f in restore if not fs.exists(f.moved_path)]
        if gone:
            raise WriteError(
                f"cannot roll back {last.instant}: {len(gone)} of the files it replaced are no "
                f"longer kept (only the last commit's replaced files are), e.g. {gone[0]}")
        current = {f.path: f for f in current_files(fs, proto.location, proto.timeline,
                                                    check=here.name)}
        removed = [current[f.path] for f in last.added if f.path in current]
        # a partition that holds files now is registered: only the others are created
        with here.transaction("rollback", TxnOptions(
                action="rollback", extra={"rolled_back": last.instant},
                registered=partitions_holding(current.values()))) as txn:
            txn.add(restore)
            txn.remove(removed)
    log(f"rolled back {last.operation} {last.instant}: restored "
        f"{count_of(len(restore), 'file')}, "
        f"removed {len(removed)}")
    return last.instant
