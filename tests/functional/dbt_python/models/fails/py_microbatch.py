# dbt filters a batch's inputs only in SQL models: refused.
def model(dbt, session):
    dbt.config(materialized="incremental", incremental_strategy="microbatch",
               event_time="day", begin="2025-01-01", batch_size="year")
    return dbt.ref("events")
