"""Statistics in the metastore: numFiles, totalSize and numRows of each partition and of
the table, from the files the timeline records (no file is opened or listed for them), so
Spark's cost-based optimizer and Trino's Hive connector plan sized tables with figures.

A partition is created with its statistics in its parameters: Hive then skips the listing
of the new directory it does for every partition added without them (and its log line).
A partition whose files changed is altered with them: Hive lists that one directory again
for numFiles and totalSize (the same figures, as the directory holds exactly the live
files) and keeps numRows. The table's statistics are Hive's table parameters, which Spark
reads too; those an ANALYZE TABLE left in Spark's own keys would outrank them, so they go.
"""
import re
from typing import Collection, Dict, Iterable, List, Mapping, Tuple

from pyspark.sql import SparkSession

from python_adapter.core.partitions import parse_partition_path
from python_adapter.spark.catalog.tables import (TableRef, metastore, registered_partitions,
                                          sql_string)
from python_adapter.table.files import FileStats

SPARK_STATS_PREFIX = "spark.sql.statistics."   # Spark's own keys (ANALYZE TABLE)

# {partition directory relative to the table: (its path, its statistics)}
PartitionStats = Mapping[str, Tuple[str, FileStats]]


def stats_parameters(stats: FileStats) -> Dict[str, str]:
    """Hive's statistics parameters (numRows left out when a file's rows are unknown)."""
    params = {"numFiles": str(stats.files), "totalSize": str(stats.bytes)}
    if stats.rows is not None:
        params["numRows"] = str(stats.rows)
    return params


class MetastorePartitions:
    """One table's partitions created or altered in the session's external catalog with
    their statistics: Spark's SQL cannot give a partition parameters."""

    def __init__(self, spark: SparkSession, table: TableRef) -> None:
        self.spark, self.table = spark, table
        self.metastore = metastore(spark)
        self.names = (table.schema, table.identifier)

    def register(self, parts: PartitionStats, ask_first: bool = False) -> None:
        """Create the partitions; any the metastore has already are altered instead. Callers
        pass the partitions they know to be new (a commit: those that held no file before
        it; a rollback or a restore: those that hold none now), so the create is tried
        first, without a listing: creating one that exists fails inside Hive's metastore,
        which logs the failure as an ERROR with its stack trace before the fallback.
        ask_first: the caller knows of no registered partition (a full build, which may be
        a rebuild keeping the definition and every partition): one call for the names
        first, so no create is refused (on a new table the list is empty)."""
        if not parts:
            return
        if ask_first:
            self._create_or_alter(parts, registered_partitions(self.spark, self.table))
            return
        try:
            self._create(parts, if_not_exists=False)
        except Exception as exc:  # Spark's PARTITIONS_ALREADY_EXIST
            if not re.search(r"already.?exist", str(exc), re.IGNORECASE):
                raise
            self._create_or_alter(parts, registered_partitions(self.spark, self.table))

    def _create_or_alter(self, parts: PartitionStats, known: Collection[str]) -> None:
        self._create({p: s for p, s in parts.items() if p not in known}, if_not_exists=True)
        self.alter({p: s for p, s in parts.items() if p in known})

    def alter(self, parts: PartitionStats) -> None:
        if parts:
            self.metastore.alter_partitions(*self.names, _rows(parts))

    def drop(self, parts: Iterable[str]) -> None:
        """Drop partitions (directories relative to the table) the commit emptied, their
        data left alone: the commit removed their directories already, and Hive deleting a
        managed table's partition directory that is gone logs an ERROR (FileUtils: "Failed
        to delete")."""
        parts = list(parts)
        if parts:
            self.metastore.drop_partitions(*self.names, parts)

    def _create(self, parts: PartitionStats, if_not_exists: bool) -> None:
        if parts:
            self.metastore.create_partitions(*self.names, _rows(parts), if_not_exists)


def _rows(parts: PartitionStats) -> List[Tuple[str, str, str]]:
    """(directory relative to the table, its path, "k=v/k=v" parameters) of each partition."""
    return [(rel, path, "/".join(f"{k}={v}" for k, v in stats_parameters(stats).items()))
            for rel, (path, stats) in sorted(parts.items())]


def write_table_stats(spark: SparkSession, table: TableRef, stats: FileStats) -> None:
    """The table's statistics as Hive's table parameters (an unpartitioned table's numFiles
    and totalSize Hive lists again itself, to the same figures), with any of Spark's own
    statistics keys removed, in one metastore call on the table's raw record, as Spark's
    alterTableStats makes it (an ALTER TABLE ... SET TBLPROPERTIES statement is parsed,
    planned and checked first, 3-4 times as long). Spark's in-memory catalog: by SQL."""
    drop = [] if stats.rows is not None else ["numRows"]
    if not metastore(spark).table_stats(table.schema, table.identifier,
                                        stats_parameters(stats), drop, SPARK_STATS_PREFIX):
        _stats_by_sql(spark, table, stats)


def _stats_by_sql(spark: SparkSession, table: TableRef, stats: FileStats) -> None:
    props = ", ".join(f"{sql_string(k)} = {sql_string(v)}"
                      for k, v in stats_parameters(stats).items())
    spark.sql(f"ALTER TABLE {table.quoted} SET TBLPROPERTIES ({props})")


def partitions_with_stats(location: str, stats: Mapping[str, FileStats]
                          ) -> Dict[str, Tuple[str, FileStats]]:
    """{rel dir: (its path under `location`, its stats)} of partitions a spec can name."""
    out = {}
    for part, part_stats in stats.items():
        values: List = [v for _c, v in parse_partition_path(part)]
        if part and None not in values:
            out[part] = (f"{location.rstrip('/')}/{part}", part_stats)
    return out
