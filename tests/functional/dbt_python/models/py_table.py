# A sized full build of a Spark DataFrame: dbt.ref and dbt.source read tables with
# spark.table; dbt.config.get and dbt.this are dbt's.
from pyspark.sql import functions as F


def model(dbt, session):
    dbt.config(materialized="table", partition_by=["day"], target_file_size="32KB",
               distribution="exact")
    events = dbt.ref("events")
    customers = dbt.source("raw", "customers")
    return (events.join(customers, events.customer_id == customers.id)
            .select(events.id, events.day, events.value, customers.name, events.payload)
            .withColumn("target", F.lit(dbt.config.get("target_file_size")))
            .withColumn("this", F.lit(str(dbt.this))))
