"""Clustering on Spark: schedule a plan into the timeline, execute pending plans, and replace
the old files with one `replacecommit` through the commit protocol.

A scheduled plan is a `replacecommit.requested` instant whose `removed` entries list the
files of each group (`file_group` = group id) and whose `extra` holds the strategy, the
columns and each group's output file count. Recovery leaves scheduled plans alone.
Upserts that arrive while a plan is pending put no inserts into its files; an update to one
of its files rewrites that file at once (a dbt run does not wait), and the plan's group
holding it is dropped when the plan runs and planned again next time: clustering only ever
replaces files that are still exactly as planned, so no update is lost.
"""
import time
from dataclasses import dataclass

from pyspark.sql import functions as F
from pyspark.sql import types as T

from python_adapter.spark.catalog import sync_partitions
from python_adapter.spark.locking import WriteError, current_files, locked_table
from python_adapter.core.clustering import cluster_options, plan_groups
from python_adapter.core.sizes import format_duration, format_size
from python_adapter.table.timeline import FileEntry
from python_adapter.core.routing import routing_keys
from python_adapter.spark.table_files import (partitions_of, read_files, sync_changed_partitions,
                                        with_file_values)

RANK_BITS = 10   # ranks in [0, 1024) per column: Z / Hilbert values fit a bigint up to 6 columns


@dataclass
class ClusterResult:
    scheduled: int          # groups planned by this call
    executed_plans: int
    groups: int
    files_replaced: int
    files_written: int
    bytes: int
    seconds: float

    @property
    def message(self):
        return (f"clustering: {self.executed_plans} plan(s), {self.groups} groups, "
                f"{self.files_replaced} files replaced by {self.files_written} "
                f"({format_size(self.bytes)}) in {format_duration(self.seconds)}")


def scheduled_plans(timeline):
    return [i for i in timeline.pending()
            if i.action == "replacecommit" and i.state == "requested"
            and i.extra.get("scheduled") == "true"]


def pending_plan_files(timeline):
    return {f.path for plan in scheduled_plans(timeline) for f in plan.removed}


def run_clustering(spark, table, cluster_by=None, strategy="linear", schedule_only=False,
                   log=print, **option_overrides):
    """Schedule a plan (when cluster_by is given) and, unless schedule_only, execute every
    pending plan. Returns a ClusterResult."""
    start = time.monotonic()
    with locked_table(spark, table, "clustering", log=log) as (info, fs, proto):
        pcols = info.partition_columns
        scheduled = 0
        if cluster_by:
            missing = [c for c in ([cluster_by] if isinstance(cluster_by, str) else cluster_by)
                       if c.lower() not in {n.lower() for n in info.column_names}]
            if missing:
                raise WriteError(f"cluster_by: column(s) {', '.join(missing)} not found in "
                                 f"{table.quoted}; its columns are {', '.join(info.column_names)}")
            last = next((i for i in reversed(proto.timeline.completed(("commit",)))), None)
            if last is not None and "target_file_size" in last.extra:
                option_overrides.setdefault("target_file_size", int(last.extra["target_file_size"]))
                option_overrides.setdefault("write_small_file_limit",
                                            int(last.extra.get("small_file_limit", 0)) or None)
            options = cluster_options(cluster_by, strategy, **option_overrides)
            current = current_files(fs, proto.location, proto.timeline,
                                    check=f"{table.schema}.{table.identifier}")
            by_part = {}
            for f in current:
                by_part.setdefault(f.partition, []).append((f.path, f.bytes))
            groups = plan_groups(by_part, options, excluded=pending_plan_files(proto.timeline))
            if groups:
                _schedule(proto, pcols, options, groups, {f.path: f for f in current})
                scheduled = len(groups)
                log(f"clustering plan: {len(groups)} groups of "
                    f"{sum(len(g.files) for g in groups)} files "
                    f"({format_size(sum(g.bytes for g in groups))}), strategy {options.strategy} "
                    f"on {', '.join(options.cluster_by)}")
            else:
                log("clustering plan: no file below the clustering small-file limit")
        result = ClusterResult(scheduled, 0, 0, 0, 0, 0, 0.0)
        if not schedule_only:
            for plan in scheduled_plans(proto.timeline):
                _execute(spark, fs, proto, table, info, plan, result, log)
    result.seconds = time.monotonic() - start
    log(result.message)
    return result


def _schedule(proto, pcols, options, groups, current):
    removed = []
    extra = {"scheduled": "true", "strategy": options.strategy,
             "cluster_by": ",".join(options.cluster_by),
             "target_file_size": options.target_file_size}
    for g in groups:
        extra[f"group.{g.group_id}.output_files"] = g.output_files
        for rel, _size in g.files:
            f = current[rel]
            removed.append(FileEntry(f.partition, f.path, f.rows, f.bytes, g.group_id, "",
                                     f.key_min, f.key_max))
    instant = proto.request("cluster", pcols, action="replacecommit", extra=extra)
    return proto.timeline.write(instant.with_state("requested", removed=tuple(removed)))


def _execute(spark, fs, proto, table, info, plan, result, log):
    from python_adapter.spark.writer import _staged_entries

    current = {f.path: f for f in current_files(fs, proto.location, proto.timeline,
                                                check=f"{table.schema}.{table.identifier}")}
    groups, dropped = {}, set()
    for f in plan.removed:
        now = current.get(f.path)
        if now is None or now.bytes != f.bytes:
            dropped.add(f.file_group)
        groups.setdefault(f.file_group, []).append(f)
    valid = {g: files for g, files in groups.items() if g not in dropped}
    if dropped:
        log(f"clustering plan {plan.instant}: {len(dropped)} group(s) changed since they were "
            f"planned (an upsert rewrote their files); dropping them, they are planned again "
            f"next time")
    cluster_by = plan.extra["cluster_by"].split(",")
    strategy = plan.extra["strategy"]
    staging = proto.staging_dir(plan.instant) + "/data"
    try:
        table_name = f"{table.schema}.{table.identifier}"
        schema = spark.table(table_name).schema
        pcols = info.partition_columns
        outputs = {g: int(plan.extra.get(f"group.{g}.output_files", 1)) for g in valid}
        single = [g for g in valid if outputs[g] == 1]
        # Groups that become one file: one job, group i written whole by task i.
        jobs = [single] if single else []
        # Larger groups: one job each, range-partitioned within the group only, so a file
        # never straddles two groups and each group gives exactly its planned files.
        jobs += [[g] for g in valid if outputs[g] > 1]
        for job in jobs:
            rel_paths = [f.path for g in job for f in valid[g]]
            df = read_files(spark, proto.location, schema, rel_paths)
            log(f"clustering {len(rel_paths)} files of {len(job)} group(s) "
                f"({strategy} on {', '.join(cluster_by)})")
            if len(job) == 1:
                out = order_rows(df, cluster_by, strategy, outputs[job[0]])
            else:
                out = one_file_per_group(spark, df, {g: [f.path for f in valid[g]] for g in job},
                                         cluster_by, strategy, pcols)
            out.write.partitionBy(*pcols).mode("append").parquet(staging)
        added = _staged_entries(spark, fs, staging)
        removed = [current[f.path] for files in valid.values() for f in files]
        inflight = proto.mark_inflight(plan, added, removed)
        proto.publish(inflight)
        sync_changed_partitions(spark, fs, proto.location, table, partitions_of(added, removed))
        done = proto.complete(inflight)
    except Exception:
        proto.abort(plan)
        sync_partitions(spark, table, bool(info.partition_columns))
        raise
    proto.cleanup(done)
    result.executed_plans += 1
    result.groups += len(valid)
    result.files_replaced += len(removed)
    result.files_written += len(added)
    result.bytes += sum(a.bytes for a in added)


def one_file_per_group(spark, df, files_by_group, cluster_by, strategy, pcols=()):
    """Groups that each become one file: route group i to task i, sort within it."""
    keys = routing_keys(len(files_by_group))
    route = {p: keys[i] for i, g in enumerate(sorted(files_by_group)) for p in files_by_group[g]}
    data_cols = df.columns
    routed = with_file_values(spark, df, pcols, route, "__sized_route") \
        .repartition(len(keys), "__sized_route")
    return _sort_within(routed.drop("__sized_route"), cluster_by, strategy, data_cols)


def _sort_within(df, cluster_by, strategy, data_cols):
    if strategy == "linear":
        return df.sortWithinPartitions(*cluster_by)
    ranked, key = _curve(df, cluster_by, strategy, keep_partitioning=True)
    return ranked.withColumn("__sized_curve", key).sortWithinPartitions("__sized_curve") \
        .select(*data_cols)


def order_rows(df, cluster_by, strategy, num_files, partition_by=()):
    """Rows in `num_files` tasks, each a contiguous range of the clustering order, sorted."""
    data_cols = df.columns
    if strategy == "linear":
        return (df.repartitionByRange(num_files, *partition_by, *cluster_by)
                  .sortWithinPartitions(*partition_by, *cluster_by))
    ranked, key = _curve(df, cluster_by, strategy)
    return (ranked.withColumn("__sized_curve", key)
                  .repartitionByRange(num_files, *partition_by, "__sized_curve")
                  .sortWithinPartitions(*partition_by, "__sized_curve")
                  .select(*data_cols))


def _curve(df, cluster_by, strategy, keep_partitioning=False):
    """(df with rank columns, curve expression). Spark's range partitioner gives an
    order-preserving rank for any orderable type (strings, dates, numbers; nulls first),
    from a sample, in one shuffle per column."""
    ranked = df
    if keep_partitioning:
        ranked = ranked.withColumn("__sized_task", F.spark_partition_id())
    rank_cols = []
    for i, col in enumerate(cluster_by):
        rank = f"__sized_rank{i}"
        ranked = (ranked.repartitionByRange(1 << RANK_BITS, F.col(col))
                        .withColumn(rank, F.spark_partition_id().cast("long")))
        rank_cols.append(rank)
    if keep_partitioning:
        # ranks took shuffles: send rows back to the task (group) they came from
        n = df.rdd.getNumPartitions()
        keys = routing_keys(n)
        route = F.element_at(F.array(*[F.lit(k) for k in keys]), F.col("__sized_task") + 1)
        ranked = ranked.repartition(n, route).drop("__sized_task")
    if strategy == "zorder":
        key = _z_value_expr(rank_cols, RANK_BITS)
    else:
        # Executors may not have this package installed: ship the curve code with the UDF.
        from pyspark import cloudpickle
        from python_adapter.core import curves

        cloudpickle.register_pickle_by_value(curves)
        bits = RANK_BITS
        hilbert = F.udf(lambda *c: curves.hilbert_index(c, bits), T.LongType())
        key = hilbert(*[F.col(c) for c in rank_cols])
    return ranked, key


def _z_value_expr(rank_cols, bits):
    """curves.z_value as a Spark expression (no Python round trip per row)."""
    k = len(rank_cols)
    terms = []
    for j in range(bits):
        for i, c in enumerate(rank_cols):
            bit = F.shiftright(F.col(c), j).bitwiseAND(F.lit(1))
            terms.append(F.shiftleft(bit, j * k + (k - 1 - i)))
    out = terms[0]
    for t in terms[1:]:
        out = out.bitwiseOR(t)
    return out
