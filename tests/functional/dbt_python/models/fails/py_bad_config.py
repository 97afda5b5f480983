# The sized config's checks, as for a SQL model: as the model starts, before its code runs.
def model(dbt, session):
    dbt.config(materialized="table", target_file_size="1MB", small_file_limit="2MB")
    return dbt.ref("events")
