#!/usr/bin/env python
"""Peers benchmark: ours against dbt-spark's merge on Hudi, Iceberg and Delta (and Hudi's own
writer) on the same Spark, the same data and the same target; then what each table costs a
reader downstream.

    bash scripts/setup.sh peers     # .venv-peers: pyspark 3.5 and Maven (the formats' jars)
    .venv-peers/bin/python benchmarks/peers.py [--rows 200000] [--batches 20] [--target 64KB]
                                               [--methods ours,parquet,hudi,iceberg,delta,hudi-writer]

Every method writes upsert.py's data: the backfill (a year of daily partitions, +10% a month)
as its first run, then the same upsert batches (2% new rows, 1% updates of older days), each
in a Spark process of its own on pyspark 3.5 (the one Spark all three formats' runtimes are
served for here), started alike. Methods:
  ours            the engine: full refresh, then incremental_strategy 'upsert' on event_id
  parquet         dbt-spark on parquet: create table as, then insert_overwrite of the touched
                  partitions' rows (upsert.py's dbt insert_overwrite; a parquet merge is refused)
  hudi, iceberg,  dbt-spark with file_format hudi / iceberg / delta and incremental_strategy
  delta           merge: `create table ... as`, then `merge into ... using <batch>`, with the
                  format's documented sizing settings at the target (benchmarks/lib/peers.py)
  hudi-writer     Hudi's DataFrame writer: insert, then upsert (Iceberg's and Delta's own
                  upsert is the MERGE dbt-spark issues)
Per batch and method: live files (as the format's reader sees them), their sizes, files below
the small-file limit, the ideal count (per partition, its bytes over the target rounded up),
wall time, bytes written against bytes ingested. Then, on the final tables: a full scan, a
day and a key lookup through Spark and through DuckDB (time and files read), the metastore's
partition listing, and a check that every method holds the same rows. Writes <out>/peers.md.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from datetime import timedelta

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks.lib.data import COLS, SCHEMA, SOURCE_VIEW, START, BatchOptions  # noqa: E402
from benchmarks.lib.peers import (Sizing, create_as_sql, delta_session_sizing,  # noqa: E402
                                  duckdb_query, hudi_writer_options, live_files, live_paths,
                                  local_path, merge_sql, parse_method_args, run_children,
                                  session_conf, spark_query)
from benchmarks.lib.report import (command_line, engine_state, finish_run,  # noqa: E402
                                   md_bullets, md_header, md_table, print_section, start_run)
from benchmarks.lib.tables import dynamic_overwrite, measure_batch, table_location  # noqa: E402

# key: (label, the Spark session's format)
METHODS = {
    "ours": ("ours upsert", "parquet"),
    "parquet": ("dbt-spark parquet insert_overwrite", "parquet"),
    "hudi": ("dbt-spark hudi merge", "hudi"),
    "iceberg": ("dbt-spark iceberg merge", "iceberg"),
    "delta": ("dbt-spark delta merge", "delta"),
    "hudi-writer": ("Hudi writer upsert", "hudi"),
}
DAY = START + timedelta(days=182)        # the day query's day: mid-year
READ_RUNS = 3


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        return child(args)
    report(args, parent(args, argv), argv)
    return 0


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=200_000, help="rows of the backfill (200000)")
    ap.add_argument("--target", default="64KB", help="target file size of every method (64KB)")
    BatchOptions.add_arguments(ap)
    ap.add_argument("--input-partitions", type=int, default=16,
                    help="files of the source table, as in backfill.py (16)")
    return parse_method_args(ap, argv, METHODS, "4g")


def ours_config(args):
    from benchmarks.lib.tables import upsert_config

    return upsert_config(args.target)


def sizing_of(args) -> Sizing:
    cfg = ours_config(args)
    return Sizing(cfg.target_file_size, cfg.small_file_limit)


# ----------------------------------------------------------------------------------------
# The parent: one process per method, then the tables side by side
# ----------------------------------------------------------------------------------------
def parent(args, argv):
    work = start_run(args.out, "peers-")
    print(f"peers benchmark: {args.rows:,} rows, {args.batches} batches, target {args.target}, "
          f"methods {args.methods}; work dir {work.tmp}", flush=True)
    labels = {key: METHODS[key][0] for key in args.methods.split(",")}
    return work, run_children(os.path.abspath(__file__), argv, labels, work.tmp)


# ----------------------------------------------------------------------------------------
# A method's process
# ----------------------------------------------------------------------------------------
@dataclass
class Step:
    """One write: its wall seconds and the live files after it."""
    wall: float
    files: dict


def child(args):
    from benchmarks.lib.session import start_spark
    from benchmarks.upsert import prepare_data

    key, fmt = args.child, METHODS[args.child][1]
    sizing = sizing_of(args)
    conf = session_conf(fmt) + (delta_session_sizing(sizing) if fmt == "delta" else ())
    spark = start_spark(args.work, args.driver_memory, app_name=f"peers-{key}", conf=conf)
    try:
        src, batches = prepare_data(spark, args)
        writer = Writer(spark, key, ours_config(args), os.path.join(args.work, "tables"))
        writer.phases = args.phases
        steps = [writer.step(lambda: writer.backfill(SOURCE_VIEW))]
        print(f"  backfill: {steps[0].wall:.1f}s, {len(steps[0].files):,} files", flush=True)
        for info in batches:
            steps.append(writer.step(lambda: writer.upsert(info["table"])))
            print(f"  batch {info['batch']}: {steps[-1].wall:.1f}s, "
                  f"{len(steps[-1].files):,} files", flush=True)
        result = {"spark": spark.version, "source": src, "steps": [asdict(s) for s in steps],
                  "batches": [{"bytes": b["bytes"], "touched": sorted(b["touched"]),
                               "rows": b["rows"]} for b in batches],
                  "reads": writer.reads(args.rows), "rows": writer.fingerprint()}
    finally:
        spark.stop()
    with open(os.path.join(args.work, "result.json"), "w", encoding="utf-8") as fh:
        json.dump(result, fh)
    return 0


class Writer:
    """One method's table: its writes, its live files, its reads."""

    def __init__(self, spark, key, cfg, path_root):
        self.spark, self.key, self.cfg = spark, key, cfg
        self.sizing = Sizing(cfg.target_file_size, cfg.small_file_limit)
        self.fmt = METHODS[key][1]
        self.name = "peer_" + key.replace("-", "_")
        self.table = f"{SCHEMA}.{self.name}"
        self.location = os.path.join(path_root, self.name)   # the Hudi writer's path
        self.phases = False
        self.started = 0.0

    def log(self, message):
        """Ours' phase lines, with --phases: what goal 4 sets beside a peer's write."""
        if self.phases:
            print(f"    {time.perf_counter() - self.started:6.2f}s {message}", flush=True)

    def step(self, write) -> Step:
        t0 = self.started = time.perf_counter()
        write()
        wall = time.perf_counter() - t0
        return Step(wall, self.files())

    def files(self):
        if self.key in ("ours", "parquet"):
            from benchmarks.lib.tables import listing
            return listing(self.spark, table_location(self.spark, self.name))
        return live_files(self.spark, self._reader_format(), self.table, self.location)

    def _reader_format(self):
        """The format live_paths reads: Hudi's writer keeps its table at a path."""
        return self.key if self.key == "hudi-writer" else self.fmt

    def backfill(self, source):
        if self.key == "ours":
            self._ours(source, full_refresh=True)
        elif self.key == "hudi-writer":
            self._hudi_writer(source, "insert", mode="overwrite")
        else:
            self.spark.sql(create_as_sql(self.fmt, self.name, source, self.sizing))

    def upsert(self, batch):
        if self.key == "ours":
            self._ours(batch, full_refresh=False)
        elif self.key == "parquet":
            from benchmarks.upsert import overwrite_sql
            with dynamic_overwrite(self.spark):
                self.spark.sql(overwrite_sql(self.table, batch))
        elif self.key == "hudi-writer":
            self._hudi_writer(batch, "upsert", mode="append")
        else:
            self.spark.sql(merge_sql(self.name, batch))

    def _ours(self, source, full_refresh):
        from python_adapter.api import TableRef, write_dataframe

        write_dataframe(self.spark, self.spark.table(source), TableRef(SCHEMA, self.name), self.cfg,
                        full_refresh=full_refresh, log=self.log)

    def _hudi_writer(self, source, operation, mode):
        options = hudi_writer_options(self.name, self.sizing, operation)
        (self.spark.table(source).select(*COLS.split(", ")).write.format("hudi")
         .options(**options).mode(mode).save(self.location))

    # -- reads ---------------------------------------------------------------------------
    def _reader_name(self):
        """The name Spark queries: the metastore's table, or a view of the Hudi writer's path."""
        if self.key != "hudi-writer":
            return self.table
        self.spark.read.format("hudi").load(self.location).createOrReplaceTempView("hudi_path")
        return "hudi_path"

    def reads(self, rows):
        """The three queries through Spark and DuckDB, and the partition listing."""
        name = self._reader_name()
        key_id = rows // 3
        queries = {"full scan": ("", "count(*), sum(amount), max(payload)"),
                   "a day": (f"WHERE event_date = DATE '{DAY.isoformat()}'",
                             "count(*), sum(amount)"),
                   "key lookup": (f"WHERE event_id = {key_id}", "event_id, amount, event_type")}
        out = {}
        for query, (where_sql, select) in queries.items():
            s = spark_query(self.spark, f"SELECT {select} FROM {name} {where_sql}", READ_RUNS)
            d = duckdb_query(self._duckdb_source(), where_sql, select, READ_RUNS)
            out[query] = {"spark": asdict(s), "duckdb": asdict(d)}
        out["partitions"] = self._partition_listing()
        return out

    def _duckdb_source(self):
        """read_parquet over the table as DuckDB reaches it: the plain tables by their path's
        glob (what a reader of <table>/**/*.parquet sees), a format's by its live files (DuckDB
        has no Hudi reader, and its Iceberg and Delta extensions are not installable here)."""
        if self.key in ("ours", "parquet"):
            location = local_path(table_location(self.spark, self.name))
            return f"read_parquet('{location}/**/*.parquet', hive_partitioning = true)"
        paths = live_paths(self.spark, self._reader_format(), self.table, self.location)
        listed = ", ".join(f"'{p}'" for p in paths)
        return f"read_parquet([{listed}], hive_partitioning = true)"

    def _partition_listing(self):
        """The metastore's partition listing: SHOW PARTITIONS where the catalog answers it,
        Iceberg's `partitions` metadata table; Delta and the Hudi writer's path table keep no
        partitions in the metastore."""
        if self.key in ("delta", "hudi-writer"):
            return None
        sql = (f"SELECT partition FROM {self.table}.partitions" if self.fmt == "iceberg"
               else f"SHOW PARTITIONS {self.table}")
        s = spark_query(self.spark, sql, READ_RUNS)
        return {"seconds": s.seconds, "partitions": s.rows}

    def fingerprint(self):
        """Rows, distinct keys and a hash of every row, through the format's reader: every
        method's table must hold the same rows."""
        name = self._reader_name()
        row = self.spark.sql(
            f"SELECT count(*), count(DISTINCT event_id), sum(xxhash64({COLS}) % 1000003) "
            f"FROM {name}").first()
        return {"rows": row[0], "keys": row[1], "hash": int(row[2])}


# ----------------------------------------------------------------------------------------
# The tables side by side
# ----------------------------------------------------------------------------------------
def partition_bytes(files):
    by_part = {}
    for rel, size in files.items():
        part = os.path.dirname(rel)
        by_part[part] = by_part.get(part, 0) + size
    return by_part


def ideal_files(reference, target):
    """Per partition, its bytes over the target rounded up (at least one file); `reference`
    is plain Parquet's files of the same rows (ours'), so a format's own overhead in its
    files (Hudi's bloom filter and meta columns) does not move the ideal."""
    return sum(max(1, math.ceil(b / target)) for b in partition_bytes(reference).values())


def shape(files, sizing, reference=None):
    sizes = sorted(files.values())
    return {"files": len(sizes), "ideal": ideal_files(reference or files, sizing.target),
            "small": sum(1 for s in sizes if s < sizing.small_file_limit),
            "min": sizes[0] if sizes else 0, "median": statistics.median(sizes) if sizes else 0,
            "max": sizes[-1] if sizes else 0}


def reference_step(results, i):
    """The plain Parquet files of step i that the ideal counts from: ours' if it ran."""
    ref = results.get("ours") or results.get("parquet")
    return ref["steps"][i]["files"] if ref else None


def kb(n):
    return f"{n / 1000:,.0f}"


def write_rows(results, sizing):
    head = ["method", "backfill s", "backfill files (ideal)", "batches s (sum)",
            "batch s (median)", "files after (ideal)", "< small limit", "size min / median / "
            "max kB", "written / ingested", "max small in a touched partition"]
    body = []
    for key, res in results.items():
        steps = res["steps"]
        first = shape(steps[0]["files"], sizing, reference_step(results, 0))
        last = shape(steps[-1]["files"], sizing, reference_step(results, -1))
        walls = [s["wall"] for s in steps[1:]]
        written, max_small = 0, 0
        for before, after, batch in zip(steps, steps[1:], res["batches"]):
            m = measure_batch(before["files"], after["files"], set(batch["touched"]),
                              sizing.small_file_limit)
            written += m["bytes_written"]
            max_small = max(max_small, m["max_small_touched"])
        ingested = sum(b["bytes"] for b in res["batches"]) or 1
        body.append([METHODS[key][0], f"{steps[0]['wall']:.1f}",
                     f"{first['files']:,} ({first['ideal']:,})", f"{sum(walls):.1f}",
                     f"{statistics.median(walls):.1f}" if walls else "-",
                     f"{last['files']:,} ({last['ideal']:,})", f"{last['small']:,}",
                     f"{kb(last['min'])} / {kb(last['median'])} / {kb(last['max'])}",
                     f"{written / ingested:.1f}", str(max_small)])
    return head, body


def batch_rows(results):
    keys = list(results)
    head = ["batch"] + [f"{k} s" for k in keys] + [f"{k} files" for k in keys]
    n = max(len(r["steps"]) for r in results.values())
    body = []
    for i in range(n):
        row = [str(i) if i else "backfill"]
        row += [f"{results[k]['steps'][i]['wall']:.1f}" for k in keys]
        row += [f"{len(results[k]['steps'][i]['files']):,}" for k in keys]
        body.append(row)
    return head, body


def read_rows(results):
    head = ["method", "query", "Spark s", "Spark files", "DuckDB s", "DuckDB files"]
    body = []
    for key, res in results.items():
        for query in ("full scan", "a day", "key lookup"):
            s, d = res["reads"][query]["spark"], res["reads"][query]["duckdb"]
            body.append([METHODS[key][0], query, f"{s['seconds']:.2f}", _n(s["files"]),
                         f"{d['seconds']:.3f}", _n(d["files"])])
        listing = res["reads"]["partitions"]
        body.append([METHODS[key][0], "partition listing",
                     f"{listing['seconds']:.2f}" if listing else "n/a",
                     f"{listing['partitions']:,} partitions" if listing else "-", "-", "-"])
    return head, body


def _n(value):
    return "-" if value is None else f"{value:,}"


def goal_lines(results, sizing):
    if "ours" not in results:
        return []
    ours = results["ours"]
    lines = []
    for key, res in results.items():
        if key == "ours":
            continue
        pairs = list(zip(ours["steps"][1:], res["steps"][1:]))
        slower = sum(1 for o, p in pairs if o["wall"] > p["wall"])
        lines.append(f"ours at most {METHODS[key][0]}'s wall time per batch: "
                     f"{'PASS' if slower == 0 else 'FAIL'} ({slower} of {len(pairs)} batches "
                     f"slower)")
    ideal = ideal_files(reference_step(results, -1), sizing.target)
    gaps = {k: abs(len(r["steps"][-1]["files"]) - ideal) for k, r in results.items()}
    peers = {k: g for k, g in gaps.items() if k not in ("ours", "parquet")}
    if peers:
        closest = min(peers, key=lambda k: peers[k])
        ok = gaps["ours"] <= peers[closest]
        lines.append(f"files at least as close to the ideal as the closest peer's "
                     f"({METHODS[closest][0]}, {peers[closest]:,} off): "
                     f"{'PASS' if ok else 'FAIL'} (ours {gaps['ours']:,} off)")
    same = {json.dumps(r["rows"], sort_keys=True) for r in results.values()}
    lines.append("every method holds the same rows: "
                 + ("yes" if len(same) == 1 else "NO: " + ", ".join(
                     f"{k} {r['rows']}" for k, r in results.items())))
    return lines


def report(args, measured, argv):
    work, results = measured
    sizing = sizing_of(args)
    if not results:
        print("no method finished")
        return
    spark_version = next(iter(results.values()))["spark"]
    title = (f"Peers: {args.rows:,} rows in daily partitions, then {args.batches} upsert "
             f"batches, target {args.target}, Spark {spark_version}")
    whead, wbody = write_rows(results, sizing)
    bhead, bbody = batch_rows(results)
    rhead, rbody = read_rows(results)
    goals = goal_lines(results, sizing)
    notes = [f"small-file limit {sizing.small_file_limit:,} B for every count; ideal = per "
             f"partition, its bytes as ours' plain Parquet over the target {sizing.target:,} B, "
             "rounded up (the same for every method)",
             "files = the live data files as the format's reader sees them (Hudi: the latest "
             "file slices; Iceberg: the `files` table; Delta: the snapshot's files); metadata "
             "(timelines, manifests, logs, Hudi's metadata table) is not counted",
             "written / ingested = bytes of the data files the batches wrote over the batches' "
             "bytes as Parquet",
             f"reads: median of {READ_RUNS} runs after one untimed run; DuckDB reads the plain "
             "tables by their path glob and a format's table by its live files",
             f"{engine_state()}."]
    print_section(title, whead, wbody, notes + goals)
    print_section("per batch:", bhead, bbody)
    print_section("reads of the final tables:", rhead, rbody)
    md = [*md_header(title, command_line("peers.py", argv), spark_version),
          md_table(whead, wbody), "", *md_bullets(notes + goals), "",
          "## Reads of the final tables", "", md_table(rhead, rbody), "",
          "## Per batch", "", md_table(bhead, bbody), ""]
    finish_run(work, "peers.md", md, args.keep)


if __name__ == "__main__":
    sys.exit(main())
