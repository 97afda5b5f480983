#!/usr/bin/env python
"""Upsert benchmark: 20 incremental batches into the backfill benchmark's table, same batches
for every method.

    python benchmarks/upsert.py [--rows 200000] [--target 64KB] [--batches 20] [--out benchmarks/out]

The foundation table is backfill.py's (a year of daily partitions, +10% a month), written
once by ours and copied file for file into the baselines' tables, so every method starts
from the same files. Each batch holds about 2% new rows (half on a new day, half late
arrivals spread over the 7 days before it) and 1% updates of older rows (spread over
`--update-days` random older days). Methods:
  ours upsert               write_dataframe, incremental_strategy 'upsert' (unique_key event_id)
  dbt append                dbt-spark incremental 'append' on parquet:
                            INSERT INTO TABLE t SELECT ... FROM batch (duplicates updated rows)
  dbt insert_overwrite      dbt-spark incremental 'insert_overwrite' on parquet with the SQL a
                            user must write to get upsert semantics: the touched partitions'
                            old rows minus the updated keys, plus the batch, with
                            partitionOverwriteMode=dynamic
Prints per batch and method: files, files below the small-file limit, bytes rewritten /
bytes ingested, wall time, duplicates; the goal checks for ours; writes <out>/upsert.md and
<out>/upsert_files.png. See benchmarks/README.md.
"""
import argparse
import os
import platform
import random
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime, timedelta, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from backfill import (DATA_COLS, DAYS, SCHEMA, SEED, SOURCE, SOURCE_VIEW, START,  # noqa: E402
                      conf_set, create_plain_table, generated, materialize_source, md_table,
                      finish_run, start_spark, text_table)
from clustering import engine_state  # noqa: E402
from python_adapter.spark.catalog import TableRef, describe_table  # noqa: E402
from python_adapter.core.config import parse_config  # noqa: E402
from python_adapter.io.fs import HadoopFS  # noqa: E402
from python_adapter.core.sizes import parse_size  # noqa: E402
from python_adapter.spark.writer import write_dataframe  # noqa: E402

OURS, APPEND, OVERWRITE = "ours upsert", "dbt append", "dbt insert_overwrite"
METHODS = (OURS, APPEND, OVERWRITE)
TABLES = {OURS: "up_ours", APPEND: "up_dbt_append", OVERWRITE: "up_dbt_insert_overwrite"}
COLS = ", ".join(DATA_COLS + ["event_date"])
BATCHES = f"{SCHEMA}.upsert_batches"      # every batch, partitioned by batch
FIRST_NEW_DAY = START + timedelta(days=DAYS)     # 2026-01-01: batch b adds day FIRST_NEW_DAY + b - 1


def ours_config(target, small_file_limit=None, index_scope="global"):
    raw = {"partition_by": ["event_date"], "unique_key": "event_id",
           "incremental_strategy": "upsert", "target_file_size": target, "distribution": "exact",
           "index_scope": index_scope}
    if small_file_limit is not None:
        raw["small_file_limit"] = small_file_limit
    return parse_config(raw)


# ----------------------------------------------------------------------------------------
# Files of a table
# ----------------------------------------------------------------------------------------
def table_location(spark, name):
    fs = HadoopFS(spark)
    return fs.qualify(describe_table(spark, TableRef(SCHEMA, name)).location).rstrip("/")


def listing(spark, location):
    """{rel path: bytes} of the table's data files (hidden entries, e.g. .sized/, skipped).
    A local warehouse is walked with os.walk: HadoopFS.list_files makes several py4j calls
    per file, seconds per listing at these file counts, and this runs 6 times per batch."""
    from urllib.parse import unquote, urlparse

    url = urlparse(location)
    if url.scheme == "file":
        root = unquote(url.path).rstrip("/")
        out = {}
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x[:1] not in (".", "_")]
            rel_dir = os.path.relpath(d, root)
            for n in names:
                if n[:1] not in (".", "_") and n.endswith(".parquet"):
                    rel = n if rel_dir == "." else f"{rel_dir}/{n}"
                    out[rel] = os.path.getsize(os.path.join(d, n))
        return out
    return {f.path[len(location):].lstrip("/"): f.size
            for f in HadoopFS(spark).list_files(location) if f.name.endswith(".parquet")}


def copy_files(spark, src_location, dst_location, rel_paths):
    """Copy data files byte for byte (Hadoop FileUtil, so any warehouse filesystem works)."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for rel in rel_paths:
        src = jvm.org.apache.hadoop.fs.Path(f"{src_location}/{rel}")
        dst = jvm.org.apache.hadoop.fs.Path(f"{dst_location}/{rel}")
        jvm.org.apache.hadoop.fs.FileUtil.copy(src.getFileSystem(conf), src,
                                               dst.getFileSystem(conf), dst, False, conf)


def partition_of(rel):
    return os.path.dirname(rel)


# ----------------------------------------------------------------------------------------
# Batches
# ----------------------------------------------------------------------------------------
def batch_plan(args, base_rows, base_dates):
    """Pure description of every batch: new day, recent window, update days, row counts."""
    n_new = round(args.new_frac * base_rows)
    n_upd = round(args.update_frac * base_rows)
    plans = []
    for b in range(1, args.batches + 1):
        new_day = FIRST_NEW_DAY + timedelta(days=b - 1)
        recent = [new_day - timedelta(days=d) for d in range(args.recent_days, 0, -1)]
        older = [d for d in base_dates if d < recent[0]]
        if args.update_days and args.update_days < len(older):
            days = sorted(random.Random(SEED + b).sample(older, args.update_days))
        else:
            days = older
        plans.append({"batch": b, "new_day": new_day, "recent": recent, "update_days": days,
                      "n_new": n_new, "n_upd": n_upd,
                      "first_id": base_rows + (b - 1) * n_new})
    return plans


def materialize_batches(spark, args, plans, base_rows, rows_by_date, input_partitions):
    """Write every batch once, in one job, into the Parquet table BATCHES partitioned by
    batch: args.batch_files files per batch (round robin, so every file holds every date of
    its batch, as arriving data does). Each batch is then the temp view batch_NN that every
    method reads. New rows: backfill.py's generator continued past the backfill's ids, with
    their dates set here. Updates: rows of the backfill (bench.source) in the batch's update
    days, sampled (about n_upd), with a new amount and event_type, same key and partition.
    Returns per batch: rows, updates, bytes as Parquet (the bytes ingested), dates touched."""
    from pyspark.sql import functions as F

    total = base_rows + sum(p["n_new"] for p in plans)
    n_new = plans[0]["n_new"]
    # The generator's rows for ids >= base_rows (ids < base_rows are the backfill itself).
    batch = (F.floor((F.col("event_id") - F.lit(base_rows)) / F.lit(n_new)) + 1).cast("int")
    new_day = F.date_add(F.lit(FIRST_NEW_DAY.isoformat()).cast("date"), F.col("batch") - 1)
    late = F.date_sub(new_day, (F.floor(F.rand(SEED + 100) * args.recent_days) + 1).cast("int"))
    new = (generated(spark, total, input_partitions).where(F.col("event_id") >= base_rows)
           .withColumn("batch", batch)
           .withColumn("event_date", F.when(F.rand(SEED + 200) < args.new_day_share, new_day)
                       .otherwise(late)))
    # Updates: one (batch, day, sampling fraction) row per update day of each batch.
    picks = []
    for p in plans:
        in_days = sum(rows_by_date[d] for d in p["update_days"])
        for d in p["update_days"]:
            picks.append((p["batch"], d, min(1.0, p["n_upd"] / max(in_days, 1))))
    picks = spark.createDataFrame(picks, "batch int, event_date date, fraction double")
    types = F.array(*[F.lit(x) for x in ("refund", "purchase", "chargeback")])
    upd = (spark.table(SOURCE).join(F.broadcast(picks), "event_date")
           .where(F.rand(SEED + 300) < F.col("fraction"))
           .withColumn("amount", F.round(F.rand(SEED + 500) * 500, 2))
           .withColumn("event_type",
                       F.element_at(types, (F.floor(F.rand(SEED + 600) * 3) + 1).cast("int"))))
    cols = [*DATA_COLS, "event_date", "batch"]
    spark.sql(f"DROP TABLE IF EXISTS {BATCHES}")
    (new.select(*cols).unionByName(upd.select(*cols)).repartition(args.batch_files)
     .write.format("parquet").partitionBy("batch").saveAsTable(BATCHES))
    files = listing(spark, table_location(spark, BATCHES.split(".")[1]))
    bytes_of, files_of = defaultdict(int), defaultdict(int)
    for rel, size in files.items():
        b = int(partition_of(rel).split("=")[1])
        bytes_of[b] += size
        files_of[b] += 1
    counts = defaultdict(lambda: defaultdict(int))   # batch -> date -> rows
    updates = defaultdict(int)
    for r in (spark.table(BATCHES).groupBy("batch", "event_date",
                                           (F.col("event_id") < base_rows).alias("upd"))
              .count().collect()):
        counts[r[0]][r[1]] += r[3]
        if r[2]:
            updates[r[0]] += r[3]
    info = []
    for p in plans:
        b = p["batch"]
        view = f"batch_{b:02d}"
        spark.sql(f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT {COLS} FROM {BATCHES} "
                  f"WHERE batch = {b}")
        rows = sum(counts[b].values())
        info.append({**p, "table": view, "rows": rows, "updates": updates[b],
                     "new": rows - updates[b], "bytes": bytes_of[b], "files": files_of[b],
                     "touched": {f"event_date={d.isoformat()}" for d in counts[b]}})
    return info


# ----------------------------------------------------------------------------------------
# Methods
# ----------------------------------------------------------------------------------------
def run_ours(spark, cfg, batch_table, log):
    t0 = time.perf_counter()
    write_dataframe(spark, spark.table(batch_table), TableRef(SCHEMA, TABLES[OURS]), cfg,
                    full_refresh=False, log=log)
    return time.perf_counter() - t0


def run_append(spark, batch_table):
    """dbt-spark's append strategy (get_insert_into_sql): insert into table t select ..."""
    t0 = time.perf_counter()
    spark.sql(f"INSERT INTO TABLE {SCHEMA}.{TABLES[APPEND]} SELECT {COLS} FROM {batch_table}")
    return time.perf_counter() - t0


def overwrite_sql(target, batch_table):
    """What a dbt user must write with insert_overwrite on parquet to get upsert semantics:
    the full new content of every partition the batch touches = its old rows whose key is not
    in the batch, plus the batch's rows. dbt-spark wraps it in
    `insert overwrite table t partition (event_date) select ...` after
    `set spark.sql.sources.partitionOverwriteMode = DYNAMIC`."""
    return (f"INSERT OVERWRITE TABLE {target} PARTITION (event_date) "
            f"SELECT {COLS} FROM ("
            f"SELECT {', '.join('o.' + c for c in DATA_COLS + ['event_date'])} FROM {target} o "
            f"LEFT ANTI JOIN {batch_table} b ON o.event_id = b.event_id "
            f"WHERE o.event_date IN (SELECT DISTINCT event_date FROM {batch_table}) "
            f"UNION ALL SELECT {COLS} FROM {batch_table})")


def run_overwrite(spark, batch_table):
    t0 = time.perf_counter()
    with conf_set(spark, **{"spark.sql.sources.partitionOverwriteMode": "dynamic"}):
        spark.sql(overwrite_sql(f"{SCHEMA}.{TABLES[OVERWRITE]}", batch_table))
    return time.perf_counter() - t0


def duplicates(spark, name):
    return spark.sql(f"SELECT count(*) - count(DISTINCT event_id) FROM {SCHEMA}.{name}").first()[0]


# ----------------------------------------------------------------------------------------
# Measuring one batch of one method
# ----------------------------------------------------------------------------------------
def measure_batch(before, after, touched, small_limit):
    written = {p: s for p, s in after.items() if before.get(p) != s}
    removed = [p for p in before if p not in after or after[p] != before[p]]
    small_by_part = defaultdict(int)
    for p, s in after.items():
        if s < small_limit:
            small_by_part[partition_of(p)] += 1
    untouched_before = {p: s for p, s in before.items() if partition_of(p) not in touched}
    untouched_after = {p: s for p, s in after.items() if partition_of(p) not in touched}
    changed_untouched = (set(untouched_before.items()) ^ set(untouched_after.items()))
    kept_touched = sum(1 for p, s in before.items()
                       if partition_of(p) in touched and after.get(p) == s)
    return {
        "files": len(after),
        "small": sum(small_by_part.values()),
        "written": len(written),
        "removed": len(removed),
        "bytes_written": sum(written.values()),
        "bytes": sum(after.values()),
        "max_small_touched": max((small_by_part.get(t, 0) for t in touched), default=0),
        "touched_over_one": sum(1 for t in touched if small_by_part.get(t, 0) > 1),
        "changed_untouched": len({p for p, _ in changed_untouched}),
        "untouched_files": len(untouched_before),
        "kept_touched": kept_touched,
        "files_touched_before": sum(1 for p in before if partition_of(p) in touched),
    }


def goal_lines_batch(m):
    ok1 = m["max_small_touched"] <= 1
    ok2 = m["changed_untouched"] == 0
    return [
        f"at most one file below small_file_limit per touched partition: "
        f"{'PASS' if ok1 else 'FAIL'} (max {m['max_small_touched']}"
        + ("" if ok1 else f", {m['touched_over_one']} partitions with more") + ")",
        f"no file of an untouched partition rewritten: {'PASS' if ok2 else 'FAIL'} "
        f"({m['changed_untouched']} of {m['untouched_files']} changed); in the touched "
        f"partitions {m['kept_touched']} of {m['files_touched_before']} files kept as they were",
    ]


# ----------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------
def batch_table_rows(rec, ingested):
    head = ["method", "files", "< small limit", "files written", "files replaced",
            "rewritten kB", "rewritten / ingested", "wall s", "duplicates"]
    body = []
    for meth in METHODS:
        m = rec[meth]
        body.append([meth, f"{m['files']:,}", f"{m['small']:,}", f"{m['written']:,}",
                     f"{m['removed']:,}", f"{m['bytes_written'] / 1000:,.0f}",
                     f"{m['bytes_written'] / ingested:.1f}", f"{m['wall']:.1f}",
                     f"{m['dups']:,}" if m.get("dups") is not None else "-"])
    return head, body


def history_rows(history, batches):
    head = ["batch", "touched", "ingested kB"]
    for meth, short in ((OURS, "ours"), (APPEND, "append"), (OVERWRITE, "overwrite")):
        head += [f"{short} files", f"{short} small", f"{short} rw/ing", f"{short} s"]
    head += ["append dups", "ours goals"]
    body = []
    for rec in history:
        b = rec["batch"]
        info = batches[b - 1] if b else None
        row = [str(b) if b else "0 (initial)", str(len(info["touched"])) if info else "-",
               f"{info['bytes'] / 1000:,.0f}" if info else "-"]
        for meth in METHODS:
            m = rec[meth]
            row += [f"{m['files']:,}", f"{m['small']:,}",
                    f"{m['bytes_written'] / info['bytes']:.1f}" if info else "-",
                    f"{m['wall']:.1f}" if info else "-"]
        row.append(f"{rec[APPEND]['dups']:,}" if info else "0")
        if info:
            o = rec[OURS]
            row.append("PASS" if o["max_small_touched"] <= 1 and o["changed_untouched"] == 0
                       else f"FAIL (small {o['max_small_touched']}, untouched changed "
                            f"{o['changed_untouched']})")
        else:
            row.append("-")
        body.append(row)
    return head, body


def summary_rows(history, batches):
    head = ["method", "files before", "files after", "< small limit after",
            "bytes rewritten / ingested (all batches)", "wall s (sum)", "wall s (median)",
            "duplicates after"]
    ingested = sum(b["bytes"] for b in batches)
    body = []
    for meth in METHODS:
        walls = sorted(r[meth]["wall"] for r in history[1:])
        written = sum(r[meth]["bytes_written"] for r in history[1:])
        dups = history[-1][meth].get("dups")
        body.append([meth, f"{history[0][meth]['files']:,}", f"{history[-1][meth]['files']:,}",
                     f"{history[-1][meth]['small']:,}", f"{written / ingested:.1f}",
                     f"{sum(walls):.1f}", f"{walls[len(walls) // 2]:.1f}",
                     f"{dups:,}" if dups is not None else "-"])
    return head, body


def plot(history, small_limit, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [r["batch"] for r in history]
    style = {OURS: ("tab:green", "o"), APPEND: ("tab:red", "s"), OVERWRITE: ("tab:blue", "^")}
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 5.5), layout="constrained")
    for meth in METHODS:
        color, marker = style[meth]
        ax.plot(xs, [r[meth]["files"] for r in history], marker=marker, color=color, label=meth)
        ax2.plot(xs, [r[meth]["small"] for r in history], marker=marker, color=color, label=meth)
    ax.set_title("total data files of the table")
    ax2.set_title(f"files below the small-file limit ({small_limit / 1000:,.0f} kB)")
    for a in (ax, ax2):
        a.set_xlabel("batch (0 = the initial table, the same files for every method)")
        a.set_xticks(xs)
        a.grid(alpha=0.3)
        a.legend()
        a.set_ylim(bottom=0)
    ax.set_ylabel("files")
    fig.suptitle(title)
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ----------------------------------------------------------------------------------------
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=200_000,
                    help="rows of the initial table (200000; see README for why not more)")
    ap.add_argument("--target", default="64KB", help="target file size (64KB = 64,000 B)")
    ap.add_argument("--small-file-limit", default=None,
                    help="small-file limit of ours and of every count (default: the config's, "
                         "100/128 of the target)")
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--new-frac", type=float, default=0.02,
                    help="new rows per batch, as a share of --rows (0.02)")
    ap.add_argument("--new-day-share", type=float, default=0.5,
                    help="share of the new rows on the batch's new day; the rest are late "
                         "arrivals spread over the --recent-days days before it (0.5)")
    ap.add_argument("--recent-days", type=int, default=7)
    ap.add_argument("--update-frac", type=float, default=0.01,
                    help="updated rows per batch, as a share of --rows (0.01)")
    ap.add_argument("--update-days", type=int, default=30,
                    help="older days the updates of a batch are spread over, chosen at random "
                         "per batch; 0 = all older days (30)")
    ap.add_argument("--batch-files", type=int, default=2,
                    help="Parquet files (= input sPartitions) of each batch (2)")
    ap.add_argument("--input-partitions", type=int, default=16,
                    help="files of the source table, as in backfill.py (16)")
    ap.add_argument("--out", default=os.path.join(HERE, "out"), help="output directory")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--index-scope", default="global", choices=("global", "partition"),
                    help="ours' index_scope: global (default; keys looked up in every file "
                         "their range does not rule out) or partition (only the batch's "
                         "partitions: the events' dates never change)")
    ap.add_argument("--verbose", action="store_true", help="print the engine's progress log")
    ap.add_argument("--keep", action="store_true",
                    help="keep the warehouse and metastore under <out>/ (deleted by default)")
    args = ap.parse_args(argv)

    target = parse_size(args.target, "--target")
    cfg = ours_config(args.target, args.small_file_limit, args.index_scope)
    small_limit = cfg.small_file_limit
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="upsert-", dir=out)
    started = time.perf_counter()
    print(f"upsert benchmark: {args.rows:,} rows, target {args.target} ({target:,} B), "
          f"small-file limit {small_limit:,} B, {args.batches} batches, work dir {tmp}",
          flush=True)

    version = engine_state()
    spark = start_spark(tmp, args.driver_memory)
    engine_log = (lambda m: print(f"    {m}", flush=True)) if args.verbose else (lambda m: None)
    history, batches = [], []
    try:
        print("materializing the initial rows (backfill.py's source) ...", flush=True)
        t0 = time.perf_counter()
        _src_df, src = materialize_source(spark, args.rows, args.input_partitions)
        rows_by_date = {r[0]: r[1] for r in
                        spark.table(SOURCE).groupBy("event_date").count().collect()}
        print(f"  {src['rows']:,} rows, {src['bytes'] / 1e6:,.1f} MB, {len(rows_by_date)} days "
              f"({time.perf_counter() - t0:.1f}s)", flush=True)

        print(f"writing the batches once ({BATCHES}) ...", flush=True)
        t0 = time.perf_counter()
        plans = batch_plan(args, src["rows"], sorted(rows_by_date))
        batches = materialize_batches(spark, args, plans, src["rows"], rows_by_date,
                                      args.input_partitions)
        print(f"  {len(batches)} batches of ~{batches[0]['rows']:,} rows "
              f"({batches[0]['new']:,} new, {batches[0]['updates']:,} updates), "
              f"~{batches[0]['bytes'] / 1000:,.0f} kB each as Parquet "
              f"({time.perf_counter() - t0:.1f}s)", flush=True)

        print("initial table: ours (full refresh, distribution exact), copied file for file "
              "into the baselines' tables ...", flush=True)
        t0 = time.perf_counter()
        spark.sql(f"DROP TABLE IF EXISTS {SCHEMA}.{TABLES[OURS]}")
        write_dataframe(spark, spark.table(SOURCE_VIEW), TableRef(SCHEMA, TABLES[OURS]), cfg,
                        full_refresh=True, log=engine_log)
        print(f"  ours: {time.perf_counter() - t0:.1f}s", flush=True)
        locs = {OURS: table_location(spark, TABLES[OURS])}
        initial = listing(spark, locs[OURS])
        for meth in (APPEND, OVERWRITE):
            create_plain_table(spark, TABLES[meth])
            locs[meth] = table_location(spark, TABLES[meth])
            copy_files(spark, locs[OURS], locs[meth], sorted(initial))
            spark.sql(f"MSCK REPAIR TABLE {SCHEMA}.{TABLES[meth]} SYNC PARTITIONS")
            spark.catalog.refreshTable(f"{SCHEMA}.{TABLES[meth]}")
        rec = {"batch": 0}
        for meth in METHODS:
            files = listing(spark, locs[meth])
            assert files == initial, f"{meth}: the copy differs from ours' initial files"
            rec[meth] = {"files": len(files), "small": sum(1 for s in files.values()
                                                            if s < small_limit),
                         "bytes": sum(files.values()), "bytes_written": 0, "wall": 0.0,
                         "dups": 0 if meth == APPEND else None}
        history.append(rec)
        print(f"  {len(initial):,} files, {sum(initial.values()) / 1e6:,.1f} MB, "
              f"{rec[OURS]['small']:,} below the small-file limit, in "
              f"{len({partition_of(p) for p in initial})} partitions "
              f"({time.perf_counter() - t0:.1f}s)", flush=True)

        runners = {OURS: lambda t: run_ours(spark, cfg, t, engine_log), APPEND: lambda t: run_append(spark, t),
                   OVERWRITE: lambda t: run_overwrite(spark, t)}
        goal_fail = 0
        for info in batches:
            b = info["batch"]
            print(f"\nbatch {b}/{len(batches)}: {info['new']:,} new rows ({args.new_day_share:.0%} "
                  f"on {info['new_day']}, the rest over {info['recent'][0]}..{info['recent'][-1]}), "
                  f"{info['updates']:,} updates over {len(info['update_days'])} older days; "
                  f"{len(info['touched'])} partitions touched; ingested "
                  f"{info['bytes'] / 1000:,.0f} kB ({info['files']} Parquet files)", flush=True)
            rec = {"batch": b}
            t_batch = time.perf_counter()
            # Rotate the order so no method always runs first (or last) on the shared machine.
            order = METHODS[(b - 1) % 3:] + METHODS[:(b - 1) % 3]
            for meth in order:
                before = listing(spark, locs[meth])
                wall = runners[meth](info["table"])
                after = listing(spark, locs[meth])
                m = measure_batch(before, after, info["touched"], small_limit)
                m["wall"] = wall
                m["dups"] = duplicates(spark, TABLES[APPEND]) if meth == APPEND else None
                rec[meth] = m
            history.append(rec)
            head, body = batch_table_rows(rec, info["bytes"])
            print(text_table(head, body), flush=True)
            lines = goal_lines_batch(rec[OURS])
            goal_fail += sum(1 for g in lines if "FAIL" in g)
            for g in lines:
                print(f"  goal (ours): {g}", flush=True)
            print(f"  (batch done in {time.perf_counter() - t_batch:.1f}s, measuring included)",
                  flush=True)

        print("\nchecking the final tables ...", flush=True)
        expected_rows = src["rows"] + sum(b["new"] for b in batches)
        counts = {meth: spark.table(f"{SCHEMA}.{TABLES[meth]}").count() for meth in METHODS}
        a = spark.table(f"{SCHEMA}.{TABLES[OURS]}")
        o = spark.table(f"{SCHEMA}.{TABLES[OVERWRITE]}")
        diff = a.exceptAll(o).count() + o.exceptAll(a).count()
        spark_version = spark.version
    finally:
        spark.stop()

    ingested = sum(b["bytes"] for b in batches)
    title = (f"Upsert: {args.batches} batches into {src['rows']:,} rows, {DAYS} daily "
             f"partitions, target {args.target}, ours with index_scope {args.index_scope}")
    shead, sbody = summary_rows(history, batches)
    hhead, hbody = history_rows(history, batches)
    b0 = batches[0]
    notes = [
        f"Initial table: backfill.py's rows ({src['rows']:,} rows, {DAYS} days from {START}, "
        f"+10%/month), written by ours (full refresh, distribution exact, target "
        f"{target:,} B): {history[0][OURS]['files']:,} files, "
        f"{history[0][OURS]['bytes'] / 1e6:,.1f} MB. The baselines' tables are copies of these "
        f"files (same start for every method; dbt-spark's own first run would write one file "
        f"per input sPartition and date instead, see backfill.md).",
        f"Each batch: {b0['new']:,} new rows ({args.new_frac:.0%} of the initial rows; "
        f"{args.new_day_share:.0%} on a new day {FIRST_NEW_DAY}.. one per batch, the rest over "
        f"the {args.recent_days} days before it) and {b0['updates']:,} updates ({args.update_frac:.0%}) "
        f"of backfill rows in {args.update_days or 'all'} random older days (new amount and "
        f"event_type, same key and date); stored once as {args.batch_files} Parquet files "
        f"(round robin) that every method reads. Ingested = those files' bytes: "
        f"{ingested / 1e6:,.2f} MB over all batches.",
        f"Small-file limit = {small_limit:,} B for every method (ours' config: "
        f"small_file_limit, default 100/128 of the target).",
        "Rewritten = bytes of the files a batch wrote (new paths or changed sizes); "
        "rewritten / ingested = that over the batch's bytes as Parquet.",
        "dbt append = `INSERT INTO TABLE t SELECT ... FROM batch`: an updated row is "
        "appended next to its old version; duplicates = count(*) - count(distinct event_id).",
        "dbt insert_overwrite = `INSERT OVERWRITE TABLE t PARTITION (event_date) SELECT ...` "
        "with partitionOverwriteMode=dynamic, selecting the touched partitions' old rows "
        "whose event_id is not in the batch (LEFT ANTI JOIN) plus the batch: that is what a "
        "dbt user has to write to get upsert semantics from insert_overwrite on parquet "
        "(dbt-spark's merge needs Delta, Iceberg or Hudi).",
        f"Final rows: expected {expected_rows:,} distinct keys; "
        + ", ".join(f"{meth} {counts[meth]:,}" for meth in METHODS)
        + f" (append: {history[-1][APPEND]['dups']:,} duplicates); ours and dbt "
          f"insert_overwrite hold {'the same rows' if diff == 0 else f'DIFFERENT rows ({diff} differ)'}.",
        "Wall = wall-clock seconds of the write, local[2] on a shared machine; the methods run "
        "in a rotating order per batch.",
        f"{version}.",
    ]
    goals_summary = (f"ours upsert: {args.batches} batches x 2 goal checks, "
                     f"{goal_fail} failed (printed, not asserted)")

    print()
    print(title)
    print(text_table(shead, sbody))
    for n in notes:
        print("  * " + n)
    print()
    print("per batch:")
    print(text_table(hhead, hbody))
    print()
    print("goal check: " + goals_summary)

    md_path = os.path.join(out, "upsert.md")
    png_path = os.path.join(out, "upsert_files.png")
    plot(history, small_limit, png_path, title)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cmd = "python benchmarks/upsert.py " + " ".join(sys.argv[1:] if argv is None else argv)
    md = [
        f"# {title}", "",
        f"`{cmd.strip()}` - {stamp}, Spark {spark_version}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs.", "",
        md_table(shead, sbody), "",
        *[f"- {x}" for x in notes], "",
        "## Per batch", "",
        "`rw/ing` = bytes rewritten / bytes ingested; `small` = files below the small-file "
        "limit; `ours goals` = at most one file below the limit per touched partition and no "
        "file of an untouched partition rewritten.", "",
        md_table(hhead, hbody), "",
        "## Goal check (printed, not asserted)", "",
        f"- {goals_summary}", "",
        "![files over batches](upsert_files.png)", "",
    ]
    finish_run(md_path, md, tmp, args.keep, started, also_written=(png_path,))
    return 0


if __name__ == "__main__":
    sys.exit(main())
