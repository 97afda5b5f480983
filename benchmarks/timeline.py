#!/usr/bin/env python
"""Timeline archival: a write's driver time on a table with a long history, against the same
table with a short one.

    python benchmarks/timeline.py [--commits 1000] [--few 10] [--writes 12] [--out benchmarks/out]

Three tables of the same rows (`id, day, payload, tag`, 30 daily partitions), each first
built by ours, then given a history of commits through the commit protocol (each commit
rewrites one partition's file as a new file of the same rows, as an upsert of unchanged
rows does: a real instant that adds one file and sets one aside, a new Parquet file; the
Spark job that would compute the rows is left out so a history of 1,000 commits takes a
minute, not an hour):
  long, archived      --commits commits, retain_commits 10, retain_hours 0: instants past
                      retention are folded into the archive (checkpoint + history files)
  long, not archived  the same commits with retain_hours 10^6: nothing is past retention,
                      every instant stays in the timeline directory (what a write read
                      before archival)
  short               --few commits
Then `--writes` real upserts (write_dataframe: 300 rows, a third of them updates, over 3
days) go to each table in turn, each round starting with the next table (the first write of
a round compiles the batch's query for the other two). Printed per table: commits, files in the timeline directory,
archive files and checkpoint size, the median wall time of a write, and the median time a
write's first timeline read takes (the file index and the completed instants, from a new
Timeline object, as each write starts). Goal (issue 16): the long archived table's write
within 10% of the short table's. Writes <out>/timeline.md.
"""
import argparse
import os
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks.lib import DEFAULT_OUT  # noqa: E402
from benchmarks.lib.report import (command_line, engine_state, finish_run,  # noqa: E402
                                   md_bullets, md_header, md_table, print_section,
                                   run_benchmark, start_run, say)
from benchmarks.lib.session import start_spark  # noqa: E402
from python_adapter.api import TableRef, parse_config, write_dataframe  # noqa: E402
from python_adapter.spark.handle import partitions_holding  # noqa: E402
from python_adapter.spark.locking import locked_table  # noqa: E402
from python_adapter.table.files import current_files, file_entry  # noqa: E402
from python_adapter.table.timeline import Timeline  # noqa: E402
from python_adapter.table.transaction import TxnOptions  # noqa: E402

SCHEMA = "bench_tl"
DAYS = 30
HEAD = ["table", "commits", "timeline dir files", "archive files", "checkpoint kB",
        "write median s", "write min s", "timeline read median ms"]
TABLES = [("long, archived", "tl_archived", 0.0), ("long, not archived", "tl_kept", 1e6),
          ("short", "tl_short", 0.0)]


def main(argv=None):
    return run_benchmark(argv, parse_args, run, report)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commits", type=int, default=1000, help="commits of the long tables (1000)")
    ap.add_argument("--few", type=int, default=10, help="commits of the short table (10)")
    ap.add_argument("--writes", type=int, default=12, help="timed upserts per table (12)")
    ap.add_argument("--rows", type=int, default=30_000, help="rows of each table (30000)")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--out", default=DEFAULT_OUT, help="output directory")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    return ap.parse_args(argv)


def _config(retain_hours):
    return parse_config({"partition_by": ["day"], "unique_key": "id", "target_file_size": "1MB",
                         "retain_commits": 10, "retain_hours": retain_hours})


def _rows(spark, ids, tag):
    lo, hi = ids
    return spark.sql(f"""
        select id, date_add(date'2025-01-01', cast(id % {DAYS} as int)) as day,
               sha2(cast(id as string), 256) as payload, '{tag}' as tag
        from range({lo}, {hi})""")


def _history(spark, table, commits, extra, log):
    """`commits` commits through the commit protocol, one after the other, each rewriting
    one partition's first file as a new file of the same rows."""
    for n in range(commits):
        with locked_table(spark, table, "upsert", log=log) as here:
            fs, proto = here.fs, here.proto
            current = sorted(current_files(fs, proto.location, proto.timeline),
                             key=lambda f: f.path)
            old = current[n % len(current)]
            with here.transaction("upsert", TxnOptions(
                    extra=extra, registered=partitions_holding(current))) as txn:
                name = f"part-{txn.id}-{n:05d}.snappy.parquet"
                staged = f"{proto.staging_dir(txn.id)}/data/{old.partition}/{name}"
                fs.write_bytes(staged, fs.read_bytes(f"{proto.location}/{old.path}"))
                txn.add([file_entry(old.partition, f"{old.partition}/{name}", old.rows,
                                    old.bytes, staged_path=staged,
                                    key_range=(old.key_min, old.key_max))])
                txn.remove([old])
        if (n + 1) % 200 == 0:
            say(f"    {n + 1} commits")


def _timeline_read_ms(fs, location):
    """A write's first read of the timeline: a new Timeline, its file index and instants."""
    t0 = time.perf_counter()
    timeline = Timeline(fs, location)
    timeline.file_index()
    timeline.completed()
    return (time.perf_counter() - t0) * 1000


def _shape(fs, location):
    timeline = Timeline(fs, location)
    archive = fs.list_dir(timeline.archive_dir) + fs.list_dir(timeline.history_dir)
    checkpoint = sum(st.size for st in archive if st.name.startswith("checkpoint-"))
    return len(fs.list_dir(timeline.dir)), sum(not st.is_dir for st in archive), \
        checkpoint / 1000


def run(args):
    work = start_run(args.out, "timeline-")
    spark = start_spark(work.tmp, args.driver_memory, app_name="sized-timeline-benchmark")
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    quiet = lambda m: None  # noqa: E731
    from python_adapter.io.fs import HadoopFS
    fs = HadoopFS(spark)
    locations = {}
    for label, name, hours in TABLES:
        table = TableRef(SCHEMA, name)
        cfg = _config(hours)
        write_dataframe(spark, _rows(spark, (0, args.rows), "v0"), table, cfg, log=quiet)
        commits = args.few if name == "tl_short" else args.commits
        say(f"{label}: {commits} commits ...")
        t0 = time.perf_counter()
        extra = {"target_file_size": cfg.target_file_size, "retain_commits": 10,
                 "retain_hours": hours}
        _history(spark, table, commits - 1, extra, quiet)
        say(f"  {label}: history in {time.perf_counter() - t0:.1f}s")
        locations[name] = fs.qualify(spark.sql(
            f"DESCRIBE TABLE EXTENDED {SCHEMA}.{name}").where("col_name = 'Location'")
            .first()[1])
    walls = {name: [] for _, name, _ in TABLES}
    reads = {name: [] for _, name, _ in TABLES}
    for w in range(args.writes):
        lo = args.rows + w * 200
        # the tables in turn, each round starting with the next one: the first write of a
        # round compiles the batch's query (Spark's code generation) for the others
        for label, name, hours in TABLES[w % len(TABLES):] + TABLES[:w % len(TABLES)]:
            reads[name].append(_timeline_read_ms(fs, locations[name]))
            batch = _rows(spark, (lo - 100, lo + 200), f"w{w}")  # 100 updates, 200 inserts
            t0 = time.perf_counter()
            write_dataframe(spark, batch, TableRef(SCHEMA, name), _config(hours), log=quiet)
            walls[name].append(time.perf_counter() - t0)
        say(f"  write {w + 1}: " + ", ".join(f"{n} {walls[n][-1]:.2f}s" for _, n, _ in TABLES))
    rows = []
    for label, name, _hours in TABLES:
        files, archive, cp_kb = _shape(fs, locations[name])
        commits = len(Timeline(fs, locations[name]).completed())
        rows.append([label, commits, files, archive, f"{cp_kb:,.1f}",
                     f"{statistics.median(walls[name]):.2f}", f"{min(walls[name]):.2f}",
                     f"{statistics.median(reads[name]):.1f}"])
    version = spark.version
    spark.stop()
    return {"work": work, "rows": rows, "walls": walls, "spark": version}


def report(args, res, argv):
    walls = res["walls"]
    long_, short = statistics.median(walls["tl_archived"]), statistics.median(walls["tl_short"])
    kept = statistics.median(walls["tl_kept"])
    notes = [
        f"Each table: {args.rows:,} rows over {DAYS} daily partitions; then "
        f"{args.writes} real upserts each (300 rows: 100 updates, 200 inserts), the tables "
        f"in turn, each round starting with the next; local[2].",
        f"Goal: the long archived table's median write at most 1.1 x the short table's: "
        f"{long_:.2f}s / {short:.2f}s = {long_ / short:.2f} -> "
        f"{'PASS' if long_ <= 1.1 * short else 'FAIL'}.",
        f"Without archival (every instant in the timeline directory): {kept:.2f}s = "
        f"{kept / short:.2f} x the short table's.",
    ]
    print_section("Timeline archival: a write on a long history", HEAD, res["rows"], notes)
    md = [*md_header("Timeline archival", command_line("timeline.py", argv), res["spark"]),
          engine_state(), "", md_table(HEAD, res["rows"]), "", *md_bullets(notes)]
    finish_run(res["work"], "timeline.md", md, args.keep)


if __name__ == "__main__":
    sys.exit(main())
