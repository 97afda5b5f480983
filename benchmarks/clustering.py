#!/usr/bin/env python
"""Clustering benchmark: point queries on a table written in small arrival-time batches,
before clustering and after linear, Z-order and Hilbert clustering (same table, re-clustered).

    python benchmarks/clustering.py [--rows 1000000] [--batches 30] [--target 1MB] [--out benchmarks/out]

The table (unpartitioned; event_id, session_id, user_id, event_time, event_type, amount,
payload) is written by ours with incremental_strategy 'insert' and small_file_limit 0, one
write per arrival day, so every session's events are spread over many files. Then the same
table is clustered five times in a row (each run rewrites every file from the previous
layout): linear on session_id, zorder and hilbert on (session_id, user_id), then zorder and
hilbert on (session_id, user_id, amount). Before each hilbert run the table is restored
(the engine's restore) to the layout the zorder run on the same columns started from, so
the two curves' clustering jobs read the same files. In each state, point queries on session_id,
user_id and amount (a few random values, averaged) report rows scanned and files from
the scan's Spark SQL metrics, the files whose row groups were actually read (per-task input
metrics, one file per task) and the wall time. Each curve state is also set against a
balanced grid of its N files over its k columns (a point query on one column meets
N^(1-1/k) files, N^(-1/k) of the rows; goal: at most 1.5x, with every file but one within
0.5-1.25 x target). Writes <out>/clustering.md. See benchmarks/README.md.
"""
import argparse
import os
import random
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Callable, Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks.lib import DEFAULT_OUT  # noqa: E402
from benchmarks.lib.data import SCHEMA, SEED  # noqa: E402
from benchmarks.lib.report import (Run, command_line, engine_state, finish_run,  # noqa: E402
                                   md_bullets, md_header, md_table, print_notes,
                                   print_section, run_benchmark, start_run, text_table, say)
from benchmarks.lib.session import conf_set, start_spark  # noqa: E402
from benchmarks.lib.tables import save_table  # noqa: E402
from python_adapter.api import (TableRef, cluster, layout, parse_config, restore,  # noqa: E402
                                timeline, write_dataframe)
from python_adapter.core.sizes import parse_size  # noqa: E402

TABLE = "cl_events"
SOURCE = f"{SCHEMA}.cl_source"          # every row once, partitioned by arrival batch
START_EPOCH = 1_764_547_200             # 2025-12-01 00:00:00 UTC: batch b = day b
COLS = ["event_id", "session_id", "user_id", "event_time", "event_type", "amount", "payload"]
# The third column is a double: Spark writes timestamps as INT96 by default, whose Parquet
# statistics no reader uses, so a point query on event_time reads every file whatever the layout.
QUERY_COLS = ("session_id", "user_id", "amount")
THREE = ["session_id", "user_id", "amount"]
STEPS = [("linear (session_id)", ["session_id"], "linear"),
         ("zorder (session_id, user_id)", ["session_id", "user_id"], "zorder"),
         ("hilbert (session_id, user_id)", ["session_id", "user_id"], "hilbert"),
         ("zorder (session_id, user_id, amount)", THREE, "zorder"),
         ("hilbert (session_id, user_id, amount)", THREE, "hilbert")]

# Goals (printed, never asserted).
GOAL_ROWS_SHARE = 0.02     # a point query on session_id scans at most 2% of the rows ...
GOAL_SPEEDUP = 2.0         # ... and runs at least 2x faster than before clustering
GOAL_FILES_RATIO = 3.0     # user_id point query: zorder / hilbert scan 3x fewer files than linear
GOAL_GRID = 1.5            # curves: a point query on each clustered column reads at most 1.5 x
                           # a balanced grid's N^(1-1/k) files of N (k columns) and share of rows
GOAL_SIZE = (0.5, 1.25)    # ... with every file but one within these multiples of the target


def main(argv=None):
    """Parse the arguments, write, cluster and query the table, report."""
    return run_benchmark(argv, parse_args, run, report)


# ----------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------
def events(spark, rows, days, sessions, users, partitions, seed=SEED):
    """Events of `sessions` sessions (about rows / sessions events each) of `users` users,
    arriving over `days` days. A session's events are spread over the whole period, so each
    arrival batch holds a few events of most sessions; session ids are random (md5), not
    ordered like users, so sorting by one column says nothing about the other. ~80 B/row."""
    from pyspark.sql import functions as F

    s = F.pmod(F.xxhash64("id", F.lit(11)), F.lit(sessions))
    secs = F.floor(F.rand(seed) * (days * 86400)).cast("long")
    types = F.array(*[F.lit(x) for x in ("view", "click", "search", "add_to_cart", "purchase")])
    return (
        spark.range(0, rows, 1, partitions)
        .withColumn("s", s)
        .withColumn("secs", secs)
        .select(
            F.col("id").alias("event_id"),
            F.substring(F.md5(F.concat(F.lit("session-"), F.col("s").cast("string"))), 1, 20)
            .alias("session_id"),
            F.pmod(F.xxhash64("s", F.lit(13)), F.lit(users)).alias("user_id"),
            F.timestamp_seconds(F.lit(START_EPOCH) + F.col("secs")).alias("event_time"),
            F.element_at(types, (F.pmod(F.xxhash64("id", F.lit(2)), F.lit(5)) + 1).cast("int"))
            .alias("event_type"),
            F.round(F.rand(seed + 1) * 500, 2).alias("amount"),
            F.substring(F.sha2(F.col("id").cast("string"), 256), 1, 40).alias("payload"),
            F.floor(F.col("secs") / 86400).cast("int").alias("batch"),
        )
    )


def write_arrivals(spark, args, target, log):
    """The table as arrival batches make it: one ours 'insert' per day, small_file_limit 0
    (no packing into earlier files), distribution exact. Returns per-write seconds."""
    from pyspark.sql import functions as F

    cfg = parse_config({"incremental_strategy": "insert", "target_file_size": target,
                        "small_file_limit": 0, "distribution": "exact"})
    spark.sql(f"DROP TABLE IF EXISTS {SCHEMA}.{TABLE}")
    walls = []
    for b in range(args.batches):
        t0 = time.perf_counter()
        batch = spark.table(SOURCE).where(F.col("batch") == b).select(*COLS)
        write_dataframe(spark, batch, TableRef(SCHEMA, TABLE), cfg, log=log)
        walls.append(time.perf_counter() - t0)
    return walls


# ----------------------------------------------------------------------------------------
# Metrics of a query
# ----------------------------------------------------------------------------------------
def scan_metrics(df):
    """{metric name: value} summed over the FileSourceScanExec nodes of df's executed plan
    (run the query first). Spark 4.x names: numFiles ('number of files read': the files of
    the selected partitions, listed before any row-group skipping), numOutputRows ('number
    of output rows': rows of the row groups the Parquet reader did not skip, before the
    Filter above it), filesSize, numPartitions, metadataTime, scanTime."""
    totals = {}

    def walk(node):
        if node.getClass().getSimpleName() == "FileSourceScanExec":
            metrics = node.metrics()
            it = metrics.keySet().iterator()
            while it.hasNext():
                key = it.next()
                totals[key] = totals.get(key, 0) + metrics.apply(key).value()
        if node.getClass().getSimpleName() == "AdaptiveSparkPlanExec":
            walk(node.executedPlan())
        children = node.children()
        for i in range(children.size()):
            walk(children.apply(i))

    walk(df._jdf.queryExecution().executedPlan())
    return totals


def files_read(spark, build_query, largest_file):
    """Files the Parquet reader really read rows from: run the query with one file per task
    (maxPartitionBytes and openCostInBytes = the largest file + 1) and count the tasks whose
    input metrics show records read (a file whose row groups were all skipped by their
    statistics or dictionaries reads its footer only). Per-task metrics come from Spark's
    status store (kept without the UI). Returns (files read, tasks) or (None, None)."""
    sc = spark.sparkContext
    group = f"files-read-{time.time_ns()}"
    with conf_set(spark, **{"spark.sql.files.maxPartitionBytes": largest_file + 1,
                            "spark.sql.files.openCostInBytes": largest_file + 1}):
        sc.setJobGroup(group, "files read")
        try:
            build_query().collect()
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)
            sc.setLocalProperty("spark.job.description", None)
    try:
        jsc = sc._jsc.sc()
        jsc.listenerBus().waitUntilEmpty()
        store = jsc.statusStore()
        tracker = sc.statusTracker()
        read = tasks = 0
        for job in tracker.getJobIdsForGroup(group):
            for stage in tracker.getJobInfo(job).stageIds:
                info = tracker.getStageInfo(stage)
                seq = store.taskList(stage, info.currentAttemptId, 1_000_000)
                for i in range(seq.size()):
                    metrics = seq.apply(i).taskMetrics()
                    if metrics.isEmpty():
                        continue
                    tasks += 1
                    if metrics.get().inputMetrics().recordsRead() > 0:
                        read += 1
        return read, tasks
    except Exception as exc:  # the status store is Spark-internal: report, do not fail
        print(f"    (files read not measured: {exc.__class__.__name__}: {exc})", flush=True)
        return None, None


def minmax_files(table_layout, col, value):
    """Files whose [min, max] of col holds value: what file-level min/max skipping reads."""
    n = 0
    for f in table_layout.files:
        rng = {c: (lo, hi) for c, lo, hi in f.ranges}
        lo, hi = rng[col]
        if lo is not None and hi is not None and lo <= value <= hi:
            n += 1
    return n


@dataclass(frozen=True)
class Queries:
    """The point queries of every state: the values per query column, the table's rows
    (for the share scanned), timed runs per value, the progress log."""
    values: dict
    table_rows: int
    runs: int
    log: Callable[[str], None]
    target: int


def measure_state(spark, label, queries):
    """Point queries in the table's current state: averages per query column."""
    from pyspark.sql import functions as F

    values, runs, log = queries.values, queries.runs, queries.log
    lay = layout(spark, TableRef(SCHEMA, TABLE), cluster_by=list(QUERY_COLS))
    sizes = [f.bytes for f in lay.files]
    largest = max(sizes)
    out = {"label": label, "files": len(sizes), "bytes": sum(sizes),
           "median_file": statistics.median(sizes), "queries": {},
           "off_size": sum(1 for b in sizes
                           if not GOAL_SIZE[0] * queries.target <= b <= GOAL_SIZE[1] * queries.target)}
    for col in QUERY_COLS:
        def query(v, col=col):
            return spark.table(f"{SCHEMA}.{TABLE}").where(F.col(col) == F.lit(v))
        query(values[col][0]).collect()  # warm-up (untimed): JIT, footer and listing caches
        per = []
        for v in values[col]:
            walls = []
            for _ in range(runs):
                df = query(v)
                t0 = time.perf_counter()
                found = df.collect()
                walls.append(time.perf_counter() - t0)
            m = scan_metrics(df)
            read, tasks = files_read(spark, lambda v=v: query(v), largest)
            holding = query(v).select(F.col("_metadata.file_path")).distinct().count()
            per.append({"rows": m.get("numOutputRows", 0), "num_files": m.get("numFiles", 0),
                        "read": read, "tasks": tasks, "minmax": minmax_files(lay, col, v),
                        "holding": holding,
                        "wall": min(walls), "found": len(found)})
            log(f"{label}, {col} = {v}: {len(found)} rows found, scan output "
                f"{per[-1]['rows']:,} rows, numFiles {per[-1]['num_files']}, files read "
                f"{read} of {tasks} tasks, min/max {per[-1]['minmax']}, holding {holding}, "
                f"{min(walls) * 1000:.0f} ms (best of {runs})")
        mean = lambda key: (statistics.fmean(p[key] for p in per)  # noqa: E731
                            if all(p[key] is not None for p in per) else None)
        out["queries"][col] = {k: mean(k) for k in ("rows", "num_files", "read", "minmax",
                                                    "holding", "wall", "found")}
        out["queries"][col]["share"] = out["queries"][col]["rows"] / queries.table_rows
    return out


# ----------------------------------------------------------------------------------------
# The run
# ----------------------------------------------------------------------------------------
@dataclass
class Clustering:
    """What one run measured."""
    target: int             # the target file size of the writes and the clustering, bytes
    work: Run               # the output and work directories
    sessions: int
    users: int
    table_rows: int
    states: list            # measure_state() before clustering and after each step
    group: Optional[int]    # the clustering's max_bytes_per_group (None: the engine's default)
    version: str            # the engine's code (engine_state)
    spark_version: str


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--batches", type=int, default=30, help="arrival batches = days (30)")
    ap.add_argument("--sessions", type=int, default=None,
                    help="sessions (default rows / 15: ~15 events per session)")
    ap.add_argument("--users", type=int, default=None,
                    help="users (default sessions / 64: ~64 sessions per user, so a user's rows "
                         "span many sessions and sorting by session_id scatters them)")
    ap.add_argument("--target", default="1MB", help="target file size of writes and clustering")
    ap.add_argument("--max-bytes-per-group", default="all",
                    help="clustering group size (sized_cluster's cluster_max_bytes_per_group): 'all' = "
                         "the table's bytes, one group, a total order over the table; "
                         "'default' = the engine's default (2GB, or 16 x target when larger)")
    ap.add_argument("--queries", type=int, default=3, help="random values per query column (3)")
    ap.add_argument("--runs", type=int, default=2,
                    help="timed runs per value, the best is kept (2)")
    ap.add_argument("--input-partitions", type=int, default=8)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--verbose", action="store_true", help="print the engine's progress log")
    ap.add_argument("--keep", action="store_true")
    return ap.parse_args(argv)


def write_source(spark, args, sessions, users):
    """The events, once, as SOURCE; returns the query values per column (random existing
    values, the same in every state)."""
    from pyspark.sql import functions as F

    say("materializing the events (bench.cl_source, partitioned by arrival batch) ...")
    t0 = time.perf_counter()
    save_table(spark, events(spark, args.rows, args.batches, sessions, users,
                             args.input_partitions), SOURCE, partition_by=("batch",))
    rng = random.Random(SEED)
    values = {}
    for col in QUERY_COLS:
        pool = [r[0] for r in spark.table(SOURCE).select(col).distinct()
                .orderBy(F.rand(SEED)).limit(50).collect()]
        values[col] = sorted(rng.sample(pool, args.queries))
    say(f"  done ({time.perf_counter() - t0:.1f}s); query values: "
        + "; ".join(f"{c} in {values[c]}" for c in QUERY_COLS))
    return values


def write_table(spark, args, log):
    """The table as the arrival batches write it; returns its rows."""
    say(f"writing the table in {args.batches} arrival batches (ours insert, "
        f"small_file_limit 0) ...")
    t0 = time.perf_counter()
    walls = write_arrivals(spark, args, args.target, log)
    table_rows = spark.table(f"{SCHEMA}.{TABLE}").count()
    say(f"  done ({time.perf_counter() - t0:.1f}s, median write {statistics.median(walls):.1f}s)")
    return table_rows


def group_size(args, table_bytes, target):
    """max_bytes_per_group of the clustering runs: None = the engine's default."""
    if args.max_bytes_per_group == "default":
        return None
    if args.max_bytes_per_group == "all":
        return table_bytes + target
    return parse_size(args.max_bytes_per_group, "--max-bytes-per-group")


def last_instant(spark):
    """The table's last completed instant."""
    rows = timeline(spark, TableRef(SCHEMA, TABLE))
    return [r[0] for r in rows if r[3] == "completed"][-1]


def same_start(spark, steps, done, starts):
    """Before a curve step on the columns the step before it clustered (zorder, then
    hilbert): the table restored to the layout that step started from, so both curves'
    jobs read the same files and are timed on the same input (otherwise hilbert would
    re-cluster zorder's files, whose bytes plan it more files)."""
    step = steps[done]
    if done and step[2] != "linear" and steps[done - 1][1] == step[1]:
        say(f"restoring the layout {steps[done - 1][0]} started from ...")
        restore(spark, TableRef(SCHEMA, TABLE), starts[done - 1], log=lambda m: None)


def cluster_and_measure(spark, step, options, queries):
    """One clustering run (label, columns, strategy) of the whole table, then its state."""
    label, cols, strategy = step
    say(f"clustering: {label} ...")
    t0 = time.perf_counter()
    res = cluster(spark, TableRef(SCHEMA, TABLE), cols, strategy, options=options,
                  log=queries.log)
    wall = time.perf_counter() - t0
    say(f"  {res.message} (wall {wall:.1f}s)")
    say(f"measuring: {label} ...")
    st = measure_state(spark, label, queries)
    st.update(job_s=res.seconds, wall_s=wall, groups=res.groups, replaced=res.files_replaced)
    rows_now = spark.table(f"{SCHEMA}.{TABLE}").count()
    if rows_now != queries.table_rows:
        say(f"  ROW COUNT CHANGED: {rows_now:,} (was {queries.table_rows:,})")
    return st


def run(args):
    """The table written in arrival batches, measured, then clustered five times in a row,
    measured after each."""
    target = parse_size(args.target, "--target")
    sessions = args.sessions or max(1, args.rows // 15)
    users = args.users or max(1, sessions // 64)
    work = start_run(args.out, "clustering-")
    say(f"clustering benchmark: {args.rows:,} rows in {args.batches} arrival batches, "
        f"{sessions:,} sessions, {users:,} users, target {args.target} ({target:,} B), "
        f"work dir {work.tmp}")
    version = engine_state()
    log = (lambda m: print(f"    {m}", flush=True)) if args.verbose else (lambda m: None)
    spark = start_spark(work.tmp, args.driver_memory)
    try:
        values = write_source(spark, args, sessions, users)
        queries = Queries(values, write_table(spark, args, log), args.runs, log, target)
        say("measuring: before clustering ...")
        states = [measure_state(spark, "before clustering", queries)]
        group = group_size(args, states[0]["bytes"], target)
        say(f"  {states[0]['files']} files, {states[0]['bytes'] / 1e6:,.1f} MB, "
            f"{queries.table_rows:,} rows")
        options = {"target_file_size": target, "cluster_max_bytes_per_group": group}
        starts = []
        for i, step in enumerate(STEPS):
            same_start(spark, STEPS, i, starts)
            starts.append(last_instant(spark))
            states.append(cluster_and_measure(spark, step, options, queries))
        return Clustering(target, work, sessions, users, queries.table_rows, states, group,
                          version, spark.version)
    finally:
        spark.stop()


# ----------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------
def fmt(x, spec=",.0f"):
    return "-" if x is None else format(x, spec)


def state_rows(states):
    head = ["state", "files", "median file kB", "clustering job s", "clustering wall s"]
    body = [[s["label"], f"{s['files']:,}", f"{s['median_file'] / 1000:,.0f}",
             fmt(s.get("job_s"), ".1f"), fmt(s.get("wall_s"), ".1f")] for s in states]
    return head, body


def query_rows(states):
    head = ["state", "query on", "rows found", "rows scanned", "% of rows", "numFiles",
            "files read", "files by min/max", "files holding", "wall ms", "speed-up vs before"]
    before = states[0]["queries"]
    body = []
    for col in QUERY_COLS:
        for s in states:
            q = s["queries"][col]
            body.append([s["label"], col, f"{q['found']:,.1f}", f"{q['rows']:,.0f}",
                         f"{100 * q['share']:.2f}%", f"{q['num_files']:,.1f}",
                         fmt(q["read"], ",.1f"), f"{q['minmax']:,.1f}", f"{q['holding']:,.1f}",
                         f"{q['wall'] * 1000:,.0f}",
                         f"{before[col]['wall'] / q['wall']:.2f}x"])
    return head, body


def goal_lines(states):
    before = states[0]["queries"]["session_id"]
    by = {s["label"]: s["queries"] for s in states}
    lines = []
    for s, (_label, cols, _strategy) in zip(states[1:], STEPS):
        if len(cols) > 2:  # a grid over 3 columns cuts each one in fewer ranges (grid_lines)
            continue
        q = s["queries"]["session_id"]
        speed = before["wall"] / q["wall"]
        lines.append(
            f"{s['label']}: session_id point query scans {100 * q['share']:.2f}% of the rows "
            f"-> {'PASS' if q['share'] <= GOAL_ROWS_SHARE else 'FAIL'} (goal: at most "
            f"{100 * GOAL_ROWS_SHARE:.0f}%); {speed:.2f}x faster than before -> "
            f"{'PASS' if speed >= GOAL_SPEEDUP else 'FAIL'} (goal: at least {GOAL_SPEEDUP:g}x)")
    lin = by.get("linear (session_id)")
    for label in ("zorder (session_id, user_id)", "hilbert (session_id, user_id)"):
        q = by.get(label)
        if q is None or lin is None:
            continue
        q, l_ = q["user_id"], lin["user_id"]
        for key, name in (("num_files", "numFiles"), ("read", "files read"),
                          ("minmax", "files by min/max")):
            if q[key] is None or l_[key] is None:
                continue
            ratio = l_[key] / q[key] if q[key] else float("inf")
            lines.append(
                f"{label}: user_id point query, {name}: {q[key]:,.1f} vs {l_[key]:,.1f} after "
                f"linear = {ratio:.2f}x fewer -> {'PASS' if ratio >= GOAL_FILES_RATIO else 'FAIL'}"
                f" (goal: at least {GOAL_FILES_RATIO:g}x fewer)"
                + (" [the goal's metric: files scanned]" if key == "read" else ""))
    return lines + grid_lines(states)


def grid_lines(states):
    """Each curve state against a balanced grid of its N files over its k columns: a point
    query on one column meets N^(1-1/k) files, a share N^(-1/k) of the rows."""
    lines = []
    for s, (_label, cols, strategy) in zip(states[1:], STEPS):
        if strategy == "linear":
            continue
        n, k = s["files"], len(cols)
        files, share = n ** (1 - 1 / k), n ** (-1 / k)
        for col in cols:
            q = s["queries"][col]
            measured = [("files by min/max", q["minmax"], files, ",.1f"),
                        ("files read", q["read"], files, ",.1f"),
                        ("rows scanned", q["share"], share, ".2%")]
            parts = [_against_grid(*m) for m in measured]
            ok = all(got is not None and got <= GOAL_GRID * limit
                     for _n, got, limit, _spec in measured)
            lines.append(f"{s['label']}: {col} point query: {'; '.join(parts)} -> "
                         f"{'PASS' if ok else 'FAIL'} (goal: at most {GOAL_GRID:g}x)")
        lines.append(f"{s['label']}: {s['off_size']} of {n} files outside "
                     f"{GOAL_SIZE[0]:g}-{GOAL_SIZE[1]:g} x target -> "
                     f"{'PASS' if s['off_size'] <= 1 else 'FAIL'} (goal: at most one)")
    return lines


def _against_grid(name, got, limit, spec):
    """'<name> <got> = <ratio>x the grid's <limit>' (got None: not measured)."""
    ratio = None if got is None else got / limit
    return f"{name} {fmt(got, spec)} = {fmt(ratio, '.2f')}x the grid's {format(limit, spec)}"


def notes(args, res):
    """The notes under the tables."""
    target, states, group = res.target, res.states, res.group
    return [
        f"Table: unpartitioned, columns {', '.join(COLS)}; {res.sessions:,} sessions (random md5 "
        f"ids) of {res.users:,} users, each session's events spread over the {args.batches} "
        f"arrival days. Written by ours, one `insert` per day, small_file_limit 0, "
        f"distribution exact: {states[0]['files']} files, {states[0]['bytes'] / 1e6:,.1f} MB.",
        "The same table is clustered five times in a row (linear, then zorder and hilbert on "
        "two columns, then on three); every run rewrites all files of the previous layout (all are below the "
        "clustering small-file limit, 3 x 100/128 of the target when the writes' limit is 0). "
        "Each hilbert run starts from the layout its zorder run started from (the table restored "
        "by the engine's restore before it), so both curves' jobs read the same files.",
        "Clustering options: target_file_size " + f"{target:,} B, max_bytes_per_group "
        + ("the engine's default (2GB, or 16 x target when larger)" if group is None else
           f"{group:,} B = the table's bytes + one target: one group, so the whole table is "
           f"one sort order") + "; other options the engine's defaults.",
        f"Point queries: `spark.table(t).where(col == value).collect()`, {args.queries} random "
        f"existing values per column (the same in every state), each timed {args.runs} times "
        f"(best kept) after one untimed warm-up query; figures are means over the values.",
        "rows scanned = the scan's numOutputRows (rows of the row groups the Parquet reader "
        "did not skip by statistics or dictionary, before the Filter); numFiles = the scan's "
        "'number of files read' metric: the files Spark lists and schedules, before any "
        "row-group skipping; files read = files with at least one row group read (tasks with "
        "records read when every file is its own task); files by min/max = files whose "
        "[min, max] of the column (Parquet footers) holds the value, what file-level min/max "
        "skipping would open; files holding = files with at least one matching row "
        "(distinct _metadata.file_path of the result), the least any skipping can read.",
        "Wall = wall-clock of the query (planning, listing from cache, scan, collect), "
        "local[2] on a shared machine. Clustering job s = the engine's ClusterResult.seconds.",
        res.version + ".",
    ]


def report(args, res, argv):
    """Print the tables, notes and goal checks; write clustering.md."""
    shead, sbody = state_rows(res.states)
    qhead, qbody = query_rows(res.states)
    goals = goal_lines(res.states)
    lines = notes(args, res)
    title = (f"Clustering: {res.table_rows:,} rows written in {args.batches} arrival batches, "
             f"target {args.target}")

    print_section(title, shead, sbody)
    say("")
    say(text_table(qhead, qbody))
    print_notes(lines)
    print_section("goal check (printed, not asserted):", notes=goals, bullet="  ")

    md = [
        *md_header(title, command_line("clustering.py", argv), res.spark_version),
        md_table(shead, sbody), "",
        md_table(qhead, qbody), "",
        *md_bullets(lines), "",
        "## Goal check (printed, not asserted)", "",
        *md_bullets(goals), "",
    ]
    finish_run(res.work, "clustering.md", md, args.keep)


if __name__ == "__main__":
    sys.exit(main())
