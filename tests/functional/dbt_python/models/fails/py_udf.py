# A UDF of the model fails in a Spark task, while the write computes the rows.
from pyspark.sql import functions as F


@F.udf("double")
def inverse(x):
    return 1 / (x - x)


def model(dbt, session):
    dbt.config(materialized="table")
    return dbt.ref("events").withColumn("inv", inverse("id"))
