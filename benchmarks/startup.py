#!/usr/bin/env python
"""Start-up and small tables: what ours adds to a dbt command and to a tiny model, next to
dbt-spark's own `incremental`.

    python benchmarks/startup.py [--rows 1000] [--commands 3] [--runs 5] [--out benchmarks/out]

A dbt project in the run's work directory holds models of `--rows` rows, each run's rows
new (their payload hashes the run's invocation id, so every run replaces the rows and the
files' sizes change, as an incremental run's new data does): `tiny_ours` (sized_incremental,
insert_overwrite, 10 daily partitions) and `tiny_dbt_spark` (dbt's `incremental`,
insert_overwrite, parquet, `sized: false`: dbt-spark's own macro), the same pair
unpartitioned (`flat_ours`, `flat_dbt_spark`), and the partitioned pair with `append`
(dbt-spark's default strategy: `append_ours` packs each run's rows into the partitions'
small files, dbt-spark adds files; `append_nopack_ours`, `small_file_limit: 0`, adds files
as dbt-spark does, to show what the packing itself costs); and `newkeys_ours`, an upsert (`unique_key` id) whose
ids grow run by run, beside dbt-spark appending the same rows (`newkeys_dbt_spark`: with
keys that are all new, an append is what a user of dbt-spark's Parquet tables would run).
Two profiles share one embedded Spark setup
(local[2], one Derby metastore and warehouse): `sized` (type sized_spark) and `spark` (type
spark, method session: dbt-spark itself).

Per command: `--commands` times each partitioned model, alternating, in a fresh process
(`dbt run --select <model>`, the JVM started by the command as an orchestrator's step does):
ours with the sized profile, dbt-spark with the spark profile. Measured: the time from the
process's start to the model's start (run_results.json) and the whole command.

Per model: in one process (dbtRunner; the session warm), `--runs` incremental runs of each
model on the sized profile, alternating; the model's execution_time from dbt's results.
That is dbt-spark's macro and ours on the same session, the same adapter.

Goal (issue 20): ours adds at most 20% to each. Writes <out>/startup.md.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks.lib import DEFAULT_OUT  # noqa: E402
from benchmarks.lib.report import (command_line, engine_state, finish_run,  # noqa: E402
                                   md_bullets, md_header, md_table, print_section,
                                   run_benchmark, say, start_run)

GOAL = 1.2
MODELS = {"ours": "tiny_ours", "dbt-spark": "tiny_dbt_spark"}
# the in-process pairs: (what, ours' model, dbt-spark's model)
PAIRS = [("10 partitions, insert_overwrite", "tiny_ours", "tiny_dbt_spark"),
         ("unpartitioned, insert_overwrite", "flat_ours", "flat_dbt_spark"),
         ("10 partitions, append", "append_ours", "append_dbt_spark"),
         # the same append with packing off: what the packing itself costs
         ("10 partitions, append, packing off", "append_nopack_ours", "append_dbt_spark"),
         ("10 partitions, upsert of new keys", "newkeys_ours", "newkeys_dbt_spark")]
SELECT = ("select id, date_add(date'2025-01-01', cast(id % 10 as int)) as d,\n"
          "       sha2(concat(cast(id as string), '{{ invocation_id }}'), 256) as payload\n"
          "from range({{ var('rows') }})\n")
# Keys that grow with time: every run's ids lie above the last run's (the run's start in
# milliseconds, times 10,000), as an event table's do.
NEW_KEYS = SELECT.replace("select id,", "select id + {{ (run_started_at.timestamp() * 1000) "
                          "| int }} * 10000 as id,")
OURS = "materialized='sized_incremental', incremental_strategy='{strategy}'"
DBT_SPARK = ("materialized='incremental', incremental_strategy='{strategy}', "
             "file_format='parquet', sized=false")


def _model(config, partitioned, strategy="insert_overwrite", select=SELECT, extra=""):
    by = ", partition_by=['d']" if partitioned else ""
    key = ", unique_key='id'" if strategy == "upsert" else ""
    return ("{{ config(" + config.format(strategy=strategy) + by + key + extra + ") }}\n"
            + select)


def main(argv=None):
    return run_benchmark(argv, parse_args, run, report)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1000, help="rows of each model (1,000)")
    ap.add_argument("--commands", type=int, default=3,
                    help="fresh-process commands per side (3)")
    ap.add_argument("--runs", type=int, default=5, help="in-process runs per model (5)")
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    return ap.parse_args(argv)


def _profile(kind, home):
    params = {"spark.master": "local[2]", "spark.driver.host": "127.0.0.1",
              "spark.driver.bindAddress": "127.0.0.1", "spark.ui.enabled": "false",
              "spark.ui.showConsoleProgress": "false", "spark.driver.memory": "2g",
              "spark.sql.shuffle.partitions": "8",
              "spark.sql.warehouse.dir": f"{home}/warehouse",
              "spark.hadoop.javax.jdo.option.ConnectionURL":
                  f"jdbc:derby:;databaseName={home}/metastore_db;create=true",
              "spark.driver.extraJavaOptions": f"-Dderby.system.home={home}"}
    return {"target": "local", "outputs": {"local": {
        "type": kind, "method": "session", "host": "localhost", "schema": "startup",
        "threads": 1, "server_side_parameters": params}}}


def write_project(root, rows):
    """The project and both profiles under root; returns the project directory."""
    project = os.path.join(root, "project")
    os.makedirs(os.path.join(project, "models"), exist_ok=True)
    home = os.path.join(root, "spark")
    files = {
        "dbt_project.yml": json.dumps({"name": "startup", "version": "1.0", "profile": "sized",
                                       "config-version": 2, "vars": {"rows": rows}}),
        "profiles.yml": json.dumps({"sized": _profile("sized_spark", home),
                                    "spark": _profile("spark", home)}),
        "models/tiny_ours.sql": _model(OURS, True),
        "models/tiny_dbt_spark.sql": _model(DBT_SPARK, True),
        "models/flat_ours.sql": _model(OURS, False),
        "models/flat_dbt_spark.sql": _model(DBT_SPARK, False),
        "models/append_ours.sql": _model(OURS, True, "append"),
        "models/append_dbt_spark.sql": _model(DBT_SPARK, True, "append"),
        # small_file_limit 0: no file counts as small, each run adds its files (packing off)
        "models/append_nopack_ours.sql": _model(OURS, True, "append",
                                                extra=", small_file_limit=0"),
        # an upsert whose keys are all new, beside dbt-spark appending the same rows
        "models/newkeys_ours.sql": _model(OURS, True, "upsert", NEW_KEYS),
        "models/newkeys_dbt_spark.sql": _model(DBT_SPARK, True, "append", NEW_KEYS),
    }
    for rel, text in files.items():
        with open(os.path.join(project, rel), "w") as fh:
            fh.write(text)
    return project


def _args(project, model, profile):
    return ["run", "--select", model, "--profile", profile, "--project-dir", project,
            "--profiles-dir", project]


def fresh_command(project, model, profile):
    """(seconds from the process's start to the model's start, the whole command's) of one
    `dbt run` in a new process."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    start = time.time()
    dbt = os.path.join(os.path.dirname(sys.executable), "dbt")
    done = subprocess.run([dbt, *_args(project, model, profile)],
                          capture_output=True, text=True, env=env, cwd=project)
    whole = time.time() - start
    if done.returncode != 0:
        raise RuntimeError(f"dbt run of {model} failed:\n{done.stdout[-3000:]}")
    with open(os.path.join(project, "target", "run_results.json")) as fh:
        result = json.load(fh)["results"][0]
    first = min(t["started_at"] for t in result["timing"] if t.get("started_at"))
    began = datetime.fromisoformat(first.replace("Z", "+00:00"))
    if began.tzinfo is None:
        began = began.replace(tzinfo=timezone.utc)
    return began.timestamp() - start, whole


def in_process_runs(project, runs):
    """{model: [model execution seconds]} of alternating incremental runs of every model,
    one process, after an untimed run of each (the first model of the process opens the
    session, and each model's first run builds its table)."""
    from dbt.cli.main import dbtRunner

    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    models = list(dict.fromkeys(m for _what, *pair in PAIRS for m in pair))
    out = {model: [] for model in models}
    for i in range(runs + 1):
        for model in models:
            res = dbtRunner().invoke(_args(project, model, "sized"))
            if not res.success:
                raise RuntimeError(f"dbt run of {model} failed: {res.exception}")
            if i:
                out[model].append(res.result.results[0].execution_time)
    return out


@dataclass
class Startup:
    commands: dict      # {side: [(before the model s, whole s)]}
    models: dict        # {model: [execution s]}
    work: object
    version: str
    spark_version: str


def run(args):
    work = start_run(args.out, "startup-")
    project = write_project(work.tmp, args.rows)
    commands = {side: [] for side in MODELS}
    profiles = {"ours": "sized", "dbt-spark": "spark"}
    # the first command of each side builds its table (untimed): the others are incremental
    # runs. Fresh processes first: the in-process runs' JVM keeps the Derby metastore open.
    for i in range(args.commands + 1):
        for side, model in MODELS.items():
            say(f"{side}: dbt run --select {model} in a fresh process "
                f"({'build' if i == 0 else f'{i}/{args.commands}'}) ...")
            timing = fresh_command(project, model, profiles[side])
            if i:
                commands[side].append(timing)
    say(f"{args.runs} runs of each model in one process ...")
    models = in_process_runs(project, args.runs)
    import pyspark

    return Startup(commands, models, work, engine_state(), pyspark.__version__)


def report(args, res, argv):
    head = ["measure", "ours, median", "dbt-spark, median", "ours / dbt-spark", "ours, each",
            "dbt-spark, each"]
    rows, goals = [], []
    measures = [("before the model (fresh process)", [c[0] for c in res.commands["ours"]],
                 [c[0] for c in res.commands["dbt-spark"]]),
                ("whole command (fresh process)", [c[1] for c in res.commands["ours"]],
                 [c[1] for c in res.commands["dbt-spark"]]),
                *[(f"model, {what} (one process)", res.models[ours], res.models[theirs])
                  for what, ours, theirs in PAIRS]]
    for name, ours, theirs in measures:
        ratio = statistics.median(ours) / statistics.median(theirs)
        rows.append([name, f"{statistics.median(ours):.2f}", f"{statistics.median(theirs):.2f}",
                     f"{ratio:.2f}x", ", ".join(f"{x:.2f}" for x in ours),
                     ", ".join(f"{x:.2f}" for x in theirs)])
        goals.append(f"{name}: ours {ratio:.2f}x dbt-spark's -> "
                     f"{'met' if ratio <= GOAL else 'NOT met'} (goal: at most {GOAL:g}x)")
    title = f"Start-up and a {args.rows:,}-row model: ours beside dbt-spark's incremental"
    notes = [res.version + "; seconds."]
    print_section(title, head, rows, notes + goals)
    md = [*md_header(title, command_line("startup.py", argv), res.spark_version),
          md_table(head, rows), "", *md_bullets(notes + goals), ""]
    finish_run(res.work, "startup.md", md, args.keep)


if __name__ == "__main__":
    sys.exit(main())
