#!/usr/bin/env python
"""Spark Connect beside session: the same dbt project, the same data, one run.

    python benchmarks/connect.py [--rows 3000000] [--batch-rows 200000] [--batches 5] [--keep]

Two dbt processes, one after the other, each in a fresh warehouse: one on `method: session`
(the embedded Spark, local[2]) and one on `method: connect` (a Spark Connect server started
by scripts/connect_server.sh, local[2], 4g of driver memory as session's, already warm: a
Connect server outlives its clients).
Each runs
  backfill   a sized full build of --rows rows over 365 daily partitions at 1 MB files
             (the backfill benchmark's shape)
  upsert     a keyed table of --rows rows, then --batches batches of --batch-rows rows
             (half updates of existing keys, half new keys: the upsert benchmark's shape)
and the script prints, per step and method, the model's time (dbt's execution time), the
files and rows of the table after it (read with DuckDB), and the ratio connect/session.
Goal (printed, never asserted): the same files and rows; connect's time at most 1.2x.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOAL = 1.2
PORT = "15202"

BACKFILL = """
{{ config(materialized='sized_incremental', partition_by=['event_date'],
          target_file_size='1MB') }}
select id, date_add(date'2025-01-01', cast(id % 365 as int)) as event_date,
       cast(id * 7 % 1000 as bigint) as amount, sha2(cast(id as string), 256) as payload
from range(0, {{ var('rows') }})
"""

UPSERT = """
{{ config(materialized='sized_incremental', partition_by=['day'], unique_key='id',
          incremental_strategy='upsert', target_file_size='1MB') }}
{% set b = var('batch') | int %}
{% if b == 0 %}
select id, date_add(date'2025-01-01', cast(id % 30 as int)) as day,
       cast(0 as bigint) as version, sha2(cast(id as string), 256) as payload
from range(0, {{ var('rows') }})
{% else %}
{% set half = (var('batch_rows') | int) // 2 %}
select id, date_add(date'2025-01-01', cast(id % 30 as int)) as day,
       cast({{ b }} as bigint) as version, sha2(cast(id + {{ b }} as string), 256) as payload
from (select id * 2 + {{ b }} as id from range(0, {{ half }})
      union all
      select {{ (var('rows') | int) + (b - 1) * half }} + id as id from range(0, {{ half }}))
{% endif %}
"""

PROFILES = """
bench:
  target: session
  outputs:
    session:
      type: sized_spark
      method: session
      host: localhost
      schema: bench
      threads: 1
      server_side_parameters:
        spark.master: "local[2]"
        spark.driver.host: "127.0.0.1"
        spark.driver.bindAddress: "127.0.0.1"
        spark.ui.enabled: "false"
        spark.driver.memory: "4g"
        spark.sql.shuffle.partitions: "8"
        spark.sql.warehouse.dir: "{home}/session/warehouse"
        spark.hadoop.javax.jdo.option.ConnectionURL: "jdbc:derby:;databaseName={home}/session/metastore_db;create=true"
        spark.driver.extraJavaOptions: "-Dderby.system.home={home}/session"
    connect:
      type: sized_spark
      method: connect
      host: "sc://127.0.0.1:{port}"
      schema: bench
      threads: 1
      server_side_parameters:
        spark.sql.shuffle.partitions: "8"
"""

# Runs dbt commands in one process (dbtRunner) and prints each model's execution time.
RUNNER = """
import json, sys
from dbt.cli.main import dbtRunner
out = []
for args in json.loads(sys.argv[1]):
    res = dbtRunner().invoke(args)
    node = res.result.results[0] if res.success and res.result.results else None
    out.append({"ok": bool(res.success),
                "seconds": node.execution_time if node else None,
                "status": str(node.adapter_response.get("_message", "")) if node else ""})
print("BENCH-RESULT " + json.dumps(out), flush=True)
"""


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    p.add_argument("--rows", type=int, default=3_000_000)
    p.add_argument("--batch-rows", type=int, default=200_000)
    p.add_argument("--batches", type=int, default=5)
    p.add_argument("--keep", action="store_true",
                   help="keep the work directory (the project and its logs/dbt.log)")
    return p.parse_args(argv)


def steps(args, target):
    common = ["--profiles-dir", ".", "--target", target]
    v = {"rows": args.rows, "batch_rows": args.batch_rows}
    out = [("backfill", ["run", "--select", "backfill", "--vars", json.dumps(v), *common]),
           ("upsert base", ["run", "--select", "upsert", "--vars",
                            json.dumps({**v, "batch": 0}), *common])]
    for b in range(1, args.batches + 1):
        out.append((f"upsert batch {b}", ["run", "--select", "upsert", "--vars",
                                          json.dumps({**v, "batch": b}), *common]))
    return out


def run_method(project, args, target, env):
    named = steps(args, target)
    started = time.time()
    done = subprocess.run([sys.executable, "-c", RUNNER, json.dumps([a for _, a in named])],
                          cwd=project, env=env, capture_output=True, text=True)
    wall = time.time() - started
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("BENCH-RESULT ")]
    if not line:
        raise SystemExit(f"{target}: dbt failed\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    results = json.loads(line[0][len("BENCH-RESULT "):])
    failed = [name for (name, _), r in zip(named, results) if not r["ok"]]
    if failed:
        raise SystemExit(f"{target}: failed steps {failed}\n{done.stdout[-3000:]}")
    return [name for name, _ in named], results, wall


def table_stats(warehouse, table):
    import duckdb

    path = f"{warehouse}/bench.db/{table}"
    files = sum(1 for root, _d, names in os.walk(path) if "/." not in root
                for n in names if n.endswith(".parquet"))
    rows, keys, check = duckdb.sql(
        f"select count(*), count(distinct id), sum(hash(id, payload)) "
        f"from read_parquet('{path}/**/*.parquet', hive_partitioning=true)").fetchall()[0]
    return files, rows, keys, check


def main(argv=None):
    args = parse_args(argv)
    home = tempfile.mkdtemp(prefix="sized-connect-bench-")
    project = os.path.join(home, "project")
    os.makedirs(os.path.join(project, "models"))
    with open(os.path.join(project, "dbt_project.yml"), "w") as fh:
        fh.write("name: bench\nversion: '1.0'\nconfig-version: 2\nprofile: bench\n")
    with open(os.path.join(project, "models", "backfill.sql"), "w") as fh:
        fh.write(BACKFILL)
    with open(os.path.join(project, "models", "upsert.sql"), "w") as fh:
        fh.write(UPSERT)
    with open(os.path.join(project, "profiles.yml"), "w") as fh:
        fh.write(PROFILES.format(home=home, port=PORT))
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
           "SIZED_CONNECT_DIR": os.path.join(home, "connect"), "SIZED_CONNECT_PORT": PORT,
           "SIZED_CONNECT_DRIVER_MEMORY": "4g",  # as session's spark.driver.memory
           "PYTHON": sys.executable}
    script = os.path.join(REPO, "scripts", "connect_server.sh")
    started = subprocess.run(["bash", script, "start"], env=env, capture_output=True, text=True)
    if started.returncode != 0:
        raise SystemExit(started.stdout + started.stderr)
    try:
        names, session, session_wall = run_method(project, args, "session", env)
        _, connect, connect_wall = run_method(project, args, "connect", env)
        tables = {t: (table_stats(f"{home}/session/warehouse", t),
                      table_stats(f"{home}/connect/warehouse", t))
                  for t in ("backfill", "upsert")}
    finally:
        subprocess.run(["bash", script, "stop"], env=env, capture_output=True, text=True)
    report(args, names, session, connect, tables, (session_wall, connect_wall))
    if args.keep:
        print(f"kept {home}")
    else:
        shutil.rmtree(home, ignore_errors=True)


def report(args, names, session, connect, tables, walls):
    print(f"\nSpark Connect beside session: python benchmarks/connect.py --rows {args.rows} "
          f"--batch-rows {args.batch_rows} --batches {args.batches}")
    print(f"{'step':<16} {'session s':>10} {'connect s':>10} {'ratio':>6}  status (connect)")
    for name, s, c in zip(names, session, connect):
        print(f"{name:<16} {s['seconds']:>10.1f} {c['seconds']:>10.1f} "
              f"{c['seconds'] / s['seconds']:>6.2f}  {c['status']}")
    for label, pick in (("backfill", lambda n: n == "backfill"),
                        ("upsert (sum)", lambda n: n.startswith("upsert"))):
        s = sum(r["seconds"] for n, r in zip(names, session) if pick(n))
        c = sum(r["seconds"] for n, r in zip(names, connect) if pick(n))
        verdict = "met" if c <= GOAL * s else "NOT met"
        print(f"{label:<16} {s:>10.1f} {c:>10.1f} {c / s:>6.2f}  goal <= {GOAL}x: {verdict}")
    print(f"{'process wall':<16} {walls[0]:>10.1f} {walls[1]:>10.1f} {walls[1] / walls[0]:>6.2f}"
          f"  (session's includes its JVM start; the Connect server was up)")
    for table, (s, c) in tables.items():
        same = "same" if s == c else "DIFFERENT"
        print(f"{table}: files {s[0]} / {c[0]}, rows {s[1]:,} / {c[1]:,}, keys {s[2]:,} / "
              f"{c[2]:,} (session / connect): {same} rows and files")


if __name__ == "__main__":
    main()
