# A Python model over thrift: dbt-spark's table, which submits it to Databricks (its own
# error here, without a cluster), not dbt-core's guard against a nested statement.
def model(dbt, session):
    dbt.config(materialized="table")
    return session.range(3)
