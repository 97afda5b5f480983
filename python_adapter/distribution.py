"""Algorithm 2: route rows so each output file is written by one Spark task.

Takes a DataFrame and the file plan; returns the DataFrame to hand to the Parquet writer.
Helper columns start with `__sized_` and are dropped before the write.
"""
import math

from pyspark.sql import functions as F
from pyspark.sql import types as T

from python_adapter.planning import file_id_ranges
from python_adapter.routing import routing_keys

SEED = 20261122


def distribute(spark, df, partition_by, distribution, total_files, plans=None):
    """plans: {partition key tuple: PartitionPlan}; needed by exact, optional otherwise."""
    if distribution == "none" or total_files <= 0:
        return df
    if distribution == "range":
        return _range(df, partition_by, total_files)
    if distribution == "hash":
        return _hash(df, partition_by, total_files, len(plans or {1: 1}))
    if distribution == "exact":
        return _exact(spark, df, partition_by, plans)
    raise ValueError(f"distribution: unknown value {distribution!r}")


def _range(df, partition_by, total_files):
    """Range on (hash of partition cols, rand): an hPartition spans consecutive tasks, so at
    most total_files + distinct partitions files are written, with no hash collisions."""
    key = F.hash(*[F.col(c) for c in partition_by]) if partition_by else F.lit(0)
    return (df.withColumn("__sized_h", key)
              .withColumn("__sized_r", F.rand(SEED))
              .repartitionByRange(total_files, "__sized_h", "__sized_r")
              .drop("__sized_h", "__sized_r"))


def _hash(df, partition_by, total_files, num_partitions):
    """The naive method of the study: repartition(n, partition cols, rand % k)."""
    k = max(1, math.ceil(total_files / max(1, num_partitions)))
    return (df.withColumn("__sized_salt", F.floor(F.rand(SEED) * k))
              .repartition(total_files, *[F.col(c) for c in partition_by], F.col("__sized_salt"))
              .drop("__sized_salt"))


def _exact(spark, df, partition_by, plans):
    """Each row gets a file id from its partition's run of ids (files filled to rows_per_file,
    the last taking the remainder); file id i goes to task i by a routing key whose Spark
    hash lands on i (no collisions, no sampling)."""
    ranges = file_id_ranges(plans)
    total = sum(plan.files for _, _, plan in ranges)
    keys = routing_keys(total)
    route_df = spark.createDataFrame(
        list(enumerate(keys)),
        T.StructType([T.StructField("__sized_fid", T.LongType()),
                      T.StructField("__sized_route", T.LongType())]))
    if partition_by:
        fields = [df.schema[c] for c in partition_by]
        plan_schema = T.StructType(
            [T.StructField(f"__sized_p{i}", f.dataType, True) for i, f in enumerate(fields)]
            + [T.StructField("__sized_first", T.LongType()),
               T.StructField("__sized_count", T.LongType()),
               T.StructField("__sized_span", T.DoubleType())])
        plan_rows = [tuple(key) + (first, plan.files, plan.rows / plan.rows_per_file)
                     for key, first, plan in ranges]
        plan_df = spark.createDataFrame(plan_rows, plan_schema)
        cond = None
        for i, c in enumerate(partition_by):
            part = df[c].eqNullSafe(plan_df[f"__sized_p{i}"])
            cond = part if cond is None else cond & part
        with_plan = df.join(F.broadcast(plan_df), cond, "left")
        with_plan = with_plan.drop(*[f"__sized_p{i}" for i in range(len(partition_by))])
    else:
        (_key, _first, plan), = ranges
        with_plan = (df.withColumn("__sized_first", F.lit(0).cast("long"))
                       .withColumn("__sized_count", F.lit(total).cast("long"))
                       .withColumn("__sized_span", F.lit(plan.rows / plan.rows_per_file)))
    # A row's place in its partition, uniform over [0, rows), divided by rows_per_file.
    fid = F.col("__sized_first") + F.least(F.floor(F.rand(SEED) * F.col("__sized_span")),
                                           F.col("__sized_count") - 1)
    routed = (with_plan.withColumn("__sized_fid", fid.cast("long"))
                       .join(F.broadcast(route_df), "__sized_fid", "left"))
    return (routed.repartition(total, F.col("__sized_route"))
                  .drop("__sized_fid", "__sized_route", "__sized_first", "__sized_count",
                        "__sized_span"))
