"""describe_table reads the session catalog's record of a table; it must say what DESCRIBE
TABLE EXTENDED and the catalog's listColumns say of it, whatever the columns and the kind of
table."""
import pytest

from python_adapter.spark.catalog.tables import TableRef, describe_table


def _described(spark, quoted):
    """(columns, partition columns, {Location, Provider, Type, InputFormat}) as DESCRIBE
    TABLE EXTENDED shows them (char / varchar columns as Spark reads them: string)."""
    import re

    columns, partitions, details, section = [], [], {}, "columns"
    for name, value, _comment in spark.sql(f"DESCRIBE TABLE EXTENDED {quoted}").collect():
        name, value = (name or "").strip(), (value or "").strip()
        if name == "# Partition Information":
            section = "partitions"
        elif name == "# Detailed Table Information" or not name:
            section = "details"
        elif section == "columns":
            columns.append((name, re.sub(r"\b(?:var)?char\(\d+\)", "string", value)))
        elif section == "partitions" and name != "# col_name":
            partitions.append(name)
        elif section == "details" and name in ("Location", "Provider", "Type", "InputFormat"):
            details.setdefault(name, value)
    return tuple(columns), tuple(partitions), details


def _assert_as_described(spark, info, quoted):
    columns, partitions, details = _described(spark, quoted)
    assert info.columns == columns and info.partition_columns == partitions
    assert info.location == details.get("Location", "")
    assert info.provider == details.get("Provider", "").lower()
    assert info.table_type == details["Type"]
    assert info.input_format == details.get("InputFormat", "")


def test_describe_table_agrees_with_the_catalog(spark, schema):
    spark.sql(f"""CREATE TABLE {schema}.t (`a b` int COMMENT 'spaced', c decimal(10,2),
                  m map<string, array<struct<x: int, y: varchar(3)>>>, v varchar(5), w char(2),
                  ts timestamp, `# hash` string, p date, q string)
                  USING parquet PARTITIONED BY (p, q)""")
    info = describe_table(spark, TableRef(schema, "t"))
    cols = spark.catalog.listColumns(f"{schema}.t")
    assert info.columns == tuple((c.name, c.dataType) for c in cols)
    # what a reader of the table's files is given: the schema Spark reads the table with
    # (char and varchar as string, nested ones too), not the declared one
    assert info.read_schema == spark.table(f"{schema}.t").schema
    assert "char" not in info.read_schema.simpleString()
    assert info.partition_columns == ("p", "q") == tuple(c.name for c in cols if c.isPartition)
    assert info.provider == "parquet" and info.table_type == "MANAGED"
    db = spark.catalog.getDatabase(schema).locationUri.rstrip("/")
    assert info.location.rstrip("/") == f"{db}/t"
    _assert_as_described(spark, info, f"{schema}.t")
    # names are matched as Spark matches them: case-insensitively
    assert describe_table(spark, TableRef(schema, "T")) == info


@pytest.mark.parametrize("ddl", [
    "CREATE TABLE {t} (a int, s string) STORED AS PARQUET",
    "CREATE TABLE {t} (a int, s string) USING parquet LOCATION '{root}/elsewhere'",
    "CREATE VIEW {t} AS SELECT 1 AS x, 'a' AS y",
])
@pytest.mark.every_variant  # table kinds: Spark versions describe them apart
def test_describe_table_of_hive_external_tables_and_views(spark, schema, tmp_path, ddl):
    spark.sql(ddl.format(t=f"{schema}.k", root=tmp_path))
    info = describe_table(spark, TableRef(schema, "k"))
    _assert_as_described(spark, info, f"{schema}.k")


def test_describe_table_of_a_view_and_of_no_table(spark, schema):
    spark.sql(f"CREATE VIEW {schema}.v AS SELECT 1 AS x, 'a' AS y")
    info = describe_table(spark, TableRef(schema, "v"))
    assert info.table_type == "VIEW"
    assert info.columns == (("x", "int"), ("y", "string")) and info.partition_columns == ()
    assert describe_table(spark, TableRef(schema, "missing")) is None
    assert describe_table(spark, TableRef(f"{schema}_no_such_schema", "v")) is None


def test_after_a_commit_the_session_reads_the_new_rows_cached_or_not(spark, schema):
    """A commit drops the session's cached relation of the table (an unpartitioned table's
    relation holds its file listing) and, when a CACHE TABLE holds the table's data, caches
    it again: a query right after the write reads the rows it wrote, never the old files."""
    from python_adapter.core.config import parse_config
    from python_adapter.api import write_dataframe

    table, name, quiet = TableRef(schema, "c"), f"{schema}.c", (lambda _line: None)
    cfg = parse_config({"incremental_strategy": "insert_overwrite"})
    write_dataframe(spark, spark.range(3), table, cfg, log=quiet)
    assert spark.table(name).count() == 3  # the session caches the relation and its listing
    write_dataframe(spark, spark.range(5), table, cfg, log=quiet)
    assert spark.table(name).count() == 5
    spark.catalog.cacheTable(name)
    try:
        assert spark.table(name).count() == 5  # the data cached
        write_dataframe(spark, spark.range(7), table, cfg, log=quiet)
        assert spark.catalog.isCached(name)
        assert sorted(r.id for r in spark.table(name).collect()) == list(range(7))
    finally:
        spark.catalog.uncacheTable(name)
