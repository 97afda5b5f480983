"""Changes of a table's columns: on_schema_change for incremental runs, and when a full
refresh must define the table again."""
from typing import Iterable, Optional, Sequence, Tuple, cast

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from python_adapter.core.schema import keeps_values, normal_type
from python_adapter.errors import SchemaChangeError
from python_adapter.spark.catalog.tables import TableInfo, add_columns, describe_table, set_data_columns
from python_adapter.spark.job import WriteJob


def apply_schema_change(job: WriteJob, existing: TableInfo) -> Tuple[DataFrame, TableInfo]:
    """on_schema_change as dbt users know it; returns (the job's rows shaped like the
    table, the table as it is now). Runs under the writer lock."""
    spark, table, df, cfg, pcols, log = (job.spark, job.table, job.df, job.cfg, job.pcols,
                                         job.progress)
    table_types = {c.lower(): t for c, t in existing.columns}
    pset = {c.lower() for c in pcols}
    new_fields = [f for f in df.schema.fields if f.name.lower() not in table_types]
    model_names = {f.name.lower() for f in df.schema.fields}  # df.schema: one call into the JVM
    missing = [c for c in existing.column_names if c.lower() not in model_names]
    retyped = [(f.name, f.dataType.simpleString(), table_types[f.name.lower()])
               for f in df.schema.fields if f.name.lower() in table_types
               and normal_type(table_types[f.name.lower()]) != normal_type(f.dataType.simpleString())]
    changed = [f"{name} ({table} -> {model})" for name, model, table in retyped]
    if not new_fields and not missing and not changed:
        return df, existing
    refuse_lossy_casts(retyped)
    what = (f"new columns: {[f.name for f in new_fields] or 'none'}, missing columns: "
            f"{missing or 'none'}, changed types: {changed or 'none'}")
    mode = cfg.on_schema_change
    if mode == "fail" or (mode == "ignore" and missing):
        raise SchemaChangeError(f"on_schema_change: the model's columns differ from the table's "
                          f"({what}) and on_schema_change is {mode!r}; set it to "
                          f"append_new_columns or sync_all_columns, or run with --full-refresh")
    if changed:  # each keeps its values in the table's type (refuse_lossy_casts)
        log(f"schema change: new rows cast to the table's types ({', '.join(changed)})")
    if mode in ("append_new_columns", "sync_all_columns") and new_fields:
        log(f"schema change: adding columns {[f.name for f in new_fields]}")
        add_columns(spark, table, new_fields)
    if mode == "sync_all_columns" and missing:
        log(f"schema change: dropping columns {missing}")
        keep = [f for f in spark.table(f"{table.schema}.{table.identifier}").schema.fields
                if f.name not in missing and f.name.lower() not in pset]
        set_data_columns(spark, table, keep)
    existing = cast(TableInfo, describe_table(spark, table))  # altered above: it exists
    # Shape the data like the table: extra columns dropped (ignore), absent ones null.
    out = []
    present = {c.lower(): c for c in df.columns}
    for name, type_name in existing.columns:
        col = F.col(present[name.lower()]) if name.lower() in present else F.lit(None)
        out.append(col.cast(type_name).alias(name))
    return df.select(*out), existing


def refuse_lossy_casts(retyped: Iterable[Tuple[str, str, str]]) -> None:
    """Fail, under every on_schema_change mode, when casting a column of the new rows to the
    table's type could turn values into NULL or lose precision; widenings go ahead."""
    for name, model, table in retyped:
        if not keeps_values(model, table):
            raise SchemaChangeError(
                f"on_schema_change: column {name} is {model} in the model but {table} in the "
                f"table; casting the new rows to {table} could turn values into NULL or lose "
                f"precision, so nothing was written. Run with --full-refresh to give the table "
                f"the model's types, or cast {name} to {table} in the model")


def needs_new_definition(existing: TableInfo, df: DataFrame, pcols: Sequence[str],
                         location: Optional[str], target: str) -> bool:
    """A full refresh recreates the table's definition when its partitioning, format,
    location or columns (names or types) change; otherwise it replaces the files only."""
    def columns(pairs):
        return sorted((name.lower(), type_name) for name, type_name in pairs)
    model = [(f.name, f.dataType.simpleString()) for f in df.schema.fields]
    return ([c.lower() for c in existing.partition_columns] != [c.lower() for c in pcols]
            or existing.provider != "parquet" or location != target
            or columns(existing.columns) != columns(model))
