#!/usr/bin/env python
"""Peer services benchmark: compaction and Z-order of one small-file table by ours and by
Hudi's clustering, Iceberg's rewrite_data_files and Delta's OPTIMIZE, on the same Spark.

    bash scripts/setup.sh peers     # .venv-peers: pyspark 3.5 and Maven (the formats' jars)
    .venv-peers/bin/python benchmarks/peer_services.py [--rows 10000000] [--days 90]
        [--loads 12] [--target 1MB] [--methods ours,hudi,iceberg,delta]

Each method, in a Spark process of its own (pyspark 3.5, as benchmarks/peers.py), loads the
same rows (backfill.py's events over --days daily partitions) in --loads appends (event_id
modulo loads: each load covers every day, as late data does), one file per partition per
load, so every partition holds --loads small files. Then, timed:
  compaction  ours sized_compact (compact); Hudi `CALL run_clustering` (size-based plan, no
              order); Iceberg `CALL system.rewrite_data_files` (binpack); Delta `OPTIMIZE`
  Z-order     on the compacted table, every file rewritten in Z-order of (user_id, amount):
              ours sized_cluster (cluster, zorder); Hudi run_clustering with order_strategy
              z-order; Iceberg rewrite_data_files sort_order zorder(...); Delta
              `OPTIMIZE ... ZORDER BY`
each at the target (the format's documented settings, below). After the load and after each
service: live files as the format's reader sees them, their sizes, files below the
small-file limit, and point queries (user_id = v, amount = v; a few values of rows that
exist): the files a min/max reader must open (from the files' own Parquet footers: the
layout's pruning, whichever reader), the files Spark's scan of the table opens (after the
format's own data skipping: Hudi's column-stats index, Iceberg's manifests, Delta's log
statistics; ours is plain Parquet, whose files Spark lists and whose row groups it skips)
and Spark's time; and a fingerprint of the rows, the same for every method and state.
Writes <out>/peer_services.md.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Callable, Dict, List

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks.lib.data import COLS, SCHEMA, SOURCE_VIEW  # noqa: E402
from benchmarks.lib.peers import (Sizing, hudi_sizing, live_paths, local_path,  # noqa: E402
                                  parse_method_args, relative, run_children, session_conf,
                                  spark_query)
from benchmarks.lib.report import (command_line, engine_state, finish_run,  # noqa: E402
                                   md_bullets, md_header, md_table, print_section, start_run)

METHODS = {
    "ours": ("ours (sized_compact, sized_cluster)", "parquet"),
    "hudi": ("Hudi run_clustering", "hudi"),
    "iceberg": ("Iceberg rewrite_data_files", "iceberg"),
    "delta": ("Delta OPTIMIZE", "delta"),
}
ZORDER = ("user_id", "amount")
QUERY_RUNS = 3
COLUMN_TYPES = ("event_id bigint, user_id bigint, session_id string, event_type string, "
                "amount double, payload string, event_date date")


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        return child(args)
    work = start_run(args.out, "peer-services-")
    print(f"peer services benchmark: {args.rows:,} rows, {args.days} days, {args.loads} "
          f"loads, target {args.target}, methods {args.methods}; work dir {work.tmp}",
          flush=True)
    labels = {key: METHODS[key][0] for key in args.methods.split(",")}
    report(args, work, run_children(os.path.abspath(__file__), argv, labels, work.tmp), argv)
    return 0


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000, help="rows (10000000)")
    ap.add_argument("--days", type=int, default=90, help="daily partitions (90)")
    ap.add_argument("--loads", type=int, default=12,
                    help="appends, each a small file in every partition (12)")
    ap.add_argument("--target", default="1MB", help="target file size of every method (1MB)")
    ap.add_argument("--values", type=int, default=3, help="values per point query (3)")
    return parse_method_args(ap, argv, METHODS, "6g")


def sizing_of(args) -> Sizing:
    from python_adapter.core.sizes import parse_size

    target = parse_size(args.target)
    return Sizing(target, target * 100 // 128)   # the engine's default small-file limit


# ----------------------------------------------------------------------------------------
# A method's process
# ----------------------------------------------------------------------------------------
def child(args):
    from benchmarks.lib.session import start_spark
    from benchmarks.lib.tables import materialize_source

    key, fmt = args.child, METHODS[args.child][1]
    spark = start_spark(args.work, args.driver_memory, app_name=f"peer-services-{key}",
                        conf=session_conf(fmt))
    try:
        materialize_source(spark, args.rows, args.loads, days=args.days)
        table = ServicedTable(spark, key, sizing_of(args))
        values = point_values(spark, args)
        walls = {"load": timed(lambda: table.load(args.loads))}
        print(f"  {args.loads} loads: {walls['load']:.1f}s", flush=True)
        states = {"loaded": table.state(values)}
        table.phases = args.phases
        for service, run in (("compaction", table.compact), ("Z-order", table.zorder)):
            table.started = time.perf_counter()
            walls[service] = timed(run)
            print(f"  {service}: {walls[service]:.1f}s", flush=True)
            states[service] = table.state(values)
        result = {"spark": spark.version, "walls": walls, "states": states}
    finally:
        spark.stop()
    with open(os.path.join(args.work, "result.json"), "w", encoding="utf-8") as fh:
        json.dump(result, fh)
    return 0


def timed(run: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    run()
    return time.perf_counter() - t0


def point_values(spark, args) -> Dict[str, list]:
    """{column: values} of the point queries: the ZORDER columns of rows spread over the
    source (the same rows in every process: the data is generated from a seed)."""
    ids = [args.rows * (i + 1) // (args.values + 1) for i in range(args.values)]
    rows = spark.sql(f"SELECT {', '.join(ZORDER)} FROM {SOURCE_VIEW} "
                     f"WHERE event_id IN ({', '.join(map(str, ids))}) ORDER BY event_id").collect()
    return {col: [r[i] for r in rows] for i, col in enumerate(ZORDER)}


class ServicedTable:
    """One method's table: its loads, its compaction and Z-order, its state."""

    def __init__(self, spark, key: str, sizing: Sizing):
        self.spark, self.key, self.sizing = spark, key, sizing
        self.fmt = METHODS[key][1]
        self.name = f"svc_{key}"
        self.table = f"{SCHEMA}.{self.name}"
        self.phases = False
        self.started = time.perf_counter()

    def log(self, message: str):
        """Ours' phase lines of a service, with --phases (goal 4's view of where time goes)."""
        if self.phases:
            print(f"    {time.perf_counter() - self.started:6.2f}s {message}", flush=True)

    # -- the small-file table ------------------------------------------------------------
    def load(self, loads: int):
        """--loads appends, each one file per partition (packing off where a writer packs)."""
        if self.key != "ours":
            self.spark.sql(f"DROP TABLE IF EXISTS {self.table}")
            self.spark.sql(self._create_sql())
        for k in range(loads):
            rows = f"SELECT {COLS} FROM {SOURCE_VIEW} WHERE event_id % {loads} = {k}"
            if self.key == "ours":
                self._ours_load(rows, first=(k == 0))
            else:
                with self._load_settings():
                    self.spark.sql(f"INSERT INTO {self.table} {rows} DISTRIBUTE BY event_date")

    def _load_settings(self):
        """Hudi's INSERT INTO as bulk_insert: its `insert` packs new rows into the partition's
        small files (what its sizing is for), and the load is to leave them small."""
        from benchmarks.lib.session import conf_set
        return conf_set(self.spark, **({"hoodie.spark.sql.insert.into.operation": "bulk_insert"}
                                       if self.fmt == "hudi" else {}))

    def _create_sql(self) -> str:
        t = self.sizing.target
        props = {
            # Hudi: the column-stats index its reader's data skipping reads
            "hudi": {"type": "cow", "primaryKey": "event_id", **hudi_sizing(self.sizing),
                     "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING",
                     "hoodie.metadata.index.column.stats.enable": "true"},
            "iceberg": {"write.target-file-size-bytes": str(t),
                        "write.distribution-mode": "hash"},
            "delta": {"delta.autoOptimize.optimizeWrite": "false",
                      "delta.autoOptimize.autoCompact": "false"},
        }[self.fmt]
        quoted = ", ".join(f"'{k}' = '{v}'" for k, v in props.items())
        return (f"CREATE TABLE {self.table} ({COLUMN_TYPES}) USING {self.fmt} "
                f"PARTITIONED BY (event_date) TBLPROPERTIES ({quoted})")

    def _ours_load(self, rows_sql: str, first: bool):
        from python_adapter.api import TableRef, parse_config, write_dataframe

        cfg = parse_config({"partition_by": ["event_date"], "incremental_strategy": "insert",
                            "target_file_size": self.sizing.target, "small_file_limit": 0,
                            "distribution": "exact"})
        write_dataframe(self.spark, self.spark.sql(rows_sql), TableRef(SCHEMA, self.name), cfg,
                        full_refresh=first, log=lambda m: None)

    # -- the services ----------------------------------------------------------------------
    def compact(self):
        t, small = self.sizing.target, self.sizing.small_file_limit
        if self.key == "ours":
            from python_adapter.api import TableRef, compact
            compact(self.spark, TableRef(SCHEMA, self.name),
                    {"target_file_size": t, "max_groups": 100_000}, log=self.log)
        elif self.fmt == "hudi":
            self._hudi_clustering(small_file_limit=small)
        elif self.fmt == "iceberg":
            self.spark.sql(f"CALL spark_catalog.system.rewrite_data_files(table => "
                           f"'{self.table}', options => map('target-file-size-bytes', '{t}'))")
        else:
            self._delta_optimize(min_file_size=small, zorder="")

    def zorder(self):
        t = self.sizing.target
        every_file = 16 * t     # a limit above every file's size: each is rewritten
        if self.key == "ours":
            from python_adapter.api import TableRef, cluster
            cluster(self.spark, TableRef(SCHEMA, self.name), list(ZORDER), "zorder",
                    options={"target_file_size": t, "cluster_small_file_limit": every_file,
                             "cluster_max_groups": 100_000}, log=self.log)
        elif self.fmt == "hudi":
            self._hudi_clustering(small_file_limit=every_file, order=ZORDER)
        elif self.fmt == "iceberg":
            self.spark.sql(f"CALL spark_catalog.system.rewrite_data_files(table => "
                           f"'{self.table}', strategy => 'sort', sort_order => "
                           f"'zorder({', '.join(ZORDER)})', options => map("
                           f"'target-file-size-bytes', '{t}', 'rewrite-all', 'true'))")
        else:
            self._delta_optimize(min_file_size=every_file, zorder=", ".join(ZORDER))

    def _hudi_clustering(self, small_file_limit: int, order=()):
        """Hudi's clustering procedure: a size-based plan (every partition's files below the
        limit, one group per partition: max.num.groups' default, 30, would leave most
        partitions out), output files of the target; with `order`, Z-ordered. Its result's
        rows are the plans it ran: none is an error here (nothing would be measured)."""
        prefix = "hoodie.clustering.plan.strategy"
        options = ",".join([f"{prefix}.{k}={v}" for k, v in (
            ("target.file.max.bytes", self.sizing.target),
            ("small.file.limit", small_file_limit), ("max.num.groups", 100_000))]
            # Hudi 1.x plans only the partitions written since the last clustering
            # (incremental table services): the Z-order follows the compaction with no write
            + ["hoodie.table.services.incremental.enabled=false"])
        ordered = (f", order => '{','.join(order)}', order_strategy => 'z-order'"
                   if order else "")
        ran = self.spark.sql(f"CALL run_clustering(table => '{self.table}', op => "
                             f"'scheduleAndExecute'{ordered}, options => '{options}')").collect()
        if not ran:
            raise RuntimeError(f"Hudi's run_clustering scheduled no plan (options {options})")

    def _delta_optimize(self, min_file_size: int, zorder: str):
        from benchmarks.lib.session import conf_set

        with conf_set(self.spark, **{"spark.databricks.delta.optimize.maxFileSize":
                                     self.sizing.target,
                                     "spark.databricks.delta.optimize.minFileSize":
                                     min_file_size}):
            self.spark.sql(f"OPTIMIZE {self.table}"
                           + (f" ZORDER BY ({zorder})" if zorder else "")).collect()

    # -- what the table is -------------------------------------------------------------------
    def paths(self) -> List[str]:
        if self.key == "ours":
            from benchmarks.lib.tables import listing, table_location
            location = table_location(self.spark, self.name)
            return [os.path.join(local_path(location), rel)
                    for rel in listing(self.spark, location)]
        return live_paths(self.spark, self.fmt, self.table, None)

    def state(self, values: Dict[str, list]) -> dict:
        self.spark.catalog.refreshTable(self.table)    # a format's reader caches its listing
        paths = self.paths()
        ranges = footer_ranges(paths, ZORDER)
        queries = {}
        for col, vals in values.items():
            figures = [self._point_query(col, v) for v in vals]
            queries[col] = {
                "minmax": statistics.fmean(sum(1 for r in ranges if _holds(r[col], v))
                                           for v in vals),
                "spark_files": statistics.fmean(f.files or 0 for f in figures),
                "spark_s": statistics.fmean(f.seconds for f in figures),
                "rows": statistics.fmean(f.rows for f in figures)}
        return {"files": {relative(p): os.path.getsize(p) for p in paths},
                "queries": queries, "rows": self.fingerprint()}

    def _point_query(self, col: str, value):
        with self._data_skipping():
            return spark_query(self.spark, f"SELECT * FROM {self.table} WHERE {col} = "
                                           f"{value!r}", QUERY_RUNS)

    def _data_skipping(self):
        """Hudi's reader skips files by its column-stats index only when asked."""
        from benchmarks.lib.session import conf_set
        return conf_set(self.spark, **({"hoodie.enable.data.skipping": "true",
                                         "hoodie.metadata.enable": "true"}
                                        if self.fmt == "hudi" else {}))

    def fingerprint(self) -> dict:
        row = self.spark.sql(f"SELECT count(*), sum(xxhash64({COLS}) % 1000003) "
                             f"FROM {self.table}").first()
        return {"rows": row[0], "hash": int(row[1])}


def footer_ranges(paths: List[str], columns) -> List[Dict[str, tuple]]:
    """Per file, {column: (min, max)} over its row groups, from its Parquet footer."""
    import pyarrow.parquet as pq

    out = []
    for path in paths:
        meta = pq.ParquetFile(path).metadata
        names = [meta.schema.column(i).name for i in range(meta.num_columns)]
        ranges = {}
        for col in columns:
            i = names.index(col)
            stats = [meta.row_group(g).column(i).statistics for g in range(meta.num_row_groups)]
            if any(s is None or not s.has_min_max for s in stats):
                ranges[col] = (None, None)       # no statistics: every query opens it
            else:
                ranges[col] = (min(s.min for s in stats), max(s.max for s in stats))
        out.append(ranges)
    return out


def _holds(bounds, value) -> bool:
    lo, hi = bounds
    return lo is None or lo <= value <= hi


# ----------------------------------------------------------------------------------------
# The tables side by side
# ----------------------------------------------------------------------------------------
STATES = ("loaded", "compaction", "Z-order")


@dataclass
class Shape:
    files: int
    ideal: int
    small: int
    min_kb: float
    median_kb: float
    max_kb: float


def shape(files: Dict[str, int], sizing: Sizing) -> Shape:
    by_part: Dict[str, int] = {}
    for rel, size in files.items():
        by_part[os.path.dirname(rel)] = by_part.get(os.path.dirname(rel), 0) + size
    sizes = sorted(files.values())
    return Shape(len(sizes), sum(max(1, math.ceil(b / sizing.target)) for b in by_part.values()),
                 sum(1 for s in sizes if s < sizing.small_file_limit), sizes[0] / 1000,
                 statistics.median(sizes) / 1000, sizes[-1] / 1000)


def service_rows(results, sizing):
    head = ["method", "state", "s", "files (ideal)", "< small limit", "size min / median / "
            "max kB"] + [f"{c} = v: min/max files / Spark files / Spark s" for c in ZORDER]
    body = []
    for key, res in results.items():
        for state in STATES:
            s = res["states"][state]
            sh = shape(s["files"], sizing)
            wall = res["walls"]["load" if state == "loaded" else state]
            body.append([METHODS[key][0], state, f"{wall:.1f}", f"{sh.files:,} ({sh.ideal:,})",
                         f"{sh.small:,}", f"{sh.min_kb:,.0f} / {sh.median_kb:,.0f} / "
                                          f"{sh.max_kb:,.0f}"]
                        + [_query_cell(s["queries"][c]) for c in ZORDER])
    return head, body


def _query_cell(q):
    return f"{q['minmax']:,.0f} / {q['spark_files']:,.0f} / {q['spark_s']:.2f}"


def goal_lines(results) -> List[str]:
    if "ours" not in results or len(results) < 2:
        return []
    lines = []
    for service in ("compaction", "Z-order"):
        peers = {k: r["walls"][service] for k, r in results.items() if k != "ours"}
        fastest = min(peers, key=lambda k: peers[k])
        ratio = results["ours"]["walls"][service] / peers[fastest]
        lines.append(f"{service}: ours {ratio:.2f}x the fastest peer's wall time "
                     f"({METHODS[fastest][0]}, {peers[fastest]:.1f} s): "
                     f"{'PASS' if ratio <= 1.0 else 'FAIL'} (goal at most 1.0x)")
    # a Z-order is for a point query on any of its columns: the files a query opens, on the
    # mean over the columns (a layout sorted on one column alone prunes that one only)
    after = {k: statistics.fmean(r["states"]["Z-order"]["queries"][c]["minmax"] for c in ZORDER)
             for k, r in results.items()}
    best = min((k for k in after if k != "ours"), key=lambda k: after[k])
    lines.append(f"pruning after Z-order, files a point query on {' or '.join(ZORDER)} opens "
                 f"(mean): ours {after['ours']:,.1f} against the best peer's {after[best]:,.1f} "
                 f"({METHODS[best][0]}): {'PASS' if after['ours'] <= after[best] else 'FAIL'}")
    prints = {json.dumps(s["rows"], sort_keys=True)
              for r in results.values() for s in r["states"].values()}
    lines.append("every method and state holds the same rows: "
                 + ("yes" if len(prints) == 1 else f"NO ({len(prints)} fingerprints)"))
    return lines


def report(args, work, results, argv):
    sizing = sizing_of(args)
    if not results:
        print("no method finished")
        return
    spark_version = next(iter(results.values()))["spark"]
    title = (f"Peer services: {args.rows:,} rows, {args.days} daily partitions, {args.loads} "
             f"loads, target {args.target}, Spark {spark_version}")
    head, body = service_rows(results, sizing)
    notes = [f"small-file limit {sizing.small_file_limit:,} B; ideal = per partition, its "
             f"bytes in the method's own files over the target {sizing.target:,} B, rounded up",
             "s = the load's (all loads) or the service's wall time; files = the live data "
             "files as the format's reader sees them",
             f"point queries: the mean over {args.values} values of rows that exist; min/max "
             "files = files whose footer's [min, max] of the column holds the value (what a "
             "min/max-skipping reader opens); Spark files = files Spark's scan opened (the "
             "format's data skipping applied; plain Parquet: every file, its row groups "
             f"skipped by their statistics); Spark s: median of {QUERY_RUNS} runs",
             f"{engine_state()}."]
    goals = goal_lines(results)
    print_section(title, head, body, notes + goals)
    md = [*md_header(title, command_line("peer_services.py", argv), spark_version),
          md_table(head, body), "", *md_bullets(notes + goals), ""]
    finish_run(work, "peer_services.md", md, args.keep)


if __name__ == "__main__":
    sys.exit(main())
