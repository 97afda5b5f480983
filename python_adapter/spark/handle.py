"""The table handle: what an api call opens once and every step of it works on (the
table's reference, its description, its filesystem, location and log, its catalog), and
`Locked`, the same table with its writer lock held and recovery done, on which every
operation that changes the table makes its transaction (spark/locking.py: the template).

The metastore is asked to describe the table when it is opened. Under the lock the
description is read again only when it may have changed since: recovery rolled an instant
back, or the timeline holds a completed instant it did not hold when the table was opened
(another writer committed meanwhile, perhaps a new definition)."""
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Dict, FrozenSet, Iterable, Optional, cast

from pyspark.sql import SparkSession

from python_adapter.errors import WriteError
from python_adapter.io.filesystems import filesystem
from python_adapter.spark.catalog.tables import TableInfo, TableRef, describe_table
from python_adapter.spark.catalog.sync import SparkCatalog
from python_adapter.table.commit import CommitProtocol
from python_adapter.table.lock import LockOptions
from python_adapter.table.timeline import Timeline, parse_file_name
from python_adapter.table.transaction import Transaction, TxnOptions


def completed_instants(timeline: Timeline) -> FrozenSet[str]:
    """The ids of the completed instants in the timeline directory, from its listing."""
    names = (parse_file_name(st.name) for st in timeline.listing())
    return frozenset(p[0] for p in names if p is not None and p[2] == "completed")


@dataclass
class TableHandle:
    """A table as one api call knows it. `info` is None for a table that does not exist
    (yet: a first build); `location` is where it is (qualified), or where it goes."""
    spark: SparkSession
    ref: TableRef
    fs: Any                      # the session's filesystem (io/filesystems.py)
    location: str
    info: Optional[TableInfo]
    log: Callable[[str], None] = print
    # location -> completed instants there when `info` was read (None: unknown)
    seen: Dict[str, Optional[FrozenSet[str]]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.ref.name

    @property
    def timeline(self) -> Timeline:
        """The timeline at the table's location, for readers (writers use their lock's)."""
        return Timeline(self.fs, self.location)

    def catalog(self, location: Optional[str] = None) -> SparkCatalog:
        """The table's catalog (the metastore) as a commit at `location` tells it."""
        return SparkCatalog(self.spark, self.fs, self.ref, location or self.location, self.log)

    def note_timelines(self, locations: Iterable[str]) -> None:
        """What the timelines at `locations` hold now: the description was read just before."""
        self.seen = {loc: completed_instants(Timeline(self.fs, loc)) for loc in locations}

    def info_under_lock(self, protos: Collection[CommitProtocol]) -> Optional[TableInfo]:
        """The description once the lock is held and recovery done: read again when it may
        have changed since it was read (see the module's docstring)."""
        if any(self._changed(p) for p in protos):
            self.info = describe_table(self.spark, self.ref)
            self.note_timelines(p.location for p in protos)
        return self.info

    def _changed(self, proto: CommitProtocol) -> bool:
        seen = self.seen.get(proto.location)
        return bool(proto.rolled_back) or seen is None or \
            not completed_instants(proto.timeline) <= seen

    def after_commits(self, protos: Collection[CommitProtocol], defined: bool) -> None:
        """This call's own commits are known to it: the description stays current unless one
        of them defined the table anew."""
        self.seen = {p.location: None if defined else completed_instants(p.timeline)
                     for p in protos}


def open_table(spark: SparkSession, table: TableRef, log: Callable[[str], None] = print,
               info: Optional[TableInfo] = None, reading: bool = False) -> TableHandle:
    """The handle of an existing table (`info`: its description when the caller has it).
    reading: only to read it (no lock will be taken, so what its timeline holds now is not
    noted)."""
    info = info or describe_table(spark, table)
    if info is None:
        raise WriteError(f"table {table.quoted} does not exist")
    fs = filesystem(spark)
    handle = TableHandle(spark, table, fs, fs.qualify(info.location), info, log)
    if not reading:
        handle.note_timelines([handle.location])
    return handle


@dataclass
class Locked:
    """A table with its writer lock held and its unfinished instants rolled back: what an
    operation that changes it commits on."""
    table: TableHandle
    proto: CommitProtocol
    lock: LockOptions = LockOptions()
    defined: bool = False      # a transaction made here gave the table a new definition

    @property
    def info(self) -> TableInfo:
        return cast(TableInfo, self.table.info)  # a locked table exists: it has a description

    @property
    def spark(self) -> SparkSession:
        return self.table.spark

    @property
    def fs(self) -> Any:
        return self.table.fs

    @property
    def log(self) -> Callable[[str], None]:
        return self.table.log

    @property
    def name(self) -> str:
        return self.table.name

    def transaction(self, operation: str, options: TxnOptions = TxnOptions(),
                    partition_columns: Optional[Iterable[str]] = None) -> Transaction:
        """The operation's instant at the lock's location, its catalog the table's.
        partition_columns: the table's unless given (a write names them as its model does)."""
        self.defined = self.defined or options.define is not None
        pcols = self.info.partition_columns if partition_columns is None else partition_columns
        return Transaction(self.proto, self.table.catalog(self.proto.location), operation,
                           pcols, options)


def partitions_holding(files: Iterable[Any]) -> set:
    """The partitions (directories) that hold any of `files` (FileEntry or FileStatus with
    a partition): registered in the catalog, as the writer of each file left it."""
    return {f.partition for f in files}

