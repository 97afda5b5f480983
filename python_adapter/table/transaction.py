"""One instant of a table, from request to cleanup: the commit sequence every operation
shares (writes, rollback, repair, clustering), in the spirit of pyiceberg's Transaction
and its snapshot producers: an operation only says which files it adds and removes.

    with Transaction(proto, catalog, "upsert", partition_columns,
                     TxnOptions(registered=partitions)) as txn:
        ...                       # stage the new files under proto.staging_dir(txn.id)
        txn.add(staged)
        txn.remove(replaced)
        txn.note(bytes_per_row="12.500")  # figures known once staged, on the completed file
    txn.done                      # the completed instant

Everything an operation decides before its work (the instant's extra, the partitions the
catalog holds already, the table's new definition, a planned instant to carry out) is
given when the transaction is made (TxnOptions); only its files, and figures its staging
measures, come while it runs.

On a clean exit: inflight (the full list of adds and removes), publish (removed files set
aside, added files moved into place), the table's definition when the operation brings one
(`define`), the catalog's partitions (new ones registered with their statistics, emptied
ones dropped), completed; then the settling (table/settle.py), now or in the background:
the statistics of the partitions that were registered already and of the table, cleanup. An ordinary failure (Exception)
anywhere rolls the instant back at once and lets the catalog put itself back; an
InjectedCrash (a simulated kill) passes through untouched, as a real crash leaves things
for the next writer's recovery.
"""
from dataclasses import dataclass, field
from typing import (AbstractSet, Any, Callable, Collection, Dict, Iterable, List, Mapping,
                    Optional, Protocol, Set, Tuple)

from python_adapter.core.notice import Notice
from python_adapter.errors import LockLostError
from python_adapter.table.commit import CommitProtocol
from python_adapter.table.faults import fault_point
from python_adapter.table.files import FileStats, file_stats, partition_stats, partitions_of
from python_adapter.table.timeline import (DEFERRED, PARTITION_STATS, FileEntry, Instant,
                                           replay)


@dataclass(frozen=True)
class CatalogChange:
    """What a commit changed, as the catalog needs it: the partitions it touched (those
    that hold files now are registered, the others dropped), and the statistics of those
    partitions and of the whole table after it, from the files the timeline records.
    `current`: registered partitions whose statistics the commit left as they were (a
    partition rewritten with the same files, rows and bytes), and `table_current` the same
    of the table: the metastore holds them already, so they are not written again."""
    changed: set            # partition directories the commit added or removed files in
    registered: set         # partitions known to be registered before the commit
    partition_stats: Dict[str, FileStats]
    table_stats: FileStats
    current: frozenset = frozenset()
    table_current: bool = False

    @staticmethod
    def of(index: Mapping[str, FileEntry], changed: set,
           registered: AbstractSet[str] = frozenset(),
           before: Optional[Mapping[str, FileEntry]] = None) -> "CatalogChange":
        """The change to `changed` partitions, `index` being the table's files after it;
        `before`, the files before it, when the metastore's statistics are those of
        `before` (every commit writes them, but an adoption defers them)."""
        stats, table = partition_stats(index, changed), file_stats(index.values())
        current: frozenset = frozenset()
        table_current = False
        if before is not None:
            earlier = partition_stats(before, set(changed) & set(registered))
            current = frozenset(p for p, s in earlier.items() if stats.get(p) == s)
            table_current = file_stats(before.values()) == table
        return CatalogChange(set(changed), set(registered), stats, table, current, table_current)


class CatalogSync(Protocol):
    """What a commit tells the table's catalog (the metastore), implemented by the Spark
    layer (spark/catalog/sync.py); the table layer never talks to the metastore itself."""

    def sync(self, change: CatalogChange) -> Callable[[], None]:
        """Register the changed partitions that hold files now, with their statistics, and
        drop those that do not; returns what writes the statistics of the partitions that
        were registered already and of the table (run once the commit has completed)."""

    def settle(self, instants: Iterable[Instant], index: Mapping[str, FileEntry]) -> None:
        """The statistics of completed instants whose settling a crash stopped: those of
        the partitions they changed and of the table, from `index` (the table's files)."""

    def after_rollback(self, instants: Iterable[Instant],
                       index: Optional[Mapping[str, FileEntry]]) -> None:
        """Put the catalog back after instants were rolled back (their definition, their
        partitions, the statistics of `index`: the table's files now; None: unknown)."""


@dataclass(frozen=True)
class TxnOptions:
    """How an instant is made, decided before it starts.
    registered: partitions the catalog holds already (they are not asked about, only given
    their statistics); define: writes the table's new definition once the files are in
    place (a first build, a full refresh that changes it); planned: an instant requested
    already (a scheduled clustering plan) to carry out instead of requesting a new one."""
    action: str = "commit"
    extra: Mapping[str, Any] = field(default_factory=dict)
    registered: Collection[str] = frozenset()
    define: Optional[Callable[[Instant], None]] = None
    planned: Optional[Instant] = None


class Transaction:
    def __init__(self, proto: CommitProtocol, catalog: CatalogSync, operation: str,
                 partition_columns: Iterable[str], options: TxnOptions = TxnOptions()) -> None:
        self.proto, self.catalog = proto, catalog
        self._request = (operation, tuple(partition_columns), options.action,
                         dict(options.extra))
        self.instant = options.planned
        self.added: List[FileEntry] = []
        self.removed: List[FileEntry] = []
        self.in_place: Set[str] = set()
        self.registered = set(options.registered)
        self.define = options.define
        self._completed_extra: Dict[str, str] = {}
        self.done: Optional[Instant] = None

    @property
    def id(self) -> str:
        assert self.instant is not None, "read inside the with block (__enter__ sets it)"
        return self.instant.instant

    @property
    def extra(self) -> dict:
        assert self.instant is not None, "read inside the with block (__enter__ sets it)"
        return self.instant.extra

    def add(self, entries: Iterable[FileEntry]) -> None:
        """New files: staged (moved_path) or, with moved_path '', recorded where they are."""
        self.added.extend(entries)

    def remove(self, entries: Iterable[FileEntry], in_place: Iterable[str] = ()) -> None:
        """Files the instant replaces: set aside on publish, except those in `in_place`
        (rel paths of files that are gone, or that stay where they are)."""
        self.removed.extend(entries)
        self.in_place.update(in_place)

    def note(self, **figures: str) -> None:
        """Figures the work measured (a write's bytes per row), kept in the completed
        instant's extra."""
        self._completed_extra.update(figures)

    def __enter__(self) -> "Transaction":
        if self.instant is None:
            operation, pcols, action, extra = self._request
            self.instant = self.proto.request(operation, pcols, action=action, extra=extra)
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            write_stats = self._commit()
            self.proto.settle(lambda: self._settle(write_stats))
        elif isinstance(exc, Exception):  # an ordinary failure; a crash passes untouched
            self._abort()
        return False

    def _commit(self) -> Callable[[], None]:
        """Up to the completed instant; returns the catalog's statistics step."""
        assert self.instant is not None, "__enter__ set it"
        try:
            inflight = self.proto.mark_inflight(self.instant, self.added, self.removed,
                                                in_place=self.in_place)
            self.proto.publish(inflight)
            if self.define is not None:
                self.define(self.instant)
            before = self.proto.timeline.file_index()
            after = replay(list(before.values()), [inflight])
            changed, stats_known = self._changed(after)
            write_stats = self.catalog.sync(CatalogChange.of(after, changed, self.registered,
                                                             before if stats_known else None))
            fault_point("synced")
            self.done = self.proto.complete(inflight, extra=self._completed_extra)
            return write_stats
        except LockLostError:
            raise  # the table is another writer's now: its recovery undoes this instant
        except Exception:
            self._abort()
            raise

    def _settle(self, write_stats: Callable[[], None]) -> None:
        """The statistics, then cleanup, whose deletion of the inflight file says it is
        done. Statistics that fail to be written leave it there: the next writer's recovery
        writes them."""
        assert self.done is not None, "settled only once _commit completed the instant"
        fault_point("settling")
        try:
            write_stats()
        except Exception as exc:  # the commit is done; its figures come with the next one
            self.proto.log(Notice(f"the metastore's statistics of {self.done.instant} were "
                                  f"not written ({exc}); the next write to the table does it"))
            return
        fault_point("statistics")
        self.proto.cleanup(self.done)

    def _changed(self, after: Mapping[str, FileEntry]) -> Tuple[set, bool]:
        """(The partitions whose statistics the catalog is given, whether the metastore
        holds the statistics of the files before the commit). A new definition holds no
        partition yet: only the new files' concern it. An adoption changes no file: the
        partitions registered already keep the figures their writer left (altering hundreds
        of partitions costs seconds, and a compaction usually follows at once); the commit
        after it gives every partition its statistics."""
        if self.define is not None:
            return partitions_of(self.added), False
        changed = partitions_of(self.added, self.removed)
        if self.extra.get(PARTITION_STATS) == DEFERRED:
            return changed - self.registered, False
        done = self.proto.timeline.completed()
        if done and done[-1].extra.get(PARTITION_STATS) == DEFERRED:
            return changed | {e.partition for e in after.values()}, False
        return changed, True

    def _abort(self) -> None:
        """Undo now rather than leave it to the next writer's recovery."""
        assert self.instant is not None, "__enter__ set it"
        self.proto.abort(self.instant)
        try:
            index = self.proto.timeline.file_index()
        except Exception:  # the failure being handled is the one to report
            index = None
        self.catalog.after_rollback([self.instant], index)
