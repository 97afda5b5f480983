"""The table layer's CatalogSync on the session's metastore: a commit's changed partitions
registered (with their statistics) or dropped before it completes, the statistics of the
others and of the table written when it settles (or by recovery, after a crash); after a
rollback, the definition, partitions and statistics put back."""
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from pyspark.sql import SparkSession

from python_adapter.io.interfaces import FileSystem
from python_adapter.spark.catalog.tables import (TableRef, describe_table, forget_cached_relation,
                                          partition_spec, restore_definitions, sync_partitions)
from python_adapter.spark.catalog.stats import (MetastorePartitions, PartitionStats,
                                                  partitions_with_stats, write_table_stats)
from python_adapter.table.files import FileStats, file_stats, partition_stats, partitions_of
from python_adapter.table.timeline import DEFINES_TABLE, FileEntry, Instant
from python_adapter.table.transaction import CatalogChange


def sync_changed_partitions(spark: SparkSession, fs: FileSystem, location: str, table: TableRef,
                            change: CatalogChange) -> Callable[[], None]:
    """Register the changed partitions that now hold files, with their statistics, and drop
    those whose directory is gone: a write touches a few partitions, and listing all of them
    (MSCK REPAIR) grows with the table. Falls back to MSCK when a partition is null.
    Partitions that held files before the commit (`change.registered`) are in the metastore
    and only get their new statistics: from the step returned, with the table's, once the
    commit has completed (table/settle.py)."""
    new: Dict[str, Tuple[str, FileStats]] = {}
    changed: Dict[str, Tuple[str, FileStats]] = {}
    gone: List[str] = []
    for part in sorted(p for p in change.changed if p):
        path = f"{location.rstrip('/')}/{part}"
        if partition_spec(part) is None:  # the null partition
            return _sync_all(spark, location, table, change)
        stats = change.partition_stats.get(part, FileStats(0, 0, 0))
        if part in change.current:
            continue  # registered, and its statistics are what the metastore holds
        if stats.files or fs.exists(path):  # a directory left without data files stays
            (changed if part in change.registered else new)[part] = (path, stats)
        else:
            gone.append(part)
    partitions = MetastorePartitions(spark, table)
    # no partition known to be registered: a full build, perhaps a rebuild that has them all
    partitions.register(new, ask_first=not change.registered)
    partitions.drop(gone)
    forget_cached_relation(spark, table)
    return lambda: _write_stats(spark, table, change, changed)


def _sync_all(spark, location, table, change):
    """A null partition, which a literal spec cannot name: MSCK registers and drops, then
    the other changed partitions get their statistics."""
    sync_partitions(spark, table, partitioned=True)
    forget_cached_relation(spark, table)
    return lambda: _write_stats(spark, table, change, partitions_with_stats(location, {
        p: s for p, s in change.partition_stats.items() if p not in change.current}))


def _write_stats(spark: SparkSession, table: TableRef, change: CatalogChange,
                 changed: PartitionStats) -> None:
    MetastorePartitions(spark, table).alter(changed)
    if not change.table_current:
        write_table_stats(spark, table, change.table_stats)
    forget_cached_relation(spark, table)


class SparkCatalog:
    """The CatalogSync of one table at one location in the session's metastore."""

    def __init__(self, spark: SparkSession, fs: FileSystem, table: TableRef, location: str,
                 log: Callable[[str], None] = print) -> None:
        self.spark, self.fs, self.table, self.location, self.log = spark, fs, table, location, log

    def sync(self, change: CatalogChange) -> Callable[[], None]:
        return sync_changed_partitions(self.spark, self.fs, self.location, self.table, change)

    def settle(self, instants: Iterable[Instant], index: Mapping[str, FileEntry]) -> None:
        instants = list(instants)
        info = describe_table(self.spark, self.table)
        if info is None or self.fs.qualify(info.location) != self.location:
            return  # the table is defined elsewhere now: these files have no statistics
        self._restate(info, index, partitions_of(*(i.added for i in instants),
                                                 *(i.removed for i in instants)))

    def after_rollback(self, instants: Iterable[Instant],
                       index: Optional[Mapping[str, FileEntry]]) -> None:
        instants = list(instants)
        restore_definitions(self.spark, self.table, instants, self.log)
        info = describe_table(self.spark, self.table)
        if info is None:
            return
        sync_partitions(self.spark, self.table, bool(info.partition_columns))
        # Statistics of this location's files only: a rolled back definition may have put
        # the table back at another one.
        if index is None or self.fs.qualify(info.location) != self.location:
            return
        redefined = any(i.extra.get(DEFINES_TABLE) == "true" for i in instants)
        touched = {e.partition for e in index.values()} if redefined else \
            partitions_of(*(i.added for i in instants), *(i.removed for i in instants))
        self._restate(info, index, touched)

    def _restate(self, info, index: Mapping[str, FileEntry], touched: set) -> None:
        """The statistics of the `touched` partitions that hold files in `index`, and of
        the table, from `index`."""
        if info.partition_columns:
            MetastorePartitions(self.spark, self.table).alter(
                partitions_with_stats(self.location, partition_stats(index, touched)))
        write_table_stats(self.spark, self.table, file_stats(index.values()))
        forget_cached_relation(self.spark, self.table)
