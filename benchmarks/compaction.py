#!/usr/bin/env python
"""Compaction: a table of small files made sized again, three ways, on the same files.

    python benchmarks/compaction.py [--source both|loads|dbt] [--rows 1000000] [--days 90]
        [--loads 12] [--dbt-rows 2000000] [--dbt-days 365] [--run-days 7] [--run-files 8]
        [--target 1MB] [--rounds 3] [--out benchmarks/out]

Two sources of small files (`--source`, default both, one after the other in one run):

loads: `--rows` events over `--days` daily partitions, loaded by ours `insert` in `--loads`
loads (event_id modulo loads; each load covers every day, as late data does) with packing
off (small_file_limit 0), so each partition holds one small file per load. Its files are
copied into a plain Parquet table for the others. Then, each on its own copy:
  ours sized_compact    run_compaction: per partition, small files bin-packed into
                        target-sized files, rows in file order
  ours full rewrite     write_dataframe(full_refresh) of every row into a new table: what a
                        --full-refresh of the model costs when its input is as large
  Spark REBALANCE       INSERT OVERWRITE ... SELECT /*+ REBALANCE(event_date) */ from the
                        plain copy, AQE advisory size = target (Spark's own answer)

dbt: a year (`--dbt-days`) of `--dbt-rows` events written by dbt-spark's `incremental`
model with `insert_overwrite` on parquet, run once per `--run-days` days: each run is the
one statement dbt-spark sends, INSERT OVERWRITE TABLE t PARTITION (event_date) SELECT ...
of its days with dynamic partition overwrite, its rows read in `--run-files` splits, so
each partition gets one small file per split. Its files are copied into a plain table for
REBALANCE. Then:
  ours adopt + compact  sized_compact (target_file_size = --target, max_groups unbounded:
                        the whole table in one run) on dbt-spark's table in place: its files
                        recorded as the table's first instant (adoption), then compacted
  ours --full-refresh   write_dataframe(full_refresh) of the model's rows, read from its
                        source table (Parquet on disk), into a new table
  Spark REBALANCE       as above, from the plain copy of dbt-spark's files
The three run `--rounds` times, each round in another order (round r starts with the r-th
method), on fresh tables (the compaction of round 2 on adopts a plain copy of dbt-spark's
files): the first method of a run pays the JVM's warm-up of its code, so the best round of
each is compared, and every round's time is printed.

Printed per method: files, files / ideal (sum over partitions of ceil(bytes / target)),
small files (below target x 100/128), files per partition at most, bytes written, wall time,
rows and a checksum equal to the input's. Goal (issue 16): ours compaction at most
1.05 x ideal + 1 files, rows identical, less time than the full rewrite / refresh. Writes
<out>/compaction.md. See benchmarks/README.md.
"""
import argparse
import math
import os
import sys
import time
from datetime import timedelta

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks.lib import DEFAULT_OUT  # noqa: E402
from benchmarks.lib.data import COLS, SCHEMA, SOURCE, SOURCE_VIEW, START  # noqa: E402
from benchmarks.lib.report import (command_line, engine_state, finish_run,  # noqa: E402
                                   md_bullets, md_header, md_table, print_section,
                                   run_benchmark, start_run, say)
from benchmarks.lib.session import conf_set, start_spark  # noqa: E402
from benchmarks.lib.tables import (copy_files, create_plain_table,  # noqa: E402
                                   insert_overwrite_sql, listing, materialize_source,
                                   partition_of, table_location)
from python_adapter.api import TableRef, compact, parse_config, write_dataframe  # noqa: E402
from python_adapter.core.sizes import parse_size  # noqa: E402

SMALL = "cp_small"          # ours, the loads' small files (compacted in place)
PLAIN = "cp_plain"          # a plain copy of its files
REWRITE = "cp_rewrite"      # ours, every row written again
REBALANCE = "cp_rebalance"  # Spark's INSERT OVERWRITE with REBALANCE
DBT = "cp_dbt"                      # dbt-spark's incremental insert_overwrite table (adopted)
DBT_PLAIN = "cp_dbt_plain"          # a plain copy of its files
DBT_REFRESH = "cp_dbt_refresh"      # ours, the model's --full-refresh
DBT_REBALANCE = "cp_dbt_rebalance"  # Spark's INSERT OVERWRITE with REBALANCE
HEAD = ["method", "files", "ideal", "files / ideal", "small files", "max files / partition",
        "written MB", "wall s", "wall s, each round", "rows equal"]


def main(argv=None):
    return run_benchmark(argv, parse_args, run, report)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", choices=("both", "loads", "dbt"), default="both",
                    help="where the small files come from (both)")
    ap.add_argument("--rows", type=int, default=1_000_000, help="loads: rows (1000000)")
    ap.add_argument("--days", type=int, default=90, help="loads: daily partitions (90)")
    ap.add_argument("--loads", type=int, default=12, help="loads, each a small file a day (12)")
    ap.add_argument("--dbt-rows", type=int, default=2_000_000, help="dbt: rows (2000000)")
    ap.add_argument("--dbt-days", type=int, default=365, help="dbt: daily partitions (365)")
    ap.add_argument("--run-days", type=int, default=7, help="dbt: days each dbt run loads (7)")
    ap.add_argument("--run-files", type=int, default=8,
                    help="dbt: input splits of a run, each a small file a day (8)")
    ap.add_argument("--target", default="1MB", help="target file size (1MB)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="dbt: rounds of the three methods, each round in another order; "
                         "the best round's time is shown (3)")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--out", default=DEFAULT_OUT, help="output directory")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    return ap.parse_args(argv)


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


def _plain_copy(spark, src, dst):
    """A plain Parquet table `dst` holding a byte-for-byte copy of table `src`'s files."""
    create_plain_table(spark, dst)
    location = table_location(spark, src)
    copy_files(spark, location, table_location(spark, dst), list(listing(spark, location)))
    spark.sql(f"MSCK REPAIR TABLE {SCHEMA}.{dst}")


def build_small_files(spark, args, target):
    """The loads' table (ours, packing off) and its plain copy; returns the input's checksum."""
    materialize_source(spark, args.rows, args.loads, days=args.days)
    table = TableRef(SCHEMA, SMALL)
    cfg = _config(target, "insert", small_file_limit=0)
    for k in range(args.loads):
        load = spark.table(SOURCE_VIEW).where(f"event_id % {args.loads} = {k}")
        write_dataframe(spark, load, table, cfg, full_refresh=(k == 0), log=lambda m: None)
    _plain_copy(spark, SMALL, PLAIN)
    return _checksum(spark, SMALL)


def build_dbt_table(spark, args):
    """dbt-spark's incremental insert_overwrite model, run once per --run-days days: the
    table it creates on its first run, then per run its one INSERT OVERWRITE ... PARTITION
    (event_date) SELECT of the run's days (dynamic partition overwrite), reading the source
    in --run-files splits. Returns (runs, the rows' checksum)."""
    materialize_source(spark, args.dbt_rows, args.run_files, days=args.dbt_days)
    create_plain_table(spark, DBT)
    runs = 0
    for first in range(0, args.dbt_days, args.run_days):
        lo, hi = START + timedelta(days=first), START + timedelta(days=first + args.run_days)
        insert_overwrite_sql(spark, DBT, source=f"{SOURCE_VIEW} WHERE event_date >= "
                                                f"DATE'{lo}' AND event_date < DATE'{hi}'")
        runs += 1
    _plain_copy(spark, DBT, DBT_PLAIN)
    return runs, _checksum(spark, DBT)


def timed(label, fn):
    say(f"{label} ...")
    start = time.perf_counter()
    written = fn()
    return time.perf_counter() - start, written


def _rebalance(spark, src, dst, target):
    """Spark's own answer: INSERT OVERWRITE ... SELECT /*+ REBALANCE */ with AQE's advisory
    size at the target; returns the bytes written."""
    create_plain_table(spark, dst)
    settings = {"spark.sql.adaptive.enabled": "true",
                "spark.sql.adaptive.advisoryPartitionSizeInBytes": str(target),
                "spark.sql.adaptive.coalescePartitions.parallelismFirst": "false",
                "spark.sql.sources.partitionOverwriteMode": "dynamic"}
    with conf_set(spark, **settings):
        spark.sql(f"INSERT OVERWRITE TABLE {SCHEMA}.{dst} PARTITION (event_date) "
                  f"SELECT /*+ REBALANCE(event_date) */ {COLS} FROM {SCHEMA}.{src}")
    return sum(listing(spark, table_location(spark, dst)).values())


def _measure(spark, methods, target, expected, rounds=1):
    """{label: layout, wall time (the best round's), each round's, bytes written, rows
    equal} of each (label, prepare): prepare(round) makes what that round's method works on
    (untimed) and returns (its table, the timed fn). Round r runs the methods rotated by r,
    so no method is always the first to run its code in the JVM (JIT warm-up)."""
    results = {label: {"walls": []} for label, _prepare in methods}
    for r in range(rounds):
        for label, prepare in methods[r % len(methods):] + methods[:r % len(methods)]:
            name, fn = prepare(r)
            wall, written = timed(f"{label}{f' (round {r + 1})' if rounds > 1 else ''}", fn)
            walls = results[label]["walls"] + [wall]
            equal = _checksum(spark, name) == expected and results[label].get("equal", True)
            results[label] = {**_layout(spark, name, target), "wall": min(walls),
                              "walls": walls, "written": written, "equal": equal}
    return results


def _ours_compact(spark, name, options=None):
    """sized_compact of the table, its log lines printed with the seconds since it began."""
    def run():
        start = time.perf_counter()
        return compact(spark, TableRef(SCHEMA, name), options,
                       log=lambda m: say(f"    {time.perf_counter() - start:5.1f}s {m}")).bytes
    return run


def _ours_full(spark, df, name, target):
    return lambda: write_dataframe(spark, df, TableRef(SCHEMA, name),
                                   _config(target, "insert_overwrite"), full_refresh=True,
                                   log=lambda m: None).bytes


def run_loads(spark, args, target):
    say(f"loading {args.rows:,} rows in {args.loads} loads over {args.days} days ...")
    expected = build_small_files(spark, args, target)
    before = _layout(spark, SMALL, target)
    results = _measure(spark, [
        ("ours sized_compact", lambda r: (SMALL, _ours_compact(spark, SMALL))),
        ("ours full rewrite", lambda r: (REWRITE, _ours_full(
            spark, spark.table(f"{SCHEMA}.{PLAIN}"), REWRITE, target))),
        ("Spark REBALANCE", lambda r: (REBALANCE, lambda: _rebalance(spark, PLAIN, REBALANCE,
                                                                     target)))],
        target, expected)
    return {"before": before, "results": results, "rows": expected[0],
            "title": f"{expected[0]:,} rows, {args.days} days, {args.loads} loads, target "
                     f"{args.target}", "first": "before (the loads' files)",
            "ours": "ours sized_compact", "full": "ours full rewrite"}


def run_dbt(spark, args, target):
    say(f"dbt-spark incremental insert_overwrite: {args.dbt_rows:,} rows over {args.dbt_days} "
        f"days, a run per {args.run_days} days, {args.run_files} input splits ...")
    runs, expected = build_dbt_table(spark, args)
    source_equal = _checksum(spark, SOURCE.split(".")[1]) == expected
    before = _layout(spark, DBT, target)
    def compaction(r):
        # round 1 compacts dbt-spark's table itself, later rounds a plain copy of its files
        name = DBT if r == 0 else f"{DBT}_{r}"
        if r:
            _plain_copy(spark, DBT_PLAIN, name)
        # an adopted table has no target of its own yet: the model's, as its post-hook gives;
        # every partition in one run (max_groups' default, 100, bounds a run)
        return name, _ours_compact(spark, name, {"target_file_size": target,
                                                 "max_groups": 100_000})

    results = _measure(spark, [
        ("ours adopt + sized_compact", compaction),
        ("ours --full-refresh", lambda r: (f"{DBT_REFRESH}_{r}", _ours_full(
            spark, spark.table(SOURCE), f"{DBT_REFRESH}_{r}", target))),
        ("Spark REBALANCE", lambda r: (f"{DBT_REBALANCE}_{r}", lambda: _rebalance(
            spark, DBT_PLAIN, f"{DBT_REBALANCE}_{r}", target)))],
        target, expected, args.rounds)
    return {"before": before, "results": results, "rows": expected[0],
            "title": f"dbt-spark incremental insert_overwrite: {expected[0]:,} rows, "
                     f"{args.dbt_days} days, {runs} dbt runs of {args.run_days} days, "
                     f"{args.run_files} input splits, target {args.target}"
                     + ("" if source_equal else " (NOT the source's rows)"),
            "first": "before (dbt-spark's files)", "ours": "ours adopt + sized_compact",
            "full": "ours --full-refresh"}


def run(args):
    target = parse_size(args.target)
    r = start_run(args.out, "compaction-")
    spark = start_spark(r.tmp, args.driver_memory, app_name="sized-compaction-benchmark")
    try:
        scenarios = []
        if args.source in ("both", "loads"):
            scenarios.append(run_loads(spark, args, target))
        if args.source in ("both", "dbt"):
            scenarios.append(run_dbt(spark, args, target))
        return {"scenarios": scenarios, "spark": spark.version, "run": r}
    finally:
        spark.stop()


def _section(scenario):
    """(table body, goals) of one scenario."""
    before, results = scenario["before"], scenario["results"]
    body = [[scenario["first"], f"{before['files']:,}", f"{before['ideal']:,}",
             f"{before['files'] / before['ideal']:.2f}", f"{before['small']:,}",
             before["max_per_part"], "", "", "", ""]]
    for label, m in results.items():
        body.append([label, f"{m['files']:,}", f"{m['ideal']:,}", f"{m['files'] / m['ideal']:.2f}",
                     f"{m['small']:,}", m["max_per_part"], f"{m['written'] / 1e6:.1f}",
                     f"{m['wall']:.1f}", ", ".join(f"{w:.1f}" for w in m["walls"]),
                     "yes" if m["equal"] else "NO"])
    ours, full = results[scenario["ours"]], results[scenario["full"]]
    bound = 1.05 * ours["ideal"] + 1
    goals = [f"ours compaction files <= 1.05 x ideal + 1: {ours['files']} vs {bound:.0f} -> "
             f"{'met' if ours['files'] <= bound else 'NOT met'}",
             f"rows identical after every method: "
             f"{'yes' if all(m['equal'] for m in results.values()) else 'NO'}",
             f"ours compaction faster than {scenario['full'][5:]}: {ours['wall']:.1f} s vs "
             f"{full['wall']:.1f} s -> {'met' if ours['wall'] < full['wall'] else 'NOT met'}"]
    return body, goals


def report(args, measured, argv):
    lines = md_header("Compaction", command_line("compaction.py", argv), measured["spark"])
    for scenario in measured["scenarios"]:
        body, goals = _section(scenario)
        print_section(scenario["title"], HEAD, body, goals)
        lines += [f"## {scenario['title']}", "", md_table(HEAD, body), ""] + md_bullets(goals)
        lines.append("")
    print_section("", notes=[engine_state()])
    lines += md_bullets([engine_state()])
    finish_run(measured["run"], "compaction.md", lines, args.keep)


if __name__ == "__main__":
    sys.exit(main())
