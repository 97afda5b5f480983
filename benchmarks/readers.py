#!/usr/bin/env python
"""Readers during writes: a Spark reader in another process, through a shared metastore
service, queries a table over and over while this process runs an upsert loop on it.

    python benchmarks/readers.py [--batches 20] [--rows 300000] [--out benchmarks/out]

Starts scripts/metastore.sh (its own state, ports 9193 / 5543; stopped by pid at the end).
Two methods, one after the other, each with its own reader: ours upsert, and the baseline,
dbt-spark's insert_overwrite with upsert semantics (benchmarks/upsert.py's SQL: the touched
partitions rewritten whole). Each writes `--batches` batches (10% of the keys updated to the
batch number, 2% new keys) into a table partitioned by day and records the table's state
after each commit (rows, distinct keys, sum of versions). The reader (`--reader` mode of this script, its own
JVM) loops: REFRESH TABLE, then one aggregation (rows, distinct keys, sum of versions), and
the table's input files. Each read is classified:
  consistent      its figures are those of a committed state (before or after some commit)
  half published  any other figures: the listing caught a publish between its renames
  failed          the query raised (which error, counted)
and any input file that is not a live data file (staged or set-aside) is counted. Prints the
reads, the publish windows (from the writer's phase lines) and writes <out>/readers.md.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks.lib import DEFAULT_OUT  # noqa: E402
from benchmarks.lib.report import (command_line, finish_run, md_bullets, md_header,  # noqa: E402
                                   md_table, print_section, run_benchmark, start_run)
from benchmarks.lib.session import start_spark  # noqa: E402
from benchmarks.lib.tables import dynamic_overwrite  # noqa: E402

OURS, OVERWRITE = "ours upsert", "dbt insert_overwrite"
TABLES = {OURS: "bench.reader_ours", OVERWRITE: "bench.reader_insert_overwrite"}
PORT, PG_PORT = "9193", "5543"
DAYS = 10


def main(argv=None):
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--reader":
        return reader(*sys.argv[2:])
    return run_benchmark(argv, parse_args, run, report)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=20, help="upsert batches (20)")
    ap.add_argument("--rows", type=int, default=300_000, help="rows of the first build")
    ap.add_argument("--target", default="1MB", help="target file size (1MB)")
    ap.add_argument("--out", default=DEFAULT_OUT, help="output directory")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    return ap.parse_args(argv)


# ----------------------------------------------------------------------------------------
# The reader process
# ----------------------------------------------------------------------------------------
def reader(uri, work, table, log_path, stop_path):
    """Query the table until stop_path exists; one JSON line per read in log_path."""
    spark = start_spark(work, "1g", master="local[1]", app_name="sized-reader",
                        conf=[("spark.hadoop.hive.metastore.uris", uri)])
    with open(log_path, "w") as log:
        while not os.path.exists(stop_path):
            log.write(json.dumps(read_once(spark, table)) + "\n")
            log.flush()
    spark.stop()


def read_once(spark, table):
    start = time.time()
    try:
        spark.catalog.refreshTable(table)
        df = spark.table(table)
        row = df.selectExpr("count(*)", "count(distinct id)", "sum(version)").first()
        odd = [f for f in df.inputFiles()
               if "/.sized" in f or "__sized" in f or "/_temporary" in f]
        return {"start": start, "end": time.time(), "state": [row[0], row[1], row[2] or 0],
                "not_live": odd[:3]}
    except Exception as exc:  # the measure: which errors a reader gets
        return {"start": start, "end": time.time(), "error": _root_cause(exc)}


def _root_cause(exc):
    """The innermost 'Caused by' of a Java error (class and message, a file's path shown as
    <file> so errors of one kind count together), else the first line."""
    text = str(exc)
    causes = re.findall(r"Caused by: ([^\n]+)", text)
    line = causes[-1] if causes else (text.strip().splitlines() or [type(exc).__name__])[0]
    return re.sub(r"(file:)?/\S*\.parquet", "<file>", line)[:200]


# ----------------------------------------------------------------------------------------
# The writer (this process)
# ----------------------------------------------------------------------------------------
def start_metastore(work):
    env = {**os.environ, "SIZED_METASTORE_DIR": os.path.join(work, "metastore"),
           "SIZED_METASTORE_PORT": PORT, "SIZED_METASTORE_PG_PORT": PG_PORT,
           "PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    script = os.path.join(REPO, "scripts/metastore.sh")
    out = subprocess.run(["bash", script, "start"], env=env, capture_output=True, text=True,
                         timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"metastore.sh start failed:\n{out.stdout}\n{out.stderr}")
    return out.stdout.strip().splitlines()[-1], lambda: subprocess.run(
        ["bash", script, "stop"], env=env, capture_output=True, text=True)


def batch_sql(rows, batch):
    """Batch 0: keys 0..rows-1 at version 0; batch b: every 10th key (shifted by b) at
    version b, and 2% new keys."""
    if batch == 0:
        keys = f"select explode(sequence(0, {rows - 1})) as id"
    else:
        first_new = rows + (batch - 1) * (rows // 50)
        keys = (f"select id from (select explode(sequence(0, {rows - 1})) as id) "
                f"where id % 10 = {batch % 10} union all "
                f"select explode(sequence({first_new}, {first_new + rows // 50 - 1}))")
    return f"""select id, {batch} as version, date_add(date'2026-01-01', cast(id % {DAYS} as int)) as day,
                      sha2(cast(id * 31 + {batch} as string), 256) as payload
               from ({keys})"""


def state(spark, name):
    row = spark.table(name).selectExpr("count(*)", "count(distinct id)", "sum(version)").first()
    return [row[0], row[1], row[2] or 0]


def write_ours(spark, args):
    """ours upsert: one write_dataframe per batch; returns (write(b), its phase lines)."""
    from python_adapter.api import TableRef, parse_config, write_dataframe

    cfg = parse_config({"partition_by": ["day"], "unique_key": "id",
                        "incremental_strategy": "upsert", "target_file_size": args.target})
    phases = []
    log = lambda msg: phases.append((time.time(), msg))  # noqa: E731
    table = TableRef(*TABLES[OURS].split("."))
    return lambda b: write_dataframe(spark, spark.sql(batch_sql(args.rows, b)), table, cfg,
                                     log=log), phases


def write_overwrite(spark, args):
    """dbt insert_overwrite with upsert semantics (benchmarks/upsert.py's SQL): each batch
    overwrites the partitions it touches with their old rows not in the batch plus its own."""
    name = TABLES[OVERWRITE]
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(f"CREATE TABLE {name} (id bigint, version int, payload string, day date) "
              "USING parquet PARTITIONED BY (day)")

    def write(b):
        spark.sql(batch_sql(args.rows, b)).createOrReplaceTempView("reader_batch")
        old = (f"SELECT o.id, o.version, o.payload, o.day FROM {name} o LEFT ANTI JOIN "
               f"reader_batch n ON o.id = n.id WHERE o.day IN (SELECT DISTINCT day FROM "
               f"reader_batch) UNION ALL " if b else "")
        with dynamic_overwrite(spark):
            spark.sql(f"INSERT OVERWRITE TABLE {name} PARTITION (day) SELECT * FROM ("
                      f"{old}SELECT id, version, payload, day FROM reader_batch)")
    return write, []


def loop(spark, uri, work, method, args):
    """Batch 0, then the reader on the table while batches 1..n are written."""
    name = TABLES[method]
    write, phases = (write_ours if method == OURS else write_overwrite)(spark, args)
    write(0)
    states = [state(spark, name)]
    tag = method.split()[0]
    read_log, stop = os.path.join(work, f"reads-{tag}.jsonl"), os.path.join(work, f"stop-{tag}")
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--reader", uri,
                             os.path.join(work, f"reader-{tag}"), name, read_log, stop],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_reads(read_log, 3)
        commits = []
        for b in range(1, args.batches + 1):
            t0 = time.time()
            write(b)
            commits.append((t0, time.time()))
            states.append(state(spark, name))
            print(f"  {method} batch {b}: {states[-1][0]:,} rows ({time.time() - t0:.1f}s)",
                  flush=True)
        _wait_for_reads(read_log, _count_lines(read_log) + 2)
        open(stop, "w").close()
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    reads = [json.loads(line) for line in open(read_log)]
    return {"reads": reads, "states": states, "commits": commits,
            "publish": _publish_windows(phases)}


def run(args):
    work = start_run(args.out, "readers-")
    print(f"readers benchmark: {args.batches} upsert batches over {args.rows:,} rows, "
          f"work dir {work.tmp}", flush=True)
    uri, stop_metastore = start_metastore(work.tmp)
    print(f"  metastore service at {uri}", flush=True)
    try:
        spark = start_spark(work.tmp, "3g", app_name="sized-writer",
                            conf=[("spark.hadoop.hive.metastore.uris", uri)])
        spark.sql("CREATE DATABASE IF NOT EXISTS bench")
        loops = {m: loop(spark, uri, work.tmp, m, args) for m in (OURS, OVERWRITE)}
        version = spark.version
        spark.stop()
        return {"loops": loops, "version": version, "work": work}
    finally:
        stop_metastore()


def _count_lines(path):
    return sum(1 for _ in open(path)) if os.path.exists(path) else 0


def _wait_for_reads(path, n, timeout=300):
    deadline = time.time() + timeout
    while _count_lines(path) < n:
        if time.time() > deadline:
            raise RuntimeError(f"the reader wrote fewer than {n} reads in {timeout}s")
        time.sleep(0.5)


def _publish_windows(phases):
    """Seconds from each 'publishing' phase line to the write's next line."""
    out = []
    for (t, msg), (t_next, _) in zip(phases, phases[1:]):
        if "] publishing " in msg:
            out.append(t_next - t)
    return out


# ----------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------
def classify(reads, states):
    valid = {tuple(s) for s in states}
    kinds, errors, not_live = Counter(), Counter(), 0
    for r in reads:
        if "error" in r:
            kinds["failed"] += 1
            errors[r["error"]] += 1
            continue
        not_live += bool(r["not_live"])
        kinds["consistent" if tuple(r["state"]) in valid else "half published"] += 1
    return kinds, errors, not_live


def report(args, result, argv=None):
    head = ["method", "reads", "consistent", "half published", "failed", "saw non-live files",
            "publish s (median, max)"]
    body, notes = [], []
    for method, res in result["loops"].items():
        first, last = res["commits"][0][0], res["commits"][-1][1]
        during = [r for r in res["reads"] if r["end"] >= first and r["start"] <= last]
        kinds, errors, not_live = classify(during, res["states"])
        pub = sorted(res["publish"])
        body.append([method, len(during), kinds["consistent"], kinds["half published"],
                     kinds["failed"], not_live,
                     f"{pub[len(pub) // 2]:.2f}, {pub[-1]:.2f}" if pub else "-"])
        notes += [f"{method}: error x{n}: {e}" for e, n in errors.most_common(3)]
    notes = [f"{args.batches} upsert batches per method ({args.rows:,} rows first, 10% of the "
             f"keys updated and 2% new per batch, {DAYS} daily partitions, target "
             f"{args.target}); one Spark reader process (local[1]) per method through the "
             "metastore service; reads counted from the first batch's start to the last "
             "one's end",
             "consistent = a read whose (rows, distinct keys, sum of versions) is a committed "
             "state; half published = any other; failed = the query raised; publish = ours' "
             "publish phase (renames in and out, partitions registered)", *notes]
    print_section("Readers during an upsert loop", head, body, notes)
    md = [*md_header("Readers during an upsert loop", command_line("readers.py", argv),
                     result["version"]), md_table(head, body), "", *md_bullets(notes)]
    finish_run(result["work"], "readers.md", md, args.keep)


if __name__ == "__main__":
    sys.exit(main())
