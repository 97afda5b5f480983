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
from typing import Any, Dict, Iterable, List, Mapping, Tuple

from pyspark.sql import SparkSession

from python_adapter.core.partitions import parse_partition_path
from python_adapter.io.connect_client import is_connect
from python_adapter.io.fast_local_fs import encode_fields, jar_loaded
from python_adapter.spark import connect_catalog as remote
from python_adapter.spark.catalog import TableRef, registered_partitions, sql_string
from python_adapter.spark.scala_records import (CaseCopy, CaseNew, case_copy,
                                                 copy_parameter_types)
from python_adapter.table.files import FileStats

PARTITION_CLASS = "org.apache.spark.sql.catalyst.catalog.CatalogTablePartition"
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
        self.remote = is_connect(spark)
        if not self.remote:
            self.jvm = spark._jvm
            self.catalog = spark._jsparkSession.sharedState().externalCatalog()
        self._storage = None

    def register(self, parts: PartitionStats) -> None:
        """Create the partitions; any the metastore has already are altered instead. Callers
        pass the partitions they know to be new (a commit: those that held no file before
        it; a rollback or a restore: those that hold none now), so the create is tried
        first, without a listing: creating one that exists fails inside Hive's metastore,
        which logs the failure as an ERROR with its stack trace before the fallback."""
        if not parts:
            return
        try:
            self._create(parts, if_not_exists=False)
        except Exception as exc:  # Spark's PARTITIONS_ALREADY_EXIST
            if not re.search(r"already.?exist", str(exc), re.IGNORECASE):
                raise
            known = registered_partitions(self.spark, self.table)
            self._create({p: s for p, s in parts.items() if p not in known}, if_not_exists=True)
            self.alter({p: s for p, s in parts.items() if p in known})

    def alter(self, parts: PartitionStats) -> None:
        if parts and self.remote:
            remote.partitions(self.spark, self.table.schema, self.table.identifier, "alter",
                              fields=_fields(parts))
        elif parts:
            self.catalog.alterPartitions(self.table.schema, self.table.identifier,
                                         self._records(parts))

    def drop(self, parts: Iterable[str]) -> None:
        """Drop partitions (directories relative to the table) the commit emptied, their
        data left alone: the commit removed their directories already, and Hive deleting a
        managed table's partition directory that is gone logs an ERROR (FileUtils: "Failed
        to delete")."""
        parts = list(parts)
        if parts and self.remote:
            remote.partitions(self.spark, self.table.schema, self.table.identifier, "drop",
                              parts=parts)
        elif parts:
            parse = self.jvm.org.apache.spark.sql.execution.datasources.PartitioningUtils \
                .parsePathFragment
            specs = self.jvm.org.apache.spark.api.python.PythonUtils.toSeq(
                [parse(p) for p in parts])
            self.catalog.dropPartitions(self.table.schema, self.table.identifier, specs,
                                        True, False, True)  # if exists, no purge, keep data

    def _create(self, parts: PartitionStats, if_not_exists: bool) -> None:
        if parts and self.remote:
            remote.partitions(self.spark, self.table.schema, self.table.identifier, "create",
                              fields=_fields(parts), if_not_exists=if_not_exists)
        elif parts:
            self.catalog.createPartitions(self.table.schema, self.table.identifier,
                                          self._records(parts), if_not_exists)

    def _records(self, parts: PartitionStats) -> Any:
        """A Scala Seq of CatalogTablePartition, as Spark's ALTER TABLE ADD PARTITION
        builds them: the table's storage at the partition's directory (the directory
        itself, exact whatever escaping wrote it), here with statistics parameters. Spark's
        own parser of a directory name gives the spec, and of `k=v/k=v` the parameters."""
        if self._storage is None:
            self._storage = self.catalog.getTable(self.table.schema,
                                                  self.table.identifier).storage()
        if jar_loaded(self.jvm):  # one call for all: py4j costs a round trip per call
            return self.jvm.sizedspark.fs.PartitionRecords.build(self._storage, _fields(parts))
        return self._records_by_py4j(_rows(parts))

    def _records_by_py4j(self, rows: List[Tuple[str, str, str]]) -> Any:
        """The same, a few py4j calls per partition (a session without the helper jar)."""
        jvm = self.jvm
        catalog_utils = jvm.org.apache.spark.sql.catalyst.catalog.CatalogUtils
        parse = jvm.org.apache.spark.sql.execution.datasources.PartitioningUtils \
            .parsePathFragment
        at_location = CaseCopy(self._storage)
        new_partition = CaseNew(jvm, PARTITION_CLASS, leading=3)
        return jvm.org.apache.spark.api.python.PythonUtils.toSeq([
            new_partition([parse(rel), at_location({0: jvm.scala.Option.apply(
                catalog_utils.stringToURI(path))}), parse(params)])
            for rel, path, params in rows])


def _rows(parts: PartitionStats) -> List[Tuple[str, str, str]]:
    """(directory relative to the table, its path, "k=v/k=v" parameters) of each partition."""
    return [(rel, path, "/".join(f"{k}={v}" for k, v in stats_parameters(stats).items()))
            for rel, (path, stats) in sorted(parts.items())]


def _fields(parts: PartitionStats) -> str:
    """_rows in PartitionRecords' text encoding."""
    return encode_fields([field for row in _rows(parts) for field in row])


def write_table_stats(spark: SparkSession, table: TableRef, stats: FileStats) -> None:
    """The table's statistics as Hive's table parameters (an unpartitioned table's numFiles
    and totalSize Hive lists again itself, to the same figures), with any of Spark's own
    statistics keys removed, in one metastore call on the table's raw record, as Spark's
    alterTableStats makes it (an ALTER TABLE ... SET TBLPROPERTIES statement is parsed,
    planned and checked first, 3-4 times as long). Spark's in-memory catalog: by SQL."""
    if is_connect(spark):
        drop = [] if stats.rows is not None else ["numRows"]
        if not remote.table_stats(spark, table.schema, table.identifier,
                                  stats_parameters(stats), drop, SPARK_STATS_PREFIX):
            _stats_by_sql(spark, table, stats)
        return
    hive = spark._jsparkSession.sharedState().externalCatalog().unwrapped()
    if hive.getClass().getSimpleName() != "HiveExternalCatalog":
        _stats_by_sql(spark, table, stats)
        return
    raw = hive.getRawTable(table.schema, table.identifier)
    props = raw.properties()
    keys = str(props.keySet().mkString("\u0000")).split("\u0000")
    drop = [k for k in keys if k.startswith(SPARK_STATS_PREFIX)]
    if stats.rows is None:
        drop.append("numRows")
    for key in drop:
        props = getattr(props, "$minus")(key)
    for key, value in stats_parameters(stats).items():
        props = props.updated(key, value)
    hive.client().alterTable(case_copy(raw, {_properties_position(raw): props}))


def _stats_by_sql(spark: SparkSession, table: TableRef, stats: FileStats) -> None:
    props = ", ".join(f"{sql_string(k)} = {sql_string(v)}"
                      for k, v in stats_parameters(stats).items())
    spark.sql(f"ALTER TABLE {table.quoted} SET TBLPROPERTIES ({props})")


def _properties_position(table: Any) -> int:
    """The position of `properties` among CatalogTable.copy's arguments: its first Map
    (`ignoredProperties` is a later one; Spark versions add fields elsewhere)."""
    return copy_parameter_types(table).index("scala.collection.immutable.Map")


def partitions_with_stats(location: str, stats: Mapping[str, FileStats]
                          ) -> Dict[str, Tuple[str, FileStats]]:
    """{rel dir: (its path under `location`, its stats)} of partitions a spec can name."""
    out = {}
    for part, part_stats in stats.items():
        values: List = [v for _c, v in parse_partition_path(part)]
        if part and None not in values:
            out[part] = (f"{location.rstrip('/')}/{part}", part_stats)
    return out
