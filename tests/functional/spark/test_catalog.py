"""describe_table reads one DESCRIBE TABLE EXTENDED; it must agree with what the catalog
itself says of the table (listColumns, the table's location), whatever the columns."""
from python_adapter.spark.catalog import TableRef, describe_table


def test_describe_table_agrees_with_the_catalog(spark, schema):
    spark.sql(f"""CREATE TABLE {schema}.t (`a b` int COMMENT 'spaced', c decimal(10,2),
                  m map<string, array<struct<x: int, y: varchar(3)>>>, v varchar(5), ts timestamp,
                  `# hash` string, p date, q string) USING parquet PARTITIONED BY (p, q)""")
    info = describe_table(spark, TableRef(schema, "t"))
    cols = spark.catalog.listColumns(f"{schema}.t")
    assert info.columns == tuple((c.name, c.dataType) for c in cols)
    assert info.partition_columns == ("p", "q") == tuple(c.name for c in cols if c.isPartition)
    assert info.provider == "parquet" and info.table_type == "MANAGED"
    db = spark.catalog.getDatabase(schema).locationUri.rstrip("/")
    assert info.location.rstrip("/") == f"{db}/t"


def test_describe_table_of_a_view_and_of_no_table(spark, schema):
    spark.sql(f"CREATE VIEW {schema}.v AS SELECT 1 AS x, 'a' AS y")
    info = describe_table(spark, TableRef(schema, "v"))
    assert info.table_type == "VIEW"
    assert info.columns == (("x", "int"), ("y", "string")) and info.partition_columns == ()
    assert describe_table(spark, TableRef(schema, "missing")) is None
