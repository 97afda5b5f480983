"""The report's one entry point that touches a table: read it on Spark, render the page
(report.page, pure) and write it through the Hadoop FileSystem, so `file://`, HDFS and S3A
destinations work like local paths."""
from datetime import datetime, timezone
from typing import Callable, Union

from pyspark.sql import SparkSession

from python_adapter.report.page import render_report
from python_adapter.spark.catalog.tables import TableRef
from python_adapter.spark.services.describe import read_layout
from python_adapter.spark.handle import open_table
from python_adapter.table.timeline import Timeline


def write_report(spark: SparkSession, table_ref: Union[TableRef, str], path: str,
                 log: Callable[[str], None] = print) -> str:
    """Render the report of a table and write it to `path` (a local path, file://, hdfs://,
    s3a://...; a path without a scheme resolves like Hadoop does, against fs.defaultFS).
    Overwrites; returns the qualified path written."""
    if isinstance(table_ref, str):
        table_ref = _table_ref(table_ref)
    handle = open_table(spark, table_ref, reading=True)
    fs, location = handle.fs, handle.location
    layout = read_layout(spark, table_ref)
    instants = Timeline(fs, location).history()
    text = render_report(table_ref.name, layout, instants,
                         datetime.now(timezone.utc), location=location)
    target = fs.qualify(path)
    fs.write_bytes(target, text.encode("utf-8"), overwrite=True)
    log(f"report of {table_ref.schema}.{table_ref.identifier} written to {target}")
    return target


def _table_ref(name: str) -> TableRef:
    # a caller outside dbt names the table as text: 'schema.table'
    schema, _, identifier = name.partition(".")
    if not identifier:
        raise ValueError(f"table: expected 'schema.table', got {name!r}")
    return TableRef(schema, identifier)
