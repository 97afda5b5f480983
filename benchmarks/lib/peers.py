"""The peers of benchmarks/peers.py on one Spark: how each method's session is configured, how
it writes the backfill and an upsert batch, which files its own reader sees as live, and how
a query reads its table. Each method runs in a Spark process of its own (Hudi's, Iceberg's and
Delta's catalogs all want spark_catalog), on pyspark 3.5 with the format's jars from Maven
Central (python_adapter.cli.jars.fetched_jars, into the user's cache). Nothing here is a
dependency of the engine.

The SQL is what dbt-spark 1.11 generates for an incremental model with `unique_key` and
`incremental_strategy: merge` (first run: `create table ... as`, then `merge into ... using
<model>__dbt_tmp`), with each format's documented sizing settings at the benchmark's target."""
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from benchmarks.lib.data import COLS, SCHEMA

# What pyspark's own jars already hold (Scala, SLF4J, ANTLR, Hive's storage API)
_PROVIDED = ("org.scala-lang:scala-library", "org.slf4j:slf4j-api", "org.antlr:antlr4-runtime",
             "org.apache.hive:hive-storage-api")
# The versions DESIGN.md's "Baselines" checked on pyspark 3.5.9 (Scala 2.12)
HUDI = ("org.apache.hudi", "hudi-spark3.5-bundle_2.12", "1.2.0")
ICEBERG = ("org.apache.iceberg", "iceberg-spark-runtime-3.5_2.12", "1.10.1")
DELTA = ("io.delta", "delta-spark_2.12", "3.3.3")

SESSION_CONF = {
    "hudi": (("spark.serializer", "org.apache.spark.serializer.KryoSerializer"),
             ("spark.sql.extensions", "org.apache.spark.sql.hudi.HoodieSparkSessionExtension"),
             ("spark.sql.catalog.spark_catalog",
              "org.apache.spark.sql.hudi.catalog.HoodieCatalog"),
             ("spark.kryo.registrator", "org.apache.spark.HoodieSparkKryoRegistrar")),
    "iceberg": (("spark.sql.extensions",
                 "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"),
                ("spark.sql.catalog.spark_catalog", "org.apache.iceberg.spark.SparkSessionCatalog"),
                ("spark.sql.catalog.spark_catalog.type", "hive"),
                # on an embedded Derby metastore Iceberg's commits fail with LockException
                ("spark.hadoop.iceberg.engine.hive.lock-enabled", "false")),
    "delta": (("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension"),
              ("spark.sql.catalog.spark_catalog",
               "org.apache.spark.sql.delta.catalog.DeltaCatalog")),
}
ARTIFACTS = {"hudi": HUDI, "iceberg": ICEBERG, "delta": DELTA}


def parse_method_args(ap, argv: Optional[List[str]], methods: Dict[str, tuple],
                      driver_memory: str):
    """The arguments peers.py and peer_services.py share (--methods, --driver-memory, --out,
    --keep, --phases and the child process's hidden ones) added to `ap`, then parsed; an
    unknown method is refused naming the known ones."""
    import argparse

    from benchmarks.lib import DEFAULT_OUT

    ap.add_argument("--methods", default=",".join(methods),
                    help="comma-separated, of " + ", ".join(methods))
    ap.add_argument("--driver-memory", default=driver_memory)
    ap.add_argument("--out", default=DEFAULT_OUT, help="output directory")
    ap.add_argument("--keep", action="store_true", help="keep the tables under <out>/")
    ap.add_argument("--phases", action="store_true",
                    help="print ours' phase lines, each with the seconds since its step began")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)    # a method's process
    ap.add_argument("--work", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    unknown = [m for m in args.methods.split(",") if m not in methods]
    if unknown:
        ap.error(f"--methods: {', '.join(unknown)} unknown; choose from {', '.join(methods)}")
    return args


def run_children(script: str, argv: Optional[List[str]], labels: Dict[str, str],
                 work: str) -> Dict[str, dict]:
    """Run `script` once per method (key: its label), each in a Spark process of its own
    (`--child <key> --work <dir>`, the parent's own arguments passed on), and collect the
    result.json each writes; a method that fails is said and left out."""
    results = {}
    for key, label in labels.items():
        print(f"\n== {label} (its own Spark process) ==", flush=True)
        out = os.path.join(work, key, "result.json")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        given = sys.argv[1:] if argv is None else argv
        done = subprocess.run([sys.executable, script, *given, "--child", key,
                               "--work", os.path.dirname(out)])
        if done.returncode != 0 or not os.path.exists(out):
            print(f"  {key} failed (exit {done.returncode}); left out of the tables", flush=True)
            continue
        with open(out, encoding="utf-8") as fh:
            results[key] = json.load(fh)
    return results


def format_jars(fmt: str) -> List[str]:
    """The format's runtime jars, fetched by Maven into the user's cache on first use."""
    from python_adapter.cli.jars import Artifact, fetched_jars
    from python_adapter.io.fast_local_fs import cache_dir

    group, name, version = ARTIFACTS[fmt]
    folder = os.path.join(cache_dir(os.environ), "jars", "peers", f"{name}-{version}")
    return fetched_jars([Artifact(group, name, version, _PROVIDED)], folder)


def session_conf(fmt: str) -> Tuple[Tuple[str, str], ...]:
    """The Spark settings a session of `fmt` starts with (none for parquet)."""
    if fmt == "parquet":
        return ()
    return (("spark.jars", ",".join(format_jars(fmt))),) + SESSION_CONF[fmt]


@dataclass(frozen=True)
class Sizing:
    """The benchmark's target and small-file limit, in bytes, for every method."""
    target: int
    small_file_limit: int


def hudi_sizing(sizing: Sizing) -> Dict[str, str]:
    """Hudi's file sizing at the target: its max and small-file sizes, and the bloom filter
    every base file's footer carries sized to the rows of a target-sized file (its default,
    60,000 entries, is "calculated for a 120 MB max file size" and weighs ~430 KB: at a small
    target every file would be over the small-file limit by its footer alone)."""
    return {"hoodie.parquet.max.file.size": str(sizing.target),
            "hoodie.parquet.small.file.limit": str(sizing.small_file_limit),
            "hoodie.index.bloom.num_entries": str(max(1000, sizing.target // ROW_BYTES))}


# Bytes of a row of the benchmark's events in Parquet, about (for Hudi's bloom filter)
ROW_BYTES = 32


def table_properties(fmt: str, sizing: Sizing) -> Dict[str, str]:
    """Each format's documented file-sizing settings at the benchmark's target."""
    if fmt == "hudi":
        return {"type": "cow", "primaryKey": "event_id", **hudi_sizing(sizing),
                # a merge's row replaces the stored one, as dbt's `update set *` does
                "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"}
    if fmt == "iceberg":
        # the target caps its rolling writer; the advisory size is what AQE sizes the tasks
        # before it by (by default 128 MB times a compression guess, not the target)
        return {"write.target-file-size-bytes": str(sizing.target),
                "write.spark.advisory-partition-size-bytes": str(sizing.target),
                "write.distribution-mode": "hash", "write.merge.distribution-mode": "hash"}
    if fmt == "delta":
        return {"delta.autoOptimize.optimizeWrite": "true",
                "delta.autoOptimize.autoCompact": "true"}
    return {}


def delta_session_sizing(sizing: Sizing) -> Tuple[Tuple[str, str], ...]:
    """Delta's sizing settings that are session conf, not table properties: the optimized
    write's bin (in MiB: 1 MiB is its smallest; Delta 3.3 has no delta.targetFileSize) and
    auto compaction's file size. Auto compaction runs after a commit that adds files, on the
    partitions whose small files the driver has counted: a fresh driver (each `dbt run`)
    compacts every partition it modifies on its first write; this benchmark's one process
    per method runs every batch in one driver."""
    return (("spark.databricks.delta.optimizeWrite.binSize", "1"),
            ("spark.databricks.delta.autoCompact.maxFileSize", str(sizing.target)))


def _quoted(props: Dict[str, str]) -> str:
    return ", ".join(f"'{k}' = '{v}'" for k, v in props.items())


def create_as_sql(fmt: str, name: str, source: str, sizing: Sizing) -> str:
    """dbt-spark's first run of the incremental model: `create table ... as select`."""
    props = table_properties(fmt, sizing)
    if fmt == "hudi":   # dbt-spark's options_clause: Hudi's table options (primaryKey, ...)
        clause = f"USING hudi OPTIONS ({_quoted(props)}) PARTITIONED BY (event_date)"
    else:
        clause = f"USING {fmt} PARTITIONED BY (event_date)"
        if props:
            clause += f" TBLPROPERTIES ({_quoted(props)})"
    replace = "OR REPLACE " if fmt in ("iceberg", "delta") else ""
    return f"CREATE {replace}TABLE {SCHEMA}.{name} {clause} AS SELECT {COLS} FROM {source}"


def merge_sql(name: str, source: str) -> str:
    """dbt-spark's merge strategy (get_merge_sql) on unique_key event_id."""
    return (f"MERGE INTO {SCHEMA}.{name} AS DBT_INTERNAL_DEST "
            f"USING {source} AS DBT_INTERNAL_SOURCE "
            f"ON DBT_INTERNAL_SOURCE.event_id = DBT_INTERNAL_DEST.event_id "
            f"WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")


def hudi_writer_options(name: str, sizing: Sizing, operation: str) -> Dict[str, str]:
    """Hudi's own DataFrame writer, as its docs' quick start calls it, at the target."""
    return {"hoodie.table.name": name,
            "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
            "hoodie.datasource.write.operation": operation,
            "hoodie.datasource.write.recordkey.field": "event_id",
            "hoodie.datasource.write.partitionpath.field": "event_date",
            "hoodie.datasource.write.hive_style_partitioning": "true",
            "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING", **hudi_sizing(sizing)}


# ----------------------------------------------------------------------------------------
# What a format's reader sees
# ----------------------------------------------------------------------------------------
def relative(path: str) -> str:
    """A data file's path from its partition directory on (`event_date=.../name.parquet`):
    Iceberg keeps its data under data/, the others at the table's root."""
    local = path[len("file:"):] if path.startswith("file:") else path
    at = local.find("event_date=")
    return local[at:] if at >= 0 else os.path.basename(local)


def local_path(path: str) -> str:
    from urllib.parse import unquote, urlparse
    return unquote(urlparse(path).path) if path.startswith("file:") else path


def live_paths(spark, fmt: str, table: str, location: Optional[str]) -> List[str]:
    """The local paths of the files the format's reader reads for the table's current state
    (Iceberg: its `files` metadata table; the others: the files a scan of the current
    snapshot lists; `hudi-writer`: Hudi's table at `location`, not in the metastore)."""
    if fmt == "iceberg":
        return [local_path(r[0]) for r in
                spark.sql(f"SELECT file_path FROM {table}.files").collect()]
    frame = (spark.read.format("hudi").load(location) if fmt == "hudi-writer"
             else spark.table(table))
    return [local_path(p) for p in frame.inputFiles()]


def live_files(spark, fmt: str, table: str, location: Optional[str]) -> Dict[str, int]:
    """{`event_date=.../file`: bytes} of live_paths."""
    return {relative(p): os.path.getsize(p) for p in live_paths(spark, fmt, table, location)}


@dataclass
class ScanFigures:
    """One query's run: its seconds (median of `runs`), files read, rows returned."""
    seconds: float
    files: Optional[int]
    rows: int
    times: List[float] = field(default_factory=list)


def timed(run: Callable[[], list], runs: int) -> Tuple[float, List[float], list]:
    """The median of `runs` timed calls (after one untimed call that warms caches alike)."""
    result = run()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2], times, result


def spark_files_read(df) -> Optional[int]:
    """The data files a collected query's scans read, from their metrics: a file source's
    `numFiles` (parquet, Hudi, Delta) or Iceberg's `resultDataFiles`."""
    total, seen = 0, False
    for node in _plan_nodes(df._jdf.queryExecution().executedPlan()):
        metrics = node.metrics()
        for key in ("numFiles", "resultDataFiles"):
            if metrics.contains(key):
                total += int(metrics.apply(key).value())
                seen = True
    return total if seen else None


def _plan_nodes(node):
    """Every node of a physical plan, through adaptive plans, query stages and reused
    exchanges."""
    name = node.getClass().getSimpleName()
    if name == "AdaptiveSparkPlanExec":
        yield from _plan_nodes(node.executedPlan())
        return
    if name.endswith("QueryStageExec"):
        yield from _plan_nodes(node.plan())
        return
    yield node
    children = node.children()
    for i in range(children.size()):
        yield from _plan_nodes(children.apply(i))


def spark_query(spark, sql: str, runs: int) -> ScanFigures:
    """`sql` through Spark (the metastore's table, or a path read registered as a view)."""
    holder = {}

    def run():
        df = spark.sql(sql)
        holder["df"] = df
        return df.collect()

    seconds, times, rows = timed(run, runs)
    return ScanFigures(seconds, spark_files_read(holder["df"]), len(rows), times)


def duckdb_query(source: str, where_sql: str, select: str, runs: int) -> ScanFigures:
    """The query through DuckDB on `source` (a read_parquet(...) over the table's files),
    files read from its profile's `Total Files Read`."""
    import json

    import duckdb

    con = duckdb.connect()
    sql = f"SELECT {select} FROM {source} {where_sql}"
    seconds, times, rows = timed(lambda: con.sql(sql).fetchall(), runs)
    con.sql("PRAGMA enable_profiling = 'json'")
    profile = json.loads(con.sql(f"EXPLAIN ANALYZE {sql}").fetchall()[0][1])
    files = _duckdb_files_read(profile)
    con.close()
    return ScanFigures(seconds, files, len(rows), times)


def _duckdb_files_read(profile) -> Optional[int]:
    total, seen = 0, False
    stack = list(profile.get("operator", [])) + list(profile.get("children", []))
    while stack:
        op = stack.pop()
        read = (op.get("extra_info") or {}).get("Total Files Read")
        if read is not None:
            total += int(read)
            seen = True
        stack.extend(op.get("children", []))
    return total if seen else None
