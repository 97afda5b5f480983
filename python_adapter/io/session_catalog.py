"""The metastore calls of spark/catalog/tables.py and stats.py in a session with a JVM: py4j
calls into the driver's session catalog and external catalog (the metastore), where Spark's
SQL has no statement for them or a statement costs a parse, a plan and a lookup more.
ConnectCatalog (connect_catalog.py) makes the same calls in a Connect server; catalog.py's
`metastore(spark)` picks one, and nothing above it asks which it holds."""
import json
import re
from functools import cached_property
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple, cast

from pyspark.sql import SparkSession
from pyspark.sql import types as T

from python_adapter.io.fast_local_fs import encode_fields, jar_loaded
from python_adapter.io.scala_records import (CaseCopy, CaseNew, case_copy,
                                                 copy_parameter_types)

# The external catalog's errors for a table or database that is not there (Spark 3.5's
# exception names, Spark 4's error classes).
NOT_FOUND = re.compile(r"NoSuch(?:Table|Database)Exception|TABLE_OR_VIEW_NOT_FOUND|"
                       r"SCHEMA_NOT_FOUND")
PARTITION_CLASS = "org.apache.spark.sql.catalyst.catalog.CatalogTablePartition"
# A partition's row: (its directory relative to the table, its path, "k=v/k=v" parameters)
PartitionRow = Tuple[str, str, str]

_jvm_classes: Dict[Tuple[int, str], Any] = {}  # {(the JVM's gateway, name): the class}


class SessionCatalog:
    """The metastore of a session with a JVM. Names are as the external catalog takes them
    (catalog.py's _catalog_names)."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        # py4j's JVM view (untyped); pyspark types it Optional, but a session with a JVM has one
        self.jvm = cast(Any, spark._jvm)

    @cached_property
    def catalog(self) -> Any:
        """The external catalog, looked up on first use: dropping a cached relation needs
        only the session's catalog."""
        return self.spark._jsparkSession.sharedState().externalCatalog()

    def describe(self, db: str, name: str) -> Optional[dict]:
        """{location, schema (as Spark reads the table: char and varchar as string),
        partition_columns, provider, table_type, input_format}, None when there is no such
        table: the metastore's record as Spark's catalog restores it, in one lookup and a
        few py4j calls (DESCRIBE TABLE EXTENDED is planned and run as a query)."""
        try:
            meta = self.catalog.getTable(db, name)
        except Exception as exc:  # py4j's error, or pyspark's AnalysisException made of it
            if NOT_FOUND.search(str(exc)):
                return None
            raise
        utils = self._class("org.apache.spark.sql.catalyst.util.CharVarcharUtils")
        schema = utils.replaceCharVarcharWithStringInSchema(meta.schema()).json()
        storage, location = meta.storage(), meta.storage().locationUri()
        return {"location": self._uri_text(location.get()) if location.isDefined() else "",
                "schema": T.StructType.fromJson(json.loads(str(schema))),
                "partition_columns": _seq_strings(meta.partitionColumnNames()),
                "provider": _option_text(meta.provider()),
                "table_type": str(meta.tableType().name()),
                "input_format": _option_text(storage.inputFormat())}

    def database_location(self, db: str) -> str:
        return self._uri_text(self.catalog.getDatabase(db).locationUri())

    def set_table_type(self, db: str, name: str, external: bool) -> bool:
        """The table made EXTERNAL or MANAGED: the catalog's own record copied with the
        other type (Spark's SQL has no statement for it). False when it already was."""
        current = self.catalog.getTable(db, name)
        kinds = self.jvm.org.apache.spark.sql.catalyst.catalog.CatalogTableType
        wanted = kinds.EXTERNAL() if external else kinds.MANAGED()
        if current.tableType().name() == wanted.name():
            return False
        self.catalog.alterTable(case_copy(current, {1: wanted}))  # CatalogTable(id, type, ..)
        return True

    def table_property(self, db: str, name: str, key: str) -> Optional[str]:
        value = self.catalog.getTable(db, name).properties().get(key)
        return None if value.isEmpty() else str(value.get())

    def set_data_schema(self, db: str, name: str, schema: T.StructType) -> None:
        self.catalog.alterTableDataSchema(
            db, name, self.spark._jsparkSession.parseDataType(schema.json()))

    def partition_names(self, db: str, name: str) -> Set[str]:
        return set(_seq_strings(self.catalog.listPartitionNames(
            db, name, self.jvm.scala.Option.empty())))

    def uncache(self, db: str, name: str, mode: str) -> None:
        """mode: drop (the session's cached relation, no lookup), forget (dropped, or as
        Spark's refreshTable when the session caches data, which it re-caches), refresh
        (a cached relation listed again in place)."""
        if mode == "forget" and not self.spark._jsparkSession.sharedState() \
                .cacheManager().isEmpty():
            self.spark.catalog.refreshTable(f"{db}.{name}")
            return
        catalog = self.spark._jsparkSession.sessionState().catalog()
        identifier = self.jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply(
            name, self.jvm.scala.Some.apply(db))
        if mode != "refresh":
            catalog.invalidateCachedTable(identifier)
            return
        qualified = catalog.qualifyIdentifier(identifier)
        cached = catalog.getCachedTable(
            self.jvm.org.apache.spark.sql.catalyst.QualifiedTableName.apply(
                qualified.catalog().get(), qualified.database().get(), qualified.table()))
        if cached is not None:
            cached.refresh()

    def create_partitions(self, db: str, name: str, rows: Sequence[PartitionRow],
                          if_not_exists: bool) -> None:
        self.catalog.createPartitions(db, name, self.partition_records(db, name, rows),
                                      if_not_exists)

    def alter_partitions(self, db: str, name: str, rows: Sequence[PartitionRow]) -> None:
        self.catalog.alterPartitions(db, name, self.partition_records(db, name, rows))

    def drop_partitions(self, db: str, name: str, parts: Iterable[str]) -> None:
        """Partitions (directories relative to the table) dropped, their data left alone."""
        parse = self.jvm.org.apache.spark.sql.execution.datasources.PartitioningUtils \
            .parsePathFragment
        specs = self.jvm.org.apache.spark.api.python.PythonUtils.toSeq(
            [parse(p) for p in parts])
        self.catalog.dropPartitions(db, name, specs, True, False, True)  # keep the data

    def partition_records(self, db: str, name: str, rows: Sequence[PartitionRow]) -> Any:
        """A Scala Seq of CatalogTablePartition, as Spark's ALTER TABLE ADD PARTITION
        builds them: the table's storage at the partition's directory (the directory
        itself, exact whatever escaping wrote it), here with statistics parameters. Spark's
        own parser of a directory name gives the spec, and of `k=v/k=v` the parameters."""
        # looked up per call: the backend, and so this catalog, lives as long as the session,
        # and a table defined again (another location, format) has another storage
        storage = self.catalog.getTable(db, name).storage()
        if jar_loaded(self.jvm):  # one call for all: py4j costs a round trip per call
            return self.jvm.sizedspark.fs.PartitionRecords.build(storage, encode_rows(rows))
        return self.records_by_py4j(storage, rows)

    def records_by_py4j(self, storage: Any, rows: Sequence[PartitionRow]) -> Any:
        """The same, a few py4j calls per partition (a session without the helper jar)."""
        jvm = self.jvm
        catalog_utils = jvm.org.apache.spark.sql.catalyst.catalog.CatalogUtils
        parse = jvm.org.apache.spark.sql.execution.datasources.PartitioningUtils \
            .parsePathFragment
        at_location = CaseCopy(storage)
        new_partition = CaseNew(jvm, PARTITION_CLASS, leading=3)
        return jvm.org.apache.spark.api.python.PythonUtils.toSeq([
            new_partition([parse(rel), at_location({0: jvm.scala.Option.apply(
                catalog_utils.stringToURI(path))}), parse(params)])
            for rel, path, params in rows])

    def table_stats(self, db: str, name: str, params: Mapping[str, str], drop: List[str],
                    drop_prefix: str) -> bool:
        """Hive's table statistics parameters set on the raw record (`drop` and the keys
        starting with `drop_prefix` removed), as Spark's alterTableStats makes it; False
        when the catalog is not Hive's (the caller then says it by SQL)."""
        hive = self.catalog.unwrapped()
        if hive.getClass().getSimpleName() != "HiveExternalCatalog":
            return False
        raw = hive.getRawTable(db, name)
        props = raw.properties()
        keys = str(props.keySet().mkString("\u0000")).split("\u0000")
        for key in [k for k in keys if k.startswith(drop_prefix)] + list(drop):
            props = getattr(props, "$minus")(key)
        for key, value in params.items():
            props = props.updated(key, value)
        hive.client().alterTable(case_copy(raw, {_properties_position(raw): props}))
        return True

    def _class(self, name: str) -> Any:
        """A JVM class, found once per JVM: py4j finds one in a call per name part."""
        key = (id(self.jvm._gateway_client), name)
        if key not in _jvm_classes:
            found = self.jvm
            for part in name.split("."):
                found = getattr(found, part)
            _jvm_classes[key] = found
        return _jvm_classes[key]

    def _uri_text(self, uri: Any) -> str:
        """A catalog location as Spark shows it (CatalogUtils.URIToString)."""
        return str(self._class("org.apache.spark.sql.catalyst.catalog.CatalogUtils")
                   .URIToString(uri))


def encode_rows(rows: Sequence[PartitionRow]) -> str:
    """Partition rows in PartitionRecords' text encoding (its Java side builds the records)."""
    return encode_fields([field for row in rows for field in row])


def _option_text(option: Any) -> str:
    return str(option.get()) if option.isDefined() else ""


def _seq_strings(seq: Any) -> List[str]:
    """A Scala Seq[String] in one py4j call (names may hold any character but NUL)."""
    text = str(seq.mkString("\u0000"))
    return text.split("\u0000") if text else []


def _properties_position(table: Any) -> int:
    """The position of `properties` among CatalogTable.copy's arguments: its first Map
    (`ignoredProperties` is a later one; Spark versions add fields elsewhere)."""
    return copy_parameter_types(table).index("scala.collection.immutable.Map")
