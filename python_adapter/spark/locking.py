"""What every writer of a table does around its work: take the writer lock, recover
unfinished instants (restoring the table's definition in the metastore when a rolled-back
instant had changed it, and resyncing its partitions), release the lock.

An InjectedCrash (a simulated kill) passes through without releasing, like a real crash.
"""
import os
from contextlib import contextmanager
from typing import List, Sequence

from python_adapter.spark.catalog import (CREATED_BY, describe_table, drop_definition, replay_create,
                                    sync_partitions, table_property)
from python_adapter.table.commit import CommitProtocol, file_entry
from python_adapter.io.fs import HadoopFS
from python_adapter.core.sizes import format_count
from python_adapter.table.timeline import (DEFINES_TABLE, PREVIOUS_DDL, PREVIOUS_LOCATION,  # noqa: F401
                                     PREVIOUS_TYPE, FileEntry)


class WriteError(RuntimeError):
    """A sized write cannot go ahead; the table is left as it was."""


class DamagedTableError(WriteError):
    """Files the table's commits recorded are missing or changed outside them."""




def open_table(spark, table, info=None):
    """(TableInfo, HadoopFS, qualified location) of an existing table; readers use it as is."""
    info = info or describe_table(spark, table)
    if info is None:
        raise WriteError(f"table {table.quoted} does not exist")
    fs = HadoopFS(spark)
    return info, fs, fs.qualify(info.location)


@contextmanager
def locked_locations(spark, table, operation, locations: Sequence[str], log=print):
    """Yields [CommitProtocol] for the table's locations (qualified; the first is where the
    write goes), each with its writer lock held and its unfinished instants rolled back."""
    fs = HadoopFS(spark)
    protos = [CommitProtocol(fs, loc, log=log) for loc in dict.fromkeys(locations)]
    held = []
    try:
        for proto in sorted(protos, key=lambda p: p.location):  # one order: no deadlock
            proto.acquire_lock(operation)
            held.append(proto)
        rolled = []
        for proto in protos:
            proto.rolled_back = proto.recover()
            rolled += proto.rolled_back
        if rolled:
            restore_definitions(spark, table, rolled, log)
            info = describe_table(spark, table)
            if info is not None:
                sync_partitions(spark, table, bool(info.partition_columns))
        yield protos
    except Exception:  # not an InjectedCrash: a crash keeps its locks, as a dead process does
        for proto in held:
            proto.release_lock()
        raise
    for proto in held:
        proto.release_lock()


@contextmanager
def locked_table(spark, table, operation, log=print, info=None):
    """Yields (info, fs, proto) of an existing table with the writer lock held and
    recovery done."""
    info, fs, location = open_table(spark, table, info)
    with locked_locations(spark, table, operation, [location], log=log) as (proto,):
        info = describe_table(spark, table) or info
        yield info, fs, proto


def restore_definitions(spark, table, rolled_back, log=print):
    """After rolling back instants that (re)defined the table (a first build, or a full
    refresh that changed its columns, partitioning, format or location), put back the
    definition from before them: drop the one they created (never its files) and create
    the previous one from its recorded statement."""
    for inst in reversed(rolled_back):
        if inst.extra.get(DEFINES_TABLE) != "true":
            continue
        if describe_table(spark, table) is not None:
            if table_property(spark, table, CREATED_BY) != inst.instant:
                continue  # the definition from before the instant is still in place
            drop_definition(spark, table)
        if inst.extra.get(PREVIOUS_DDL):
            replay_create(spark, table, inst.extra[PREVIOUS_DDL], inst.extra[PREVIOUS_LOCATION],
                          managed=inst.extra.get(PREVIOUS_TYPE) == "MANAGED")
            log(f"restored the definition of {table.quoted} from before {inst.instant}")
        else:
            log(f"dropped {table.quoted}, created by the unfinished {inst.instant}")


def current_files(fs, location, timeline=None, check=None) -> List[FileEntry]:
    """FileEntry of every data file of the table now (hidden paths are not data), with the
    rows and key statistics the timeline recorded when it has them. check: the table's
    name; when given, every file the timeline records as current must be there with its
    recorded size, or DamagedTableError names the files and the way out."""
    index = timeline.file_index() if timeline is not None else {}
    out = []
    for f in fs.list_files(location):
        rel = f.path[len(location):].lstrip("/")
        known = index.get(rel)
        out.append(known if known is not None and known.bytes == f.size
                   else file_entry(os.path.dirname(rel), rel, -1, f.size))
    if check is not None:
        missing, changed = damaged_files(index, out)
        if missing or changed:
            raise DamagedTableError(damage_message(check, missing, changed))
    return out


def damaged_files(index, current):
    """(recorded entries whose file is gone, (recorded entry, size now) of files whose size
    changed) between the timeline's file index and the table's files now."""
    size_now = {f.path: f.bytes for f in current}
    missing = [e for p, e in sorted(index.items()) if p not in size_now]
    changed = [(e, size_now[p]) for p, e in sorted(index.items())
               if p in size_now and size_now[p] != e.bytes]
    return missing, changed


def _rows(entry):
    return f"{format_count(entry.rows)} rows" if entry.rows >= 0 else "rows unknown"


def damage_message(name, missing, changed, shown=5):
    parts = []
    if missing:
        listed = ", ".join(f"{e.path} ({_rows(e)})" for e in missing[:shown])
        more = f" and {len(missing) - shown} more" if len(missing) > shown else ""
        parts.append(f"{len(missing)} missing: {listed}{more}")
    if changed:
        listed = ", ".join(f"{e.path} ({e.bytes} -> {size} bytes)" for e, size in changed[:shown])
        more = f" and {len(changed) - shown} more" if len(changed) > shown else ""
        parts.append(f"{len(changed)} changed: {listed}{more}")
    return (f"files of {name} that its commits recorded were deleted or changed outside them "
            f"({'; '.join(parts)}). Nothing was written: going on would build on rows that are "
            f"gone. Put the files back, or record the table as it is now (the rows of those "
            f"files are then lost) with: dbt run-operation sized_repair --args "
            f"'{{relation: {name}}}', or rebuild it with --full-refresh")
