"""Assertions shared by the functional tests: what a table holds and how its files look."""
from python_adapter.spark.catalog import TableRef
from python_adapter.spark.describe import read_layout


def rows_of(spark, schema, name, cols="id, tag"):
    """The table's rows as a sorted list (a multiset check: duplicates and losses both show)."""
    return sorted(tuple(r) for r in spark.sql(f"select {cols} from {schema}.{name}").collect())


def rows_of_df(df, cols=("id", "tag")):
    return sorted(tuple(r) for r in df.select(*cols).collect())


def layout(spark, schema, name):
    return read_layout(spark, TableRef(schema, name))


def files_by_partition(spark, schema, name):
    out = {}
    for f in layout(spark, schema, name).files:
        out.setdefault(f.partition, []).append(f)
    return out
