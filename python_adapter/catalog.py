"""The metastore side of a table: look it up, create it, sync its partitions."""
import re
from dataclasses import dataclass
from typing import Optional, Tuple


@dataclass(frozen=True)
class TableRef:
    schema: str
    identifier: str
    location_root: Optional[str] = None  # dbt-spark's location_root: external table there

    @property
    def quoted(self):
        return f"`{self.schema}`.`{self.identifier}`"


@dataclass(frozen=True)
class TableInfo:
    location: str
    columns: Tuple[Tuple[str, str], ...]      # (name, type) in table order
    partition_columns: Tuple[str, ...]
    provider: str
    table_type: str

    @property
    def column_names(self):
        return [c for c, _ in self.columns]


def describe_table(spark, table):
    """TableInfo, or None when the table does not exist. One DESCRIBE gives columns, partition
    columns and details (the catalog's listColumns costs ~5x as much again)."""
    if not spark.catalog.tableExists(f"{table.schema}.{table.identifier}"):
        return None
    return parse_describe([tuple(r) for r in
                           spark.sql(f"DESCRIBE TABLE EXTENDED {table.quoted}").collect()])


# DESCRIBE shows a char/varchar column's declared type; Spark reads and compares it as string.
_CHAR_TYPE = re.compile(r"\b(?:var)?char\(\d+\)")


def parse_describe(rows):
    """TableInfo from the rows (col_name, data_type, comment) of DESCRIBE TABLE EXTENDED:
    columns up to the first blank row or section title, partition columns under
    '# Partition Information' (after its '# col_name' header), then 'Key  value' details."""
    columns, partitions, info = [], [], {}
    section = "columns"
    for row in rows:
        name, value = (row[0] or "").strip(), (row[1] or "").strip()
        if name == "# Partition Information":
            section = "partitions"
        elif name == "# Detailed Table Information" or not name:
            section = "details"
        elif section == "columns":
            columns.append((row[0], _CHAR_TYPE.sub("string", value)))
        elif section == "partitions" and name != "# col_name":
            partitions.append(row[0])
        elif section == "details" and name in ("Location", "Provider", "Type") and name not in info:
            info[name] = value
    return TableInfo(
        location=info.get("Location", ""),
        columns=tuple(columns),
        partition_columns=tuple(partitions),
        provider=info.get("Provider", "").lower(),
        table_type=info.get("Type", "").upper(),
    )


def table_location(spark, table):
    """Where a new table's files go: location_root/identifier, or the database location."""
    if table.location_root:
        return f"{table.location_root.rstrip('/')}/{table.identifier}"
    db = spark.catalog.getDatabase(table.schema)
    return f"{db.locationUri.rstrip('/')}/{table.identifier}"


def create_table(spark, table, schema, partition_by):
    """An empty Parquet table with data columns first and partition columns last."""
    pset = {c.lower() for c in partition_by}
    ordered = [f for f in schema.fields if f.name.lower() not in pset] + \
              [schema[c] for c in partition_by]
    cols = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in ordered)
    ddl = f"CREATE TABLE {table.quoted} ({cols}) USING parquet"
    if partition_by:
        ddl += " PARTITIONED BY (" + ", ".join(f"`{c}`" for c in partition_by) + ")"
    if table.location_root:
        ddl += f" LOCATION '{table_location(spark, table)}'"
    spark.sql(ddl)


def drop_table(spark, table):
    spark.sql(f"DROP TABLE IF EXISTS {table.quoted}")


def sync_partitions(spark, table, partitioned):
    """Make the metastore's partition list match the directories, then drop cached listings."""
    if partitioned:
        spark.sql(f"MSCK REPAIR TABLE {table.quoted} SYNC PARTITIONS")
    spark.catalog.refreshTable(f"{table.schema}.{table.identifier}")


def add_columns(spark, table, fields):
    cols = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in fields)
    spark.sql(f"ALTER TABLE {table.quoted} ADD COLUMNS ({cols})")


def set_data_columns(spark, table, fields):
    """Replace the table's data columns (partition columns untouched).

    Spark's SQL cannot drop a column of a Parquet table, and its session catalog refuses to;
    the external catalog (the metastore) takes the new data schema. Old files keep their
    extra columns on disk, and readers ignore them.
    """
    from pyspark.sql.types import StructType

    jschema = spark._jsparkSession.parseDataType(StructType(list(fields)).json())
    spark._jsparkSession.sharedState().externalCatalog().alterTableDataSchema(
        table.schema, table.identifier, jschema)
    spark.catalog.refreshTable(f"{table.schema}.{table.identifier}")
