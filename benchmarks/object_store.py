#!/usr/bin/env python
"""Object-store cost: the backfill and the upsert batches of upsert.py on a real S3 server
(SeaweedFS on 127.0.0.1, `sized-spark serve s3`), ours against dbt-spark's, in one run on the
same data and the same Spark.

    python benchmarks/object_store.py [--rows 200000] [--target 64KB] [--batches 5]
                                      [--out benchmarks/out]

Methods (each table in the same bucket, through S3A with Spark's default committer):
  ours                      the backfill: write_dataframe, a full refresh; each batch an
                            upsert on event_id (upsert.py's ours)
  dbt-spark                 the backfill: dbt-spark's first run of an incremental model
                            (CREATE TABLE ... USING parquet PARTITIONED BY ... AS SELECT);
                            each batch its insert_overwrite with the upsert SQL upsert.py gives
                            it (dynamic partition overwrite: the touched partitions rewritten)
The source rows and the batches are upsert.py's, kept on local disk. Printed per step and
method: wall time; S3 requests by kind as S3A counts them (the engine's server-side copies
are added to S3A's own statistics) and as the server counts them (SeaweedFS's metrics);
bytes copied server-side (S3A's files_copied_bytes); files, files below the small-file
limit, the ideal file count (ours). The goals: ours at most 1.2x dbt-spark's wall time,
no more bytes copied, files at the ideal. Then, untimed, the last batch is written once more
by each method (its rows again: nothing changes for a reader) while a path reader (pyarrow's
S3 filesystem) counts the table's rows over and over: what a reader sees during a write.
Writes <out>/object_store.md.
"""
import argparse
import os
import re
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks.lib import DEFAULT_OUT  # noqa: E402
from benchmarks.lib.data import (BATCHES, COLS, SOURCE_VIEW, BatchOptions,  # noqa: E402
                                 batch_plan)
from benchmarks.lib.report import (command_line, engine_state, finish_run, md_header,  # noqa: E402
                                   md_table, print_section, run_benchmark, start_run,
                                   text_table)
from benchmarks.lib.session import free_port, start_spark  # noqa: E402
from benchmarks.lib.tables import (dynamic_overwrite, listing, materialize_batches,  # noqa: E402
                                   materialize_source, rows_by_date, upsert_config)
from benchmarks.upsert import overwrite_sql  # noqa: E402
from python_adapter.api import TableRef, write_dataframe  # noqa: E402
from python_adapter.cli import object_store  # noqa: E402
from python_adapter.cli.jars import s3a_jars  # noqa: E402
from python_adapter.core.planning import ideal_file_count  # noqa: E402
from python_adapter.core.sizes import format_size, parse_size  # noqa: E402
from benchmarks.backfill import GOAL_EXTRA_FILES  # noqa: E402

OURS, DBT = "ours", "dbt-spark"
METHODS = (OURS, DBT)
DB = "bench_s3"
TABLES = {OURS: "os_ours", DBT: "os_dbt"}
# S3A's counters of requests by kind, and of what its renames (and our copies) copied
S3A_REQUESTS = ("object_put_request", "object_copy_requests", "object_delete_request",
                "object_bulk_delete_request", "object_list_request", "object_metadata_request",
                "action_http_get_request", "object_multipart_initiated")
COPIED = "files_copied_bytes"


def main(argv=None):
    return run_benchmark(argv, parse_args, run, report)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=200_000, help="rows of the backfill (200000)")
    ap.add_argument("--target", default="64KB", help="target file size (64KB)")
    BatchOptions.add_arguments(ap)
    ap.set_defaults(batches=5)
    ap.add_argument("--input-partitions", type=int, default=16)
    ap.add_argument("--out", default=DEFAULT_OUT, help="output directory")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    return ap.parse_args(argv)


# ----------------------------------------------------------------------------------------
# What is counted
# ----------------------------------------------------------------------------------------
class Counters:
    """S3A's statistics of the bucket's filesystem (the driver's and, in local mode, the
    tasks': one JVM) and the server's requests by kind, read before and after a step."""

    def __init__(self, spark, bucket, metrics_port):
        jvm = spark.sparkContext._jvm
        path = jvm.org.apache.hadoop.fs.Path(f"s3a://{bucket}/")
        self.fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        self.metrics = f"http://127.0.0.1:{metrics_port}/metrics"

    def read(self):
        text = str(self.fs.getIOStatistics()).split("gauges=")[0]
        s3a = {k: int(v) for k, v in re.findall(r"\(([\w.-]+)=(\d+)\)", text)}
        server = {}
        body = urllib.request.urlopen(self.metrics, timeout=10).read().decode()
        for kind, n in re.findall(r'^SeaweedFS_s3_request_seconds_count\{[^}]*type="(\w+)"'
                                  r'[^}]*\} (\d+)', body, re.M):
            server[kind] = server.get(kind, 0) + int(n)
        return s3a, server

    @staticmethod
    def delta(before, after):
        return tuple({k: after_part.get(k, 0) - before_part.get(k, 0)
                      for k in set(after_part) | set(before_part)}
                     for before_part, after_part in zip(before, after))


@dataclass
class Step:
    """One method's write of one step: wall time, S3A's and the server's counts, files."""
    wall: float
    s3a: dict
    server: dict
    files: dict          # {rel path: bytes} after it


def measured(counters, spark, location, action):
    before = counters.read()
    t0 = time.perf_counter()
    action()
    wall = time.perf_counter() - t0
    s3a, server = Counters.delta(before, counters.read())
    return Step(wall, s3a, server, listing(spark, location))


@dataclass
class PathReader:
    """Counts a table's rows through pyarrow's S3 filesystem (a listing, then the files'
    footers) in a loop on a thread, as a reader of `<table>/**/*.parquet` does, while a write
    runs: the counts it saw and the reads that failed (a file gone between the listing and
    its read)."""
    server: object_store.S3Server
    prefix: str                  # 'bucket/path' of the table
    counts: list = field(default_factory=list)
    failed: list = field(default_factory=list)

    def __post_init__(self):
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        import pyarrow.dataset as ds
        from pyarrow import fs

        store = fs.S3FileSystem(access_key=self.server.access_key,
                                secret_key=self.server.secret_key,
                                endpoint_override=f"127.0.0.1:{self.server.port}",
                                scheme="http", region="us-east-1")
        while not self._stop.is_set():
            try:
                self.counts.append(ds.dataset(self.prefix, filesystem=store, format="parquet",
                                              partitioning="hive").count_rows())
            except Exception as exc:  # what a reader meets: a file gone mid-read
                self.failed.append(type(exc).__name__)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def readers_during_writes(spark, cfg, counters, locations, info, server):
    """The batch written again by each method (untimed) under a PathReader: {method: (rows
    before and after, the counts seen, the failed reads)}."""
    seen = {}
    for meth in METHODS:
        rows = spark.table(f"{DB}.{TABLES[meth]}").count()
        prefix = locations[meth][len("s3a://"):]
        with PathReader(server, prefix) as reader:
            batch(spark, cfg, counters, locations, info, only=meth)
        seen[meth] = (rows, reader.counts, reader.failed)
    return seen


# ----------------------------------------------------------------------------------------
# The run
# ----------------------------------------------------------------------------------------
def start_session(args, work, server):
    conf = [("spark.jars", ",".join(s3a_jars(os.environ)))]
    conf += [(f"spark.hadoop.{k}", v) for k, v in server.hadoop_settings().items()]
    return start_spark(work.tmp, args.driver_memory, app_name="sized-object-store-benchmark",
                       conf=conf)


def backfill(spark, cfg, counters, locations):
    steps = {}
    ours = TableRef(DB, TABLES[OURS])
    steps[OURS] = measured(counters, spark, locations[OURS], lambda: write_dataframe(
        spark, spark.table(SOURCE_VIEW), ours, cfg, full_refresh=True, log=lambda m: None))
    steps[DBT] = measured(counters, spark, locations[DBT], lambda: spark.sql(
        f"CREATE TABLE {DB}.{TABLES[DBT]} USING parquet PARTITIONED BY (event_date) "
        f"LOCATION '{locations[DBT]}' AS SELECT {COLS} FROM {SOURCE_VIEW}"))
    return steps


def batch(spark, cfg, counters, locations, info, only=None):
    """Both methods write the batch (or `only` the one), in turns; {method: Step}."""
    def dbt_spark():
        with dynamic_overwrite(spark):
            spark.sql(overwrite_sql(f"{DB}.{TABLES[DBT]}", info["table"]))

    def ours():
        write_dataframe(spark, spark.table(info["table"]), TableRef(DB, TABLES[OURS]), cfg,
                        log=lambda m: None)
    first, second = (OURS, DBT) if info["batch"] % 2 else (DBT, OURS)   # turn about
    actions = {OURS: ours, DBT: dbt_spark}
    return {meth: measured(counters, spark, locations[meth], actions[meth])
            for meth in (first, second) if only in (None, meth)}


def ideal(files, target):
    """The ideal file count of a table's files: each partition's bytes over the target,
    rounded up (core.planning.ideal_file_count)."""
    by_part = {}
    for rel, size in files.items():
        part = os.path.dirname(rel)
        by_part[part] = by_part.get(part, 0) + size
    return ideal_file_count(by_part, target)


def run(args):
    target = parse_size(args.target, "--target")
    cfg = upsert_config(args.target)
    work = start_run(args.out, "object-store-")
    server = object_store.S3Server(state=os.path.join(work.tmp, "s3"), port=free_port(),
                                   bucket="bench", access_key="bench", secret_key="bench-secret",
                                   metrics_port=free_port())
    print(f"object-store benchmark: {args.rows:,} rows, target {args.target}, {args.batches} "
          f"batches; S3 server {object_store.start(server)}, work dir {work.tmp}", flush=True)
    version = engine_state()
    try:
        spark = start_session(args, work, server)
        try:
            return measure_all(spark, args, cfg, target, server, work, version)
        finally:
            spark.stop()
    finally:
        object_store.stop(server)


def measure_all(spark, args, cfg, target, server, work, version):
    print("materializing the source and the batches on local disk ...", flush=True)
    src_df, src = materialize_source(spark, args.rows, args.input_partitions)
    shape = BatchOptions.from_args(args)
    batches = materialize_batches(spark, shape, batch_plan(shape, src["rows"], sorted(
        rows_by_date(spark))), src["rows"], rows_by_date(spark), args.input_partitions)
    spark.sql(f"CREATE DATABASE {DB} LOCATION 's3a://{server.bucket}/warehouse/{DB}.db'")
    locations = {meth: f"s3a://{server.bucket}/warehouse/{DB}.db/{TABLES[meth]}"
                 for meth in METHODS}
    counters = Counters(spark, server.bucket, server.metrics_port)
    print("backfill ...", flush=True)
    history = [("backfill", backfill(spark, cfg, counters, locations))]
    print_step(*history[-1], target, cfg.small_file_limit)
    for info in batches:
        history.append((f"batch {info['batch']}", batch(spark, cfg, counters, locations, info)))
        print_step(*history[-1], target, cfg.small_file_limit)
    a, b = (spark.table(f"{DB}.{TABLES[m]}") for m in METHODS)
    same = a.exceptAll(b).count() + b.exceptAll(a).count() == 0
    rows = a.count()
    print(f"\nfinal tables: {rows:,} rows each; the same rows: {same}", flush=True)
    print("the last batch again under a path reader (untimed) ...", flush=True)
    readers = readers_during_writes(spark, cfg, counters, locations, batches[-1], server)
    print_section("what a path reader saw during a write", READER_HEAD, reader_rows(readers))
    return {"work": work, "readers": readers, "history": history, "same": same, "rows": rows,
            "target": target, "small": cfg.small_file_limit, "spark": spark.version,
            "version": version, "source": src, "batches": len(batches)}


# ----------------------------------------------------------------------------------------
# Reporting
# ----------------------------------------------------------------------------------------
HEAD = ["method", "wall s", "x dbt-spark", "files", "ideal", "small", "copied",
        "PUT", "COPY", "DELETE", "bulk DELETE", "LIST", "HEAD", "GET", "server requests"]


def step_rows(steps, target, small):
    base = steps[DBT].wall
    rows = []
    for meth in METHODS:
        st = steps[meth]
        rows.append([meth, f"{st.wall:.1f}", f"{st.wall / base:.2f}", f"{len(st.files):,}",
                     f"{ideal(st.files, target):,}",
                     f"{sum(1 for s in st.files.values() if s < small):,}",
                     format_size(st.s3a.get(COPIED, 0)),
                     *(f"{st.s3a.get(k, 0):,}" for k in (
                         "object_put_request", "object_copy_requests", "object_delete_request",
                         "object_bulk_delete_request", "object_list_request",
                         "object_metadata_request", "action_http_get_request")),
                     ", ".join(f"{k} {v:,}" for k, v in sorted(st.server.items()) if v)])
    return rows


READER_HEAD = ["method", "table rows", "reads", "fewest rows seen", "most rows seen",
               "reads with every row", "failed reads"]


def reader_rows(readers):
    out = []
    for meth, (rows, counts, failed) in readers.items():
        out.append([meth, f"{rows:,}", f"{len(counts) + len(failed):,}",
                    f"{min(counts):,}" if counts else "-", f"{max(counts):,}" if counts else "-",
                    f"{sum(1 for c in counts if c == rows):,}",
                    f"{len(failed):,}" + (f" ({', '.join(sorted(set(failed)))})" if failed
                                          else "")])
    return out


def print_step(name, steps, target, small):
    print_section(f"{name}", HEAD, step_rows(steps, target, small))


def report(args, result, argv):
    history = result["history"]
    total = {meth: sum(steps[meth].wall for _name, steps in history) for meth in METHODS}
    copied = {meth: sum(steps[meth].s3a.get(COPIED, 0) for _name, steps in history)
              for meth in METHODS}
    over = [len(steps[OURS].files) / ideal(steps[OURS].files, result["target"]) - 1
            for _name, steps in history]
    at_ideal = max(over) <= GOAL_EXTRA_FILES
    ratio = total[OURS] / total[DBT]
    goals = [f"ours' wall time, all steps: {total[OURS]:.1f} s against dbt-spark's "
             f"{total[DBT]:.1f} s = {ratio:.2f}x (goal at most 1.2x): "
             f"{'PASS' if ratio <= 1.2 else 'FAIL'}",
             f"bytes copied server-side: ours {format_size(copied[OURS])}, dbt-spark "
             f"{format_size(copied[DBT])} (goal: no more): "
             f"{'PASS' if copied[OURS] <= copied[DBT] else 'FAIL'}",
             f"ours' files against the ideal after every step: at most {max(over):+.1%} (goal: "
             f"at most {GOAL_EXTRA_FILES:.0%} more, the design's bound): "
             f"{'PASS' if at_ideal else 'FAIL'}",
             f"the same rows in both tables at the end ({result['rows']:,}): "
             f"{'PASS' if result['same'] else 'FAIL'}"]
    print_section("goals", notes=goals)
    lines = md_header("Object-store cost: ours and dbt-spark on S3 (SeaweedFS, S3A)",
                      command_line("object_store.py", argv), result["spark"])
    lines += [f"{result['source']['rows']:,} rows over a year of days, then "
              f"{result['batches']} upsert batches; target {args.target}; "
              f"{result['version']}.", ""]
    for name, steps in history:
        lines += [f"### {name}", ""]
        lines += [md_table(HEAD, step_rows(steps, result["target"], result["small"])), ""]
    lines += ["### Goals", ""] + [f"- {g}" for g in goals] + [""]
    lines += ["### What a path reader saw during a write (the last batch again, untimed)", "",
              md_table(READER_HEAD, reader_rows(result["readers"]))]
    finish_run(result["work"], "object_store.md", lines, args.keep)


if __name__ == "__main__":
    sys.exit(main())
