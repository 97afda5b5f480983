#!/usr/bin/env python
"""Snapshot benchmark: daily `dbt snapshot` runs of a dimension with a few changes a day.

    python benchmarks/snapshot.py [--rows 1000000] [--days 20] [--change 0.01] [--target 16MB]
    python benchmarks/snapshot.py --smoke        # 20,000 rows, 3 days: checks that it runs

Every day a fraction `--change` of the keys gets a new version (timestamp strategy). Methods,
on the same days:
  ours upsert      what the `snapshot` materialization does (macros/materializations/
                   snapshot.sql): dbt's staging rows (new versions, current rows to close)
                   written by write_dataframe as one upsert keyed by dbt_scd_id, a matched
                   row taking only dbt_valid_to
  table rebuild    what a user of dbt-spark on Parquet (no MERGE) has: the snapshot built
                   again every day as a table, old rows with the closed versions' valid_to
                   plus the new versions (dbt-spark's table materialization: one file per
                   task)
Prints per day and method: files, files below the small-file limit, rows, wall time;
writes <out>/snapshot.md. Timings from a shared machine are indications, not results.
"""
import argparse
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks.lib import DEFAULT_OUT  # noqa: E402
from benchmarks.lib.data import SCHEMA  # noqa: E402
from benchmarks.lib.report import (command_line, engine_state, finish_run,  # noqa: E402
                                   md_header, md_table, print_section, run_benchmark,
                                   start_run)
from benchmarks.lib.session import start_spark  # noqa: E402
from benchmarks.lib.tables import listing, table_location  # noqa: E402
from python_adapter.api import TableRef, parse_config, write_dataframe  # noqa: E402

OURS, REBUILD = "ours upsert", "table rebuild"
TABLES = {OURS: "snap_ours", REBUILD: "snap_rebuild"}
META = ("dbt_scd_id", "dbt_updated_at", "dbt_valid_from", "dbt_valid_to")


def main(argv=None):
    return run_benchmark(argv, parse_args, run, report)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--days", type=int, default=20)
    p.add_argument("--change", type=float, default=0.01, help="share of keys changed a day")
    p.add_argument("--target", default="16MB")
    p.add_argument("--driver-memory", default="8g")
    p.add_argument("--out", default=DEFAULT_OUT)
    p.add_argument("--keep", action="store_true")
    p.add_argument("--smoke", action="store_true", help="20,000 rows, 3 days, target 256KB")
    args = p.parse_args(argv)
    if args.smoke:
        args.rows, args.days, args.target = 20_000, 3, "256KB"
    return args


# ----------------------------------------------------------------------------------------
# The dimension and dbt's snapshot SQL (timestamp strategy)
# ----------------------------------------------------------------------------------------
def source_sql(args, day):
    """The dimension on `day`: each key's last change is the last day <= `day` whose hash
    of (key, day) falls in the changed share; its values follow from that day."""
    per_mille = int(args.change * 1000)
    last = "greatest(" + ", ".join(["1", "1"] + [
        f"if(pmod(xxhash64(id, {d}), 1000) < {per_mille}, {d}, 1)"
        for d in range(2, day + 1)]) + ")"
    return f"""select id, concat('name-', id, '-', v) as name, pmod(id * 31 + v, 97) as segment,
                      cast(pmod(id, 1000) * v as double) / 7 as score,
                      timestamp'2024-01-01' + make_interval(0, 0, 0, v - 1) as updated_at
               from (select id, {last} as v from range(1, {args.rows} + 1))"""


def first_build_sql(source):
    """dbt's build_snapshot_table for the timestamp strategy (unique_key id, updated_at)
    over the source's SQL. tests/functional/spark/write/test_snapshot_upsert.py uses it too."""
    return f"""select *, md5(concat(coalesce(cast(id as string), ''), '|',
                                  coalesce(cast(updated_at as string), ''))) as dbt_scd_id,
                      updated_at as dbt_updated_at, updated_at as dbt_valid_from,
                      cast(null as timestamp) as dbt_valid_to
               from ({source})"""


def staging_sql(source, table):
    """dbt's snapshot_staging_table for the same strategy: insertions (new versions) and
    updates (current rows to close, keeping their dbt_scd_id), without dbt's helper
    columns."""
    return f"""with src as ({source}),
        cur as (select id, dbt_scd_id, dbt_valid_from from {table} where dbt_valid_to is null)
        select s.*, md5(concat(coalesce(cast(s.id as string), ''), '|',
                               coalesce(cast(s.updated_at as string), ''))) as dbt_scd_id,
               s.updated_at as dbt_updated_at, s.updated_at as dbt_valid_from,
               cast(null as timestamp) as dbt_valid_to
        from src s left join cur c on s.id = c.id
        where c.id is null or c.dbt_valid_from < s.updated_at
        union all
        select s.*, c.dbt_scd_id, s.updated_at, s.updated_at, s.updated_at
        from src s join cur c on s.id = c.id where c.dbt_valid_from < s.updated_at"""


# ----------------------------------------------------------------------------------------
# Methods
# ----------------------------------------------------------------------------------------
def run_ours(spark, args, cfg, day):
    table = TableRef(SCHEMA, TABLES[OURS])
    source = source_sql(args, day)
    sql = first_build_sql(source) if day == 1 else staging_sql(source, f"{SCHEMA}.{TABLES[OURS]}")
    write_dataframe(spark, spark.sql(sql), table, cfg, full_refresh=day == 1, log=lambda m: None)


def run_rebuild(spark, args, day):
    """The snapshot as a table built again: old rows, closed where a new version came, plus
    the new versions. Checkpointed first: Spark will not overwrite a table it reads."""
    name = f"{SCHEMA}.{TABLES[REBUILD]}"
    if day == 1:
        spark.sql(f"create table {name} using parquet as {first_build_sql(source_sql(args, 1))}")
        return
    staged = spark.sql(staging_sql(source_sql(args, day), name))
    closed = staged.where("dbt_valid_to is not null").selectExpr(
        "dbt_scd_id", "dbt_valid_to as closed_at")
    old = spark.table(name)
    kept = old.join(closed, "dbt_scd_id", "left").selectExpr(
        *[c for c in old.columns if c != "dbt_valid_to"],
        "coalesce(closed_at, dbt_valid_to) as dbt_valid_to").select(*old.columns)
    rows = kept.unionByName(staged.where("dbt_valid_to is null")).localCheckpoint()
    rows.write.mode("overwrite").format("parquet").saveAsTable(name)


def measure(spark, name, small_limit):
    spark.catalog.refreshTable(f"{SCHEMA}.{name}")
    files = listing(spark, table_location(spark, name))
    rows = spark.table(f"{SCHEMA}.{name}").count()
    return {"files": len(files), "small": sum(1 for b in files.values() if b < small_limit),
            "mb": sum(files.values()) / 1e6, "rows": rows}


def run(args):
    cfg = parse_config({"unique_key": "dbt_scd_id", "incremental_strategy": "upsert",
                        "merge_update_columns": ["dbt_valid_to"],
                        "target_file_size": args.target})
    work = start_run(args.out, "snapshot-")
    print(f"snapshot benchmark: {args.rows:,} rows, {args.days} days, {args.change:.1%} "
          f"changed a day, target {args.target}; work dir {work.tmp}", flush=True)
    version = engine_state()
    spark = start_spark(work.tmp, args.driver_memory)
    spark.sql(f"create database {SCHEMA}")
    history, spark_version = [], spark.version
    try:
        for day in range(1, args.days + 1):
            rec = {}
            for meth, write in ((OURS, lambda: run_ours(spark, args, cfg, day)),
                                (REBUILD, lambda: run_rebuild(spark, args, day))):
                t0 = time.perf_counter()
                write()
                rec[meth] = dict(measure(spark, TABLES[meth], cfg.small_file_limit),
                                 wall=time.perf_counter() - t0)
            history.append(rec)
            print(f"day {day}: " + "; ".join(
                f"{m} {r['files']} files ({r['small']} small), {r['rows']:,} rows, "
                f"{r['wall']:.1f}s" for m, r in rec.items()), flush=True)
    finally:
        spark.stop()
    return {"history": history, "work": work, "version": version, "cfg": cfg,
            "spark": spark_version}


def report(args, res, argv):
    head = ["day"] + [f"{m} {k}" for m in (OURS, REBUILD) for k in ("files", "small", "rows", "s")]
    body = [[d + 1] + [v for m in (OURS, REBUILD)
                       for v in (r[m]["files"], r[m]["small"], f"{r[m]['rows']:,}",
                                 f"{r[m]['wall']:.1f}")]
            for d, r in enumerate(res["history"])]
    notes = [f"small = files below the small-file limit ({res['cfg'].small_file_limit:,} B); "
             f"s = wall seconds of the day's run (local[2], a shared machine: indications only)",
             "ours: one commit per day in the table's timeline; rebuild: the whole table "
             "written again every day", res["version"]]
    print_section("Snapshot runs", head, body, notes)
    title = f"Snapshot: {args.days} daily runs of {args.rows:,} rows, {args.change:.1%} changed a day"
    lines = md_header(title, command_line("snapshot.py", argv), res["spark"])
    lines += [md_table(head, body), ""]
    lines += [f"- {n}" for n in notes]
    finish_run(res["work"], "snapshot.md", lines, args.keep)


if __name__ == "__main__":
    sys.exit(main())
