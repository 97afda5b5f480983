#!/usr/bin/env python
"""Backfill benchmark: one year of daily partitions written once with each method, same data.

    python benchmarks/backfill.py [--rows 3000000] [--target 1MB] [--out benchmarks/out]

Methods (each into its own metastore Parquet table partitioned by event_date):
  ours range            python_adapter write_dataframe, distribution='range'
  ours exact            python_adapter write_dataframe, distribution='exact'
  dbt insert_overwrite  what dbt-spark's incremental insert_overwrite runs on parquet:
                        INSERT OVERWRITE TABLE t PARTITION (event_date) SELECT ... FROM source
                        with spark.sql.sources.partitionOverwriteMode=dynamic
  AQE rebalance         the same INSERT with /*+ REBALANCE(event_date) */, AQE on,
                        advisoryPartitionSizeInBytes = target (parallelismFirst off)
  coalesce(n)           source.coalesce(n), n = the common ideal file count
  hash (date, rand%k)   source.repartition(n, event_date, floor(rand*k)), k = ceil(n / dates)

Prints one table (files, ideal, file sizes, small files, wall time), the goal checks and the
study's hash-collision analysis (365 dates x 5 files into 365*5 sPartitions); writes
<out>/backfill.md and <out>/backfill_sizes.png. See benchmarks/README.md.
"""
import argparse
import math
import os
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import date

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks.lib import DEFAULT_OUT, plots  # noqa: E402
from benchmarks.lib.data import DAYS, MONTHLY_GROWTH, SCHEMA, SEED, SOURCE_VIEW, START  # noqa: E402
from benchmarks.lib.report import (Run, command_line, finish_run, md_bullets,  # noqa: E402
                                   md_header, md_table, print_section, run_benchmark,
                                   start_run)
from benchmarks.lib.session import conf_set, start_spark  # noqa: E402
from benchmarks.lib.tables import (backfill_config, create_plain_table,  # noqa: E402
                                   drop_engine_cache, first_week_view, insert_overwrite_df,
                                   insert_overwrite_sql, materialize_source)
from python_adapter.api import TableRef, layout, write_dataframe  # noqa: E402
from python_adapter.core.layout import size_stats  # noqa: E402
from python_adapter.core.planning import ideal_file_count  # noqa: E402
from python_adapter.core.routing import routing_keys, spark_hash_int, spark_hash_long  # noqa: E402
from python_adapter.core.sizes import parse_size  # noqa: E402

BASELINE = "dbt insert_overwrite"

# Goals of the project (printed, never asserted).
GOAL_EXTRA_FILES = 0.05
GOAL_MAX_RATIO = 1.25
GOAL_TIME_RATIO = 1.3


def main(argv=None):
    """Parse the arguments, write the backfill with every method and measure it, report."""
    return run_benchmark(argv, parse_args, run, report)


# ----------------------------------------------------------------------------------------
# Methods
# ----------------------------------------------------------------------------------------
def run_ours(spark, name, distribution, target, log):
    cfg = backfill_config(target, distribution)
    spark.sql(f"DROP TABLE IF EXISTS {SCHEMA}.{name}")
    t0 = time.perf_counter()
    write_dataframe(spark, spark.table(SOURCE_VIEW), TableRef(SCHEMA, name), cfg,
                    full_refresh=True, log=log)
    wall = time.perf_counter() - t0
    drop_engine_cache(spark, SOURCE_VIEW)
    return wall


def run_dbt(spark, name):
    t0 = time.perf_counter()
    create_plain_table(spark, name)
    insert_overwrite_sql(spark, name)
    return time.perf_counter() - t0


def run_aqe(spark, name, target_bytes):
    t0 = time.perf_counter()
    create_plain_table(spark, name)
    with conf_set(spark, **{
            "spark.sql.adaptive.enabled": "true",
            "spark.sql.adaptive.coalescePartitions.enabled": "true",
            "spark.sql.adaptive.coalescePartitions.parallelismFirst": "false",
            "spark.sql.adaptive.optimizeSkewsInRebalancePartitions.enabled": "true",
            "spark.sql.adaptive.advisoryPartitionSizeInBytes": str(target_bytes)}):
        insert_overwrite_sql(spark, name, hint="/*+ REBALANCE(event_date) */ ")
    return time.perf_counter() - t0


def run_coalesce(spark, name, n):
    t0 = time.perf_counter()
    create_plain_table(spark, name)
    insert_overwrite_df(spark, name, spark.table(SOURCE_VIEW).coalesce(n))
    return time.perf_counter() - t0


def run_hash(spark, name, n, k):
    from pyspark.sql import functions as F

    t0 = time.perf_counter()
    create_plain_table(spark, name)
    df = (spark.table(SOURCE_VIEW)
          .withColumn("__salt", F.floor(F.rand(SEED) * k))
          .repartition(n, F.col("event_date"), F.col("__salt"))
          .drop("__salt"))
    insert_overwrite_df(spark, name, df)
    return time.perf_counter() - t0


def warm_up(spark, target, log):
    """One untimed small write per code path (JVM JIT, metastore, Parquet writer)."""
    first_week_view(spark, START)
    create_plain_table(spark, "warmup_plain")
    insert_overwrite_sql(spark, "warmup_plain", source="warmup_src")
    write_dataframe(spark, spark.table("warmup_src"), TableRef(SCHEMA, "warmup_ours"),
                    backfill_config(target, "exact"), full_refresh=True, log=log)
    drop_engine_cache(spark, "warmup_src")
    for t in ("warmup_plain", "warmup_ours"):
        spark.sql(f"DROP TABLE IF EXISTS {SCHEMA}.{t}")


# ----------------------------------------------------------------------------------------
# Measuring
# ----------------------------------------------------------------------------------------
def measure(spark, name, target):
    files = layout(spark, TableRef(SCHEMA, name)).files
    sizes = [f.bytes for f in files]
    by_part = defaultdict(int)
    for f in files:
        by_part[f.partition] += f.bytes
    st = size_stats(sizes)
    return {
        "sizes": sizes,
        "files": len(sizes),
        "rows": sum(f.rows for f in files),
        "bytes": sum(sizes),
        "partitions": len(by_part),
        "bytes_by_partition": dict(by_part),
        "ideal_own": ideal_file_count(by_part, target),
        "min": st["min"], "median": st["median"], "max": st["max"], "cv": st["cv"],
        "small": sum(1 for s in sizes if s < target / 2),
        "over": sum(1 for s in sizes if s > GOAL_MAX_RATIO * target),
    }


# ----------------------------------------------------------------------------------------
# Hash-collision analysis of the study (365 dates x 5 files into 365*5 sPartitions)
# ----------------------------------------------------------------------------------------
def naive_partition(day_index, salt, n):
    """pmod(hash(event_date, salt), n): Spark hashes columns in turn, each with the previous
    hash as seed (date = int days since epoch via hashInt, salt = bigint via hashLong)."""
    days = (START - date(1970, 1, 1)).days + day_index
    return spark_hash_long(salt, seed=spark_hash_int(days, 42)) % n


def collision_figures(assignment, n):
    """assignment: [(sPartition, key, date index, rows)].
    efficiency = used sPartitions / n; collision = share of used sPartitions holding more than
    one key; severe = 3 or more keys; max load = biggest sPartition's rows / rows per file."""
    keys = defaultdict(set)
    dates = defaultdict(set)
    load = Counter()
    for p, key, d, rows in assignment:
        keys[p].add(key)
        dates[p].add(d)
        load[p] += rows
    used = len(keys)
    per_file = sum(load.values()) / n
    return {
        "used": used,
        "efficiency": used / n,
        "collision": sum(1 for k in keys.values() if len(k) > 1) / used,
        "severe": sum(1 for k in keys.values() if len(k) >= 3) / used,
        "max_keys": max(len(k) for k in keys.values()),
        "max_load": max(load.values()) / per_file,
        "files": sum(len(d) for d in dates.values()),
    }


def collision_analysis(spark, dates=DAYS, per_date=5, rows_per_key=600):
    from pyspark.sql import functions as F

    n = dates * per_date
    results = {}

    # Naive: key (date, salt), salt in 0..per_date-1, n sPartitions: pure Python.
    naive = [(naive_partition(d, s, n), (d, s), d, 1)
             for d in range(dates) for s in range(per_date)]
    results["naive"] = collision_figures(naive, n)

    # Ours exact: file id i = d*per_date + s routed by routing_keys: pure Python.
    keys = routing_keys(n)
    exact = [(spark_hash_long(keys[d * per_date + s]) % n, d * per_date + s, d, 1)
             for d in range(dates) for s in range(per_date)]
    results["exact"] = collision_figures(exact, n)

    # Cross-check both against Spark's real shuffle: one row per key, spark_partition_id()
    # after Spark's own repartition(n, ...).
    def with_date(df):
        return df.withColumn("event_date",
                             F.date_add(F.lit(START.isoformat()).cast("date"), F.col("d")))

    one = with_date(spark.range(0, n, 1, 2)
                    .withColumn("d", (F.col("id") % dates).cast("int"))
                    .withColumn("s", (F.floor(F.col("id") / dates) % per_date).cast("long")))
    got_naive = {(r.d, r.s): r.p for r in
                 one.repartition(n, "event_date", "s")
                 .select("d", "s", F.spark_partition_id().alias("p")).collect()}
    want_naive = {key: p for p, key, _d, _r in naive}
    route = spark.createDataFrame([(i, k) for i, k in enumerate(keys)], "fid long, route long")
    got_exact = {r.fid: r.p for r in
                 one.withColumn("fid", F.col("d") * per_date + F.col("s"))
                 .join(F.broadcast(route), "fid").repartition(n, "route")
                 .select("fid", F.spark_partition_id().alias("p")).collect()}
    want_exact = {key: p for p, key, _d, _r in exact}
    agree = got_naive == want_naive and got_exact == want_exact

    # Ours range: repartitionByRange(n, hash(date), rand) places its bounds from a sample, so
    # there is no closed form: measured in Spark on 365 equal dates of 5 files' rows each.
    # rows_per_key is large enough that Spark really samples (it reads whole input
    # partitions when they hold fewer than 3 x 100 x n / inputs rows, making bounds exact).
    many = with_date(spark.range(0, n * rows_per_key, 1, 2)
                     .withColumn("d", (F.col("id") % dates).cast("int")))
    rows = (many.withColumn("h", F.hash("event_date")).withColumn("r", F.rand(SEED))
            .repartitionByRange(n, "h", "r")
            .groupBy(F.spark_partition_id().alias("p"), "d").count().collect())
    results["range"] = collision_figures([(r.p, r.d, r.d, r["count"]) for r in rows], n)
    return n, results, agree


# ----------------------------------------------------------------------------------------
# The run
# ----------------------------------------------------------------------------------------
@dataclass
class Backfill:
    """What one run measured."""
    target: int        # the target file size in bytes
    work: Run          # the output and work directories
    source: dict       # the source's rows, bytes, files, splits (materialize_source)
    rows: list         # one measure() per method, in report order, with method, table, wall
    exact: dict        # ours exact's row: its ideal is the common ideal, its bytes the data's
    n: int             # coalesce(n) and hash's repartition(n): the common ideal
    k: int             # hash's salts per date
    collisions: tuple  # (sPartitions, figures per key kind, agree with Spark's shuffle)
    spark_version: str

    @property
    def baseline(self):
        return next(r for r in self.rows if r["method"] == BASELINE)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=3_000_000, help="rows in the backfill (3000000)")
    ap.add_argument("--target", default="1MB", help="target file size (1MB = 1,000,000 bytes)")
    ap.add_argument("--out", default=DEFAULT_OUT, help="output directory")
    ap.add_argument("--input-partitions", type=int, default=16,
                    help="files of the source table = input sPartitions of every method (16)")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--keep", action="store_true",
                    help="keep the warehouse and metastore under <out>/ (deleted by default)")
    return ap.parse_args(argv)


def prepare(spark, args, target):
    """The source every method reads, and an untimed warm-up; returns the source's figures."""
    print("materializing the source table ...", flush=True)
    t0 = time.perf_counter()
    _source_df, src = materialize_source(spark, args.rows, args.input_partitions)
    print(f"  source: {src['rows']:,} rows, {src['bytes'] / 1e6:,.1f} MB in {src['files']} "
          f"Parquet files, checkpointed in memory as {src['splits']} sPartitions "
          f"({time.perf_counter() - t0:.1f}s)", flush=True)
    print("warming up (untimed small writes) ...", flush=True)
    t0 = time.perf_counter()
    warm_up(spark, target, lambda m: None)
    print(f"  warm-up done ({time.perf_counter() - t0:.1f}s)", flush=True)
    return src


def measured(spark, target, method, name, wall):
    """measure() of the table a method wrote, with the method's name and wall time."""
    t0 = time.perf_counter()
    m = measure(spark, name, target)
    m.update(method=method, table=name, wall=wall)
    print(f"  {method}: {m['files']:,} files, {m['bytes'] / 1e6:,.1f} MB, "
          f"{m['rows']:,} rows, write {wall:.1f}s "
          f"(layout read in {time.perf_counter() - t0:.1f}s)", flush=True)
    return m


def write_every_method(spark, target):
    """Each method's timed write and its measures, in report order; the baseline timed
    twice (first and last write). Returns (rows, ours exact's row, n, k)."""
    log = lambda msg: print(f"    {msg}", flush=True)  # noqa: E731
    rows = []

    def step(label, method, name, write):
        print(label, flush=True)
        rows.append(measured(spark, target, method, name, write()))
        return rows[-1]

    step(f"[1/6] {BASELINE} ...", BASELINE, "dbt_insert_overwrite",
         lambda: run_dbt(spark, "dbt_insert_overwrite"))
    exact = step("[2/6] ours exact ...", "ours exact", "ours_exact",
                 lambda: run_ours(spark, "ours_exact", "exact", target, log))
    n = exact["ideal_own"]
    k = max(1, math.ceil(n / exact["partitions"]))
    step("[3/6] ours range ...", "ours range", "ours_range",
         lambda: run_ours(spark, "ours_range", "range", target, log))
    step("[4/6] AQE rebalance ...", "AQE rebalance", "aqe_rebalance",
         lambda: run_aqe(spark, "aqe_rebalance", target))
    step(f"[5/6] coalesce({n}) ...", f"coalesce({n})", "coalesce_n",
         lambda: run_coalesce(spark, "coalesce_n", n))
    step(f"[6/6] hash (date, rand%{k}), repartition({n}) ...", f"hash (date, rand%{k})",
         "hash_rand", lambda: run_hash(spark, "hash_rand", n, k))
    time_baseline_again(spark, rows)
    order = ["ours range", "ours exact", BASELINE, "AQE rebalance"]
    rows.sort(key=lambda r: order.index(r["method"]) if r["method"] in order else 99)
    return rows, exact, n, k


def time_baseline_again(spark, rows):
    """The baseline's second write, last: its wall becomes the faster of the two."""
    print(f"[7/7] {BASELINE} again (timed twice: first and last write) ...", flush=True)
    again = run_dbt(spark, "dbt_insert_overwrite_2")
    spark.sql(f"DROP TABLE IF EXISTS {SCHEMA}.dbt_insert_overwrite_2")
    base = next(r for r in rows if r["method"] == BASELINE)
    base["walls"] = [base["wall"], again]
    base["wall"] = min(base["walls"])
    print(f"  {BASELINE}: write {again:.1f}s; baseline wall = {base['wall']:.1f}s "
          f"(the faster of the two)", flush=True)


def run(args):
    """Every method's write into its own table, measured, and the collision analysis."""
    target = parse_size(args.target, "--target")
    work = start_run(args.out, "backfill-")
    print(f"backfill benchmark: {args.rows:,} rows, target {args.target} ({target:,} B), "
          f"work dir {work.tmp}", flush=True)
    spark = start_spark(work.tmp, args.driver_memory)
    try:
        src = prepare(spark, args, target)
        rows, exact, n, k = write_every_method(spark, target)
        print("hash-collision analysis (study: 365 dates x 5 files) ...", flush=True)
        t0 = time.perf_counter()
        collisions = collision_analysis(spark)
        print(f"  done ({time.perf_counter() - t0:.1f}s)", flush=True)
        return Backfill(target, work, src, rows, exact, n, k, collisions, spark.version)
    finally:
        spark.stop()


# ----------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------
def kb(b):
    return f"{b / 1000:,.0f}"


def results_table(rows, target, common_ideal):
    head = ["method", "files", "ideal (own bytes)", "files / common ideal",
            "min kB", "median kB", "max kB", "max / target", "CV",
            "files < target/2", "wall s", "wall / dbt"]
    base = next(r["wall"] for r in rows if r["method"] == BASELINE)
    body = []
    for r in rows:
        body.append([
            r["method"], f"{r['files']:,}", f"{r['ideal_own']:,}",
            f"{r['files'] / common_ideal:.2f}",
            kb(r["min"]), kb(r["median"]), kb(r["max"]), f"{r['max'] / target:.2f}",
            f"{r['cv']:.2f}",
            f"{r['small']:,} ({100 * r['small'] / max(r['files'], 1):.0f}%)",
            f"{r['wall']:.1f}", f"{r['wall'] / base:.2f}",
        ])
    return head, body


def collision_table(n, res):
    head = ["key -> sPartition", "sPartitions used (efficiency)", "collision rate",
            "severe collision rate", "max keys in one sPartition",
            "max sPartition load / file", "files written"]
    labels = {
        "naive": "naive hash: (date, rand%5), repartition(n)",
        "exact": "ours exact: file id -> routing key",
        "range": "ours range: range on (hash(date), rand)",
    }
    body = []
    for k in ("naive", "exact", "range"):
        f = res[k]
        body.append([labels[k], f"{f['used']:,} / {n:,} ({100 * f['efficiency']:.1f}%)",
                     f"{100 * f['collision']:.1f}%", f"{100 * f['severe']:.1f}%",
                     str(f["max_keys"]), f"{f['max_load']:.2f}x", f"{f['files']:,}"])
    return head, body


def goal_lines(rows, target):
    by = {r["method"]: r for r in rows}
    base = by[BASELINE]["wall"]
    lines = []
    for name in ("ours range", "ours exact"):
        r = by[name]
        extra = r["files"] / r["ideal_own"] - 1
        lines.append(f"{name}: {r['files']} files vs ideal {r['ideal_own']} (own bytes): "
                     f"{100 * extra:+.1f}% -> {'PASS' if extra <= GOAL_EXTRA_FILES else 'FAIL'} "
                     f"(goal: at most {100 * GOAL_EXTRA_FILES:.0f}% more files than ideal)")
        lines.append(f"{name}: largest file {r['max'] / target:.3f} x target, "
                     f"{r['over']} files above {GOAL_MAX_RATIO} x target -> "
                     f"{'PASS' if r['over'] == 0 else 'FAIL'} "
                     f"(goal: no file above {GOAL_MAX_RATIO} x target)")
        ratio = r["wall"] / base
        lines.append(f"{name}: wall {r['wall']:.1f}s = {ratio:.2f} x {BASELINE} ({base:.1f}s) -> "
                     f"{'PASS' if ratio <= GOAL_TIME_RATIO else 'FAIL'} "
                     f"(goal: at most {GOAL_TIME_RATIO} x)")
    return lines


def result_notes(res, target):
    """The notes under the results table."""
    src, exact, n, k, base = res.source, res.exact, res.n, res.k, res.baseline
    rows_ok = all(r["rows"] == src["rows"] for r in res.rows)
    total_bytes = exact["bytes"]
    return [
        f"Input: {src['rows']:,} rows ({src['bytes'] / 1e6:,.1f} MB Parquet, "
        f"{src['bytes'] / src['rows']:.1f} B/row), dates in random order, read by every "
        f"method from one in-memory checkpoint of {src['splits']} sPartitions; "
        f"{DAYS} dates from {START}, volume +{MONTHLY_GROWTH:.0%} month over month; "
        f"as written by ours exact: {total_bytes / 1e6:,.1f} MB, "
        f"{total_bytes / src['rows']:.1f} B/row.",
        f"Common ideal = {n:,} files: sum over the {exact['partitions']} partitions "
        f"of ceil(bytes / target) with the bytes ours exact wrote. 'ideal (own bytes)' is the "
        f"same sum over the bytes each method wrote (small files compress worse, so it differs).",
        f"coalesce(n) and hash use n = {n} (the common ideal); hash uses k = ceil(n / "
        f"{exact['partitions']}) = {k} salts per date.",
        f"Row counts: {'every table holds all ' + format(src['rows'], ',') + ' rows' if rows_ok else 'MISMATCH: ' + ', '.join(r['method'] + '=' + str(r['rows']) for r in res.rows)}.",
        f"Sizes in kB = 1,000 bytes; target = {target:,} bytes. Wall = wall-clock seconds of "
        f"the write (table creation included), local[2], shared machine.",
        f"{BASELINE} was timed twice, as the first and the last write: "
        f"{base['walls'][0]:.1f}s and {base['walls'][1]:.1f}s; its wall (and every 'wall / dbt') "
        f"uses the faster, the least favourable to ours."
        + (f" coalesce(n) with n = {n} above the {src['splits']} input sPartitions is a no-op: "
           f"it does the same work as the baseline, another measure of the noise."
           if n >= src["splits"] else ""),
    ]


def collision_notes(cn, agree):
    """The notes under the hash-collision table."""
    return [
        f"{DAYS} dates x 5 files into {cn:,} sPartitions. Collision rate = share of used "
        f"sPartitions holding more than one key; severe = 3 or more keys. Key = (date, salt) "
        f"for naive hash, the file id for ours exact, the date for ours range (range has no "
        f"discrete file keys; an sPartition holding two dates writes two files).",
        "naive and exact: pure Python with Spark's Murmur3 (hash(date, salt) = "
        "hashLong(salt, seed=hashInt(days, 42)); pmod n); "
        f"checked against spark_partition_id() after Spark's own repartition: "
        f"{'identical' if agree else 'DIFFERENT'}.",
        "ours range: measured in Spark (repartitionByRange samples its bounds, no closed form), "
        "600 rows per (date, file), so Spark samples (about half the rows) as it does on real "
        "data; with tiny inputs it reads everything and the bounds come out exact.",
        "Max sPartition load / file: rows of the fullest sPartition over the rows of one "
        "planned file (1.00 = no skew).",
    ]


def report(args, res, argv):
    """Print the tables, notes and goal checks; write backfill.md and backfill_sizes.png."""
    target, work = res.target, res.work
    head, body = results_table(res.rows, target, res.n)
    cn, coll, agree = res.collisions
    chead, cbody = collision_table(cn, coll)
    goals = goal_lines(res.rows, target)
    notes = result_notes(res, target)
    cnotes = collision_notes(cn, agree)
    title = (f"Backfill: {res.source['rows']:,} rows, {DAYS} daily partitions "
             f"(+{MONTHLY_GROWTH:.0%}/month), target {args.target}")

    print_section(title, head, body, notes)
    print_section("goal check (printed, not asserted):", notes=goals, bullet="  ")
    print_section("hash-collision analysis of the study:", chead, cbody, cnotes)

    png_path = work.path("backfill_sizes.png")
    plots.file_sizes(res.rows, target, res.n, png_path, title, GOAL_MAX_RATIO)
    md = [
        *md_header(title, command_line("backfill.py", argv), res.spark_version),
        md_table(head, body), "",
        *md_bullets(notes), "",
        "## Goal check (printed, not asserted)", "",
        *md_bullets(goals), "",
        "## Hash-collision analysis of the study", "",
        md_table(chead, cbody), "",
        *md_bullets(cnotes), "",
        "![file sizes](backfill_sizes.png)", "",
    ]
    finish_run(work, "backfill.md", md, args.keep, also_written=(png_path,))


if __name__ == "__main__":
    sys.exit(main())
