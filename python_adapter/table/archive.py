"""The table's past, kept bounded (docs/design.md, "Retention and archival"): the cleaner
deletes set-aside files past retention (and stale locks set aside, past their grace), and
archival folds old completed instants into the archive, so a write reads the checkpoint
and a bounded number of instant files.

Both run after a commit under the writer lock (CommitProtocol.cleanup), and as
`sized_clean`. Each step is safe to interrupt: an archival writes its history file, then
its checkpoint (each whole, through a temporary name), and only then deletes the instant
files the checkpoint holds; readers skip instants the newest checkpoint holds, and the next
archival tidies what an interrupted one left.
"""
import time
from dataclasses import dataclass
from typing import List, Optional

from python_adapter.core.retention import (ARCHIVE_BATCH, Done, Retention, archivable,
                                           retained)
from python_adapter.io.interfaces import FileSystem
from python_adapter.table.faults import fault_point
from python_adapter.table.lock import prune_set_aside
from python_adapter.table.timeline import (Checkpoint, Instant, Timeline, archive_file,
                                           archive_name, encode_checkpoint, encode_many,
                                           replay, summary)

RETAIN_COMMITS = "retain_commits"
RETAIN_HOURS = "retain_hours"


@dataclass
class Cleaned:
    """What one cleaning did."""
    set_aside_dirs: int = 0     # instants whose set-aside files were deleted
    archived: int = 0           # instants folded into the archive
    stale_locks: int = 0        # locks set aside as stale, past their grace, deleted


def table_retention(timeline: Timeline) -> Retention:
    """The retention of the table's last write that recorded one (writes record the model's
    retain_commits / retain_hours), else the defaults."""
    for inst in reversed(timeline.completed()):
        if RETAIN_COMMITS in inst.extra:
            return Retention(int(inst.extra[RETAIN_COMMITS]), float(inst.extra[RETAIN_HOURS]))
    return Retention()


def done_of(instants: List[Instant]) -> List[Done]:
    """The completed instants as retention sees them."""
    return [Done(i.instant, i.created_at_ms) for i in instants if i.state == "completed"]


def clean(fs: FileSystem, timeline: Timeline, replaced_dir: str,
          retention: Optional[Retention] = None, now_ms: Optional[int] = None,
          batch: Optional[int] = None) -> Cleaned:
    """Delete the set-aside files of instants past retention (and of instants the timeline
    does not know) and the locks set aside as stale past their grace (table/lock.py), then
    archive the instants past retention once `batch` (default ARCHIVE_BATCH) are due."""
    retention = retention or table_retention(timeline)
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    instants = timeline.instants()
    keep = retained(done_of(instants), retention, now_ms) | {
        i.instant for i in instants if i.state != "completed"}
    result = Cleaned()
    for st in fs.list_dir(replaced_dir):
        if st.name not in keep:
            fs.delete(st.path)
            result.set_aside_dirs += 1
            fault_point("cleaned")
    result.stale_locks = prune_set_aside(fs, timeline.meta_dir, now_ms)
    result.archived = archive(fs, timeline, retention, now_ms, batch or ARCHIVE_BATCH)
    return result


def archive(fs: FileSystem, timeline: Timeline, retention: Retention, now_ms: int,
            batch: int = ARCHIVE_BATCH) -> int:
    """Fold the completed instants past retention into the archive (when `batch` are due);
    returns how many were archived."""
    tidy(fs, timeline)
    cp = timeline.checkpoint()
    active = {i.instant: i for i in timeline.active() if i.state == "completed"}
    due = [i for i in archivable(done_of(timeline.completed()), retention, now_ms, batch)
           if i in active]
    if len(due) < batch:
        return 0
    chosen = [active[i] for i in due]
    sequence = (cp.sequence if cp is not None else 0) + 1
    _write_whole(fs, f"{timeline.history_dir}/{archive_name('history', sequence)}",
                 encode_many(chosen))
    fault_point("archive_history")
    files = replay(cp.files if cp is not None else (), chosen)
    new = Checkpoint(sequence=sequence,
                     last_instant=max(due + ([cp.last_instant] if cp is not None else [])),
                     archived=(cp.archived if cp is not None else ()) +
                     tuple(summary(i) for i in chosen),
                     files=tuple(files[p] for p in sorted(files)))
    _write_whole(fs, f"{timeline.archive_dir}/{archive_name('checkpoint', sequence)}",
                 encode_checkpoint(new))
    timeline.forget_archive()
    fault_point("archive_checkpoint")
    timeline.delete_instant_files(set(due))
    fault_point("archive_timeline")
    tidy(fs, timeline)
    return len(chosen)


def tidy(fs: FileSystem, timeline: Timeline) -> None:
    """Remove what an interrupted archival left: temporary files, the history file of an
    archival whose checkpoint was never written (only the next sequence can be one: each
    archival writes the one after the newest checkpoint's), checkpoints older than the
    newest, and instant files the newest checkpoint holds."""
    cp = timeline.checkpoint()
    newest = cp.sequence if cp is not None else 0
    for st in timeline.archive_listing():
        parsed = archive_file(st.name)
        stale = not (st.is_dir and st.name == "history") and (
            parsed is None or (parsed[0] == "checkpoint" and parsed[1] < newest))
        if stale:
            fs.delete(st.path)
            timeline.forget_archive()
    unfinished = f"{timeline.history_dir}/{archive_name('history', newest + 1)}"
    for path in (unfinished, f"{unfinished}.tmp"):
        if fs.exists(path):
            fs.delete(path)
    if cp is not None:
        held = cp.archived_ids
        if any(st.name.split(".")[0] in held for st in timeline.listing()):
            timeline.delete_instant_files(held)


def _write_whole(fs: FileSystem, path: str, data: bytes) -> None:
    """Write a file so that it appears whole or not at all: to a temporary name first."""
    tmp = f"{path}.tmp"
    fs.write_bytes(tmp, data, overwrite=True)
    fs.rename(tmp, path)
