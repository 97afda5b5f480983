"""Algorithm 2: route rows so each output file is written by one Spark task.

Takes a DataFrame and the file plan; returns the DataFrame to hand to the Parquet writer.
Helper columns start with `__sized_` and are dropped before the write.
"""
import math
from typing import Any, List, Mapping, Optional, Sequence, Tuple

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from python_adapter.io.session_info import default_parallelism
from python_adapter.core.planning import PartitionPlan, file_id_ranges
from python_adapter.core.routing import assign_tasks, routing_keys

SEED = 20261122
# exact: a task may write files of several partitions (one each), so a table of many small
# partitions is not written by one task per file; tasks stay at or below about this much
# data each, so big writes keep their parallelism and small per-task sorts.
TASK_BYTES = 128 * 1000 * 1000


# Partition column types whose values each have one text and back (Spark's cast to string
# and from it): rows are matched to their partition's plan by value, not by casting every
# row to text. Not floats (-0.0 and 0.0 group together, their texts differ), timestamps (a
# local time a DST change repeats is one text for two values) or collated strings.
_MATCHED_BY_VALUE = (T.DateType, T.BooleanType, T.ByteType, T.ShortType, T.IntegerType,
                     T.LongType, T.DecimalType)


def matched_by_value(data_type: T.DataType) -> bool:
    """Whether rows of a partition column of this type can be grouped or matched by value,
    where their partition text is what names their directory."""
    return isinstance(data_type, _MATCHED_BY_VALUE) or data_type == T.StringType()


def distribute(spark: SparkSession, df: DataFrame, partition_by: Sequence[str],
               distribution: str, total_files: int,
               plans: Optional[Mapping[Any, PartitionPlan]] = None,
               bytes_per_row: Optional[float] = None) -> DataFrame:
    """plans: {partition value texts (cast as string): PartitionPlan}; needed by exact,
    optional otherwise."""
    if distribution == "none" or total_files <= 0:
        return df
    if distribution == "range":
        return _range(df, partition_by, total_files)
    if distribution == "hash":
        return _hash(df, partition_by, total_files,
                     len(plans or {1: 1}))  # type: ignore[dict-item]  # a stand-in, only counted
    if distribution == "exact":
        return _exact(spark, df, partition_by, plans, bytes_per_row)
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


def exact_tasks(plans: Mapping[Any, PartitionPlan], bytes_per_row: Optional[float],
                parallelism: int) -> Tuple[List[int], int]:
    """(task index per file id, number of tasks) for exact: files of one partition in
    different tasks, at least `parallelism` tasks (or one per file if fewer) and enough that
    a task holds about TASK_BYTES at most."""
    ranges = file_id_ranges(plans)
    if not bytes_per_row:  # no size known (file_count): one task per file, as planned
        total = sum(plan.files for _, _, plan in ranges)
        return list(range(total)), total
    files = []
    for key, _first, plan in ranges:
        rows_left = plan.rows
        for _ in range(plan.files):
            rows = min(plan.rows_per_file, rows_left)
            rows_left -= rows
            files.append((key, max(rows, 0)))
    total_bytes = sum(r for _, r in files) * bytes_per_row
    return assign_tasks(files, max(parallelism, math.ceil(total_bytes / TASK_BYTES)))


def _exact(spark, df, partition_by, plans, bytes_per_row=None):
    """Each row gets a file id from its partition's run of ids (files filled to rows_per_file,
    the last taking the remainder); file id i goes to its task by a routing key whose Spark
    hash lands on that task (no collisions, no sampling)."""
    ranges = file_id_ranges(plans)
    total = sum(plan.files for _, _, plan in ranges)
    task_of, n_tasks = exact_tasks(plans, bytes_per_row, default_parallelism(spark))
    keys = routing_keys(n_tasks)
    route_df = spark.createDataFrame(
        [(fid, keys[task_of[fid]]) for fid in range(total)],
        T.StructType([T.StructField("__sized_fid", T.LongType()),
                      T.StructField("__sized_route", T.LongType())]))
    if partition_by:
        # plans are keyed by the texts of the partition values (writer._count_by_partition)
        plan_schema = T.StructType(
            [T.StructField(f"__sized_p{i}", T.StringType(), True) for i in range(len(partition_by))]
            + [T.StructField("__sized_first", T.LongType()),
               T.StructField("__sized_count", T.LongType()),
               T.StructField("__sized_span", T.DoubleType())])
        plan_rows = [tuple(key) + (first, plan.files, plan.rows / plan.rows_per_file)
                     for key, first, plan in ranges]
        plan_df = spark.createDataFrame(plan_rows, plan_schema)
        cond = None
        for i, c in enumerate(partition_by):
            column_type, key = df.schema[c].dataType, f"__sized_p{i}"
            if matched_by_value(column_type):
                plan_df = plan_df.withColumn(key, F.col(key).cast(column_type))
                part = df[c].eqNullSafe(plan_df[key])
            else:
                part = df[c].cast("string").eqNullSafe(plan_df[key])
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
    return (routed.repartition(n_tasks, F.col("__sized_route"))
                  .drop("__sized_fid", "__sized_route", "__sized_first", "__sized_count",
                        "__sized_span"))
