#!/usr/bin/env python
"""Compaction: a table of small files made sized again, three ways, on the same files.

    python benchmarks/compaction.py [--rows 1000000] [--days 90] [--loads 12] [--target 1MB] [--out benchmarks/out]

The table: `--rows` events over `--days` daily partitions, loaded by ours `insert` in
`--loads` loads (event_id modulo loads; each load covers every day, as late data does) with
packing off (small_file_limit 0), so each partition holds one small file per load. Its files
are copied into a plain Parquet table for the others. Then, each on its own copy:
  ours sized_compact    run_compaction: per partition, small files bin-packed into
                        target-sized files, rows in file order
  ours full rewrite     write_dataframe(full_refresh) of every row into a new table: what a
                        --full-refresh of the model costs when its input is as large
  Spark REBALANCE       INSERT OVERWRITE ... SELECT /*+ REBALANCE(event_date) */ from the
                        plain copy, AQE advisory size = target (Spark's own answer)
Printed per method: files, files / ideal (sum over partitions of ceil(bytes / target)),
small files (below target x 100/128), files per partition at most, bytes written, wall time,
rows and a checksum equal to the input's. Goal (issue 16): ours compaction at most
1.05 x ideal + 1 files, rows identical, less time than the full rewrite. Writes
<out>/compaction.md. See benchmarks/README.md.
"""
import argparse
import math
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks.lib import DEFAULT_OUT  # noqa: E402
from benchmarks.lib.data import COLS, SCHEMA, SOURCE_VIEW  # noqa: E402
from benchmarks.lib.report import (command_line, engine_state, finish_run,  # noqa: E402
                                   md_bullets, md_header, md_table, print_section,
                                   run_benchmark, start_run)
from benchmarks.lib.session import conf_set, start_spark  # noqa: E402
from benchmarks.lib.tables import (copy_files, create_plain_table, listing,  # noqa: E402
                                   materialize_source, partition_of, table_location)
from python_adapter.api import TableRef, compact, parse_config, write_dataframe  # noqa: E402
from python_adapter.core.sizes import parse_size  # noqa: E402

SMALL = "cp_small"          # ours, the loads' small files (compacted in place)
PLAIN = "cp_plain"          # a plain copy of its files
REWRITE = "cp_rewrite"      # ours, every row written again
REBALANCE = "cp_rebalance"  # Spark's INSERT OVERWRITE with REBALANCE
HEAD = ["method", "files", "ideal", "files / ideal", "small files", "max files / partition",
        "written MB", "wall s", "rows equal"]


def main(argv=None):
    return run_benchmark(argv, parse_args, run, report)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows (1000000)")
    ap.add_argument("--days", type=int, default=90, help="daily partitions (90)")
    ap.add_argument("--loads", type=int, default=12, help="loads, each a small file a day (12)")
    ap.add_argument("--target", default="1MB", help="target file size (1MB)")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--out", default=DEFAULT_OUT, help="output directory")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    return ap.parse_args(argv)


def say(message):
    print(message, flush=True)


def _config(target, strategy, **extra):
    return parse_config({"partition_by": ["event_date"], "incremental_strategy": strategy,
                         "target_file_size": target, "distribution": "exact", **extra})


def _checksum(spark, name):
    """(rows, a sum of row hashes): equal for equal multisets of rows."""
    r = spark.sql(f"SELECT count(*), sum(cast(xxhash64({COLS}) as decimal(38, 0))) FROM {SCHEMA}.{name}").first()
    return (r[0], r[1])


def _layout(spark, name, target):
    files = listing(spark, table_location(spark, name))
    by_part = {}
    for rel, size in files.items():
        by_part.setdefault(partition_of(rel), []).append(size)
    ideal = sum(math.ceil(sum(s) / target) for s in by_part.values())
    small = sum(1 for s in files.values() if s < target * 100 / 128)
    return {"files": len(files), "ideal": ideal, "small": small,
            "max_per_part": max(len(v) for v in by_part.values())}


def build_small_files(spark, args, target):
    """The loads' table (ours, packing off) and its plain copy; returns the input's checksum."""
    materialize_source(spark, args.rows, args.loads, days=args.days)
    table = TableRef(SCHEMA, SMALL)
    cfg = _config(target, "insert", small_file_limit=0)
    for k in range(args.loads):
        load = spark.table(SOURCE_VIEW).where(f"event_id % {args.loads} = {k}")
        write_dataframe(spark, load, table, cfg, full_refresh=(k == 0), log=lambda m: None)
    create_plain_table(spark, PLAIN)
    src = table_location(spark, SMALL)
    copy_files(spark, src, table_location(spark, PLAIN), list(listing(spark, src)))
    spark.sql(f"MSCK REPAIR TABLE {SCHEMA}.{PLAIN}")
    return _checksum(spark, SMALL)


def timed(label, fn):
    say(f"{label} ...")
    start = time.perf_counter()
    written = fn()
    return time.perf_counter() - start, written


def run(args):
    target = parse_size(args.target)
    r = start_run(args.out, "compaction-")
    spark = start_spark(r.tmp, args.driver_memory, app_name="sized-compaction-benchmark")
    try:
        say(f"loading {args.rows:,} rows in {args.loads} loads over {args.days} days ...")
        expected = build_small_files(spark, args, target)
        before = _layout(spark, SMALL, target)
        results = {}

        def ours_compact():
            return compact(spark, TableRef(SCHEMA, SMALL), log=lambda m: say(f"    {m}")).bytes

        def ours_rewrite():
            df = spark.table(f"{SCHEMA}.{PLAIN}")
            return write_dataframe(spark, df, TableRef(SCHEMA, REWRITE),
                                   _config(target, "insert_overwrite"), full_refresh=True,
                                   log=lambda m: None).bytes

        def spark_rebalance():
            create_plain_table(spark, REBALANCE)
            settings = {"spark.sql.adaptive.enabled": "true",
                        "spark.sql.adaptive.advisoryPartitionSizeInBytes": str(target),
                        "spark.sql.adaptive.coalescePartitions.parallelismFirst": "false",
                        "spark.sql.sources.partitionOverwriteMode": "dynamic"}
            with conf_set(spark, **settings):
                spark.sql(f"INSERT OVERWRITE TABLE {SCHEMA}.{REBALANCE} PARTITION (event_date) "
                          f"SELECT /*+ REBALANCE(event_date) */ {COLS} "
                          f"FROM {SCHEMA}.{PLAIN}")
            return sum(listing(spark, table_location(spark, REBALANCE)).values())

        for label, name, fn in (("ours sized_compact", SMALL, ours_compact),
                                ("ours full rewrite", REWRITE, ours_rewrite),
                                ("Spark REBALANCE", REBALANCE, spark_rebalance)):
            wall, written = timed(label, fn)
            results[label] = {**_layout(spark, name, target), "wall": wall, "written": written,
                              "equal": _checksum(spark, name) == expected}
        return {"before": before, "results": results, "spark": spark.version,
                "rows": expected[0], "run": r}
    finally:
        spark.stop()


def report(args, measured, argv):
    before, results = measured["before"], measured["results"]
    body = [["before (the loads' files)", f"{before['files']:,}", f"{before['ideal']:,}",
             f"{before['files'] / before['ideal']:.2f}", f"{before['small']:,}",
             before["max_per_part"], "", "", ""]]
    for label, m in results.items():
        body.append([label, f"{m['files']:,}", f"{m['ideal']:,}", f"{m['files'] / m['ideal']:.2f}",
                     f"{m['small']:,}", m["max_per_part"], f"{m['written'] / 1e6:.1f}",
                     f"{m['wall']:.1f}", "yes" if m["equal"] else "NO"])
    ours, rewrite = results["ours sized_compact"], results["ours full rewrite"]
    goals = [f"ours compaction files <= 1.05 x ideal + 1: {ours['files']} vs "
             f"{1.05 * ours['ideal'] + 1:.0f} -> {'met' if ours['files'] <= 1.05 * ours['ideal'] + 1 else 'NOT met'}",
             f"rows identical after every method: {'yes' if all(m['equal'] for m in results.values()) else 'NO'}",
             f"ours compaction faster than the full rewrite: {ours['wall']:.1f} s vs "
             f"{rewrite['wall']:.1f} s -> {'met' if ours['wall'] < rewrite['wall'] else 'NOT met'}",
             engine_state()]
    print_section(f"{measured['rows']:,} rows, {args.days} days, {args.loads} loads, target "
                  f"{args.target}", HEAD, body, goals)
    lines = md_header("Compaction", command_line("compaction.py", argv), measured["spark"])
    lines += [md_table(HEAD, body), ""] + md_bullets(goals)
    finish_run(measured["run"], "compaction.md", lines, args.keep)


if __name__ == "__main__":
    sys.exit(main())
