"""The commit protocol (docs/design.md): lock, recover, requested, stage, inflight, publish,
completed, cleanup.

After any crash the table holds exactly the files of its last completed commit: recovery
rolls every unfinished instant back (moving published files out and set-aside files back),
which is safe to repeat if recovery itself is interrupted. The set-aside files of the last
completed commit are kept so `sized_rollback` can restore the state before it.

A file moves by one rename where the filesystem renames atomically (local disk, HDFS). On
an object store, whose rename is a copy and a delete, a move is those two steps made by
the protocol itself (`object_store_steps`): the copy (server-side; an object appears whole
or not at all), then, for a file leaving the table, its delete. A copy's source outside the
table (staging, a set-aside directory) is left for that directory's own deletion. A crash
between the two leaves the file at both paths with the same bytes, since no instant moves
a file to a path another of its files leaves (`mark_inflight` refuses it): recovery then
only deletes the copy still in the table, where a rename-based recovery would keep both.
"""
import time
from dataclasses import replace
from typing import (Any, Callable, Collection, Dict, Iterable, List, Optional, Sequence, Set,
                    Tuple)

from python_adapter.core.notice import Notice
from python_adapter.io.interfaces import FileSystem
from python_adapter.table import settle
from python_adapter.table.archive import clean
from python_adapter.table.faults import fault_point
from python_adapter.table.lock import LockOptions, WriterLock
from python_adapter.table.timeline import (FileEntry, Instant, Timeline, legacy_meta_dir_of,
                                     new_instant_id)


class CommitProtocol:
    # the instants recovery rolled back, set by spark/locking.py's locked_locations once it
    # ran under the lock (a hint only: the class sets no value)
    rolled_back: List[Instant]

    def __init__(self, fs: FileSystem, table_location: str, log: Callable[[str], None] = print,
                 meta_dir: Optional[str] = None) -> None:
        self.fs = fs
        self.location = table_location.rstrip("/")
        self.timeline = Timeline(fs, self.location, meta_dir=meta_dir)
        self.meta = self.timeline.meta_dir
        self.lock_path = f"{self.meta}/lock"
        # what a lock of the table fences: its files and its metadata (io/interfaces.Fence)
        self.covers = (self.location, self.meta)
        self.lock = WriterLock(fs, self.lock_path, log=log, covers=self.covers)
        self.log = log
        self.unsettled: List[Instant] = []   # completed instants recovery found unsettled
        self._settling: List[Callable[[], None]] = []

    # -- paths ---------------------------------------------------------------------------
    def staging_dir(self, instant_id: str) -> str:
        return f"{self.meta}/staging/{instant_id}"

    @property
    def replaced_dir(self) -> str:
        """Where instants set aside the files they replace, a directory per instant."""
        return f"{self.meta}/replaced"

    def aside_dir(self, instant_id: str) -> str:
        return f"{self.replaced_dir}/{instant_id}"

    def final_path(self, rel_path: str) -> str:
        return f"{self.location}/{rel_path}"

    def in_table(self, path: str) -> bool:
        """Whether a path is where the table's readers look (not staging or set aside)."""
        return path.startswith(f"{self.location}/")

    # -- lock ----------------------------------------------------------------------------
    def acquire_lock(self, operation: str, options: LockOptions = LockOptions()) -> None:
        # the filesystem gives what this protocol needs (checked once per filesystem and
        # process, io/storage.py): a refusal before anything is written there
        self.fs.check_commit_safe(self.lock_path)
        settle.wait(self.location)  # this process's last commit to the table settles first
        migrate_legacy_meta(self.fs, self.location, self.log)
        self.lock.acquire(operation, options)
        self.timeline.hold(True)

    def release_lock(self) -> None:
        """Release now, or, when commits left their settling to the background
        (table/settle.py), once the worker has settled them."""
        work, self._settling = self._settling, []
        if work:
            settle.submit(self.location, lambda: self._settle_and_release(work))
        else:
            self._release()

    def _settle_and_release(self, work: List[Callable[[], None]]) -> None:
        try:
            for step in work:
                step()  # an InjectedCrash passes, the lock kept as a dead process keeps it
        except Exception as exc:  # the commits stand; the next writer settles what is left
            self.log(Notice(f"settling the last commit of {self.location} did not finish "
                            f"({exc}); the next write to the table does it"))
        self._release()

    def _release(self) -> None:
        self.timeline.hold(False)
        self.lock.release()

    # -- settling ------------------------------------------------------------------------
    def settle(self, work: Callable[[], None]) -> None:
        """A completed commit's settling (statistics, cleanup): now, or in the background
        before the lock is released when the caller asked for it (settle.in_background)."""
        if settle.backgrounded():
            self._settling.append(work)
        else:
            work()

    # -- recovery ------------------------------------------------------------------------
    def recover(self) -> List[Instant]:
        """Roll back every unfinished instant; returns the instants rolled back."""
        rolled = []
        waiting = set()
        for instant in self.timeline.instants():
            if instant.state == "completed":
                continue
            if instant.state == "requested" and instant.extra.get("scheduled") == "true":
                waiting.add(instant.instant)
                continue  # a clustering plan waiting to be executed, not a crashed write
            self.log(Notice(f"rolling back unfinished {instant.action} {instant.instant} "
                            f"({instant.operation}, {instant.state})"))
            self._roll_back(instant)
            rolled.append(instant)
        self.unsettled = self.timeline.unsettled()
        # Staging left behind by a completed instant (crash during cleanup) is garbage.
        for st in self.fs.list_dir(f"{self.meta}/staging"):
            if st.name not in waiting:
                self.fs.delete(st.path)
        return rolled

    def _roll_back(self, instant):
        """Undo an unfinished instant; safe to repeat if interrupted (instant files go last)."""
        self._undo_files(instant)
        self.fs.delete(self.staging_dir(instant.instant))
        self.fs.delete(self.aside_dir(instant.instant))
        self.timeline.delete_unfinished(instant)

    def _undo_files(self, instant: Instant) -> None:
        """Move the instant's published files out and its set-aside files back: every
        move decided first, from one listing of each directory involved, then one batch
        of renames, as short as a publish (per-file checks between the moves made a
        rollback of a few hundred files take seconds, readers seeing rows missing the
        whole time). Safe to repeat: an interrupted batch leaves each file in one of its
        two places, and the next recovery decides again from what it finds."""
        groups = undo_groups(instant, self.final_path)
        present = self.fs.existing(p for group in groups for pair in group for p in pair)
        if self.fs.renames_atomically(self.location):
            moves = still_to_move([pair for group in groups for pair in group], present)
            self.fs.rename_many(moves, after_each=lambda: fault_point("undo"))
        else:
            self._run_steps(object_store_steps(groups, present, self.in_table),
                            lambda: fault_point("undo"))
        # A partition the instant created is left without files: no directory, as before it.
        self._drop_empty_partition_dirs(removed=instant.added, added=instant.removed)

    # -- the write steps -----------------------------------------------------------------
    def request(self, operation: str, partition_columns: Iterable[str], action: str = "commit",
                extra: Optional[dict] = None, removed: Iterable[FileEntry] = ()) -> Instant:
        """The instant's requested file, written once (removed: the files a scheduled plan
        will replace; a write names its files when it goes inflight)."""
        instant = Instant(instant=self._unique_instant_id(), action=action, state="requested",
                          operation=operation, partition_columns=tuple(partition_columns),
                          removed=tuple(removed), extra=dict(extra or {}))
        self.timeline.write(instant)
        fault_point("requested")
        return instant

    def _unique_instant_id(self):
        existing = {i.instant for i in self.timeline.instants()}
        ident = new_instant_id()
        while ident in existing:
            time.sleep(0.002)
            ident = new_instant_id()
        return ident

    def mark_inflight(self, instant: Instant, added: Sequence[FileEntry],
                      removed: Iterable[FileEntry], in_place: Collection[str] = frozenset()
                      ) -> Instant:
        """added: FileEntry with moved_path = staged path ('' for a file recorded where it
        is); removed: FileEntry of table files, set aside on publish except those in
        `in_place` (rel paths of files that are gone, or stay where they are)."""
        aside = self.aside_dir(instant.instant)
        removed = tuple(replace(f, moved_path="" if f.path in in_place else f"{aside}/{f.path}")
                        for f in removed)
        refuse_reused_paths(instant.instant, added, removed)
        inflight = instant.with_state(
            "inflight", added=tuple(added), removed=removed,
            rows_written=sum(max(f.rows, 0) for f in added),
            bytes_written=sum(f.bytes for f in added))
        self.timeline.write(inflight)
        fault_point("inflight")
        return inflight

    def publish(self, inflight: Instant) -> None:
        self.lock.ensure_held()
        groups = publish_groups(inflight, self.final_path)
        if self.fs.renames_atomically(self.location):
            self.fs.drop_checksums(e.moved_path for e in inflight.added if e.moved_path)
            self.fs.rename_many([pair for group in groups for pair in group],
                                after_each=lambda: fault_point("publish"))
        else:
            sources = {src for group in groups for src, _dst in group}
            self._run_steps(object_store_steps(groups, sources, self.in_table),
                            lambda: fault_point("publish"))
        self._drop_empty_partition_dirs(inflight.removed, inflight.added)
        fault_point("published")

    def _run_steps(self, steps: List["Steps"], after_each: Callable[[], None]) -> None:
        """An object store's moves: each batch of copies, then of deletes, in order;
        after_each (the fault point) after every file: a crash between a file's copy and
        its delete is the case the object-store steps are there for."""
        for kind, items in steps:
            if kind == "copy":
                self.fs.copy_many(items, after_each=after_each)
            else:
                self.fs.delete_files(items, after_each=after_each)

    def _drop_empty_partition_dirs(self, removed, added):
        # A partition that just received a file is not empty: no need to list it.
        dirs = {f.partition for f in removed if f.partition} - {f.partition for f in added}
        for part in sorted(dirs, key=len, reverse=True):
            path = self.final_path(part)
            if self.fs.exists(path) and not self.fs.list_dir(path):
                self.fs.delete(path, recursive=False)

    def complete(self, inflight: Instant, extra: Optional[dict] = None) -> Instant:
        self.lock.ensure_held()
        done = inflight.with_state("completed", extra={**inflight.extra, **(extra or {})})
        self.timeline.write(done)
        fault_point("completed")
        return done

    def cleanup(self, done: Instant) -> None:
        """Drop staging and the instant's earlier states (the last step of its settling:
        until then its inflight file says the settling may not be done), then clean: set-aside files past
        the table's retention, old instants into the archive (table/archive.py). The commit
        is done: a cleaning that fails is logged and tried again after the next one."""
        self.fs.delete(self.staging_dir(done.instant))
        self.timeline.drop_earlier_states(done)
        try:
            clean(self.fs, self.timeline, self.replaced_dir)
        except Exception as exc:
            self.log(Notice(f"cleaning after {done.instant} did not finish ({exc}); the "
                            f"next commit tries again"))
        fault_point("cleanup")

    def abort(self, instant: Instant) -> None:
        """Undo an instant this process started and that failed with an ordinary error."""
        try:
            latest = {i.instant: i for i in self.timeline.instants()}.get(instant.instant, instant)
            if latest.state != "completed":
                self._roll_back(latest)
        except Exception as exc:  # leave it to the next run's recovery
            self.log(f"could not roll back {instant.instant} now ({exc}); the next run will")


Move = Tuple[str, str]                       # (src, dst)
# An object store's batch of steps: ("copy", [(src, dst), ...]) or ("delete", [path, ...])
Steps = Tuple[str, List[Any]]


def publish_order(inflight: Instant, final_path: Callable[[str], str]) -> List[Move]:
    """publish_groups, one move after the other."""
    return [pair for group in publish_groups(inflight, final_path) for pair in group]


def publish_groups(inflight: Instant, final_path: Callable[[str], str]) -> List[List[Move]]:
    """The (src, dst) renames of a publish: each replaced file set aside, each new file
    moved in from staging (files recorded in place are not moved), partition by partition,
    the old files of a partition out before its new ones in, as undo_order does the
    reverse: a reader listing the table during the batch finds only the partition being
    moved half done (setting every old file aside before moving any new one in left a
    table of 20 partitions showing 3% of its rows), may miss some of that partition's rows
    but never sees a key twice, and a new file of the same name as an old one (the same
    path) waits for it to leave."""
    leaving = [(e.partition, 0, final_path(e.path), e.moved_path)
               for e in inflight.removed if e.moved_path]
    arriving = [(e.partition, 1, e.moved_path, final_path(e.path))
                for e in inflight.added if e.moved_path]
    return _by_partition(leaving + arriving)


def _by_partition(moves: List[Tuple[str, int, str, str]]) -> List[List[Move]]:
    """(src, dst) of (partition, phase, src, dst) moves, grouped by partition then phase (out
    before in), in the instant's order within each (the sort is stable)."""
    groups: Dict[Tuple[str, int], List[Move]] = {}
    for part, phase, src, dst in sorted(moves, key=lambda m: m[:2]):
        groups.setdefault((part, phase), []).append((src, dst))
    return list(groups.values())


def undo_order(instant: Instant, final_path: Callable[[str], str]) -> List[Move]:
    """undo_groups, one move after the other."""
    return [pair for group in undo_groups(instant, final_path) for pair in group]


def undo_groups(instant: Instant, final_path: Callable[[str], str]) -> List[List[Move]]:
    """The (src, dst) renames that would undo `instant` from its published state: each
    published file (an add) back where it came from, each set-aside file (a remove) back
    into the table; files recorded in place are not moved. Moved back rather than
    deleted: a rollback's or a restore's adds are old files whose only copy is the
    published one.

    Order: partition by partition, the instant's files of a partition out, then the old
    files of that partition back. A reader lists the table at some moment of the batch,
    so only the partition being moved can look wrong to it, for the few renames of that
    partition (every new file out first, then every old one back, as the per-file loop
    did, left each partition without its rows from the batch's first move to nearly its
    last). Out before back, as publish sets aside before it moves in: a reader may miss
    some rows of one partition, but never sees a key twice; and a file coming back to the
    path of one going out (the same name) has to wait for it."""
    leaving = [(e.partition, 0, final_path(e.path), e.moved_path)
               for e in instant.added if e.moved_path]
    returning = [(e.partition, 1, e.moved_path, final_path(e.path))
                 for e in instant.removed if e.moved_path]
    return _by_partition(leaving + returning)


def object_store_steps(groups: Sequence[Sequence[Move]], present: Set[str],
                       in_table: Callable[[str], bool]) -> List[Steps]:
    """The moves of `groups` on an object store, as batches of copies and deletes, given the
    paths `present` before the first: per group, the copies whose source is there and
    whose destination is not, then the deletes of the sources that are in the table (a
    file leaving it; a source elsewhere is left for its directory's deletion). A move whose
    copy is done (both paths present) is finished by its delete alone; a move done is
    skipped. Each step planned counts as done for those after it, so an interrupted batch
    is finished by planning again from what a listing shows."""
    present = set(present)
    steps: List[Steps] = []
    for group in groups:
        copies, deletes = [], []
        for src, dst in group:
            if src not in present:
                continue
            if dst not in present:
                copies.append((src, dst))
                present.add(dst)
            if in_table(src):
                deletes.append(src)
                present.discard(src)
        steps += [("copy", copies)] if copies else []
        steps += [("delete", deletes)] if deletes else []
    return steps


def refuse_reused_paths(instant_id: str, added: Sequence[FileEntry],
                        removed: Sequence[FileEntry]) -> None:
    """A bug, before anything moves: an instant that moves a new file to the path of a file
    it moves away. On an object store, recovery tells a half-done move by its file being at
    both paths, which holds only while no path is reused within an instant."""
    arriving = {e.path for e in added if e.moved_path}
    reused = sorted(arriving & {e.path for e in removed if e.moved_path})
    if reused:
        raise RuntimeError(f"instant {instant_id} moves a new file to the path of a file it "
                           f"replaces ({reused[0]}, {len(reused)} in all): a bug of the "
                           f"engine; nothing was published")


def still_to_move(renames: Sequence[Move], present: Set[str]) -> List[Move]:
    """The renames, in order, whose source is there and whose destination is free, given
    the paths `present` before the first (a rename done before an interruption is skipped;
    each one planned counts as done for those after it)."""
    present = set(present)
    moves = []
    for src, dst in renames:
        if src in present and dst not in present:
            present.discard(src)
            present.add(dst)
            moves.append((src, dst))
    return moves


def migrate_legacy_meta(fs: FileSystem, location: str, log: Callable[[str], None] = print) -> None:
    """Move the metadata of a table written by an earlier version (`<table>/.sized`) beside
    the table (`meta_dir_of`), under the old lock and after rolling back any unfinished
    instant of the old writer. Instants keep their recorded paths: those of finished
    instants are not used again, and unfinished ones are rolled back before the move."""
    legacy = legacy_meta_dir_of(location)
    if not fs.exists(legacy):
        return
    old = CommitProtocol(fs, location, log=log, meta_dir=legacy)
    new = Timeline(fs, location).meta_dir
    if fs.exists(f"{new}/timeline"):
        log(f"table {location} has metadata in both {legacy} (an earlier version) and {new}; "
            f"using {new}")
        return
    old.lock.acquire("migrate metadata")
    old.recover()
    log(f"moving the table's metadata from {legacy} to {new}")
    old.lock.stop()
    fs.rename(legacy, new)  # the lock file moves along: no other writer comes in meanwhile
    fs.drop_checksums_below(location)  # other engines' directory scans fail on them
    fs.delete(f"{new}/lock", recursive=False)
