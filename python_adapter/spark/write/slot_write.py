"""Write an upsert's planned output files ("slots"), each from exactly one Spark task,
without shuffling the rows of the files being rewritten.

A rewritten file is read whole by one scan task (files are never split across tasks), and
its old rows stay in that task. The batch rows bound for it are broadcast and joined to a
copy of the file's first row, so only the batch rows bound for new files are shuffled. When
the batch is too big to broadcast (over `spark.sql.autoBroadcastJoinThreshold` in memory),
or a rewritten file may be empty (no first row to join), every row is shuffled to its
slot's task instead; the batch's keys, which drop the old rows they replace, are still
broadcast when they alone are under the threshold, so the old rows are shuffled once.

Each slot is written under its own `__sized_slot=<n>` directory, so one task may write
several files of one partition; `staged_file` maps a staged file to its place in the table.
"""
from dataclasses import dataclass, field
from typing import ContextManager, Dict, List, Optional, Sequence, Set, Tuple, cast

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from python_adapter.io.session_info import conf_bytes, default_parallelism, plan_stats
from python_adapter.spark.job import Progress, quoted, select_names
from python_adapter.spark.local_table import local_table
from python_adapter.core.routing import assign_tasks, routing_keys
from python_adapter.spark.session_conf import session_conf
from python_adapter.core.sizes import count_of, format_size

SLOT = "__sized_slot"
FIRST_ROW = "__sized_first"   # true on row 0 of each file read for a rewrite
_SLOT_DIR = SLOT + "="


def staged_file(rel: str) -> Tuple[str, str]:
    """(partition dir, path in the table) of a file written under staging at `rel`:
    the slot directory is dropped and the slot number put in the file name, because
    Spark names files after their task and one task may write two slots of a partition."""
    parts = rel.split("/")
    slot_dirs = [p for p in parts[:-1] if p.startswith(_SLOT_DIR)]
    dirs = [p for p in parts[:-1] if not p.startswith(_SLOT_DIR)]
    name = parts[-1]
    if slot_dirs:
        stem, dot, rest = name.partition(".")
        name = f"{stem}-s{slot_dirs[0][len(_SLOT_DIR):]}{dot}{rest}"
    partition = "/".join(dirs)
    return partition, f"{partition}/{name}" if partition else name


def broadcast_limit(spark: SparkSession) -> int:
    """Spark's autoBroadcastJoinThreshold in bytes (-1: never broadcast)."""
    return conf_bytes(spark, "spark.sql.autoBroadcastJoinThreshold", "10MB")


def whole_files(spark: SparkSession, largest: int) -> ContextManager[None]:
    """Settings under which scans never split a file of up to `largest` bytes over two
    tasks: Spark splits a file bigger than min(maxPartitionBytes, max(openCostInBytes, bytes
    per core)), so both bounds are raised to the largest file, never lowered."""
    return session_conf(spark, {
        "spark.sql.files.maxPartitionBytes": max(conf_bytes(
            spark, "spark.sql.files.maxPartitionBytes", "128MB"), largest),
        "spark.sql.files.openCostInBytes": max(conf_bytes(
            spark, "spark.sql.files.openCostInBytes", "4MB"), largest)})


def _route(spark, rows, weights):
    """rows (with SLOT) shuffled so each slot lands in one task; weights {slot: (partition,
    bytes)} balance the tasks."""
    slots = sorted(weights)
    task_of, n_tasks = assign_tasks([weights[s] for s in slots],
                                    default_parallelism(spark))
    route = routing_keys(n_tasks)
    keys_df = local_table(spark, [(SLOT, "bigint"), ("__sized_route", "bigint")],
                          [(s, route[task_of[i]]) for i, s in enumerate(slots)])
    return (rows.join(F.broadcast(keys_df), SLOT)
                .repartition(n_tasks, "__sized_route").drop("__sized_route")), n_tasks


def cached_size(df: DataFrame) -> int:
    """Spark's size estimate of a DataFrame's plan: for a cached, computed DataFrame the
    in-memory size of its rows."""
    return plan_stats(df).size


def estimated_bytes(df: DataFrame, rows: int) -> int:
    """Spark's estimate of `rows` rows of df's columns in memory, as its planner makes it
    when it knows the row count: 8 bytes a row and each column's default size."""
    return rows * (8 + plan_stats(df).default_size)


@dataclass(frozen=True)
class SlotWrite:
    """The rows of an upsert's slots and how to write them.

    old: rows of the rewritten files (columns, SLOT, FIRST_ROW), or None;
    keys: DataFrame of the batch's keys (their old rows are dropped), or None;
    bound: batch rows bound for rewritten files (columns, SLOT), or None;
    fresh: batch rows bound for new files (columns, SLOT), or None;
    weights: {slot: (partition, estimated bytes)}; rewrite_slots: the slots that rewrite a
    file; batch_bytes: in-memory size of the batch, an upper bound of what is broadcast;
    rows_unknown: some rewritten file has no recorded row (an empty file has no first row
    for its batch rows to join); largest_file: bytes of the largest file rewritten."""
    old: Optional[DataFrame]
    keys: Optional[DataFrame]
    bound: Optional[DataFrame]
    fresh: Optional[DataFrame]
    columns: List[str]
    pcols: Sequence[str]
    weights: Dict[int, Tuple[str, float]]
    rewrite_slots: Set[int]
    batch_bytes: int
    rows_unknown: bool
    largest_file: int
    staging: str
    match: Optional[str] = None   # only old rows holding this SQL condition are replaced
    drop: Optional[str] = None    # old rows holding this SQL condition are removed
    options: Dict[str, str] = field(default_factory=dict)  # the Parquet writer's (Bloom filter)
    key_bytes: int = -1           # estimated size of `keys` in memory (-1: unknown)


def write_slots(spark: SparkSession, w: SlotWrite, progress: Progress) -> None:
    """Write every slot to `w.staging`, each from exactly one task."""
    old, bound, fresh, weights = w.old, w.bound, w.fresh, w.weights
    limit = broadcast_limit(spark)
    # Without AQE the write is one job instead of one per stage: every join below is an
    # explicit broadcast and every shuffle an explicit repartition, so AQE has nothing to
    # decide, except on the all-rows path, whose join of old rows and keys it may broadcast.
    plain = {"spark.sql.adaptive.enabled": "false"}
    if old is None:
        out, n_tasks = _route(spark, fresh, weights)
        how = count_of(n_tasks, "task")
    elif 0 <= w.batch_bytes <= limit and not w.rows_unknown:
        new_weights = {s: wt for s, wt in weights.items() if s not in w.rewrite_slots}
        out = _colocated(spark, w, new_weights)
        how = "the tasks that read the rewritten files (only the batch's rows shuffled)"
    else:
        why = ("a rewritten file has no recorded rows" if w.rows_unknown else
               f"the batch ({format_size(w.batch_bytes)} in memory) is over "
               f"spark.sql.autoBroadcastJoinThreshold")
        small_keys = 0 <= w.key_bytes <= limit
        out, n_tasks = _route(spark, _all_rows(w, [bound, fresh], small_keys), weights)
        how = f"{count_of(n_tasks, 'task')} ({why}: every row shuffled" + (
            ", the keys broadcast)" if small_keys else ")")
        plain = {}
    progress(f"writing {count_of(len(weights), 'file')} to staging in {how}", phase="write")
    with whole_files(spark, w.largest_file), session_conf(spark, plain):
        out.write.partitionBy(*w.pcols, SLOT).options(**w.options).mode("overwrite") \
            .parquet(w.staging)


def kept_old_rows(old: DataFrame, keys: Optional[DataFrame], match: Optional[str] = None,
                  broadcast: bool = True, drop: Optional[str] = None) -> DataFrame:
    """old rows with __sized_hit set when the batch brings their key (the row is replaced),
    and, with `match`, the row holds that condition (dbt's incremental_predicates: a row
    outside it is never matched, so it stays), or the row holds `drop` (it is removed).
    The keys are broadcast when the old rows must stay in the tasks that read them."""
    if drop is not None:
        return old.withColumn("__sized_hit", F.expr(f"CASE WHEN ({drop}) THEN true END"))
    if keys is None:
        return old.withColumn("__sized_hit", F.lit(None).cast("boolean"))
    hits = keys.withColumn("__sized_hit", F.lit(True))
    kept = old.join(F.broadcast(hits) if broadcast else hits, keys.columns, "left")
    if match is None:
        return kept
    return kept.withColumn("__sized_hit", F.expr(f"CASE WHEN ({match}) THEN __sized_hit END"))


def _all_rows(w: SlotWrite, batch_rows, broadcast_keys: bool):
    # write_slots comes here only with old rows (w.old is not None)
    out = kept_old_rows(cast(DataFrame, w.old), w.keys, w.match, broadcast=broadcast_keys,
                        drop=w.drop).where("__sized_hit is null")
    out = select_names(out, [*w.columns, SLOT])
    for rows in batch_rows:
        if rows is not None:
            out = out.unionByName(select_names(rows, [*w.columns, SLOT]))
    return out


def _colocated(spark, w: SlotWrite, new_weights):
    # Expressions as SQL text: one call into the JVM per select instead of several per column.
    # write_slots comes here only with old rows (w.old is not None)
    old, bound, fresh, columns = cast(DataFrame, w.old), w.bound, w.fresh, w.columns
    kept = kept_old_rows(old, w.keys, w.match, drop=w.drop)
    if bound is None:  # no batch row goes to a rewritten file: its kept old rows are all
        rewritten = select_names(kept.where("__sized_hit IS NULL"), [*columns, SLOT])
    else:
        types = {f.name.lower(): f.dataType for f in old.schema.fields}
        fresh_names = [f"__sized_n{i}" for i in range(len(columns))]
        bound_types = {f.name.lower(): f.dataType for f in bound.schema.fields}
        if all(bound_types[c.lower()] == types[c.lower()] for c in columns):
            bound = bound.selectExpr(f"{quoted(SLOT)} AS __sized_at", "true AS __sized_bound",
                                     *[f"{quoted(c)} AS {n}" for c, n in zip(columns, fresh_names)])
        else:
            bound = bound.select(
                F.col(SLOT).alias("__sized_at"), F.lit(True).alias("__sized_bound"),
                *[F.col(c).cast(types[c.lower()]).alias(n) for c, n in zip(columns, fresh_names)])
        # Each file's first row comes twice: as itself, and as a probe that the broadcast
        # join turns into the batch rows bound for the file (no aggregation, so no shuffle).
        rows = (kept.selectExpr("*", f"explode(CASE WHEN {quoted(FIRST_ROW)} THEN array(NULL, "
                                     f"{quoted(SLOT)}) ELSE array(CAST(NULL AS BIGINT)) END) AS __sized_at")
                .join(F.broadcast(bound), "__sized_at", "left"))
        rewritten = rows.where(
            "CASE WHEN __sized_at IS NOT NULL THEN __sized_bound IS NOT NULL "
            "ELSE __sized_hit IS NULL END").selectExpr(
            *[f"CASE WHEN __sized_at IS NOT NULL THEN {n} ELSE {quoted(c)} END AS {quoted(c)}"
              for c, n in zip(columns, fresh_names)], quoted(SLOT))
    if fresh is None or not new_weights:
        return rewritten
    routed, _ = _route(spark, fresh, new_weights)
    return rewritten.unionByName(select_names(routed, [*columns, SLOT]))
