# insert_overwrite with partition_by, as a pandas-on-Spark DataFrame: a later run replaces
# the partitions it returns rows for (the even days) and keeps the others.
import pyspark.pandas as ps


def model(dbt, session):
    dbt.config(materialized="incremental", incremental_strategy="insert_overwrite",
               partition_by=["day"])
    events = dbt.ref("events").select("id", "day", "value")
    if dbt.is_incremental:
        events = events.where("day(day) % 2 = 0")
    frame = ps.DataFrame(events)
    frame["run"] = 2 if dbt.is_incremental else 1
    return frame
