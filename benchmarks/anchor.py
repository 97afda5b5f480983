#!/usr/bin/env python
"""delta-rs as an outside anchor: the same compaction and Z-order jobs done by ours and by
delta-rs (the `deltalake` package: Rust, no Spark), on the same generated rows, measured
by the same code.

    python benchmarks/anchor.py [--rows 1000000] [--days 90] [--loads 12] [--repeat 1]
        [--cluster-rows 1000000] [--batches 30] [--target 1MB] [--out benchmarks/out]

compaction: compaction.py's loads: `--rows` events over `--days` daily partitions, loaded
in `--loads` loads (each covering every day), so each partition holds one small file per
load. Ours: the loads written by ours `insert` with packing off, then `sized_compact`.
delta-rs: the same loads appended to a Delta table partitioned by event_date, then
`DeltaTable.optimize.compact(target_size)`.

zorder: clustering.py's arrival table: `--cluster-rows` events of sessions and users, one
write per arrival day (`--batches`), unpartitioned. Ours: written by ours `insert`
(packing off), then `sized_cluster` Z-order on (session_id, user_id) of the whole table in
one group, then Hilbert on the same columns (re-clustering the Z-order's files). delta-rs:
the same batches appended (target_file_size = target), then
`DeltaTable.optimize.z_order(["session_id", "user_id"], target_size)`.

Measured alike, from the live Parquet files (ours: the files under the table; delta-rs:
the files its log names): files, the ideal (sum over partitions of ceil(bytes / target)),
small files (below target x 100/128), size spread, rows, wall time of the job; after
Z-order, point queries on session_id and user_id from the files' Parquet statistics
(pyarrow): files whose [min, max] holds the value, and rows of the row groups whose
[min, max] holds it. Writes <out>/anchor.md. See benchmarks/README.md.
"""
import argparse
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Dict, List, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks import clustering as cl  # noqa: E402
from benchmarks.compaction import timed  # noqa: E402
from benchmarks.lib import DEFAULT_OUT  # noqa: E402
from benchmarks.lib.data import SCHEMA, SOURCE_VIEW  # noqa: E402
from benchmarks.lib.report import (command_line, engine_state, finish_run,  # noqa: E402
                                   md_bullets, md_header, md_table, print_section,
                                   run_benchmark, say, start_run)
from benchmarks.lib.session import conf_set, start_spark  # noqa: E402
from benchmarks.lib.tables import listing, materialize_source, table_location  # noqa: E402
from python_adapter.api import (TableRef, cluster, compact, parse_config,  # noqa: E402
                                restore, timeline)
from python_adapter.api import write_dataframe  # noqa: E402
from python_adapter.core.sizes import parse_size  # noqa: E402

LOADS_TABLE = "an_loads"
CURVE_COLS = ["session_id", "user_id"]
HEAD = ["method", "files", "ideal", "files / ideal", "small files", "min kB", "median kB",
        "max kB", "rows", "wall s"]
QUERY_HEAD = ["method", "query on", "files by min/max", "of files", "rows by min/max",
              "% of rows"]


def main(argv=None):
    return run_benchmark(argv, parse_args, run, report)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="compaction: rows (1,000,000)")
    ap.add_argument("--days", type=int, default=90, help="compaction: daily partitions (90)")
    ap.add_argument("--loads", type=int, default=12, help="compaction: loads (12)")
    ap.add_argument("--cluster-rows", type=int, default=1_000_000,
                    help="zorder: rows of the arrival table (1,000,000)")
    ap.add_argument("--batches", type=int, default=30, help="zorder: arrival batches (30)")
    ap.add_argument("--queries", type=int, default=3, help="random values per query column")
    ap.add_argument("--target", default="1MB", help="target file size of every method")
    ap.add_argument("--repeat", type=int, default=1,
                    help="compaction: runs of each side, each from the loads' files (ours "
                         "restored to the last load, delta-rs to its version before); later "
                         "runs find ours' JVM warm (1)")
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    return ap.parse_args(argv)


# ----------------------------------------------------------------------------------------
# The live files of each side, measured by the same code
# ----------------------------------------------------------------------------------------
def ours_files(spark, name) -> Dict[str, int]:
    """{absolute path: bytes} of the live data files of our table `name`."""
    location = table_location(spark, name)
    root = location[len("file:"):] if location.startswith("file:") else location
    return {f"{root}/{rel}": size for rel, size in listing(spark, location).items()}


def delta_files(path) -> Dict[str, int]:
    """{absolute path: bytes} of the files the Delta table's current version names."""
    from urllib.parse import unquote, urlparse

    from deltalake import DeltaTable

    out = {}
    for uri in DeltaTable(path).file_uris():
        local = unquote(urlparse(uri).path) if uri.startswith("file:") else uri
        out[local] = os.path.getsize(local)
    return out


def measure(files: Dict[str, int], target: int, wall: float) -> dict:
    """Files, ideal, small files, size spread and rows of a table's live files."""
    import pyarrow.parquet as pq

    by_part: Dict[str, List[int]] = {}
    for path, size in files.items():
        by_part.setdefault(os.path.dirname(path), []).append(size)
    sizes = sorted(files.values())
    return {"files": len(sizes), "ideal": sum(math.ceil(sum(v) / target) for v in by_part.values()),
            "small": sum(1 for s in sizes if s < target * 100 / 128),
            "min": sizes[0], "median": statistics.median(sizes), "max": sizes[-1],
            "rows": sum(pq.ParquetFile(p).metadata.num_rows for p in files), "wall": wall}


def point_query(footers: dict, col: str, value) -> Tuple[int, int]:
    """(files whose [min, max] of col holds value, rows of the row groups whose [min, max]
    holds it): what a reader skipping by Parquet statistics opens and reads. footers:
    {path: pyarrow FileMetaData}."""
    hit_files = hit_rows = 0
    for md in footers.values():
        index = md.schema.to_arrow_schema().get_field_index(col)
        rows = 0
        for g in range(md.num_row_groups):
            stats = md.row_group(g).column(index).statistics
            if stats is None or not stats.has_min_max or stats.min <= value <= stats.max:
                rows += md.row_group(g).num_rows
        hit_files += rows > 0
        hit_rows += rows
    return hit_files, hit_rows


# ----------------------------------------------------------------------------------------
# Spark rows to delta-rs
# ----------------------------------------------------------------------------------------
def append_to_delta(spark, df, path, work, options):
    """df's rows appended to the Delta table at path (options: partition_by, target):
    written by Spark as Parquet with microsecond timestamps (Delta's; Spark's default INT96
    reads as nanoseconds), read by pyarrow, written by delta-rs."""
    import pyarrow.parquet as pq
    from deltalake import write_deltalake

    staged = os.path.join(work, f"arrow-{time.time_ns()}")
    with conf_set(spark, **{"spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}):
        df.write.parquet(f"file:{staged}")
    write_deltalake(path, pq.read_table(staged), mode="append",
                    partition_by=options.get("partition_by"),
                    target_file_size=options["target"])


# ----------------------------------------------------------------------------------------
# The two jobs
# ----------------------------------------------------------------------------------------
def run_compaction(spark, args, target, work):
    """The loads' small files compacted by ours and by delta-rs."""
    from deltalake import DeltaTable

    say(f"compaction: {args.rows:,} rows over {args.days} days in {args.loads} loads ...")
    materialize_source(spark, args.rows, args.loads, days=args.days)
    cfg = parse_config({"partition_by": ["event_date"], "incremental_strategy": "insert",
                        "target_file_size": target, "small_file_limit": 0,
                        "distribution": "exact"})
    delta = os.path.join(work, "delta_loads")
    for k in range(args.loads):
        load = spark.table(SOURCE_VIEW).where(f"event_id % {args.loads} = {k}")
        write_dataframe(spark, load, TableRef(SCHEMA, LOADS_TABLE), cfg,
                        full_refresh=(k == 0), log=lambda m: None)
        append_to_delta(spark, load, delta, work, {"partition_by": ["event_date"],
                                                   "target": target})
    before = {"ours (the loads' files)": measure(ours_files(spark, LOADS_TABLE), target, 0.0),
              "delta-rs (the loads' files)": measure(delta_files(delta), target, 0.0)}
    table = TableRef(SCHEMA, LOADS_TABLE)
    loaded = timeline(spark, table)[-1][0]  # the last load's instant
    version = DeltaTable(delta).version()
    after = {}
    for k in range(1, args.repeat + 1):
        run = "" if args.repeat == 1 else f", run {k}"
        if k > 1:  # both back at the loads' files
            restore(spark, table, loaded, log=lambda m: None)
            DeltaTable(delta).restore(version)
        ours_s, _ = timed(f"ours sized_compact{run}", lambda: compact(
            spark, table, {"max_groups": 100_000}, log=lambda m: None))
        delta_s, _ = timed(f"delta-rs optimize.compact{run}",
                           lambda: DeltaTable(delta).optimize.compact(target_size=target))
        after[f"ours sized_compact{run}"] = measure(ours_files(spark, LOADS_TABLE), target, ours_s)
        after[f"delta-rs optimize.compact{run}"] = measure(delta_files(delta), target, delta_s)
    return {**before, **after}


def run_zorder(spark, args, target, work):
    """The arrival table clustered by ours (Z-order, then Hilbert) and Z-ordered by delta-rs;
    returns (layouts, point queries)."""
    from deltalake import DeltaTable
    from pyspark.sql import functions as F

    sessions = max(1, args.cluster_rows // 15)
    users = max(1, sessions // 64)
    source_args = SimpleNamespace(rows=args.cluster_rows, batches=args.batches,
                                  input_partitions=8, queries=args.queries)
    values = cl.write_source(spark, source_args, sessions, users)
    say(f"zorder: {args.cluster_rows:,} rows in {args.batches} arrival batches ...")
    cl.write_arrivals(spark, source_args, target, lambda m: None)
    delta = os.path.join(work, "delta_events")
    for b in range(args.batches):
        batch = spark.table(cl.SOURCE).where(F.col("batch") == b).select(*cl.COLS)
        append_to_delta(spark, batch, delta, work, {"target": target})
    layouts = {"ours (the arrivals' files)": measure(ours_files(spark, cl.TABLE), target, 0.0),
               "delta-rs (the arrivals' files)": measure(delta_files(delta), target, 0.0)}
    queries = {label: _queries(ours_files(spark, cl.TABLE) if label.startswith("ours")
                               else delta_files(delta), values)
               for label in layouts}
    group = {"target_file_size": target, "cluster_max_bytes_per_group": 10**12}
    for label, strategy in (("ours sized_cluster zorder", "zorder"),
                            ("ours sized_cluster hilbert (from the zorder's files)", "hilbert")):
        wall, _ = timed(label, lambda s=strategy: cluster(
            spark, TableRef(SCHEMA, cl.TABLE), CURVE_COLS, s, options=group,
            log=lambda m: None))
        files = ours_files(spark, cl.TABLE)
        layouts[label], queries[label] = measure(files, target, wall), _queries(files, values)
    wall, _ = timed("delta-rs optimize.z_order", lambda: DeltaTable(delta).optimize.z_order(
        CURVE_COLS, target_size=target))
    files = delta_files(delta)
    layouts["delta-rs optimize.z_order"] = measure(files, target, wall)
    queries["delta-rs optimize.z_order"] = _queries(files, values)
    return layouts, queries


def _queries(files, values) -> Dict[str, Tuple[float, float, int, int]]:
    """{column: (mean files, mean rows by min/max, files, rows)} over the query values,
    each file's footer read once."""
    import pyarrow.parquet as pq

    footers = {p: pq.ParquetFile(p).metadata for p in files}
    rows = sum(md.num_rows for md in footers.values())
    out = {}
    for col in CURVE_COLS:
        hits = [point_query(footers, col, v) for v in values[col]]
        out[col] = (statistics.fmean(h[0] for h in hits), statistics.fmean(h[1] for h in hits),
                    len(files), rows)
    return out


@dataclass
class Anchor:
    compaction: dict
    zorder: dict
    queries: dict
    work: object
    spark_version: str
    version: str
    deltalake_version: str


def run(args):
    import deltalake

    target = parse_size(args.target, "--target")
    work = start_run(args.out, "anchor-")
    spark = start_spark(work.tmp, args.driver_memory, app_name="sized-anchor-benchmark")
    try:
        compaction = run_compaction(spark, args, target, work.tmp)
        zorder, queries = run_zorder(spark, args, target, work.tmp)
        return Anchor(compaction, zorder, queries, work, spark.version, engine_state(),
                      deltalake.__version__)
    finally:
        spark.stop()


# ----------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------
def layout_rows(layouts):
    return [[label, f"{m['files']:,}", f"{m['ideal']:,}", f"{m['files'] / m['ideal']:.2f}",
             f"{m['small']:,}", f"{m['min'] / 1000:,.0f}", f"{m['median'] / 1000:,.0f}",
             f"{m['max'] / 1000:,.0f}", f"{m['rows']:,}",
             f"{m['wall']:.1f}" if m["wall"] else ""] for label, m in layouts.items()]


def query_rows(queries):
    body = []
    for col in CURVE_COLS:
        for label, per_col in queries.items():
            files, rows, n, total = per_col[col]
            body.append([label, col, f"{files:,.1f}", f"{n:,}", f"{rows:,.0f}",
                         f"{100 * rows / total:.2f}%"])
    return body


def report(args, res, argv):
    ctitle = (f"compaction: {args.rows:,} rows, {args.days} daily partitions, {args.loads} "
              f"loads, target {args.target}")
    ztitle = (f"zorder: {args.cluster_rows:,} rows in {args.batches} arrival batches, "
              f"unpartitioned, on {', '.join(CURVE_COLS)}, target {args.target}")
    notes = [f"deltalake {res.deltalake_version} (delta-rs) beside the {res.version}; "
             f"both measured from their live Parquet files with pyarrow.",
             "files by min/max: files whose [min, max] of the column holds the value; rows by "
             "min/max: rows of the row groups whose [min, max] holds it (means over "
             f"{args.queries} random existing values per column)."]
    cbody, zbody, qbody = (layout_rows(res.compaction), layout_rows(res.zorder),
                           query_rows(res.queries))
    print_section(ctitle, HEAD, cbody)
    print_section(ztitle, HEAD, zbody)
    print_section("point queries by Parquet statistics", QUERY_HEAD, qbody, notes)
    md = [*md_header("delta-rs as an outside anchor", command_line("anchor.py", argv),
                     res.spark_version),
          f"## {ctitle}", "", md_table(HEAD, cbody), "",
          f"## {ztitle}", "", md_table(HEAD, zbody), "", md_table(QUERY_HEAD, qbody), "",
          *md_bullets(notes), ""]
    finish_run(res.work, "anchor.md", md, args.keep)


if __name__ == "__main__":
    sys.exit(main())
