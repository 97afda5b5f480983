#!/usr/bin/env python
"""Upsert benchmark: 20 incremental batches into the backfill benchmark's table, same batches
for every method.

    python benchmarks/upsert.py [--rows 200000] [--target 64KB] [--batches 20] [--out benchmarks/out]
                                [--master local|cluster]

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
import sys
import time
from dataclasses import dataclass, field

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks.lib import DEFAULT_OUT, plots  # noqa: E402
from benchmarks.lib.data import (BATCHES, COLS, DATA_COLS, DAYS, FIRST_NEW_DAY,  # noqa: E402
                                 SCHEMA, SOURCE_VIEW, START, BatchOptions, batch_plan)
from benchmarks.lib.report import (Run, command_line, engine_state, finish_run,  # noqa: E402
                                   md_bullets, md_header, md_table, print_notes,
                                   print_section, run_benchmark, start_run, text_table)
from benchmarks.lib.session import Cluster, free_port, start_spark  # noqa: E402
from benchmarks.lib.tables import (copy_files, create_plain_table,  # noqa: E402
                                   dynamic_overwrite, listing, materialize_batches,
                                   materialize_source, measure_batch, partition_of,
                                   rows_by_date, table_location, upsert_config)
from python_adapter.api import TableRef, write_dataframe  # noqa: E402
from python_adapter.core.sizes import parse_size  # noqa: E402

OURS, APPEND, OVERWRITE = "ours upsert", "dbt append", "dbt insert_overwrite"
METHODS = (OURS, APPEND, OVERWRITE)
TABLES = {OURS: "up_ours", APPEND: "up_dbt_append", OVERWRITE: "up_dbt_insert_overwrite"}
STYLES = {OURS: ("tab:green", "o"), APPEND: ("tab:red", "s"), OVERWRITE: ("tab:blue", "^")}


def main(argv=None):
    """Parse the arguments, run every batch with every method, report."""
    return run_benchmark(argv, parse_args, run, report)


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
    with dynamic_overwrite(spark):
        spark.sql(overwrite_sql(f"{SCHEMA}.{TABLES[OVERWRITE]}", batch_table))
    return time.perf_counter() - t0


def duplicates(spark, name):
    return spark.sql(f"SELECT count(*) - count(DISTINCT event_id) FROM {SCHEMA}.{name}").first()[0]


@dataclass
class Tables:
    """The methods' tables: where each is, and how each method writes a batch into its own."""
    spark: object
    cfg: object          # ours' config
    log: object          # the engine's progress log
    locations: dict = field(default_factory=dict)

    def files(self, meth):
        return listing(self.spark, self.locations[meth])

    def write(self, meth, batch_table):
        if meth == OURS:
            return run_ours(self.spark, self.cfg, batch_table, self.log)
        if meth == APPEND:
            return run_append(self.spark, batch_table)
        return run_overwrite(self.spark, batch_table)


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
# The run
# ----------------------------------------------------------------------------------------
@dataclass
class Upsert:
    """What one run measured."""
    cfg: object          # ours' config (its target and small-file limit count for every method)
    work: Run            # the output and work directories
    source: dict         # the initial rows (materialize_source's figures)
    batches: list        # materialize_batches' description of each batch
    history: list        # per batch (0 = the initial table): {batch, method: measures}
    goal_fail: int       # ours' goal checks that failed, over all batches
    final: dict          # expected rows, rows per method, rows ours and overwrite differ in
    spark_version: str
    version: str         # the engine's code (engine_state)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=200_000,
                    help="rows of the initial table (200000; see README for why not more)")
    ap.add_argument("--target", default="64KB", help="target file size (64KB = 64,000 B)")
    ap.add_argument("--small-file-limit", default=None,
                    help="small-file limit of ours and of every count (default: the config's, "
                         "100/128 of the target)")
    BatchOptions.add_arguments(ap)
    ap.add_argument("--input-partitions", type=int, default=16,
                    help="files of the source table, as in backfill.py (16)")
    ap.add_argument("--out", default=DEFAULT_OUT, help="output directory")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--master", default="local", choices=("local", "cluster"),
                    help="local: local[2] in this process (default); cluster: a standalone "
                         "cluster of scripts/spark_cluster.sh (one master, two 1-core workers "
                         "on 127.0.0.1) started for the run and stopped after it")
    ap.add_argument("--executor-memory", default="1g",
                    help="cluster: memory of each of the two executors (1g; workers offer 2g)")
    ap.add_argument("--index-scope", default="global", choices=("global", "partition"),
                    help="ours' index_scope: global (default; keys looked up in every file "
                         "their range does not rule out) or partition (only the batch's "
                         "partitions: the events' dates never change)")
    ap.add_argument("--verbose", action="store_true", help="print the engine's progress log")
    ap.add_argument("--keep", action="store_true",
                    help="keep the warehouse and metastore under <out>/ (deleted by default)")
    return ap.parse_args(argv)


def prepare_data(spark, args):
    """The initial rows (backfill.py's source) and every batch, each written once."""
    print("materializing the initial rows (backfill.py's source) ...", flush=True)
    t0 = time.perf_counter()
    _src_df, src = materialize_source(spark, args.rows, args.input_partitions)
    by_date = rows_by_date(spark)
    print(f"  {src['rows']:,} rows, {src['bytes'] / 1e6:,.1f} MB, {len(by_date)} days "
          f"({time.perf_counter() - t0:.1f}s)", flush=True)

    print(f"writing the batches once ({BATCHES}) ...", flush=True)
    t0 = time.perf_counter()
    shape = BatchOptions.from_args(args)
    plans = batch_plan(shape, src["rows"], sorted(by_date))
    batches = materialize_batches(spark, shape, plans, src["rows"], by_date,
                                  args.input_partitions)
    print(f"  {len(batches)} batches of ~{batches[0]['rows']:,} rows "
          f"({batches[0]['new']:,} new, {batches[0]['updates']:,} updates), "
          f"~{batches[0]['bytes'] / 1000:,.0f} kB each as Parquet "
          f"({time.perf_counter() - t0:.1f}s)", flush=True)
    return src, batches


def write_initial_tables(tables):
    """Ours' full refresh of the initial rows, copied file for file into the baselines'
    tables; returns ours' files {rel path: bytes}."""
    spark = tables.spark
    t0 = time.perf_counter()
    spark.sql(f"DROP TABLE IF EXISTS {SCHEMA}.{TABLES[OURS]}")
    write_dataframe(spark, spark.table(SOURCE_VIEW), TableRef(SCHEMA, TABLES[OURS]), tables.cfg,
                    full_refresh=True, log=tables.log)
    print(f"  ours: {time.perf_counter() - t0:.1f}s", flush=True)
    tables.locations[OURS] = table_location(spark, TABLES[OURS])
    initial = tables.files(OURS)
    for meth in (APPEND, OVERWRITE):
        create_plain_table(spark, TABLES[meth])
        tables.locations[meth] = table_location(spark, TABLES[meth])
        copy_files(spark, tables.locations[OURS], tables.locations[meth], sorted(initial))
        spark.sql(f"MSCK REPAIR TABLE {SCHEMA}.{TABLES[meth]} SYNC PARTITIONS")
        spark.catalog.refreshTable(f"{SCHEMA}.{TABLES[meth]}")
    return initial


def initial_record(tables, small_limit):
    """Batch 0 of the history: the initial table, the same files for every method."""
    print("initial table: ours (full refresh, distribution exact), copied file for file "
          "into the baselines' tables ...", flush=True)
    t0 = time.perf_counter()
    initial = write_initial_tables(tables)
    rec = {"batch": 0}
    for meth in METHODS:
        files = tables.files(meth)
        assert files == initial, f"{meth}: the copy differs from ours' initial files"
        rec[meth] = {"files": len(files), "small": sum(1 for s in files.values()
                                                        if s < small_limit),
                     "bytes": sum(files.values()), "bytes_written": 0, "wall": 0.0,
                     "dups": 0 if meth == APPEND else None}
    print(f"  {len(initial):,} files, {sum(initial.values()) / 1e6:,.1f} MB, "
          f"{rec[OURS]['small']:,} below the small-file limit, in "
          f"{len({partition_of(p) for p in initial})} partitions "
          f"({time.perf_counter() - t0:.1f}s)", flush=True)
    return rec


def run_batch(tables, info, small_limit):
    """Every method writes the batch (in a rotating order), measured; returns the record."""
    rec = {"batch": info["batch"]}
    # Rotate the order so no method always runs first (or last) on the shared machine.
    b = info["batch"]
    order = METHODS[(b - 1) % 3:] + METHODS[:(b - 1) % 3]
    for meth in order:
        before = tables.files(meth)
        wall = tables.write(meth, info["table"])
        after = tables.files(meth)
        m = measure_batch(before, after, info["touched"], small_limit)
        m["wall"] = wall
        m["dups"] = duplicates(tables.spark, TABLES[APPEND]) if meth == APPEND else None
        rec[meth] = m
    return rec


def run_batches(tables, batches, args, small_limit):
    """Every batch in turn, appended to the history; prints each batch's table and ours'
    goal checks; returns the goal checks that failed."""
    history = []
    goal_fail = 0
    for info in batches:
        print(f"\nbatch {info['batch']}/{len(batches)}: {info['new']:,} new rows "
              f"({args.new_day_share:.0%} on {info['new_day']}, the rest over "
              f"{info['recent'][0]}..{info['recent'][-1]}), "
              f"{info['updates']:,} updates over {len(info['update_days'])} older days; "
              f"{len(info['touched'])} partitions touched; ingested "
              f"{info['bytes'] / 1000:,.0f} kB ({info['files']} Parquet files)", flush=True)
        t_batch = time.perf_counter()
        rec = run_batch(tables, info, small_limit)
        history.append(rec)
        head, body = batch_table_rows(rec, info["bytes"])
        print(text_table(head, body), flush=True)
        lines = goal_lines_batch(rec[OURS])
        goal_fail += sum(1 for g in lines if "FAIL" in g)
        print_notes(lines, "  goal (ours): ")
        print(f"  (batch done in {time.perf_counter() - t_batch:.1f}s, measuring included)",
              flush=True)
    return history, goal_fail


def final_check(spark, src, batches):
    """Rows of every final table; ours and dbt insert_overwrite must hold the same rows."""
    print("\nchecking the final tables ...", flush=True)
    counts = {meth: spark.table(f"{SCHEMA}.{TABLES[meth]}").count() for meth in METHODS}
    a = spark.table(f"{SCHEMA}.{TABLES[OURS]}")
    o = spark.table(f"{SCHEMA}.{TABLES[OVERWRITE]}")
    return {"expected_rows": src["rows"] + sum(b["new"] for b in batches), "counts": counts,
            "diff": a.exceptAll(o).count() + o.exceptAll(a).count()}


def run(args):
    """The initial tables, then every batch into each of them, then the final check."""
    target = parse_size(args.target, "--target")
    cfg = upsert_config(args.target, args.small_file_limit, args.index_scope)
    work = start_run(args.out, "upsert-")
    print(f"upsert benchmark: {args.rows:,} rows, target {args.target} ({target:,} B), "
          f"small-file limit {cfg.small_file_limit:,} B, {args.batches} batches, work dir "
          f"{work.tmp}", flush=True)
    version = engine_state()
    cluster, spark = start_session(args, work)
    engine_log = (lambda m: print(f"    {m}", flush=True)) if args.verbose else (lambda m: None)
    try:
        src, batches = prepare_data(spark, args)
        tables = Tables(spark, cfg, engine_log)
        history = [initial_record(tables, cfg.small_file_limit)]
        more, goal_fail = run_batches(tables, batches, args, cfg.small_file_limit)
        final = final_check(spark, src, batches)
        return Upsert(cfg, work, src, batches, history + more, goal_fail, final, spark.version,
                      version)
    finally:
        spark.stop()
        if cluster is not None:
            print(cluster.stop(), flush=True)


def start_session(args, work):
    """(the cluster or None, the session): with --master cluster, the standalone cluster on
    a free port (or SIZED_CLUSTER_PORT), its executors sharing this machine's disk, so the
    warehouse is a file:// URI."""
    if args.master == "local":
        return None, start_spark(work.tmp, args.driver_memory)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    cluster = Cluster(os.path.join(work.tmp, "cluster"),
                      int(os.environ.get("SIZED_CLUSTER_PORT") or free_port()))
    print(f"starting the standalone cluster on {cluster.master} ...", flush=True)
    print(f"  {cluster.start()}", flush=True)
    try:
        conf = (("spark.executor.memory", args.executor_memory), ("spark.cores.max", "2"))
        return cluster, start_spark(work.tmp, args.driver_memory, master=cluster.master,
                                    app_name="sized-upsert-benchmark", warehouse_uri=True,
                                    conf=conf)
    except BaseException:
        print(cluster.stop(), flush=True)
        raise


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


def notes(args, res):
    """The notes under the summary table."""
    target, small_limit = res.cfg.target_file_size, res.cfg.small_file_limit
    history, final = res.history, res.final
    ingested = sum(b["bytes"] for b in res.batches)
    b0 = res.batches[0]
    diff, counts = final["diff"], final["counts"]
    return [
        f"Initial table: backfill.py's rows ({res.source['rows']:,} rows, {DAYS} days from "
        f"{START}, "
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
        f"Final rows: expected {final['expected_rows']:,} distinct keys; "
        + ", ".join(f"{meth} {counts[meth]:,}" for meth in METHODS)
        + f" (append: {history[-1][APPEND]['dups']:,} duplicates); ours and dbt "
          f"insert_overwrite hold {'the same rows' if diff == 0 else f'DIFFERENT rows ({diff} differ)'}.",
        f"Wall = wall-clock seconds of the write, {where(args)}; the methods run in a "
        "rotating order per batch.",
        f"{res.version}.",
    ]


def where(args):
    if args.master == "local":
        return "local[2] on a shared machine"
    return ("a standalone cluster on this machine (master and two 1-core workers on 127.0.0.1, "
            f"executors of {args.executor_memory}, warehouse as a file:// URI)")


def report(args, res, argv):
    """Print the summary, its notes, the per-batch table and the goal check; write upsert.md
    and upsert_files.png."""
    cfg, work = res.cfg, res.work
    title = (f"Upsert: {args.batches} batches into {res.source['rows']:,} rows, {DAYS} daily "
             f"partitions, target {args.target}, ours with index_scope {args.index_scope}"
             + (", standalone cluster" if args.master == "cluster" else ""))
    shead, sbody = summary_rows(res.history, res.batches)
    hhead, hbody = history_rows(res.history, res.batches)
    lines = notes(args, res)
    goals_summary = (f"ours upsert: {args.batches} batches x 2 goal checks, "
                     f"{res.goal_fail} failed (printed, not asserted)")

    print_section(title, shead, sbody, lines)
    print_section("per batch:", hhead, hbody)
    print_section("goal check: " + goals_summary)

    png_path = work.path("upsert_files.png")
    plots.over_batches(res.history, STYLES, cfg.small_file_limit, png_path, title)
    md = [
        *md_header(title, command_line("upsert.py", argv), res.spark_version),
        md_table(shead, sbody), "",
        *md_bullets(lines), "",
        "## Per batch", "",
        "`rw/ing` = bytes rewritten / bytes ingested; `small` = files below the small-file "
        "limit; `ours goals` = at most one file below the limit per touched partition and no "
        "file of an untouched partition rewritten.", "",
        md_table(hhead, hbody), "",
        "## Goal check (printed, not asserted)", "",
        f"- {goals_summary}", "",
        "![files over batches](upsert_files.png)", "",
    ]
    finish_run(work, "upsert.md", md, args.keep, also_written=(png_path,))


if __name__ == "__main__":
    sys.exit(main())
