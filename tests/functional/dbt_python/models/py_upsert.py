# merge with a unique_key (the engine's upsert): on a later run only the rows that changed
# since the table's, read through dbt.this.
from pyspark.sql import functions as F


def model(dbt, session):
    dbt.config(materialized="incremental", incremental_strategy="merge", unique_key="id",
               partition_by=["day"], target_file_size="32KB")
    events = dbt.ref("events").select("id", "day", "value", "payload")
    if dbt.is_incremental:
        old = session.table(str(dbt.this)).select("id", F.col("value").alias("old_value"))
        events = (events.join(old, "id", "left")
                  .where(F.col("old_value").isNull() | (F.col("old_value") != F.col("value")))
                  .drop("old_value"))
    return events.withColumn("incremental", F.lit(dbt.is_incremental))
