"""What every writer of a table does around its work: take the writer lock, recover
unfinished instants (and resync the metastore if any were rolled back), release the lock.

An InjectedCrash (a simulated kill) passes through without releasing, like a real crash.
"""
import os
from contextlib import contextmanager

from python_adapter.catalog import describe_table, sync_partitions
from python_adapter.commit import CommitProtocol, file_entry
from python_adapter.fs import HadoopFS


class WriteError(RuntimeError):
    """A sized write cannot go ahead; the table is left as it was."""


def open_table(spark, table, info=None):
    """(TableInfo, HadoopFS, qualified location) of an existing table; readers use it as is."""
    info = info or describe_table(spark, table)
    if info is None:
        raise WriteError(f"table {table.quoted} does not exist")
    fs = HadoopFS(spark)
    return info, fs, fs.qualify(info.location)


@contextmanager
def locked_table(spark, table, operation, log=print, info=None):
    """Yields (info, fs, proto) with the writer lock held and recovery done."""
    info, fs, location = open_table(spark, table, info)
    proto = CommitProtocol(fs, location, log=log)
    proto.acquire_lock(operation)
    try:
        proto.rolled_back = proto.recover()
        if proto.rolled_back:
            sync_partitions(spark, table, bool(info.partition_columns))
        yield info, fs, proto
    except Exception:
        proto.release_lock()
        raise
    proto.release_lock()


def current_files(fs, location, timeline=None):
    """FileEntry of every data file of the table now (hidden paths are not data), with the
    rows and key statistics the timeline recorded when it has them."""
    index = timeline.file_index() if timeline is not None else {}
    out = []
    for f in fs.list_files(location):
        rel = f.path[len(location):].lstrip("/")
        known = index.get(rel)
        out.append(known if known is not None and known.bytes == f.size
                   else file_entry(os.path.dirname(rel), rel, -1, f.size))
    return out
