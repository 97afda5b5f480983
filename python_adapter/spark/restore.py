"""sized_restore: bring a table back to its state right after a retained completed instant,
as a new instant of its own (so a restore is undone like any commit).

The state after instant T is the timeline replayed up to T. Files of that state the table
no longer holds were set aside by the instants after T (each removed entry records where);
retention keeps those (core/retention.restorable). The restore instant adds them back from
there and sets aside the current files that state did not hold; files in both stay.
"""
from dataclasses import replace
from typing import Callable, Dict, List, Set

from pyspark.sql import SparkSession

from python_adapter.core.retention import restorable
from python_adapter.errors import ConfigError, WriteError
from python_adapter.spark.catalog import TableRef
from python_adapter.spark.catalog_sync import SparkCatalog
from python_adapter.spark.locking import locked_table
from python_adapter.table.archive import done_of
from python_adapter.table.files import current_files
from python_adapter.table.timeline import FileEntry, Instant, Timeline, replay
from python_adapter.table.transaction import Transaction

RESTORED_TO = "restored_to"


def restore_table(spark: SparkSession, table: TableRef, instant: str,
                  log: Callable[[str], None] = print) -> str:
    """Restore the table to its state right after `instant`; returns the restore's own
    instant. Nothing changes when `instant` cannot be restored (the error names those
    that can)."""
    instant = str(instant).strip()
    name = f"{table.schema}.{table.identifier}"
    with locked_table(spark, table, "restore", log=log) as (info, fs, proto):
        timeline = proto.timeline
        kept = {st.name for st in fs.list_dir(proto.replaced_dir)}
        _check_restorable(timeline, kept, instant, name)
        target = _state_after(timeline, instant)
        current = {f.path: f for f in current_files(fs, proto.location, timeline, check=name)}
        back = _set_aside_copies(timeline, instant, [f for p, f in target.items()
                                                     if p not in current])
        missing = [f.path for f in back if not f.moved_path or not fs.exists(f.moved_path)]
        if missing:
            raise WriteError(f"cannot restore {name} to {instant}: {len(missing)} of the files "
                             f"it held are no longer kept, e.g. {missing[0]}; nothing changed")
        gone = [f for p, f in current.items() if p not in target]
        catalog = SparkCatalog(spark, fs, table, proto.location, log)
        with Transaction(proto, catalog, "restore", info.partition_columns,
                         extra={RESTORED_TO: instant}) as txn:
            txn.add(back)
            txn.remove(gone)
    log(f"restored {name} to {instant} as {txn.done.instant}: {len(back)} files back, "
        f"{len(gone)} set aside")
    return txn.done.instant


def _check_restorable(timeline: Timeline, kept: Set[str], instant: str, name: str) -> None:
    """kept: the instants whose set-aside directory is there."""
    instants = timeline.instants()
    can = restorable(done_of(instants, kept))
    if instant in can:
        return
    known = {i.instant: i for i in instants}
    why = ("is not an instant of it" if instant not in known else
           f"is {known[instant].state}, not completed" if known[instant].state != "completed"
           else "is past the table's retention (retain_commits, retain_hours): files it held "
                "are no longer kept; or a later instant defined the table again")
    shown = ", ".join(can) if can else "none"
    raise ConfigError(f"instant: {instant!r} {why}: {name} can be restored to {shown}. "
                      f"Nothing changed")


def _state_after(timeline: Timeline, instant: str) -> Dict[str, FileEntry]:
    """The table's files right after `instant` (a retained instant: never archived)."""
    cp = timeline.checkpoint()
    upto = [i for i in timeline.active() if i.state == "completed" and i.instant <= instant]
    return replay(cp.files if cp is not None else (), upto)


def _set_aside_copies(timeline: Timeline, instant: str, wanted: List[FileEntry]
                      ) -> List[FileEntry]:
    """Each wanted file with moved_path = where the last instant after `instant` that
    removed it set it aside ('' when none recorded one)."""
    last: Dict[str, str] = {}
    later: List[Instant] = [i for i in timeline.active()
                            if i.state == "completed" and i.instant > instant]
    for inst in later:
        for f in inst.removed:
            last[f.path] = f.moved_path
        for f in inst.added:  # added back again (a rollback): its old copy is not there
            last.pop(f.path, None)
    return [replace(f, moved_path=last.get(f.path, "")) for f in wanted]
