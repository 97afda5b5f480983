#!/usr/bin/env python
"""Wide tables (issue 46, item 5): a full build and an upsert of the same few rows into a
table of many columns, ours beside dbt-spark's SQL.

    python benchmarks/wide.py [--columns 2000] [--rows 50] [--days 5] [--runs 1]
                              [--source table|query] [--constraint-propagation]
                              [--out benchmarks/out] [--verbose]

The source is a Parquet table of `--rows` rows and `--columns` columns: `id`, a `day`
partition column (`--days` dates) and the others of mixed types (int, bigint, double,
string, date, timestamp, decimal, boolean), written once, untimed. Per run, in this order:

  ours full build     write_dataframe(spark.table(source), full_refresh=True) with
                      unique_key id, partition_by day, incremental_strategy upsert
  ours upsert         the same rows again, full_refresh=False: every row an update
  dbt-spark table     CREATE TABLE ... USING parquet PARTITIONED BY (day) AS SELECT * FROM
                      source (dbt-spark's table materialization)
  dbt-spark overwrite INSERT OVERWRITE TABLE ... PARTITION (day) SELECT * FROM source with
                      partitionOverwriteMode=dynamic (its incremental insert_overwrite)

With `--source query` there is no source table: each write runs the query that computes
those columns from the ids, every other column of a type repeating one expression, as a
dbt model's SQL does (ours through `write_model`,
the dbt layer's call; dbt-spark's CTAS and INSERT OVERWRITE of the same query). Spark's
constraint propagation over a query of thousands of aliases is what a wide model's write
cost (issue 46); the engine turns it off for wide models, and `--constraint-propagation`
keeps it on, as before, in this process only.

Prints wall seconds side by side and the engine's phase lines of the last run (the time
each line came after the one before it); writes <out>/wide.md. Timings on a shared machine
are indications, not results.
"""
import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks.lib import DEFAULT_OUT  # noqa: E402
from benchmarks.lib.data import SCHEMA  # noqa: E402
from benchmarks.lib.report import (command_line, engine_state, finish_run,  # noqa: E402
                                   md_bullets, md_header, md_table, print_section,
                                   run_benchmark, say, start_run)
from benchmarks.lib.session import start_spark  # noqa: E402
from benchmarks.lib.tables import dynamic_overwrite, save_table  # noqa: E402
from python_adapter.api import (TableRef, parse_config, write_dataframe,  # noqa: E402
                                write_model)

SOURCE = f"{SCHEMA}.wide_source"
OURS, PLAIN = "wide_ours", "wide_dbt_spark"
BUILD, UPSERT = "full build", "upsert of the same rows"
# (Spark type, SQL of a value from id): the columns cycle through these
TYPES = [("int", "cast(id * {i} % 1000 as int)"),
         ("bigint", "id * {i}"),
         ("double", "id / {i}.0"),
         ("string", "concat('v{i}-', id)"),
         ("date", "date_add(date'2024-01-01', cast((id + {i}) % 300 as int))"),
         ("timestamp", "timestamp'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, id, {i})"),
         ("decimal(18,2)", "cast(id * {i} / 7 as decimal(18,2))"),
         ("boolean", "(id + {i}) % 2 = 0")]


def main(argv=None):
    return run_benchmark(argv, parse_args, run, report)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--columns", type=int, default=2000, help="columns of the table (2,000)")
    ap.add_argument("--rows", type=int, default=50, help="rows written (50)")
    ap.add_argument("--days", type=int, default=5, help="partitions the rows fall in (5)")
    ap.add_argument("--runs", type=int, default=1, help="runs of each write (1)")
    ap.add_argument("--source", choices=("table", "query"), default="table",
                    help="write from a Parquet table (default) or from a model's query")
    ap.add_argument("--constraint-propagation", action="store_true",
                    help="keep Spark's constraint propagation on for wide models (before)")
    ap.add_argument("--driver-memory", default="2g")
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--verbose", action="store_true", help="print the engine's phase lines")
    args = ap.parse_args(argv)
    if args.columns < 3:
        ap.error("--columns must be at least 3 (id, day and one more)")
    return args


def source_columns(columns, days, repeated=False):
    """The source's SQL expressions: id, the columns of mixed types, day. repeated: every
    other column of a type the same expression (as a model's defaulted or derived columns
    repeat one), which is what made Spark's constraint propagation blow up."""
    out = ["id"]
    for i in range(1, columns - 1):
        sql_type, value = TYPES[i % len(TYPES)]
        same = repeated and i % 2 == 0
        out.append(f"cast({value.format(i=1 if same else i)} as {sql_type}) as c{i}")
    out.append(f"date_add(date'2025-01-01', cast(id % {days} as int)) as day")
    return out


def source_query(args):
    """The model's SQL: the columns computed from ids 0..rows-1, made by explode."""
    return (f"SELECT {', '.join(source_columns(args.columns, args.days, repeated=True))} "
            f"FROM (SELECT explode(sequence(0, {args.rows - 1})) AS id)")


def write_source(spark, args):
    """The source table (with --source query, none: each write runs the query)."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    if args.source == "table":
        df = spark.range(args.rows).selectExpr(*source_columns(args.columns, args.days))
        save_table(spark, df.coalesce(1), SOURCE)


def source_sql(args):
    """What the plain writes select from: the table, or the model's query."""
    return SOURCE if args.source == "table" else f"({source_query(args)})"


class PhaseLog:
    """The engine's log: each line with the seconds since the line before it."""

    def __init__(self, verbose):
        self.verbose, self.lines, self.last = verbose, [], time.perf_counter()

    def __call__(self, message):
        now = time.perf_counter()
        gap, self.last = now - self.last, now
        self.lines.append((gap, message))
        if self.verbose:
            say(f"    +{gap:.2f}s {message}")

    def start(self):
        self.lines, self.last = [], time.perf_counter()


class Clock:
    """Wall seconds and the driver JVM's CPU seconds (user + system, from /proc: on a busy
    machine wall time mostly measures the other processes; without /proc, None)."""

    def __init__(self, spark):
        self.stat = f"/proc/{spark._jvm.java.lang.ProcessHandle.current().pid()}/stat"

    def cpu(self):
        try:
            with open(self.stat) as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def timed(self, fn):
        """(wall s, CPU s) of fn()."""
        c0, t0 = self.cpu(), time.perf_counter()
        fn()
        wall, c1 = time.perf_counter() - t0, self.cpu()
        return wall, None if c0 is None or c1 is None else c1 - c0


def ours(spark, args, cfg, log, full_refresh):
    log.start()
    if args.source == "table":
        write_dataframe(spark, spark.table(SOURCE), TableRef(SCHEMA, OURS), cfg,
                        full_refresh=full_refresh, log=log)
    else:
        write_model(spark, TableRef(SCHEMA, OURS), source_query(args), cfg,
                    full_refresh=full_refresh, log=log)


def plain_build(spark, args):
    """dbt-spark's table materialization on parquet."""
    spark.sql(f"DROP TABLE IF EXISTS {SCHEMA}.{PLAIN}")
    spark.sql(f"CREATE TABLE {SCHEMA}.{PLAIN} USING parquet PARTITIONED BY (day) AS "
              f"SELECT * FROM {source_sql(args)}")


def plain_overwrite(spark, args):
    """dbt-spark's incremental insert_overwrite on parquet (dynamic partitions)."""
    with dynamic_overwrite(spark):
        spark.sql(f"INSERT OVERWRITE TABLE {SCHEMA}.{PLAIN} PARTITION (day) "
                  f"SELECT * FROM {source_sql(args)}")


def check_rows(spark, args):
    """Both tables hold exactly the source's rows (collected and compared in the driver: a
    set operation over thousands of columns overflows the stack of Spark's analyzer)."""
    source = spark.table(SOURCE) if args.source == "table" else spark.sql(source_query(args))
    want = sorted(tuple(r) for r in source.collect())
    for name in (OURS, PLAIN):
        spark.catalog.refreshTable(f"{SCHEMA}.{name}")
        got = sorted(tuple(r) for r in spark.table(f"{SCHEMA}.{name}")
                     .select(*source.columns).collect())
        if got != want:
            raise RuntimeError(f"{name}: {len(got)} rows, not the source's {len(want)} rows")


@dataclass
class Wide:
    seconds: dict      # {(side, write): [(wall s, JVM CPU s)]}
    phases: dict       # {write: [(s since the line before, line)]} of ours' last run
    work: object
    version: str
    spark_version: str


def run(args):
    if args.constraint_propagation:  # the engine as it was: this process only
        from python_adapter.spark import session_conf
        session_conf.WIDE_COLUMNS = float("inf")
    work = start_run(args.out, "wide-")
    version = engine_state()
    spark = start_spark(work.tmp, args.driver_memory, app_name="sized-wide-benchmark")
    cfg = parse_config({"unique_key": "id", "partition_by": ["day"],
                        "incremental_strategy": "upsert"})
    seconds, phases = {}, {}
    log, clock = PhaseLog(args.verbose), Clock(spark)
    try:
        say(f"source: {args.rows} rows of {args.columns:,} columns in {args.days} partitions")
        write_source(spark, args)
        for i in range(args.runs):
            for side, write, fn in (
                    ("ours", BUILD, lambda: ours(spark, args, cfg, log, True)),
                    ("ours", UPSERT, lambda: ours(spark, args, cfg, log, False)),
                    ("dbt-spark", BUILD, lambda: plain_build(spark, args)),
                    ("dbt-spark", UPSERT, lambda: plain_overwrite(spark, args))):
                say(f"run {i + 1}/{args.runs}: {side} {write} ...")
                wall, cpu = clock.timed(fn)
                seconds.setdefault((side, write), []).append((wall, cpu))
                if side == "ours":
                    phases[write] = log.lines
                say(f"  {wall:.2f}s, JVM CPU {_secs(cpu)}")
        check_rows(spark, args)
        spark_version = spark.version
    finally:
        spark.stop()
    return Wide(seconds, phases, work, version, spark_version)


def _secs(x):
    return "?" if x is None else f"{x:.2f}"


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def report(args, res, argv):
    head = ["write", "measure", "ours", "dbt-spark", "ours / dbt-spark", "ours, each",
            "dbt-spark, each"]
    body, medians = [], {}
    for write in (BUILD, UPSERT):
        for i, measure in enumerate(("wall s", "JVM CPU s")):
            mine = [x[i] for x in res.seconds[("ours", write)]]
            theirs = [x[i] for x in res.seconds[("dbt-spark", write)]]
            m, t = _median(mine), _median(theirs)
            medians[(write, i)] = m
            body.append([write, measure, _secs(m), _secs(t),
                         f"{m / t:.2f}x" if m is not None and t else "?",
                         ", ".join(_secs(x) for x in mine), ", ".join(_secs(x) for x in theirs)])
    notes = [f"ours' upsert / ours' full build: wall {_ratio(medians, 0)}, JVM CPU "
             f"{_ratio(medians, 1)} (goal: about 1x)",
             "dbt-spark's upsert column: its insert_overwrite of the same rows",
             "JVM CPU: the driver JVM's user + system seconds (local mode: the tasks' too)",
             "local[2] on a shared machine: indications, not results", res.version]
    title = (f"Wide table: {args.rows} rows of {args.columns:,} columns in {args.days} "
             f"partitions, from " + ("a table" if args.source == "table" else "a model's query")
             + (", constraint propagation kept on" if args.constraint_propagation else ""))
    print_section(title, head, body, notes)
    phase_md = []
    for write, lines in res.phases.items():
        rows = [[line, f"+{gap:.2f}"] for gap, line in lines]
        print_section(f"ours, {write}: phase lines (seconds after the line before)",
                      ["line", "s"], rows)
        phase_md += [f"## ours, {write}: phase lines", "",
                     md_table(["line", "s after the line before"], rows), ""]
    md = [*md_header(title, command_line("wide.py", argv), res.spark_version),
          md_table(head, body), "", *md_bullets(notes), "", *phase_md]
    finish_run(res.work, "wide.md", md, args.keep)


def _ratio(medians, i):
    up, build = medians[(UPSERT, i)], medians[(BUILD, i)]
    return f"{up / build:.2f}x" if up is not None and build else "?"


if __name__ == "__main__":
    sys.exit(main())
