"""The metastore side of a table: look it up, create it, define it again, sync its
partitions (SparkCatalog: the table layer's CatalogSync)."""
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, List, Optional, Sequence, Set, Tuple, cast

from pyspark.sql import Row, SparkSession
from pyspark.sql import types as T

from python_adapter.io.session_info import case_sensitive
from python_adapter.core.notice import Notice
from python_adapter.core.partitions import parse_partition_path
from python_adapter.errors import WriteError
from python_adapter.io.backend import backend
from python_adapter.io.interfaces import Metastore
from python_adapter.io.session_catalog import NOT_FOUND
from python_adapter.table.timeline import (DEFINES_TABLE, PREVIOUS_DDL, PREVIOUS_LOCATION,
                                           PREVIOUS_TYPE, Instant)


@dataclass(frozen=True)
class TableRef:
    schema: str
    identifier: str
    location_root: Optional[str] = None  # dbt-spark's location_root: external table there

    @property
    def quoted(self) -> str:
        return f"`{self.schema}`.`{self.identifier}`"

    @property
    def name(self) -> str:
        """schema.identifier, as dbt's lines name a relation."""
        return f"{self.schema}.{self.identifier}"


@dataclass(frozen=True)
class TableInfo:
    location: str
    columns: Tuple[Tuple[str, str], ...]      # (name, type) in table order
    partition_columns: Tuple[str, ...]
    provider: str
    table_type: str
    input_format: str = ""      # a Hive table's InputFormat class
    # the schema as Spark reads the table (char and varchar as string, as spark.table gives
    # it): readers of some of its files take it from here instead of a second lookup
    read_schema: Optional[T.StructType] = field(default=None, compare=False)

    @property
    def column_names(self) -> List[str]:
        return [c for c, _ in self.columns]

    @property
    def file_format(self) -> str:
        """The format of the table's files: the provider of a Spark table (parquet, delta,
        orc, ...), that of a Hive table's input format (`STORED AS PARQUET`: parquet)."""
        if self.provider != "hive":
            return self.provider or "unknown"
        known = ("parquet", "orc", "avro", "rcfile", "sequencefile", "text")
        return next((f for f in known if f in self.input_format.lower()), "hive")


def metastore(spark: SparkSession) -> Metastore:
    """The session's metastore calls, from its backend: py4j in a session with a JVM, the
    Connect server's extension over `method: connect`; both have one interface."""
    return backend(spark).metastore


def describe_table(spark: SparkSession, table: TableRef) -> Optional[TableInfo]:
    """TableInfo, or None when the table does not exist, from the metastore's record of it
    as Spark's catalog restores it (DESCRIBE TABLE EXTENDED is planned and run as a query,
    and the session catalog asks whether the database and the table exist before it looks
    the table up). Gives what DESCRIBE shows, char and varchar columns as string."""
    got = metastore(spark).describe(*_catalog_names(spark, table))
    return None if got is None else TableInfo(
        location=got["location"],
        columns=tuple((f.name, f.dataType.simpleString()) for f in got["schema"].fields),
        partition_columns=tuple(got["partition_columns"]), provider=got["provider"].lower(),
        table_type=got["table_type"].upper(), input_format=got["input_format"],
        read_schema=got["schema"])


def _catalog_names(spark: SparkSession, table: TableRef) -> Tuple[str, str]:
    """(database, table) as the session catalog hands them to the external catalog:
    lower-cased unless spark.sql.caseSensitive."""
    if case_sensitive(spark):
        return table.schema, table.identifier
    return table.schema.lower(), table.identifier.lower()


def forget_cached_relation(spark: SparkSession, table: TableRef) -> None:
    """After a change of the table's files or definition: the session's cached relation of
    it (with its file listing) dropped, so the next query looks it up and lists it again.
    spark.catalog.refreshTable does that after resolving the table (a metastore lookup, and
    for an unpartitioned table a listing thrown away), so that it can then re-cache data a
    CACHE TABLE holds of it: it runs only when the session holds cached data."""
    metastore(spark).uncache(table.schema, table.identifier, "forget")


def refresh_relation_in_place(spark: SparkSession, table: TableRef) -> None:
    """Once a writer holds the table's lock and recovery is done: the table's files may
    have changed beneath plans analyzed before (a model's SQL that reads its own table is
    analyzed before the lock; meanwhile another writer may have committed, or recovery
    rolled back a crashed write). An unpartitioned table's relation lists its files when
    it is analyzed, and those plans hold the session's cached relation: it is listed again
    in place (a partitioned one lists its partitions when the query runs; its refresh only
    drops the session's cached listings). forget_cached_relation only drops the relation
    from the cache, which a plan already analyzed never sees; this must run before any
    change of the table's metadata, which drops it too. No metastore call: a table not
    cached has no plan to refresh."""
    metastore(spark).uncache(table.schema, table.identifier, "refresh")


def drop_cached_relation(spark: SparkSession, table: TableRef) -> None:
    """The session's cached relation of the table dropped (no lookup, no listing)."""
    metastore(spark).uncache(table.schema, table.identifier, "drop")


def require_parquet(info: TableInfo, table: TableRef, what: str) -> None:
    """WriteError unless the table's files are Parquet, naming its format and the way out:
    only Parquet tables are written, compacted or adopted in place."""
    if info.file_format != "parquet":
        raise WriteError(
            f"{table.quoted} is a {info.file_format} table, not Parquet, so {what} cannot "
            f"work on it in place and nothing was written. Rebuild it as sized Parquet with "
            f"the model's --full-refresh (its files are replaced), or use another table")


def table_location(spark: SparkSession, table: TableRef) -> str:
    """Where the table's files go: location_root/identifier, or where Spark puts a managed
    table (the database location and the lower-cased name)."""
    if table.location_root:
        return f"{table.location_root.rstrip('/')}/{table.identifier}"
    db, _name = _catalog_names(spark, table)
    try:
        root = metastore(spark).database_location(db)
    except Exception as exc:  # py4j's error, or pyspark's AnalysisException made of it
        if NOT_FOUND.search(str(exc)):
            raise WriteError(f"schema {table.schema} does not exist: create it first (dbt "
                             f"does before it runs a model)") from None
        raise
    return f"{root.rstrip('/')}/{table.identifier.lower()}"


# Table property naming the instant that created the table's definition: recovery of an
# unfinished instant that (re)defined the table drops exactly that definition.
CREATED_BY = "dbt_sized_spark.created_by"


def sql_string(text: str) -> str:
    """A SQL string literal of any text."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def create_table(spark: SparkSession, table: TableRef, schema: T.StructType,
                 partition_by: Sequence[str], location: str, created_by: str,
                 managed: bool) -> None:
    """An empty Parquet table with data columns first and partition columns last, at
    `location` (which may already hold the table's files), marked as created by the
    instant `created_by`; managed (DROP deletes its files) or external, as asked. Spark
    refuses to create a managed table over a directory that holds files, so the table is
    created external and then made managed."""
    pset = {c.lower() for c in partition_by}
    ordered = [f for f in schema.fields if f.name.lower() not in pset] + \
              [schema[c] for c in partition_by]
    cols = ", ".join(f"`{f.name.replace('`', '``')}` {f.dataType.simpleString()}" for f in ordered)
    ddl = f"CREATE TABLE {table.quoted} ({cols}) USING parquet"
    if partition_by:
        ddl += " PARTITIONED BY (" + ", ".join(f"`{c}`" for c in partition_by) + ")"
    ddl += f" LOCATION {sql_string(location)}"
    ddl += f" TBLPROPERTIES ({sql_string(CREATED_BY)} = {sql_string(created_by)})"
    spark.sql(ddl)
    if managed:
        set_table_type(spark, table, external=False)


def drop_table(spark: SparkSession, table: TableRef) -> None:
    spark.sql(f"DROP TABLE IF EXISTS {table.quoted}")


def drop_definition(spark: SparkSession, table: TableRef) -> None:
    """Drop the table from the metastore, never its files (a managed table is made external
    first, since Hive deletes a managed table's directory on DROP)."""
    if describe_table(spark, table) is None:
        return
    set_table_type(spark, table, external=True)
    drop_table(spark, table)


def set_table_type(spark: SparkSession, table: TableRef, external: bool) -> None:
    """Make a table EXTERNAL or MANAGED in the metastore, files untouched. Spark's SQL has no
    statement for it ('EXTERNAL' is a reserved property), so the catalog's own table record
    is copied with the other type and altered in the external catalog."""
    if metastore(spark).set_table_type(table.schema, table.identifier, external):
        forget_cached_relation(spark, table)


def table_property(spark: SparkSession, table: TableRef, key: str) -> Optional[str]:
    """A table property's value, None when unset."""
    return metastore(spark).table_property(table.schema, table.identifier, key)


def show_create(spark: SparkSession, table: TableRef) -> str:
    """The statement that creates the table as it is now (Spark's SHOW CREATE TABLE; a Hive
    serde table needs AS SERDE), to restore it if a change of its definition is rolled back."""
    # SHOW CREATE TABLE answers one row (Row | None to mypy: first())
    try:
        return cast(Row, spark.sql(f"SHOW CREATE TABLE {table.quoted}").first())[0]
    except Exception:  # AnalysisException: a Hive serde table
        return cast(Row, spark.sql(f"SHOW CREATE TABLE {table.quoted} AS SERDE").first())[0]


def replay_create(spark: SparkSession, table: TableRef, ddl: str, location: str,
                  managed: bool) -> None:
    """Create a table again from show_create's statement, at `location` (a managed table's
    statement names none, and its directory still holds its files)."""
    if not re.search(r"(?im)^\s*LOCATION\s", ddl):
        ddl = f"{ddl.rstrip()}\nLOCATION {sql_string(location)}"
    spark.sql(ddl)
    if managed:
        set_table_type(spark, table, external=False)


def sync_partitions(spark: SparkSession, table: TableRef, partitioned: bool) -> None:
    """Make the metastore's partition list match the directories, then drop cached listings."""
    if partitioned:
        spark.sql(f"MSCK REPAIR TABLE {table.quoted} SYNC PARTITIONS")
    forget_cached_relation(spark, table)


def add_columns(spark: SparkSession, table: TableRef, fields: Iterable[T.StructField]) -> None:
    cols = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in fields)
    spark.sql(f"ALTER TABLE {table.quoted} ADD COLUMNS ({cols})")


def set_data_columns(spark: SparkSession, table: TableRef,
                     fields: Iterable[T.StructField]) -> None:
    """Replace the table's data columns (partition columns untouched).

    Spark's SQL cannot drop a column of a Parquet table, and its session catalog refuses to;
    the external catalog (the metastore) takes the new data schema. Old files keep their
    extra columns on disk, and readers ignore them.
    """
    metastore(spark).set_data_schema(table.schema, table.identifier, T.StructType(list(fields)))
    forget_cached_relation(spark, table)


def registered_partitions(spark: SparkSession, table: TableRef) -> Set[str]:
    """The partitions the metastore holds for a partitioned table, by name: the directory
    names Spark's writer gives them (Hive escapes partition names the same way). One call
    for their names, where asking about each partition costs the metastore one lookup per
    partition: the external catalog's, which SHOW PARTITIONS makes after parsing and
    planning a statement."""
    return metastore(spark).partition_names(*_catalog_names(spark, table))


def partition_spec(rel_dir: str) -> Optional[str]:
    """"PARTITION (`a` = '1', `b` = 'x/y')" for the directory 'a=1/b=x%2Fy'; None for the
    default (null) partition, which a literal spec cannot name."""
    pairs = parse_partition_path(rel_dir)
    if not pairs or any(text is None for _, text in pairs):
        return None
    # no text is None here: the default partition returned above
    return "PARTITION (" + ", ".join(f"`{c}` = {sql_string(cast(str, t))}" for c, t in pairs) + ")"


def restore_definitions(spark: SparkSession, table: TableRef, rolled_back: Sequence[Instant],
                        log: Callable[[str], None] = print) -> None:
    """After rolling back instants that (re)defined the table (a first build, or a full
    refresh that changed its columns, partitioning, format or location), put back the
    definition from before them: drop the one they created (never its files) and create
    the previous one from its recorded statement."""
    for inst in reversed(rolled_back):
        if inst.extra.get(DEFINES_TABLE) != "true":
            continue
        if describe_table(spark, table) is not None:
            if table_property(spark, table, CREATED_BY) != inst.instant:
                continue  # the definition from before the instant is still in place
            drop_definition(spark, table)
        if inst.extra.get(PREVIOUS_DDL):
            replay_create(spark, table, inst.extra[PREVIOUS_DDL], inst.extra[PREVIOUS_LOCATION],
                          managed=inst.extra.get(PREVIOUS_TYPE) == "MANAGED")
            log(f"restored the definition of {table.quoted} from before {inst.instant}")
        else:
            log(Notice(f"dropped {table.quoted}, created by the unfinished {inst.instant}"))
