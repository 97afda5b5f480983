#!/usr/bin/env python
"""Scale benchmark (issue 5): ours at 1x/10x rows, 365/3650 partitions, embedded/cluster.

How wall time and driver memory grow with the rows and with the number of daily partitions,
on the embedded session (local[2]) and on the local standalone cluster, and what bounds them.

    python benchmarks/scale.py [--rows 3000000] [--scales 1,10] [--partitions 365,3650]
                               [--modes embedded,cluster] [--batches 3] [--target 1MB]

Engine under test: ours only (python_adapter.api.write_dataframe with parse_config), called
as backfill.py and upsert.py call it. Per configuration (mode x rows x partitions), each in its
own Python process and driver JVM (fresh heap, one SparkContext per process):
  backfill   full refresh of the generated table (backfill.py's generator with the number of
             daily partitions as a parameter), config = upsert.py's (lib.tables.upsert_config: unique_key
             event_id, strategy upsert, distribution exact, target_file_size --target): the
             first run of an upsert model, the table the upsert phase continues on
  upsert     --batches incremental batches built as upsert.py builds them (2% new rows on the
             next day and the 7 days before it, 1% updates over 30 random older days)
Per phase: wall time, driver JVM heap (MemoryPoolMXBean peaks over the heap pools, reset after
full GCs before the phase), driver JVM and Python RSS (sampled from /proc), files, rows,
bytes. Prints one table per mode, the growth ratios along both axes and a "what bounds it" note
fitted from the figures; writes <out>/scale.md and <out>/scale.json. Nothing is asserted.
See benchmarks/README.md.
"""
import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks.lib import DEFAULT_OUT  # noqa: E402
from benchmarks.lib.data import (FIRST_NEW_DAY, MONTHLY_GROWTH, SCHEMA,  # noqa: E402
                                 SOURCE_VIEW, BatchOptions, batch_plan)
from benchmarks.lib.report import (Run, engine_state, md_bullets, md_header,  # noqa: E402
                                   md_table, print_notes, start_run, text_table, write_lines)
from benchmarks.lib.session import Cluster, free_port, start_spark  # noqa: E402
from benchmarks.lib.tables import (drop_engine_cache, first_week_view, listing,  # noqa: E402
                                   materialize_batches, materialize_source, measure_batch,
                                   rows_by_date, table_location, upsert_config)
from python_adapter.api import TableRef, write_dataframe  # noqa: E402
from python_adapter.core.sizes import parse_size  # noqa: E402

TABLE = "up_ours"                          # bench.up_ours (upsert.py's): backfilled, then upserted
# upsert.py's defaults for the batches (its command-line defaults; see its --help).
UPSERT_DEFAULTS = BatchOptions()
MB = 1024 * 1024


# ----------------------------------------------------------------------------------------
# Data: backfill.py's generator with the number of daily partitions as a parameter
# ----------------------------------------------------------------------------------------
def start_date(days):
    """The backfill always ends the day before upsert.py's FIRST_NEW_DAY (2026-01-01), so the
    batches add new days after it whatever the number of partitions; 365 days start on
    2025-01-01 = data.START."""
    return FIRST_NEW_DAY - timedelta(days=days)


def source_over(spark, rows, input_partitions, days):
    """tables.materialize_source over `days` dates ending 2025-12-31 (identical rows to
    backfill.py's for days = 365); returns its figures."""
    _src, figures = materialize_source(spark, rows, input_partitions, days=days,
                                       start=start_date(days))
    return figures


# ----------------------------------------------------------------------------------------
# Driver memory and time of one phase
# ----------------------------------------------------------------------------------------
def _rss(pid):
    """Resident set size of a process in bytes (/proc), None if unreadable."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


class Probe:
    """Per phase: wall time; the driver JVM's heap (sum over the heap pools of their peak
    usage, and the old generation's peak alone, after collect() + resetPeakUsage() at the
    start); the driver JVM's and this Python process's RSS, sampled every 50 ms by a thread
    that only reads /proc (no py4j calls from it)."""

    def __init__(self, spark):
        jvm = spark.sparkContext._jvm
        self.jvm = jvm
        mf = jvm.java.lang.management.ManagementFactory
        self.heap_bean = mf.getMemoryMXBean()
        self.pools = [p for p in mf.getMemoryPoolMXBeans() if p.getType().name() == "HEAP"]
        self.pool_names = [p.getName() for p in self.pools]
        self.old = [p for p in self.pools
                    if "old" in p.getName().lower() or "tenured" in p.getName().lower()]
        self.jvm_pid = int(jvm.java.lang.ProcessHandle.current().pid())
        self.py_pid = os.getpid()
        self.gc = self.heap_bean.gc
        self.max_heap = self.heap_bean.getHeapMemoryUsage().getMax()
        self._peaks = {"jvm": 0, "py": 0}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self):
        while not self._stop.is_set():
            j, p = _rss(self.jvm_pid), _rss(self.py_pid)
            with self._lock:
                self._peaks["jvm"] = max(self._peaks["jvm"], j or 0)
                self._peaks["py"] = max(self._peaks["py"], p or 0)
            self._stop.wait(0.05)

    def close(self):
        self._stop.set()
        self._thread.join(timeout=2)

    def _heap_used(self):
        return self.heap_bean.getHeapMemoryUsage().getUsed()

    def collect(self):
        """Full GC, a pause for Spark's ContextCleaner to drop what the GC released
        (broadcasts, shuffles, blocks of dropped caches), and a second full GC."""
        self.gc()
        time.sleep(1.0)
        self.gc()

    def start(self):
        self.collect()
        for p in self.pools:
            p.resetPeakUsage()
        self.heap_start = self._heap_used()
        self.py_start = _rss(self.py_pid) or 0
        self.jvm_start = _rss(self.jvm_pid) or 0
        self.maxrss_start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        with self._lock:
            self._peaks = {"jvm": self.jvm_start, "py": self.py_start}
        self.t0 = time.perf_counter()

    def stop(self):
        wall = time.perf_counter() - self.t0
        heap_peak = sum(p.getPeakUsage().getUsed() for p in self.pools)
        old_peak = sum(p.getPeakUsage().getUsed() for p in self.old)
        with self._lock:
            peaks = dict(self._peaks)
        j, p = _rss(self.jvm_pid) or 0, _rss(self.py_pid) or 0
        self.collect()
        return {
            "wall": wall,
            "heap_start": self.heap_start, "heap_peak": heap_peak, "old_peak": old_peak,
            "heap_after": self._heap_used(),
            "jvm_rss_start": self.jvm_start, "jvm_rss_peak": max(peaks["jvm"], j),
            "py_rss_start": self.py_start, "py_rss_peak": max(peaks["py"], p),
            "py_maxrss_growth": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            - self.maxrss_start,
        }



# ----------------------------------------------------------------------------------------
# One configuration (runs in a child process)
# ----------------------------------------------------------------------------------------
def start_session(spec):
    """A private session (lib.session.start_spark) with master = local[2] (embedded) or the
    standalone cluster's spark://127.0.0.1:PORT; the warehouse as a file:// URI (executors of
    the cluster share this machine's disk), Derby metastore under the work directory."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    conf = ()
    if spec["mode"] == "cluster":
        conf = (("spark.executor.memory", spec["executor_memory"]), ("spark.cores.max", "2"))
    # embedded: the local filesystem a dbt profile's embedded session gets
    return start_spark(spec["work"], spec["driver_memory"], master=spec["master"],
                       app_name=f"sized-scale-benchmark-{spec['mode']}", warehouse_uri=True,
                       conf=conf)


def warm_up(spark, cfg, days):
    """Untimed: one small full refresh and one small upsert through the engine (JIT, class
    loading, metastore), so the first timed phase of a fresh JVM does not pay for them."""
    first_week_view(spark, start_date(days))
    spark.sql("CREATE OR REPLACE TEMP VIEW warmup_batch AS SELECT event_id, user_id, "
              "session_id, event_type, amount + 1 AS amount, payload, event_date "
              "FROM warmup_src LIMIT 100")
    ref = TableRef(SCHEMA, "warmup_ours")
    write_dataframe(spark, spark.table("warmup_src"), ref, cfg, full_refresh=True,
                    log=lambda m: None)
    drop_engine_cache(spark, "warmup_src")
    write_dataframe(spark, spark.table("warmup_batch"), ref, cfg, full_refresh=False,
                    log=lambda m: None)
    spark.sql(f"DROP TABLE IF EXISTS {SCHEMA}.warmup_ours")


@dataclass
class Child:
    """One configuration's session, probe, config, logs and figures (res, the result)."""
    spec: dict
    spark: Any
    probe: Any
    cfg: Any
    say: Callable[[str], None]
    elog: Callable[[str], None]
    res: dict


def source_phase(c):
    """Generating the rows and checkpointing them (setup, measured); returns the source's
    figures and rows per date."""
    c.say("materializing the source (generate, write bench.source, checkpoint) ...")
    c.probe.start()
    src = source_over(c.spark, c.spec["rows"], c.spec["input_partitions"], c.spec["days"])
    m = c.probe.stop()
    by_date = rows_by_date(c.spark)
    m.update(rows=src["rows"], bytes=src["bytes"], files_written=src["files"],
             table_files=src["files"], partitions=len(by_date))
    c.res["phases"]["source"] = m
    c.say(f"source: {src['rows']:,} rows, {src['bytes'] / 1e6:,.1f} MB, {len(by_date)} "
          f"days, {src['splits']} splits ({m['wall']:.1f}s)")
    return src, by_date


def write_batches(c, src, by_date):
    """upsert.py's batches over this source, written once (untimed)."""
    c.say("writing the batches once (untimed) ...")
    t0 = time.perf_counter()
    shape = BatchOptions(batches=c.spec["batches"])
    plans = batch_plan(shape, src["rows"], sorted(by_date))
    batches = materialize_batches(c.spark, shape, plans, src["rows"], by_date,
                                  c.spec["input_partitions"])
    c.say(f"{len(batches)} batches of ~{batches[0]['rows']:,} rows ({batches[0]['new']:,} new, "
          f"{batches[0]['updates']:,} updates, {len(batches[0]['touched'])} partitions "
          f"touched) ({time.perf_counter() - t0:.1f}s)")
    return batches


def backfill_phase(c):
    """The full refresh, measured; returns the table's location and rows."""
    c.say("backfill: full refresh ...")
    spark, cfg = c.spark, c.cfg
    spark.sql(f"DROP TABLE IF EXISTS {SCHEMA}.{TABLE}")
    c.probe.start()
    wr = write_dataframe(spark, spark.table(SOURCE_VIEW), TableRef(SCHEMA, TABLE), cfg,
                         full_refresh=True, log=c.elog)
    m = c.probe.stop()
    drop_engine_cache(spark, SOURCE_VIEW)
    location = table_location(spark, TABLE)
    files = listing(spark, location)
    m.update(rows=wr.rows, bytes=sum(files.values()), files_written=wr.files_written,
             table_files=len(files), partitions=len({os.path.dirname(f) for f in files}),
             small=sum(1 for s in files.values() if s < cfg.small_file_limit))
    c.res["phases"]["backfill"] = m
    c.say(f"backfill: {len(files):,} files, {m['bytes'] / 1e6:,.1f} MB, {wr.rows:,} rows in "
          f"{m['wall']:.1f}s; heap peak {m['heap_peak'] / MB:,.0f} MB")
    return location, wr.rows


def upsert_phase(c, info, location, table_rows):
    """One batch's upsert, measured, appended to the result's batches."""
    spark, cfg = c.spark, c.cfg
    before = listing(spark, location)
    c.probe.start()
    write_dataframe(spark, spark.table(info["table"]), TableRef(SCHEMA, TABLE), cfg,
                    full_refresh=False, log=c.elog)
    m = c.probe.stop()
    after = listing(spark, location)
    mb = measure_batch(before, after, info["touched"], cfg.small_file_limit)
    m.update(batch=info["batch"], rows=info["rows"], new=info["new"],
             updates=info["updates"], table_rows_before=table_rows,
             table_files_before=len(before), table_files=mb["files"],
             files_written=mb["written"], files_removed=mb["removed"],
             bytes=mb["bytes_written"], bytes_ingested=info["bytes"],
             touched=len(info["touched"]), small=mb["small"],
             changed_untouched=mb["changed_untouched"])
    c.res["batches"].append(m)
    c.say(f"upsert batch {info['batch']}/{c.spec['batches']}: {info['rows']:,} rows "
          f"({info['new']:,} new, {info['updates']:,} updates), {mb['written']} files "
          f"written, {mb['removed']} replaced, table {mb['files']:,} files, "
          f"{m['wall']:.1f}s; heap peak {m['heap_peak'] / MB:,.0f} MB")


def check_table(c, table_rows):
    """The table holds every row, each key once."""
    count = c.spark.table(f"{SCHEMA}.{TABLE}").count()
    distinct = c.spark.table(f"{SCHEMA}.{TABLE}").select("event_id").distinct().count()
    c.res["check"] = {"expected": table_rows, "rows": count, "distinct": distinct}
    c.say(f"check: {count:,} rows, {distinct:,} distinct keys, expected {table_rows:,}")


def run_phases(c):
    """Source, batches, warm-up, backfill, the upserts and the check, in this session."""
    spark, res = c.spark, c.res
    res["spark_version"] = spark.version
    res["master"] = spark.sparkContext.master
    res["default_parallelism"] = spark.sparkContext.defaultParallelism
    c.probe = Probe(spark)
    res["heap_max"] = c.probe.max_heap
    res["heap_pools"] = c.probe.pool_names

    src, by_date = source_phase(c)
    batches = write_batches(c, src, by_date)
    c.say("warm-up (untimed) ...")
    t0 = time.perf_counter()
    warm_up(spark, c.cfg, c.spec["days"])
    c.say(f"warm-up done ({time.perf_counter() - t0:.1f}s)")
    location, table_rows = backfill_phase(c)
    for info in batches:
        upsert_phase(c, info, location, table_rows)
        table_rows += info["new"]
    check_table(c, table_rows)


def run_config(spec):
    """Child process: one (mode, rows, days) configuration; returns its figures."""
    mode, rows, days = spec["mode"], spec["rows"], spec["days"]
    os.makedirs(spec["work"], exist_ok=True)
    label = f"[{mode} {rows:,} rows {days} partitions]"
    say = lambda m: print(f"  {label} {m}", flush=True)  # noqa: E731
    elog = (lambda m: print(f"      {m}", flush=True)) if spec["verbose"] else (lambda m: None)
    cfg = upsert_config(spec["target"])
    res = {"mode": mode, "rows": rows, "days": days, "scale": spec["scale"],
           "target": cfg.target_file_size, "small_limit": cfg.small_file_limit, "phases": {},
           "batches": [], "engine": engine_state()}  # the code this process imported
    t_start = time.perf_counter()
    c = Child(spec, start_session(spec), None, cfg, say, elog, res)
    try:
        run_phases(c)
    finally:
        if c.probe is not None:
            c.probe.close()
        c.spark.stop()
    res["total"] = time.perf_counter() - t_start
    return res


def child_main(spec_json):
    spec = json.loads(spec_json)
    res = run_config(spec)
    with open(spec["result"], "w") as fh:
        json.dump(res, fh)
    if not spec["keep"]:
        shutil.rmtree(spec["work"], ignore_errors=True)
    return 0


# ----------------------------------------------------------------------------------------
# The parent: the cluster, one child per configuration
# ----------------------------------------------------------------------------------------
def run_child(spec, timeout):
    """Run one configuration in a child process (its own session and driver JVM, in its own
    process group so a timeout or Ctrl-C stops it and its JVM, and nothing else)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)]
    proc = subprocess.Popen(cmd, start_new_session=True)
    try:
        rc = proc.wait(timeout=timeout or None)
    except subprocess.TimeoutExpired:
        print(f"  timeout after {timeout}s: stopping the configuration (pid {proc.pid})",
              flush=True)
        _kill_group(proc)
        return None, f"timeout after {timeout}s"
    except BaseException:
        _kill_group(proc)
        raise
    if rc != 0 or not os.path.exists(spec["result"]):
        return None, f"failed (exit code {rc})"
    with open(spec["result"]) as fh:
        return json.load(fh), None


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


# ----------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------
def upsert_summary(res):
    """The batches as one phase: mean wall per batch, peaks = max over batches."""
    bs = res["batches"]
    if not bs:
        return None
    return {
        "wall": sum(b["wall"] for b in bs) / len(bs),
        "wall_min": min(b["wall"] for b in bs), "wall_max": max(b["wall"] for b in bs),
        "heap_start": bs[0]["heap_start"],
        "heap_peak": max(b["heap_peak"] for b in bs), "old_peak": max(b["old_peak"] for b in bs),
        "heap_after": bs[-1]["heap_after"],
        "jvm_rss_peak": max(b["jvm_rss_peak"] for b in bs),
        "py_rss_start": bs[0]["py_rss_start"], "py_rss_peak": max(b["py_rss_peak"] for b in bs),
        "py_growth": max(b["py_rss_peak"] - b["py_rss_start"] for b in bs),
        "rows": bs[0]["table_rows_before"], "batch_rows": sum(b["rows"] for b in bs) / len(bs),
        "files_written": sum(b["files_written"] for b in bs),
        "table_files": bs[-1]["table_files"], "files": bs[0]["table_files_before"],
        "bytes": sum(b["bytes"] for b in bs),
    }


def phase_figures(res, phase):
    if phase == "upsert":
        return upsert_summary(res)
    m = dict(res["phases"].get(phase) or {})
    if not m:
        return None
    m["py_growth"] = m["py_rss_peak"] - m["py_rss_start"]
    m["files"] = m["table_files"]       # the file count the phase's model uses
    return m


PHASES = [("source", "source (setup, not the engine)"), ("backfill", "backfill (full refresh)"),
          ("upsert", "upsert (mean per batch)")]


def mb(nbytes):
    """Bytes as whole MB (MiB) with thousands separators."""
    return f"{nbytes / MB:,.0f}"


def mode_table(results, mode):
    head = ["rows", "partitions", "phase", "wall s", "files written", "table files",
            "heap start MB", "heap peak MB", "old gen peak MB", "heap after MB",
            "JVM RSS peak MB", "python RSS MB (+peak growth)"]
    body = []
    for r in results:
        if r["mode"] != mode:
            continue
        if r.get("error"):
            body.append([f"{r['rows']:,}", str(r["days"]), r["error"]] + ["-"] * (len(head) - 3))
            continue
        for phase, label in PHASES:
            m = phase_figures(r, phase)
            if m is None:
                continue
            wall = f"{m['wall']:.1f}"
            if phase == "upsert":
                wall += f" ({m['wall_min']:.1f}-{m['wall_max']:.1f})"
            body.append([f"{m['rows']:,}", str(r["days"]), label, wall,
                         f"{m['files_written']:,}", f"{m['table_files']:,}",
                         *[mb(m[k]) for k in ("heap_start", "heap_peak", "old_peak",
                                              "heap_after", "jvm_rss_peak")],
                         f"{mb(m['py_rss_peak'])} (+{mb(m['py_growth'])})"])
    return head, body


def batch_table(results, mode):
    head = ["rows", "partitions", "batch", "batch rows", "touched", "wall s", "files written",
            "files replaced", "table files", "heap peak MB", "old gen peak MB",
            "python RSS +MB"]
    body = []
    for r in results:
        if r["mode"] != mode or r.get("error"):
            continue
        for b in r["batches"]:
            body.append([f"{b['table_rows_before']:,}", str(r["days"]), str(b["batch"]),
                         f"{b['rows']:,}", str(b["touched"]), f"{b['wall']:.1f}",
                         *[f"{b[k]:,}" for k in ("files_written", "files_removed",
                                                 "table_files")],
                         mb(b["heap_peak"]), mb(b["old_peak"]),
                         mb(b["py_rss_peak"] - b["py_rss_start"])])
    return head, body


def _ratio(a, b):
    return f"{a / b:.2f}x" if b else "-"


def growth_table(results, modes, scales, partitions):
    """Largest vs smallest scale at each partition count; most vs fewest partitions at each
    scale (the first and last of the lists as given)."""
    by = {(r["mode"], r["scale"], r["days"]): r for r in results if not r.get("error")}
    head = ["mode", "phase", "axis", "at", "rows", "files", "wall", "heap peak", "old gen peak",
            "JVM RSS peak", "python RSS peak"]
    body = []
    axes = []
    if len(scales) > 1:
        axes += [("rows", (scales[0], p), (scales[-1], p), f"{p} partitions") for p in partitions]
    if len(partitions) > 1:
        axes += [("partitions", (s, partitions[0]), (s, partitions[-1]), f"x{s:g} rows")
                 for s in scales]
    for mode in modes:
        for phase, _ in PHASES[1:]:
            for axis, lo, hi, at in axes:
                a, b = by.get((mode, *lo)), by.get((mode, *hi))
                if not a or not b:
                    continue
                ma, mb = phase_figures(a, phase), phase_figures(b, phase)
                if not ma or not mb:
                    continue
                name = (f"rows x{hi[0] / lo[0]:g}" if axis == "rows"
                        else f"partitions {lo[1]} -> {hi[1]}")
                body.append([mode, phase, name, at, _ratio(mb["rows"], ma["rows"]),
                             _ratio(mb["files"], ma["files"]), _ratio(mb["wall"], ma["wall"]),
                             _ratio(mb["heap_peak"], ma["heap_peak"]),
                             _ratio(mb["old_peak"], ma["old_peak"]),
                             _ratio(mb["jvm_rss_peak"], ma["jvm_rss_peak"]),
                             _ratio(mb["py_rss_peak"], ma["py_rss_peak"])])
    return head, body


def fit(points, key):
    """value = fixed + per_file * files + per_row * rows from three configurations: base
    (s0, p0), more partitions (s0, p1: same rows, more files -> per_file) and more rows
    (s1, p0: per_row after the per-file part of its extra files); checked on (s1, p1)."""
    base, more_p, more_r, both = points
    f0, r0, v0 = base["files"], base["rows"], base[key]
    df_p = more_p["files"] - f0
    per_file = (more_p[key] - v0) / df_p if df_p else 0.0
    dr = more_r["rows"] - r0
    per_row = ((more_r[key] - v0 - per_file * (more_r["files"] - f0)) / dr) if dr else 0.0
    fixed = v0 - per_file * f0 - per_row * r0
    out = {"fixed": fixed, "per_file": per_file, "per_row": per_row}
    if both is not None:
        out["predicted"] = fixed + per_file * both["files"] + per_row * both["rows"]
        out["measured"] = both[key]
        big = both
    else:
        big = more_r
    parts = {"per-file": per_file * big["files"], "per-row": per_row * big["rows"],
             "fixed": fixed}
    total = sum(max(v, 0.0) for v in parts.values()) or 1.0
    out["shares"] = {k: max(v, 0.0) / total for k, v in parts.items()}
    out["at"] = big
    return out


def _terms(fit_, unit_scale, units):
    """'a + b/file + c/row' with signs, e.g. '12.0 s + 8.1 ms/file - 0.3 s/M rows'."""
    parts = [f"{fit_['fixed'] * unit_scale[0]:,.1f} {units[0]}"]
    for key, k, u in (("per_file", 1, 1), ("per_row", 2, 2)):
        v = fit_[key] * unit_scale[k]
        parts.append(f"{'-' if v < 0 else '+'} {abs(v):,.{2 if k == 2 else 1}f} {units[u]}")
    return " ".join(parts)


def _fit_quality(fit_):
    notes = []
    if fit_["per_file"] < 0 or fit_["per_row"] < 0:
        notes.append("a negative term is noise: that axis changed nothing measurable")
    if "predicted" in fit_ and fit_["measured"]:
        err = fit_["predicted"] / fit_["measured"] - 1
        if abs(err) > 0.25:
            notes.append(f"the additive model misses the fourth configuration by {100 * err:+.0f}%"
                         f" (noise, or the two axes interact)")
    return f" [{'; '.join(notes)}]" if notes else ""


def bound_notes(results, modes, scales, partitions):
    """Fit wall time and driver heap peak per (mode, phase) as fixed + per-file + per-row and
    say which term dominates at the largest configuration."""
    if len(scales) < 2 or len(partitions) < 2:
        return ["(the fit needs two scales and two partition counts)"]
    s0, s1, p0, p1 = scales[0], scales[-1], partitions[0], partitions[-1]
    by = {(r["mode"], r["scale"], r["days"]): r for r in results if not r.get("error")}
    what = {"per-file": "per-file / per-partition work (a task per planned file, staged-file "
                        "footer reads, renames at publish, timeline and metastore partition "
                        "entries; mostly serial on the driver)",
            "per-row": "per-row work (reading, shuffling, encoding rows: on the executors, "
                       "parallel over the cores)",
            "fixed": "the fixed cost of a write (jobs, metastore calls, commit protocol)"}
    notes = []
    for mode in modes:
        for phase, _ in PHASES[1:]:
            cfgs = [by.get((mode, s0, p0)), by.get((mode, s0, p1)), by.get((mode, s1, p0)),
                    by.get((mode, s1, p1))]
            pts = [phase_figures(c, phase) if c else None for c in cfgs]
            if any(p is None for p in pts[:3]):
                notes.append(f"{mode}, {phase}: not enough configurations completed to fit")
                continue
            w = fit(pts, "wall")
            h = fit(pts, "heap_peak")
            big = w["at"]
            where = f"{big['rows']:,} rows / {big['files']:,} files"
            check = (f"; predicts {w['predicted']:.1f}s at x{s1:g} rows / {p1} partitions, "
                     f"measured {w['measured']:.1f}s" if "predicted" in w else "")
            dom = max(w["shares"], key=w["shares"].get)
            shares = ", ".join(f"{k} {100 * v:.0f}%" for k, v in w["shares"].items())
            notes.append(
                f"{mode}, {phase}: wall ~ {_terms(w, (1, 1000, 1e6), ('s', 'ms/file', 's/M rows'))}"
                f"{check}. At {where}: {shares} -> bounded by {what[dom]}.{_fit_quality(w)}")
            hdom = max(h["shares"], key=h["shares"].get)
            hcheck = (f" (predicts {h['predicted'] / MB:,.0f} MB, measured "
                      f"{h['measured'] / MB:,.0f} MB)" if "predicted" in h else "")
            hshares = ", ".join(f"{k} {100 * v:.0f}%" for k, v in h["shares"].items())
            hwhat = {"per-row": "grows with the rows (data held in the driver JVM)",
                     "per-file": "grows with the files / partitions the driver tracks",
                     "fixed": "mostly the JVM's fixed footprint and GC sizing at these sizes"}
            after = [p for p in pts if p is not None]
            notes.append(
                f"{mode}, {phase}: driver heap peak ~ "
                f"{_terms(h, (1 / MB, 1000 / MB, 1e6 / MB), ('MB', 'MB/1000 files', 'MB/M rows'))}"
                f"{hcheck}; at {where}: {hshares} -> {hwhat[hdom]}; live heap after the phase "
                f"{min(p['heap_after'] for p in after) / MB:,.0f}-"
                f"{max(p['heap_after'] for p in after) / MB:,.0f} MB over the configurations."
                f"{_fit_quality(h)}")
    if "embedded" in modes and "cluster" in modes:
        for phase, _ in PHASES[1:]:
            e, c = by.get(("embedded", s1, p1)), by.get(("cluster", s1, p1))
            me = phase_figures(e, phase) if e else None
            mc = phase_figures(c, phase) if c else None
            if me and mc:
                notes.append(
                    f"{phase} at x{s1:g} rows / {p1} partitions: driver heap peak embedded "
                    f"{me['heap_peak'] / MB:,.0f} MB vs cluster {mc['heap_peak'] / MB:,.0f} MB, "
                    f"wall {me['wall']:.1f}s vs {mc['wall']:.1f}s.")
    return notes


def mode_notes(results, modes):
    """Embedded vs cluster: where the rows live."""
    out = []
    if "embedded" in modes:
        out.append("embedded (local[2]): the executors are threads of the driver JVM, so its "
                   "heap also holds the block manager (the checkpointed source, the engine's "
                   "persisted input, shuffle buffers): what the rows cost the driver shows here.")
    if "cluster" in modes:
        out.append("cluster (standalone, 2 workers x 1 core): the rows live in the executor "
                   "JVMs; the driver heap holds plans, task results, file listings and the "
                   "engine's per-file state (staged-file entries, timeline, partition specs).")
    return out



# ----------------------------------------------------------------------------------------
# The parent: parse, one child per configuration, report
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Axes:
    """What a run varies: modes, row multipliers, daily partitions; and the target."""
    modes: list
    scales: list
    partitions: list
    target: int


@dataclass
class Runs:
    """The configurations' results and where they came from."""
    results: list
    axes: Axes
    version: str                # the engine's code (engine_state), or one per configuration
    work: Run                   # out, the work directory (None when merged), started

    @property
    def elapsed(self):
        """Seconds per configuration, setup and measuring included."""
        return " ".join(f"{r['mode']}/x{r['scale']:g}/p{r['days']} {r.get('elapsed', 0):.0f}s"
                        for r in self.results)


def parser():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=3_000_000,
                    help="rows of the table at scale 1 (3000000 = backfill.py's default)")
    ap.add_argument("--scales", default="1,10", help="row multipliers (1,10)")
    ap.add_argument("--partitions", default="365,3650",
                    help="daily partitions of the table (365,3650)")
    ap.add_argument("--modes", default="embedded,cluster", help="embedded, cluster or both")
    ap.add_argument("--batches", type=int, default=3, help="upsert batches per configuration (3)")
    ap.add_argument("--target", default="1MB", help="target file size (1MB = 1,000,000 B)")
    ap.add_argument("--input-partitions", type=int, default=16,
                    help="files of the source table, as in backfill.py (16)")
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--executor-memory", default="1g",
                    help="cluster mode: memory of each of the two executors (1g; workers offer 2g)")
    ap.add_argument("--config-timeout", type=int, default=0,
                    help="seconds after which a configuration is stopped and reported as such "
                         "(0 = none)")
    ap.add_argument("--out", default=DEFAULT_OUT, help="output directory")
    ap.add_argument("--verbose", action="store_true", help="print the engine's progress log")
    ap.add_argument("--keep", action="store_true",
                    help="keep the work directory <out>/scale-XXXX/ (deleted by default)")
    ap.add_argument("--merge", nargs="+", metavar="SCALE_JSON",
                    help="no run: one report from the scale.json of earlier runs (for example "
                         "one run per partition count), written to --out")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    return ap


def parse_axes(ap, args):
    """The axes of --scales, --partitions and --modes (ap.error on a bad value)."""
    scales = [float(x) for x in args.scales.split(",") if x.strip()]
    scales = [int(s) if s == int(s) else s for s in scales]
    partitions = [int(x) for x in args.partitions.split(",") if x.strip()]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad = [m for m in modes if m not in ("embedded", "cluster")]
    if bad or not modes:
        ap.error(f"--modes: embedded and/or cluster, not {bad}")
    recent = UPSERT_DEFAULTS.recent_days
    if min(partitions) < recent + 2:
        ap.error(f"--partitions: at least {recent + 2} (the batches "
                 f"need the {recent} recent days and older ones)")
    return Axes(modes, scales, partitions, parse_size(args.target, "--target"))


def run_one(args, mode, master, scale, days, work):
    """One configuration in its child process; its figures, or its error."""
    rows = int(round(args.rows * scale))
    name = f"{mode}-x{scale}-p{days}"
    print(f"\n{mode}: {rows:,} rows (x{scale}), {days} partitions ...", flush=True)
    spec = {"mode": mode, "master": master, "rows": rows, "scale": scale,
            "days": days, "batches": args.batches, "target": args.target,
            "input_partitions": args.input_partitions,
            "driver_memory": args.driver_memory,
            "executor_memory": args.executor_memory,
            "verbose": args.verbose,
            "keep": args.keep, "work": os.path.join(work.tmp, name),
            "result": os.path.join(work.tmp, name + ".json")}
    t0 = time.perf_counter()
    res, err = run_child(spec, args.config_timeout)
    if res is None:
        res = {"mode": mode, "rows": rows, "scale": scale, "days": days, "error": err}
        print(f"  {name}: {err}", flush=True)
    res["elapsed"] = time.perf_counter() - t0
    return res


def run_mode(args, axes, mode, work, results):
    """Every configuration of one mode (the cluster started for it and stopped after),
    appended to results; scale.json rewritten after each."""
    cluster = None
    try:
        if mode == "cluster":
            port = int(os.environ.get("SIZED_CLUSTER_PORT") or free_port())
            cluster = Cluster(os.path.join(work.tmp, "cluster"), port)
            print(f"starting the standalone cluster on {cluster.master} ...", flush=True)
            t0 = time.perf_counter()
            msg = cluster.start()
            print(f"  {msg} ({time.perf_counter() - t0:.1f}s)", flush=True)
        master = cluster.master if cluster else "local[2]"
        for scale in axes.scales:
            for days in axes.partitions:
                results.append(run_one(args, mode, master, scale, days, work))
                with open(work.path("scale.json"), "w") as fh:  # partial results
                    json.dump(results, fh, indent=1, default=str)
                print(f"  configuration done in {results[-1]['elapsed']:.0f}s", flush=True)
    finally:
        if cluster is not None:
            print(f"stopping the cluster: {cluster.stop()}", flush=True)


def run_all(args, axes):
    """Every configuration, mode by mode; on Ctrl-C or SIGTERM, what completed."""
    work = start_run(args.out, "scale-")
    print(f"scale benchmark: rows {args.rows:,} x {axes.scales}, partitions {axes.partitions}, "
          f"modes {axes.modes}, {args.batches} upsert batches, target {args.target} "
          f"({axes.target:,} B), work dir {work.tmp}", flush=True)

    def on_term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_term)

    results = []
    version = engine_state()
    try:
        for mode in axes.modes:
            run_mode(args, axes, mode, work, results)
    except KeyboardInterrupt as e:
        print(f"\ninterrupted ({e}); reporting what completed", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work.tmp, ignore_errors=True)
    return Runs(results, axes, version, work)


def main(argv=None):
    ap = parser()
    args = ap.parse_args(argv)
    if args.child:
        return child_main(args.child)
    if args.merge:
        return merge_reports(args)
    runs = run_all(args, parse_axes(ap, args))
    report(args, runs)
    return 0


def merge_reports(args):
    """One report over the configurations of several runs' scale.json, each configuration
    keeping the engine it ran (the runs' command lines are not repeated)."""
    results = []
    for path in args.merge:
        with open(path) as fh:
            results += json.load(fh)
    key = lambda r: (["embedded", "cluster"].index(r["mode"]), r["rows"], r["days"])  # noqa: E731
    results.sort(key=key)
    modes = [m for m in ("embedded", "cluster") if any(r["mode"] == m for r in results)]
    scales = sorted({r["scale"] for r in results})
    partitions = sorted({r["days"] for r in results})
    args.rows = min(r["rows"] / r["scale"] for r in results)
    args.rows = int(args.rows)
    args.batches = max(len(r.get("batches", [])) for r in results)
    engines = sorted({r.get("engine", "engine not recorded") for r in results})
    version = "merged from " + ", ".join(args.merge) + "; per configuration: " + "; ".join(
        f"{r['mode']}/x{r['scale']:g}/p{r['days']} {r.get('engine', 'engine not recorded')}"
        for r in results) if len(engines) > 1 else engines[0]
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    axes = Axes(modes, scales, partitions, parse_size(args.target, "--target"))
    report(args, Runs(results, axes, version, Run(out, None, time.perf_counter())))
    return 0


def notes(args, runs):
    """The notes under the tables: what was measured and how."""
    done = [r for r in runs.results if not r.get("error")]
    first = done[0] if done else {}
    touched = UPSERT_DEFAULTS.update_days + UPSERT_DEFAULTS.recent_days + 1
    d = UPSERT_DEFAULTS
    return [
        f"One table size axis for both phases: the backfill writes --rows x scale rows "
        f"({args.rows:,} at scale 1, target {args.target}; backfill.py's default is 3,000,000 "
        f"rows at 1MB), and the "
        f"upsert batches run on the table that backfill wrote. upsert.py's default (200,000 rows, "
        f"target 64KB) has the same shape in files (~3 rows per byte of target, ~1.05 files "
        f"per daily partition), 15x fewer bytes per file; `--rows 200000 --target 64KB` "
        f"reproduces it exactly.",
        "Data: backfill.py's generator with the number of daily partitions as a parameter: the "
        "dates end on 2025-12-31 (the day before upsert.py's first new day), the volume grows "
        f"{(1 + MONTHLY_GROWTH) ** 12:.1f}x from the first to the last day whatever the count "
        "(+10%/month for 365 days); the same rows spread over more partitions.",
        f"Backfill = write_dataframe(full_refresh=True) with upsert.py's config (unique_key "
        f"event_id, incremental_strategy upsert, distribution exact, "
        f"target {runs.axes.target:,} B, "
        f"small_file_limit {first.get('small_limit', 0):,} B): the first run of the upsert "
        f"model; it includes the key-uniqueness check, counting, the bytes-per-row sample, the "
        f"commit protocol and the metastore partition sync.",
        f"Upsert = write_dataframe(full_refresh=False), {args.batches} batches built by "
        f"upsert.py's batch_plan / materialize_batches with its defaults: "
        f"{d.new_frac:.0%} of the table's rows new "
        f"({d.new_day_share:.0%} on the next new day, the rest over the "
        f"{d.recent_days} days before it), {d.update_frac:.0%} "
        f"updates over {d.update_days} random older days, so batches grow with "
        f"the rows and touch ~{touched} partitions whatever the partition count. Wall = mean "
        f"per batch (min-max).",
        "Each configuration runs in its own Python process with a fresh driver JVM "
        f"(--driver-memory {args.driver_memory}, max heap "
        f"{first.get('heap_max', 0) / MB:,.0f} MB, pools {', '.join(first.get('heap_pools', []))}) "
        "after an untimed warm-up write; heap figures: two full GCs (1 s apart, for Spark's "
        "ContextCleaner) and resetPeakUsage() before "
        "each phase; 'heap start' / 'heap after' = live heap after those GCs before / after "
        "the phase; 'heap peak' = sum of the heap pools' peak usage during the phase, "
        "'old gen peak' = the old generation's alone. Peaks count garbage not yet collected: "
        "they follow allocation and GC timing as much as live data (G1 lets the young "
        "generation grow into a free heap, and garbage promoted to the old generation stays "
        "until a mixed or full collection), so read them as an upper bound and 'heap after' as "
        "what the phase retained. RSS sampled every 50 ms from /proc; python RSS growth = peak "
        "over the phase minus its start.",
        "source = generating the rows, writing bench.source and checkpointing it (setup, not the "
        "engine; shown because it is where the rows enter the driver JVM in embedded mode).",
        "cluster = scripts/spark_cluster.sh: master and two workers (1 core, 2g each) on "
        f"127.0.0.1, executors of --executor-memory {args.executor_memory}, spark.cores.max 2, "
        "warehouse as a file:// URI; embedded = local[2]. Both on the same 2-core machine, "
        f"shared with other work: expect +-20% on wall times. {runs.version}.",
    ]


def checks(results):
    """Per configuration: every row and each key once; and the configurations that failed."""
    lines = []
    for r in results:
        if r.get("error"):
            continue
        c = r.get("check", {})
        ok = c.get("rows") == c.get("expected") == c.get("distinct")
        lines.append(f"{r['mode']} {r['rows']:,} rows {r['days']} partitions: "
                     f"{c.get('rows', 0):,} rows, {c.get('distinct', 0):,} distinct keys, "
                     f"expected {c.get('expected', 0):,} -> {'ok' if ok else 'MISMATCH'}")
    return lines + [f"{r['mode']} {r['rows']:,} rows {r['days']} partitions: {r['error']}"
                    for r in results if r.get("error")]


def report(args, runs):
    """Print the tables per mode, the notes, growth, what bounds it and the checks; write
    scale.md and scale.json."""
    results, axes = runs.results, runs.axes
    done = [r for r in results if not r.get("error")]
    spark_version = done[0]["spark_version"] if done else "?"
    title = (f"Scale: rows {args.rows:,} x {', '.join(f'{s:g}' for s in axes.scales)}, "
             f"{' / '.join(str(p) for p in axes.partitions)} daily partitions, target "
             f"{args.target}, {args.batches} upsert batches, {' and '.join(axes.modes)}")
    lines = notes(args, runs)
    ghead, gbody = growth_table(results, axes.modes, axes.scales, axes.partitions)
    bnotes = (bound_notes(results, axes.modes, axes.scales, axes.partitions)
              + mode_notes(results, axes.modes))
    check_lines = checks(results)

    print()
    print(title)
    md = md_header(title, f"python benchmarks/scale.py {' '.join(sys.argv[1:])}", spark_version)
    for mode in axes.modes:
        head, body = mode_table(results, mode)
        print(f"\n{mode}:")
        print(text_table(head, body))
        md += [f"## {mode}", "", md_table(head, body), ""]
        bh, bb = batch_table(results, mode)
        if bb:
            md += [f"Upsert batches ({mode}):", "", md_table(bh, bb), ""]
    print_notes(lines)
    md += md_bullets(lines) + [""]
    if gbody:
        print("\ngrowth (last vs first of each axis; printed, not asserted):")
        print(text_table(ghead, gbody))
        md += ["## Growth", "", "Ratios of the last over the first value of each axis "
               "(files = the table's data files the phase works on).", "",
               md_table(ghead, gbody), ""]
    print("\nwhat bounds it (fitted from the figures above):")
    print_notes(bnotes)
    md += ["## What bounds it", "", "Fitted from three configurations (base, more partitions, "
           "more rows) and checked on the fourth: value = fixed + per-file x files + per-row x "
           "rows; shares are those terms at the largest configuration.", ""]
    md += md_bullets(bnotes) + [""]
    print("\nchecks:")
    print_notes(check_lines)
    md += ["## Checks", ""] + md_bullets(check_lines) + [""]
    md += [f"Per configuration (seconds, setup and measuring included): {runs.elapsed}.", ""]
    write_outputs(args, runs, md)


def write_outputs(args, runs, md):
    """scale.md and scale.json, and the closing lines."""
    md_path = runs.work.path("scale.md")
    json_path = runs.work.path("scale.json")
    write_lines(md_path, md)
    with open(json_path, "w") as fh:
        json.dump(runs.results, fh, indent=1, default=str)
    print()
    print(f"wrote {md_path}")
    print(f"wrote {json_path}")
    if args.keep:
        print(f"kept the work directory {runs.work.tmp}")
    print(f"total {time.perf_counter() - runs.work.started:.0f}s ({runs.elapsed})")


if __name__ == "__main__":
    sys.exit(main())
