# append (the engine's insert), as a pandas DataFrame: on a later run the ids past the
# table's largest.
def model(dbt, session):
    dbt.config(materialized="incremental", incremental_strategy="append")
    events = dbt.ref("events").select("id", "value")
    if dbt.is_incremental:
        largest = session.table(str(dbt.this)).agg({"id": "max"}).collect()[0][0]
        events = events.where(events.id > largest)
    frame = events.toPandas()
    frame["run"] = 2 if dbt.is_incremental else 1
    return frame
