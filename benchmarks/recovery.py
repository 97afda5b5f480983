#!/usr/bin/env python
"""Readers during recovery: how long a reader listing the table sees it half done while a
restore publishes, and while recovery rolls that restore back, for the same files.

    python benchmarks/recovery.py [--rows 260000] [--partitions 20] [--target 64KB]
                                  [--rounds 3] [--out benchmarks/out]

Builds a table partitioned by day (a full build, then a second full build that replaces
every file), then, `--rounds` times: restores it to the first build with a crash injected
right after the publish (SIZED_SPARK_FAULT=published, in process, as the crash tests do),
and recovers it (the rollback of the killed restore moves the same files back). A watcher
process (`--watch` mode of this script) lists the table's directory in a loop, as a DuckDB
or polars glob does, during each step. Per step: the move window (first to last file move,
from the engine's fault points `publish` and `undo`, when the code has them), the reader's
window (first to last listing that was neither the state before nor the state after), the
listings in it and the fewest rows such a listing held. Writes <out>/recovery.md.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from urllib.parse import urlparse

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks.lib import DEFAULT_OUT  # noqa: E402
from benchmarks.lib.data import SCHEMA  # noqa: E402
from benchmarks.lib.report import (command_line, engine_state, finish_run,  # noqa: E402
                                   md_bullets, md_header, md_table, print_section,
                                   run_benchmark, start_run)
from benchmarks.lib.session import start_spark  # noqa: E402
from benchmarks.lib.tables import table_location  # noqa: E402

NAME = "recovery_bench"
STEPS = {"publish": "restore's publish", "undo": "recovery's rollback"}


def main(argv=None):
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--watch":
        return watch(*sys.argv[2:])
    return run_benchmark(argv, parse_args, run, report)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=260_000, help="rows of each build")
    ap.add_argument("--partitions", type=int, default=20, help="daily partitions (20)")
    ap.add_argument("--target", default="64KB", help="target file size (64KB)")
    ap.add_argument("--rounds", type=int, default=3, help="restore + recovery rounds (3)")
    ap.add_argument("--out", default=DEFAULT_OUT, help="output directory")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    return ap.parse_args(argv)


# ----------------------------------------------------------------------------------------
# The watcher process: a reader listing the table's directory
# ----------------------------------------------------------------------------------------
def watch(location, log_path, stop_path):
    """List the table until stop_path exists; one JSON line per listing (its files only
    when they differ from the listing before)."""
    last = None
    with open(log_path, "w") as log:
        while not os.path.exists(stop_path):
            start = time.time()
            files = visible_files(location)
            line = {"s": start, "e": time.time()}
            if files != last:
                line["files"] = last = files
            log.write(json.dumps(line) + "\n")
            log.flush()


def visible_files(location):
    """The rel paths of the table's data files, as a glob of `<table>/**/*.parquet` that
    skips hidden directories finds them (names only: a file may go while it is listed)."""
    root = urlparse(location).path.rstrip("/")
    out = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if x[:1] not in (".", "_")]
        rel = os.path.relpath(d, root)
        out += [f"{rel}/{n}" for n in names if n.endswith(".parquet") and n[:1] not in "._"]
    return sorted(out)


def watched(location, work, step):
    """A context: the watcher runs (and has listed once) for the block; yields a callable
    returning its listings [(start, end, files)] once the block is over."""
    log_path, stop = os.path.join(work, f"{step}.jsonl"), os.path.join(work, f"{step}.stop")
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--watch", location,
                             log_path, stop])
    deadline = time.time() + 60
    while not (os.path.exists(log_path) and os.path.getsize(log_path)):
        if time.time() > deadline or proc.poll() is not None:
            raise RuntimeError("the watcher did not list the table")
        time.sleep(0.05)
    return proc, log_path, stop


def stop_watching(watcher):
    proc, log_path, stop = watcher
    time.sleep(0.2)  # a few listings of the state after
    open(stop, "w").close()
    proc.wait(timeout=60)
    out, files = [], None
    for line in open(log_path):
        rec = json.loads(line)
        files = rec.get("files", files)
        out.append((rec["s"], rec["e"], files))
    return out


# ----------------------------------------------------------------------------------------
# The table and the steps
# ----------------------------------------------------------------------------------------
def build(spark, args, tag):
    from python_adapter.api import TableRef, parse_config, write_dataframe

    cfg = parse_config({"partition_by": ["day"], "incremental_strategy": "insert_overwrite",
                        "target_file_size": args.target})
    df = spark.sql(f"""select id, date_add(date'2026-01-01', cast(id % {args.partitions} as int))
                              as day, sha2(concat(cast(id as string), '{tag}'), 256) as payload,
                              '{tag}' as tag
                       from range({args.rows})""")
    write_dataframe(spark, df, TableRef(SCHEMA, NAME), cfg, full_refresh=True,
                    log=lambda m: None)


def file_rows(spark, location):
    """{rel path: rows} of the table's files now, from the timeline."""
    from python_adapter.io.fs import HadoopFS
    from python_adapter.table.timeline import Timeline

    return {p: e.rows for p, e in Timeline(HadoopFS(spark), location).file_index().items()}


def moves_timed(step):
    """Record the time of every file move the engine reports at fault point `step`."""
    from python_adapter.table import faults

    times = []
    faults.run_at(step, lambda: times.append(time.time()))
    return times


def crashed_restore(spark, instant):
    from python_adapter.api import TableRef
    from python_adapter.spark.services.restore import restore_table
    from python_adapter.table import faults, lock

    os.environ["SIZED_SPARK_FAULT"] = "published"
    faults.reset()
    try:
        restore_table(spark, TableRef(SCHEMA, NAME), instant, log=lambda m: None)
        raise RuntimeError("the restore was not stopped at 'published'")
    except faults.InjectedCrash:
        pass
    finally:
        del os.environ["SIZED_SPARK_FAULT"]
        lock.forget_held_locks()  # as a dead process would
        faults.reset()


def recover(spark):
    from python_adapter.api import TableRef
    from python_adapter.spark.services.rollback import recover_table

    rolled = recover_table(spark, TableRef(SCHEMA, NAME), log=lambda m: None)
    if len(rolled) != 1:
        raise RuntimeError(f"recovery rolled back {len(rolled)} instants, not the restore")


def measure(step, listings, moves, before, after, rows):
    """One step's figures: move window, reader window, odd listings, fewest rows seen."""
    odd = [(s, e, f) for s, e, f in listings if set(f) not in (before, after)]
    seen = [sum(rows.get(p, 0) for p in f) for _s, _e, f in odd]
    return {"step": step, "moves": len(moves),
            "move_s": (moves[-1] - moves[0]) if len(moves) > 1 else None,
            "reader_s": (odd[-1][1] - odd[0][0]) if odd else 0.0,
            "odd": len(odd), "listings": len(listings), "fewest_rows": min(seen, default=None)}


def one_round(spark, work, ctx, n):
    out = []
    for step, action, before, after in (
            ("publish", lambda: crashed_restore(spark, ctx["first"]), ctx["v1"], ctx["v0"]),
            ("undo", lambda: recover(spark), ctx["v0"], ctx["v1"])):
        times = moves_timed(step)
        watcher = watched(ctx["location"], work, f"{step}-{n}")
        action()
        listings = stop_watching(watcher)
        out.append(measure(step, listings, times, before, after, ctx["rows"]))
        print(f"  round {n} {STEPS[step]}: {out[-1]}", flush=True)
    from python_adapter.table import faults
    for step in STEPS:
        faults.run_at(step, None)
    return out


def run(args):
    from python_adapter.io.fs import HadoopFS
    from python_adapter.table.timeline import Timeline

    work = start_run(args.out, "recovery-")
    print(f"recovery benchmark: {args.rows:,} rows over {args.partitions} partitions, target "
          f"{args.target}, {args.rounds} rounds, work dir {work.tmp}", flush=True)
    spark = start_spark(work.tmp, "2g", app_name="sized-recovery-benchmark")
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {SCHEMA}")
    build(spark, args, "v0")
    location = table_location(spark, NAME)
    ctx = {"location": location, "v0": set(visible_files(location))}
    rows = file_rows(spark, location)
    build(spark, args, "v1")
    rows.update(file_rows(spark, location))
    ctx.update(v1=set(visible_files(location)), rows=rows,
               first=Timeline(HadoopFS(spark), location).completed()[0].instant)
    print(f"  {len(ctx['v0'])} files in the first build, {len(ctx['v1'])} in the second",
          flush=True)
    results = [r for n in range(1, args.rounds + 1) for r in one_round(spark, work.tmp, ctx, n)]
    version = spark.version
    spark.stop()
    return {"results": results, "version": version, "work": work,
            "files": (len(ctx["v0"]), len(ctx["v1"])), "total_rows": args.rows}


# ----------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------
def _median(values, fmt="{:.3f}"):
    values = [v for v in values if v is not None]
    return fmt.format(statistics.median(values)) if values else "-"


def report(args, result, argv=None):
    head = ["step", "file moves", "move window s (median)", "reader window s (median, max)",
            "half-done listings (median)", "fewest rows a listing saw"]
    body = []
    for step, label in STEPS.items():
        res = [r for r in result["results"] if r["step"] == step]
        fewest = [r["fewest_rows"] for r in res if r["fewest_rows"] is not None]
        body.append([label, _median([r["moves"] for r in res], "{:.0f}"),
                     _median([r["move_s"] for r in res]),
                     f"{_median([r['reader_s'] for r in res])}, "
                     f"{max(r['reader_s'] for r in res):.3f}",
                     _median([r["odd"] for r in res], "{:.0f}"),
                     f"{min(fewest, default=result['total_rows']):,}"])
    notes = [f"{args.rows:,} rows over {args.partitions} daily partitions, target {args.target}: "
             f"{result['files'][0]} files in the first build, {result['files'][1]} in the "
             f"second; {args.rounds} rounds of a restore to the first build crashed at "
             "'published', then recovered (which moves the same files back)",
             "move window: first to last file move (fault points publish / undo; '-' when the "
             "code has no undo point); reader window: first to last listing by a watcher "
             "process that was neither the state before nor after; fewest rows: of such a "
             f"listing, against {args.rows:,} in either state", engine_state()]
    print_section("Readers during a publish and during recovery", head, body, notes)
    md = [*md_header("Readers during a publish and during recovery",
                     command_line("recovery.py", argv), result["version"]),
          md_table(head, body), "", *md_bullets(notes)]
    finish_run(result["work"], "recovery.md", md, args.keep)


if __name__ == "__main__":
    sys.exit(main())
