"""A table on local disk driven through the table layer alone: LocalFS (real files, no
JVM), CommitProtocol, Transaction, and the commit template of spark/locking.py (lock,
recover, settle what a crash left unsettled, one transaction, release).

Data files are a few bytes that name the file and the write that made it (the table layer
never reads them: it moves and records them), so two copies of one file, or a file of the
wrong write, show in `visible()`.
"""
import os
import pathlib
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Callable, Dict, Iterable, Iterator, List, Mapping, Optional

from python_adapter.io.local_fs import LocalFS
from python_adapter.table import faults, lock
from python_adapter.table.archive import RETAIN_COMMITS, RETAIN_HOURS
from python_adapter.table.commit import CommitProtocol
from python_adapter.table.files import file_entry
from python_adapter.table.lock import LockOptions
from python_adapter.table.timeline import FileEntry, Instant, Timeline
from python_adapter.table.transaction import CatalogChange, Transaction, TxnOptions

PCOLS = ("day",)


def files_of(tag: str, days: Iterable[int], per_day: int) -> Dict[str, bytes]:
    """{rel path: bytes} of a write's files, `per_day` in each `day=<d>` partition."""
    return {f"day={d}/{tag}-{i}.parquet": f"{tag}: day {d}, file {i}".encode()
            for d in days for i in range(per_day)}


def retention(commits: int, hours: float) -> Dict[str, str]:
    """A write's extra recording the model's retention (table/archive.table_retention)."""
    return {RETAIN_COMMITS: str(commits), RETAIN_HOURS: str(hours)}


@dataclass
class RecordingCatalog:
    """The metastore side of a commit (table/transaction.CatalogSync), recorded in memory.
    A fake is fine here ONLY because the metastore is not what these tests test: they test
    the table layer on a real filesystem (local disk through LocalFS); the real catalog
    (spark/catalog/sync.py) is tested against a metastore in tests/functional. `fail_sync`
    makes sync raise, as a metastore that refuses a partition does."""
    synced: List[CatalogChange] = field(default_factory=list)
    stats_written: List[CatalogChange] = field(default_factory=list)
    settled: List[List[str]] = field(default_factory=list)       # instant ids, per call
    rolled_back: List[List[str]] = field(default_factory=list)   # instant ids, per call
    fail_sync: Optional[Exception] = None

    def sync(self, change: CatalogChange) -> Callable[[], None]:
        if self.fail_sync is not None:
            raise self.fail_sync
        self.synced.append(change)
        return lambda: self.stats_written.append(change)

    def settle(self, instants: Iterable[Instant], index: Mapping[str, FileEntry]) -> None:
        self.settled.append([i.instant for i in instants])

    def after_rollback(self, instants: Iterable[Instant],
                       index: Optional[Mapping[str, FileEntry]]) -> None:
        self.rolled_back.append([i.instant for i in instants])


def stage(proto: CommitProtocol, instant_id: str, files: Mapping[str, bytes]
          ) -> List[FileEntry]:
    """The files written into the instant's staging directory, as a write's tasks leave
    them, and their entries (moved_path: the staged path)."""
    entries = []
    for rel, data in files.items():
        path = f"{proto.staging_dir(instant_id)}/{rel}"
        proto.fs.write_bytes(path, data)
        entries.append(file_entry(os.path.dirname(rel), rel, 1, len(data), staged_path=path))
    return entries


def crash_like_a_dead_process() -> None:
    """What a real crash takes with the process: the locks it held, its fault counts."""
    lock.forget_held_locks()
    faults.reset()


class LocalTable:
    """A partitioned table at `<root>/warehouse/events` on local disk; copying=True: on
    local disk as an object store sees it (LocalFS(copying=True): files move by copy and
    delete, the commit protocol's object-store steps)."""

    def __init__(self, root: pathlib.Path, catalog: Optional[RecordingCatalog] = None,
                 copying: bool = False) -> None:
        self.fs = LocalFS(copying=copying)
        self.location = self.fs.qualify(str(root / "warehouse" / "events"))
        self.catalog = catalog or RecordingCatalog()
        self.logs: List[str] = []

    def protocol(self) -> CommitProtocol:
        return CommitProtocol(self.fs, self.location, log=self.logs.append)

    @property
    def timeline(self) -> Timeline:
        return Timeline(self.fs, self.location)

    @contextmanager
    def locked(self, operation: str, options: LockOptions = LockOptions()
               ) -> Iterator[CommitProtocol]:
        """spark/locking.locked_locations for one location, with this table's catalog: an
        ordinary failure releases the lock, a crash (InjectedCrash) keeps it."""
        proto = self.protocol()
        proto.acquire_lock(operation, options)
        try:
            rolled = proto.recover()
            if rolled:
                self.catalog.after_rollback(rolled, proto.timeline.file_index())
            if proto.unsettled:
                self.catalog.settle(proto.unsettled, proto.timeline.file_index())
                for instant in proto.unsettled:
                    proto.cleanup(instant)
                proto.unsettled = []
            yield proto
        except Exception:
            proto.release_lock()
            raise
        proto.release_lock()

    def write(self, files: Mapping[str, bytes], replacing: Iterable[str] = (),
              extra: Optional[Mapping[str, str]] = None) -> Instant:
        """One insert_overwrite: `files` added, the files of the partitions `replacing`
        ('day=3') replaced. Returns the completed instant."""
        with self.locked("insert_overwrite") as proto:
            gone = set(replacing)
            index = proto.timeline.file_index()
            with Transaction(proto, self.catalog, "insert_overwrite", PCOLS,
                             TxnOptions(extra=dict(extra or {}))) as txn:
                txn.add(stage(proto, txn.id, files))
                txn.remove(e for e in index.values() if e.partition in gone)
            return txn.done

    def rollback_last(self) -> Instant:
        """sized_rollback of the last commit, as spark/services/rollback.py makes it: the
        files it set aside back, its own files out, as a `rollback` instant."""
        with self.locked("rollback") as proto:
            last = [i for i in proto.timeline.completed() if i.action != "rollback"][-1]
            back = [replace(f, moved_path=f"{proto.aside_dir(last.instant)}/{f.path}")
                    for f in last.removed]
            index = proto.timeline.file_index()
            with Transaction(proto, self.catalog, "rollback", PCOLS, TxnOptions(
                    action="rollback", extra={"rolled_back": last.instant})) as txn:
                txn.add(back)
                txn.remove(index[f.path] for f in last.added if f.path in index)
            return txn.done

    def recover(self) -> None:
        """sized_recover: lock, roll back, settle, release."""
        with self.locked("recover"):
            pass

    def visible(self) -> Dict[str, bytes]:
        """{rel path: bytes} of the files a reader of the table finds (hidden ones aside)."""
        prefix = len(self.location) + 1
        return {st.path[prefix:]: self.fs.read_bytes(st.path)
                for st in self.fs.list_files(self.location)}

    def recorded(self) -> Dict[str, int]:
        """{rel path: bytes} of the files the timeline says the table holds."""
        return {path: e.bytes for path, e in self.timeline.file_index().items()}

    def meta(self, *parts: str) -> str:
        """A local path in the table's metadata directory."""
        return os.path.join(self.fs.qualify(self.timeline.meta_dir)[len("file:"):], *parts)


def after(state: Mapping[str, bytes], files: Mapping[str, bytes], replacing: Iterable[str] = ()
          ) -> Dict[str, bytes]:
    """What a table holding `state` holds once `files` replaced the partitions `replacing`."""
    gone = set(replacing)
    kept = {rel: data for rel, data in state.items() if os.path.dirname(rel) not in gone}
    return {**kept, **files}
