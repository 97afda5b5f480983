#!/usr/bin/env python
"""Bloom index benchmark: upserts with random (hashed) keys, index_type range beside bloom.

    python benchmarks/bloom_index.py [--rows 200000] [--days 90] [--target 64KB]
                                     [--batches 3] [--update-days 0,10] [--out benchmarks/out]

A table of `--rows` rows over `--days` daily partitions, keyed by a 32-character hash (no
order in time: every file's key range covers the whole domain), is built twice by ours:
`index_type: range` (today's index, min/max per file) and `index_type: bloom`. Then, per
scenario of `--update-days` (0 = updates spread over all days, N = over N random older
days), `--batches` upsert batches, each 1% updates and 2% inserts (half on a new day, half
over the 7 days before it), the same batch into both tables. Measured per batch: the files
that really hold an incoming key (asked of the table's rows before the write), the files
tagging read (from the engine's log), the table's files, wall time. At the end both tables'
rows are compared. Goal (issue 20): with bloom, tagging reads at most 1.1 x the files that
hold an incoming key. Writes <out>/bloom_index.md.
"""
import argparse
import os
import random
import re
import statistics
import sys
import time
from dataclasses import dataclass, field

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from pyspark.sql import functions as F  # noqa: E402

from benchmarks.lib import DEFAULT_OUT  # noqa: E402
from benchmarks.lib.report import (command_line, engine_state, finish_run,  # noqa: E402
                                   md_bullets, md_header, md_table, print_section,
                                   run_benchmark, say, start_run)
from benchmarks.lib.session import start_spark  # noqa: E402
from python_adapter.api import TableRef, parse_config, write_dataframe  # noqa: E402

GOAL = 1.1
SCHEMA = "bloom_bench"
METHODS = ("range", "bloom")
SEED = 4242


def _keeping(lines, say):
    """The engine's log: each line kept in `lines`, and printed indented when `say` is given."""
    def log(line: str) -> None:
        lines.append(line)
        if say is not None:
            say("    " + line)
    return log


def main(argv=None):
    return run_benchmark(argv, parse_args, run, report)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=200_000, help="rows of the table (200,000)")
    ap.add_argument("--days", type=int, default=90, help="daily partitions (90)")
    ap.add_argument("--target", default="64KB", help="target file size (64KB)")
    ap.add_argument("--batches", type=int, default=3, help="upsert batches per scenario (3)")
    ap.add_argument("--update-days", default="0,10",
                    help="scenarios: older days a batch's updates are spread over, 0 = all (0,10)")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--verbose", action="store_true", help="print the engine's progress log")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    return ap.parse_args(argv)


def _rows_sql(first, count, day_expr, tag):
    """`count` rows with ids first.. (hashed), on the day day_expr computes from i."""
    return f"""
        select substr(sha2(cast(i as string), 256), 1, 32) as id, {day_expr} as day,
               cast(i % 1000 as bigint) as user_id, sha2(cast(i * 7 as string), 224) as payload,
               '{tag}' as tag
        from (select id as i from range({first}, {first + count}))"""


def _config(method, target):
    return parse_config({"partition_by": ["day"], "unique_key": "id", "target_file_size": target,
                         "incremental_strategy": "upsert", "index_type": method})


def tagged_files(lines):
    """Files the tagging read, from the engine's progress lines (first and second pass)."""
    total = 0
    for line in lines:
        for pattern in (r"tagging incoming keys against (\d+) of", r"looking in (\d+) of the other"):
            m = re.search(pattern, line)
            total += int(m.group(1)) if m else 0
    return total


def holders(spark, table, batch):
    """The table's files holding a key of the batch."""
    return (spark.table(table).select("id", F.input_file_name().alias("f"))
            .join(batch.select("id"), "id").select("f").distinct().count())


@dataclass
class Measured:
    rows: list = field(default_factory=list)   # [scenario, batch, method, holders, read, files, s]
    same_rows: bool = False
    work: object = None
    version: str = ""
    spark_version: str = ""


def _batch(spark, args, b, days_spread, next_id):
    """One batch as a saved table: 1% updates of older days, 2% inserts."""
    rng = random.Random(SEED + b * 101 + days_spread)
    new_day = args.days + b - 1  # day offsets from 2025-01-01; the table holds 0..days-1 first
    older = list(range(0, new_day - 7))
    days = sorted(rng.sample(older, days_spread)) if 0 < days_spread < len(older) else older
    n_upd, n_new = round(args.rows * 0.01), round(args.rows * 0.02)
    day_list = ",".join(str(d) for d in days)
    updates = (spark.table(f"{SCHEMA}.t_range")
               .where(f"datediff(day, date'2025-01-01') in ({day_list})")
               .orderBy(F.xxhash64("id", F.lit(b)))
               .limit(n_upd).selectExpr("id", "day", "user_id", "payload", f"'u{b}' as tag"))
    inserts = spark.sql(_rows_sql(next_id, n_new, f"date_add(date'2025-01-01', "
                                  f"cast(if(i % 2 = 0, {new_day}, {new_day} - 1 - i % 7) as int))",
                                  f"n{b}"))
    name = f"{SCHEMA}.batch"
    updates.unionByName(inserts).write.mode("overwrite").saveAsTable(name)
    return spark.table(name), next_id + n_new


def run(args):
    work = start_run(args.out, "bloom-")
    spark = start_spark(work.tmp, args.driver_memory, app_name="sized-bloom-benchmark")
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    base = spark.sql(_rows_sql(0, args.rows, f"date_add(date'2025-01-01', "
                                             f"cast(i % {args.days} as int))", "v1"))
    for method in METHODS:
        say(f"building t_{method} ({args.rows:,} rows, index_type {method}) ...")
        write_dataframe(spark, base, TableRef(SCHEMA, f"t_{method}"), _config(method, args.target),
                        full_refresh=True, log=lambda m: None)
    out, next_id, b = Measured(), args.rows, 0
    for spread in [int(x) for x in args.update_days.split(",")]:
        for _ in range(args.batches):
            b += 1
            batch, next_id = _batch(spark, args, b, spread, next_id)
            scenario = "all days" if spread == 0 else f"{spread} days"
            for method in METHODS:
                table = f"{SCHEMA}.t_{method}"
                hold = holders(spark, table, batch)
                files = spark.table(table).select(F.input_file_name()).distinct().count()
                lines = []
                log = _keeping(lines, say if args.verbose else None)
                t0 = time.perf_counter()
                write_dataframe(spark, batch, TableRef(SCHEMA, f"t_{method}"),
                                _config(method, args.target), full_refresh=False,
                                log=log)
                seconds = time.perf_counter() - t0
                read = tagged_files(lines)
                say(f"batch {b} ({scenario}) {method}: {hold} files hold a key, tagging read "
                    f"{read} of {files}, {seconds:.1f}s")
                out.rows.append([scenario, b, method, hold, read, files, seconds])
    a, c = (spark.table(f"{SCHEMA}.t_{m}").select("id", "tag") for m in METHODS)
    out.same_rows = a.count() == c.count() and a.exceptAll(c).count() == 0 \
        and c.exceptAll(a).count() == 0
    import pyspark

    out.work, out.version, out.spark_version = work, engine_state(), pyspark.__version__
    spark.stop()
    return out


def report(args, res, argv):
    head = ["updates over", "batch", "index", "files holding a key", "files tagging read",
            "read / holding", "table files", "write s"]
    body = [[s, b, m, h, r, f"{r / h:.2f}x" if h else "-", f, f"{t:.1f}"]
            for s, b, m, h, r, f, t in res.rows]
    goals = []
    for scenario in dict.fromkeys(r[0] for r in res.rows):
        for method in METHODS:
            mine = [r for r in res.rows if r[0] == scenario and r[2] == method]
            ratio = sum(r[4] for r in mine) / max(sum(r[3] for r in mine), 1)
            secs = statistics.median(r[6] for r in mine)
            verdict = ("met" if ratio <= GOAL else "NOT met") if method == "bloom" else "baseline"
            goals.append(f"updates over {scenario}, {method}: tagging read {ratio:.2f}x the files "
                         f"holding a key (all batches), median write {secs:.1f}s -> {verdict}")
    notes = [res.version, f"rows of both tables identical at the end: {res.same_rows}",
             f"goal: bloom reads at most {GOAL:g}x the files holding an incoming key"]
    title = (f"Bloom index: {args.rows:,} rows with hashed keys over {args.days} days, "
             f"target {args.target}, 1% updates + 2% inserts per batch")
    print_section(title, head, body, notes + goals)
    md = [*md_header(title, command_line("bloom_index.py", argv), res.spark_version),
          md_table(head, body), "", *md_bullets(notes + goals), ""]
    finish_run(res.work, "bloom_index.md", md, args.keep)


if __name__ == "__main__":
    sys.exit(main())
