# Not Parquet: dbt-spark's incremental, which submits a Python model to Databricks.
def model(dbt, session):
    dbt.config(materialized="incremental", file_format="delta")
    return dbt.ref("events")
