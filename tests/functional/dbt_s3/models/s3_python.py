# A Python model written through the engine on S3: a sized `table` of the events' days.
def model(dbt, session):
    dbt.config(materialized="table", partition_by=["day"])
    return dbt.ref("s3_events").groupBy("day").count()
