# sized: false: dbt-spark's table, which submits a Python model to Databricks.
def model(dbt, session):
    dbt.config(materialized="table", sized=False)
    return dbt.ref("events")
