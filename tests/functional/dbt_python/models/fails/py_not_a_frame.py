def model(dbt, session):
    dbt.config(materialized="table")
    return [row.id for row in dbt.ref("events").limit(3).collect()]
