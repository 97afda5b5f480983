"""dbt end to end, real `dbt` processes (or several dbt commands in one process, through
dbtRunner, as an orchestrator runs them), on the embedded Spark session and on a
Spark standalone cluster on loopback (scripts/spark_cluster.sh): the integration project
builds, upserts and clustering keep every row, a crashed run (the process killed
mid-publish) is recovered, and bad config fails the model with a message naming the key."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.functional.dbt_connect import connect_client
from tests.functional.dbt_steps import BEGIN as STEP_BEGIN, END as STEP_END
from tests.functional.helpers import SHORT_JVM

REPO = Path(__file__).resolve().parents[3]
DBT = str(Path(sys.executable).with_name("dbt"))
STEPS = REPO / "tests/functional/dbt_steps.py"


CLUSTER_PORT = "7177"


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory):
    """One master and two workers on 127.0.0.1, stopped (by pid) when the module is done.
    Their JVMs and the executors they start run the JIT's first tier only (SHORT_JVM): the
    cluster lives for one test of small tables, too short for C2 to pay (1:19 against 1:59
    for that test alone)."""
    env = {**os.environ, "SIZED_CLUSTER_DIR": str(tmp_path_factory.mktemp("cluster")),
           "SIZED_CLUSTER_PORT": CLUSTER_PORT, "PYTHON": sys.executable, **SHORT_JVM}
    script = str(REPO / "scripts/spark_cluster.sh")
    started = subprocess.run(["bash", script, "start"], env=env, capture_output=True, text=True)
    assert started.returncode == 0, started.stdout + started.stderr
    yield
    subprocess.run(["bash", script, "stop"], env=env, capture_output=True, text=True)


def _dbt(project, home, target, *args, env_extra=None, runner=None, short_jvm=True):
    """short_jvm: the JIT's first tier only (helpers.SHORT_JVM); off for a build of many
    models, which runs long enough for C2 to pay."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIZED_SPARK_FAULT")}
    env.update({"SPARK_LOCAL_IP": "127.0.0.1", "SIZED_SPARK_HOME": str(home),
                "SIZED_CLUSTER_PORT": CLUSTER_PORT, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
                **(SHORT_JVM if short_jvm else {})})
    env.update(env_extra or {})
    command = [*runner, *args] if runner else \
        [DBT, *args, "--profiles-dir", str(project), "--target", target]
    if target == "connect":  # the client sees neither the warehouse nor a Java
        command, env = connect_client(command, env)
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True,
                          timeout=900)


class _Step:
    """One dbt command's outcome, shaped like subprocess.run's result."""

    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def steps_command(project, target, *steps):
    """The command that runs dbt commands (argument lists without the profile's) in one
    process, tests/functional/dbt_steps.py; steps starting with "!" as they are."""
    import json
    args = [step if step[0].startswith("!") else
            [*step, "--profiles-dir", str(project), "--target", target] for step in steps]
    return [sys.executable, str(STEPS), json.dumps(args)]


def step_succeeded(output, index):
    """Whether the index-th step in a dbt_steps.py process's output ended in success."""
    return f"{STEP_END} {index} success=True" in output


def _dbt_steps(project, home, target, *steps, short_jvm=True, dies=False, wrap=(),
               env_extra=None):
    """Several dbt commands in one process (tests/functional/dbt_steps.py): one JVM start
    instead of one per command. Returns a _Step per command, in order (each with the
    process's whole stderr). dies: the last command kills the process (an injected crash);
    its _Step has the process's exit status and the output it wrote before. wrap: a command
    the process runs under (`unshare -m sh -c ...`). env_extra: more environment."""
    out = _dbt(project, home, target, runner=[*wrap, *steps_command(project, target, *steps)],
               short_jvm=short_jvm, env_extra=env_extra)
    results, current = [], None
    for line in out.stdout.splitlines(keepends=True):
        if line.startswith(f"{STEP_BEGIN} "):
            current = []
        elif line.startswith(f"{STEP_END} "):
            ok = line.rstrip().endswith("success=True")
            results.append(_Step(0 if ok else 1, "".join(current), out.stderr))
            current = None
        elif current is not None:
            current.append(line)
    if dies and current is not None and len(results) == len(steps) - 1:
        results.append(_Step(out.returncode, "".join(current), out.stderr))
    assert len(results) == len(steps), out.stdout[-4000:] + out.stderr[-4000:]
    return results


def _dbt_log(project):
    """dbt's log file of the project: every step's lines, the debug ones too."""
    return (project / "logs" / "dbt.log").read_text()


def _plain(text):
    """dbt's console output without its colour codes."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def _first_instant(home):
    """The instant id of sized_it.orders' one completed commit, from its timeline's file
    names (`<instant>.commit`, docs/design.md)."""
    timeline = home / "warehouse" / "sized_it.db" / ".sized" / "orders" / "timeline"
    done = sorted(p.name.split(".")[0] for p in timeline.iterdir()
                  if re.fullmatch(r"\d{17}\.commit", p.name))
    assert len(done) == 1, sorted(p.name for p in timeline.iterdir())
    return done[0]


def _mini_project(tmp_path):
    """(a copy of tests/functional/dbt_mini with the integration profile, its Spark home)."""
    project = tmp_path / "mini"
    shutil.copytree(REPO / "tests/functional/dbt_mini", project)
    shutil.copy(REPO / "integration_tests/profiles.yml", project / "profiles.yml")
    return project, tmp_path / "spark"


@pytest.fixture
def mini(tmp_path):
    return _mini_project(tmp_path)


def _integration_project(tmp_path):
    """(a copy of integration_tests without its local state, its Spark home)."""
    project = tmp_path / "it"
    shutil.copytree(REPO / "integration_tests", project,
                    ignore=shutil.ignore_patterns(".spark", "target", "logs"))
    return project, tmp_path / "spark"


NOISE = ("Updating partition stats", "HiveConf of name", "Using an existing Spark",
         "Tags will not be inherited", "NativeCodeLoader", "[Stage ")


def _assert_quiet_and_filesystem(run, project, target):
    """No Hive, Spark or pyspark noise at dbt's default level, and the filesystem the
    target gets: the embedded session writes without a chmod process per file
    (fast_local_fs); a cluster's executors would not have the jar."""
    output = run.stdout + run.stderr
    for noise in NOISE:
        assert noise not in output, noise
    log = (project / "logs" / "dbt.log").read_text()
    if target == "embedded":
        assert "embedded Spark: file: paths through sizedspark.fs.NioLocalFileSystem" in log
    elif target == "connect":
        assert "embedded Spark" not in log  # no JVM in the dbt process
    else:
        assert "local filesystem as is (spark.master is spark://127.0.0.1:" in log


def _assert_start_and_ok_lines_only(run):
    """At dbt's default level a model prints dbt's START and OK lines and nothing else (the
    engine's phase lines go to dbt's debug log)."""
    lines = [re.sub(r"^\d\d:\d\d:\d\d\s+", "", line).strip()
             for line in _plain(run.stdout).splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith("Concurrency:"))
    end = next(i for i, line in enumerate(lines) if line.startswith("Finished running"))
    body = [line for line in lines[start + 1:end] if line]
    assert body and all(re.match(r"\d+ of \d+ (START|OK) ", line) for line in body), body


MICROBATCH_VARS = {"event_days": 12, "base_rows_per_day": 300, "microbatch": True}


def _microbatch_window(start, end, **more):
    import json
    return ["run", "--select", "stg_events", "events_microbatch", "--vars",
            json.dumps({**MICROBATCH_VARS, **more}), "--event-time-start", start,
            "--event-time-end", end]


@pytest.fixture(scope="module")
def integration_runs(tmp_path_factory):
    """The integration project in one dbt process, as an orchestrator runs its commands (one
    JVM and metastore start for both tests below): its 13 models a build plus their tests,
    then the incremental build at 4 threads; then, on the microbatch model (disabled in
    those builds), five daily batches, a rerun of one day with changed rows, a run whose
    middle batch fails, and `dbt retry`. C2 kept: slower with the first tier only.
    Returns (project, home, {name: _Step})."""
    project, home = _integration_project(tmp_path_factory.mktemp("integration"))
    # 20 days: every model still writes a partition per day (the layout tests hold the same),
    # in 97 s for both builds against 115 s with 40 (this module's slowest setup)
    small = ["--vars", "{event_days: 20, base_rows_per_day: 300}"]
    names = ["first", "second", "days", "rerun", "-", "failed", "-", "retried"]
    steps = _dbt_steps(
        project, home, "embedded", ["build", *small], ["build", *small, "--threads", "4"],
        _microbatch_window("2025-01-01", "2025-01-06"),
        _microbatch_window("2025-01-03", "2025-01-04", mb_version=2),
        ["!env", "SIZED_MB_FAIL_DAY", "2025-01-07"], _microbatch_window("2025-01-06", "2025-01-09"),
        ["!env", "SIZED_MB_FAIL_DAY"], ["retry"], short_jvm=False)
    return project, home, dict(zip(names, steps))


def test_integration_project_builds_and_rebuilds_incrementally(integration_runs):
    """On the embedded session (test_upsert_and_clustering_on_a_standalone_cluster runs the
    write path on a cluster: the same code)."""
    project, _home, runs = integration_runs
    first, second = runs["first"], runs["second"]
    assert first.returncode == 0, first.stdout[-4000:]
    assert "Completed successfully" in first.stdout
    # dbt's START and OK lines, the OK line with a short status; the phase lines at debug
    assert "plan:" not in first.stdout and "bytes per row" not in first.stdout
    log = _dbt_log(project)
    assert "plan:" in log and "bytes per row" in log
    assert re.search(r"OK created sql \w+ model sized_it\.events_incremental \.+ "
                     r"\[[\d,]+ rows, [\d,]+ files? in [\d,]+ partitions? in ",
                     _plain(first.stdout)), first.stdout[-3000:]
    _assert_quiet_and_filesystem(first, project, "embedded")
    # models written at once on one session, each still holding every source row once in
    # sized files (the project's data tests)
    assert second.returncode == 0, second.stdout[-4000:]
    assert "Concurrency: 4 threads" in second.stdout
    assert re.search(r"OK created sql incremental model sized_it\.events_incremental "
                     r"\.+ \[[\d,]+ rows, [\d,]+ files", _plain(second.stdout))


def test_upsert_crash_recovery_and_clustering(mini):
    upsert_crash_recovery_and_clustering(*mini, "embedded")


def upsert_crash_recovery_and_clustering(project, home, target):
    """The scenario, on a target (test_connect.py runs it over method: connect)."""
    # the first run, then the dbt process dies (like kill -9) after moving two files during
    # the publish of batch 2
    first, *_, crashed = _dbt_steps(
        project, home, target, ["run", "--select", "orders"],
        ["!env", "SIZED_SPARK_FAULT", "publish:2"], ["!env", "SIZED_SPARK_FAULT_MODE", "exit"],
        ["run", "--select", "orders", "--vars", "{batch: 2}"], dies=True)
    assert first.returncode == 0, first.stdout[-4000:]
    _assert_quiet_and_filesystem(first, project, target)
    _assert_start_and_ok_lines_only(first)
    assert crashed.returncode == 137, crashed.stdout[-4000:]  # the fault's os._exit
    first_instant = _first_instant(home)
    # The rest runs in one dbt process (dbtRunner), as an orchestrator would run it: the
    # recovery, batch 2 again, the operations, then back to batch 1 (before the upsert and
    # the clustering) and a clean past one commit.
    report = project / "orders.html"
    (recovered, check, rerun, timeline, clustered, check2, layout, out, compacted,
     bad_where, bad_arg, restored, check1, cleaned, restored_again) = _dbt_steps(
        project, home, target,
        ["run-operation", "sized_recover", "--args", "{relation: sized_it.orders}"],
        ["test", "--select", "orders_hold_each_key_once"],
        ["build", "--select", "orders", "orders_hold_each_key_once", "--vars", "{batch: 2}"],
        ["run-operation", "sized_timeline", "--args", "{relation: sized_it.orders}"],
        ["run-operation", "sized_cluster", "--args",
         "{relation: sized_it.orders, cluster_by: [value, payload], strategy: hilbert}"],
        ["test", "--select", "orders_hold_each_key_once", "--vars", "{batch: 2}"],
        ["run-operation", "sized_layout", "--args", "{relation: sized_it.orders}"],
        ["run-operation", "sized_report", "--args",
         f"{{relation: sized_it.orders, path: 'file://{report}'}}"],
        ["run-operation", "sized_compact", "--args",
         "{relation: sized_it.orders, partitions: [2025-03-01, 2025-03-04], "
         "where: \"day <= '2025-03-02'\", partial_progress: true}"],
        ["run-operation", "sized_compact", "--args",
         "{relation: sized_it.orders, where: 'value > 3'}"],
        ["run-operation", "sized_compact", "--args", "{relation: sized_it.orders, max_group: 2}"],
        ["run-operation", "sized_restore", "--args",
         f"{{relation: sized_it.orders, instant: '{first_instant}'}}"],
        ["test", "--select", "orders_hold_each_key_once", "--vars", "{batch: 1}"],
        ["run-operation", "sized_clean", "--args",
         "{relation: sized_it.orders, retain_commits: 1, retain_hours: 0}"],
        ["run-operation", "sized_restore", "--args",
         f"{{relation: sized_it.orders, instant: '{first_instant}'}}"])
    # its stale lock and half-published instant are recovered: the table is as after batch 1
    assert recovered.returncode == 0, recovered.stdout[-4000:]
    assert "recovering stale writer lock" in recovered.stdout
    assert "rolling back unfinished commit" in recovered.stdout
    assert recovered.stdout.count("1 unfinished instant rolled back") == 1  # printed once
    assert check.returncode == 0, check.stdout[-4000:]
    # batch 2 again, then the key check on its result: one dbt build
    assert rerun.returncode == 0, rerun.stdout[-4000:]
    assert "PASS=2" in rerun.stdout and "ERROR=0" in rerun.stdout  # the model and the test
    assert timeline.returncode == 0, timeline.stdout[-4000:]
    assert timeline.stdout.count("| completed") == 2 and "upsert" in timeline.stdout
    assert re.search(r"\| 20\d{15} \|", timeline.stdout)  # instant ids as text, copyable
    # cluster the upserted table along a Hilbert curve: every row stays, exactly once
    assert clustered.returncode == 0, clustered.stdout[-4000:]
    assert "clustering: 1 plan, " in clustered.stdout
    assert check2.returncode == 0, check2.stdout[-4000:]
    assert "value_min" in layout.stdout and "payload_max" in layout.stdout
    assert "target 32 KB, small-file limit 25 KB" in layout.stdout  # in the units written
    assert out.returncode == 0, out.stdout[-4000:]
    html = report.read_text()
    assert "day=2025-03-01" in html and "hilbert" in html and "http" not in html
    # clustering left the day sized: a compaction of it finds nothing to do
    assert compacted.returncode == 0, compacted.stdout[-4000:]
    assert "compaction plan: nothing to compact (of 1 of the 5 partitions in scope)" in \
        _dbt_log(project)
    assert compacted.stdout.count("sized_it.orders: compaction: 0 plans") == 1
    # a condition on a data column: refused naming the key and the value
    assert bad_where.returncode != 0
    assert ("where: 'value > 3' names `value`, which is not a partition column of "
            "sized_it.orders") in bad_where.stdout, bad_where.stdout[-3000:]
    # an argument the operation does not take: refused naming it and the closest one
    assert bad_arg.returncode != 0
    assert ("sized_compact: max_group: not an argument of sized_compact; did you mean "
            "`max_groups`?") in bad_arg.stdout, bad_arg.stdout[-3000:]
    # the restore went to the first commit, the one the timeline shows as the full build
    assert re.search(rf"\| {first_instant} \|[^|]+\| commit\s+\| completed \| full_refresh",
                     timeline.stdout), timeline.stdout[-3000:]
    assert restored.returncode == 0, restored.stdout[-4000:]
    assert restored.stdout.count(f"Restored sized_it.orders to {first_instant}") == 1
    assert check1.returncode == 0, check1.stdout[-4000:]
    assert cleaned.returncode == 0, cleaned.stdout[-4000:]
    assert "cleaned sized_it.orders: set-aside files of" in cleaned.stdout
    # the clean archived the first instant; its files are kept, set aside by the restore
    # after it, so it can be restored again (a restore decides from the files kept)
    assert restored_again.returncode == 0, restored_again.stdout[-4000:]
    assert f"Restored sized_it.orders to {first_instant}" in restored_again.stdout


def test_upsert_and_clustering_on_a_standalone_cluster(mini, spark_cluster):
    """The work executors do, in their own JVMs on the cluster: the sized build (count,
    sample, routed write), the upsert (tagging, bin-packing into small files) and a Hilbert
    clustering, each leaving every key once. The crash, its recovery and the timeline, layout,
    report and compaction operations are driver-side file and metastore work, the same code
    on both targets: the embedded scenario above covers them."""
    project, home = mini
    first, upserted, clustered, check = _dbt_steps(
        project, home, "cluster", ["run", "--select", "orders"],
        ["build", "--select", "orders", "orders_hold_each_key_once", "--vars", "{batch: 2}"],
        ["run-operation", "sized_cluster", "--args",
         "{relation: sized_it.orders, cluster_by: [value, payload], strategy: hilbert}"],
        ["test", "--select", "orders_hold_each_key_once", "--vars", "{batch: 2}"])
    assert first.returncode == 0, first.stdout[-4000:]
    _assert_quiet_and_filesystem(first, project, "cluster")
    assert upserted.returncode == 0, upserted.stdout[-4000:]
    assert "PASS=2" in upserted.stdout and "ERROR=0" in upserted.stdout  # model and test
    assert "1,000 new, 1,000 updated, " in upserted.stdout
    assert clustered.returncode == 0, clustered.stdout[-4000:]
    assert "clustering: 1 plan, " in clustered.stdout
    assert check.returncode == 0, check.stdout[-4000:]


@pytest.fixture(scope="module")
def mini_runs(tmp_path_factory):
    """The mini project in one dbt process (one JVM and metastore start for both tests
    below): the models tagged threads run twice at 4 threads, then the bad models, orders,
    and orders again after a file is deleted and after one is overwritten in place.
    Returns (project, home, {name: _Step})."""
    project, home = _mini_project(tmp_path_factory.mktemp("mini"))
    orders = home / "warehouse" / "sized_it.db" / "orders"
    first_file = f"find {orders} -name '*.parquet' | sort | head -1"
    names = ["threads1", "threads2", "bad", "built", "deleted", "refused", "repaired", "rerun",
             "zeroed", "unreadable"]
    steps = _dbt_steps(
        project, home, "embedded",
        ["run", "--select", "tag:threads", "--threads", "4"],
        ["run", "--select", "tag:threads", "--threads", "4", "--vars", "{batch: 2}"],
        ["run", "--select", "bad_limit", "bad_key", "bad_strategy"],
        ["run", "--select", "orders"],
        ["!sh", f"rm $({first_file})"],
        ["run", "--select", "orders", "--vars", "{batch: 2}"],
        ["run-operation", "sized_repair", "--args", "{relation: sized_it.orders}"],
        ["run", "--select", "orders", "--vars", "{batch: 2}"],
        ["!sh", f"f=$({first_file}); head -c $(stat -c %s $f) /dev/zero > $f.x && mv $f.x $f"],
        ["run", "--select", "orders", "--vars", "{batch: 2}"])
    return project, home, dict(zip(names, steps))


def test_bad_config_and_damaged_files_fail_the_model_with_the_way_out(mini_runs):
    bad, built, deleted, refused, repaired, rerun, zeroed, unreadable = (
        mini_runs[2][n] for n in ("bad", "built", "deleted", "refused", "repaired", "rerun",
                                  "zeroed", "unreadable"))
    assert bad.returncode != 0
    text = bad.stdout
    assert "small_file_limit: '200MB' is larger than target_file_size '128MB'" in text
    assert "unique_key: column(s) order_id not found in the model" in text
    assert "incremental_strategy: unknown value 'merge_into'" in text
    assert "ERROR=3" in text
    assert built.returncode == 0 and deleted.returncode == 0, built.stdout[-3000:]
    # a file deleted behind the table's back: the run fails naming it and the way out
    assert refused.returncode != 0
    assert "1 missing: day=" in refused.stdout
    assert "dbt run-operation sized_repair --args '{relation: sized_it.orders}'" in refused.stdout
    assert repaired.returncode == 0, repaired.stdout[-3000:]
    assert "1 missing, 0 changed" in repaired.stdout and "rows lost" in repaired.stdout
    assert rerun.returncode == 0, rerun.stdout[-3000:]
    # a file overwritten in place: no py4j trace, its path and the way out
    assert zeroed.returncode == 0 and unreadable.returncode != 0
    assert "cannot read file:" in unreadable.stdout and "sized_repair" in unreadable.stdout
    assert "Py4JJavaError" not in unreadable.stdout



def _threads_expected():
    """{model: sorted (id, p, value)} after batches 1 and 2 of the models tagged threads."""
    def upsert(parts):
        rows = {i: (i, i % parts, i * 10) for i in range(1, 6001)}
        rows.update({i: (i, i % parts, i * 10 + 1) for i in range(4, 6001, 4)})
        rows.update({i: (i, i % parts, i * 10) for i in range(6001, 7001)})
        return sorted(rows.values())
    overwrite = [(i, i % 8, i * 10) for i in range(1, 8001) if i % 8 > 2]
    overwrite += [(i, i % 3, i * 10) for i in range(8001, 9501)]
    return {"th_upsert": upsert(6), "th_cluster": upsert(4), "th_overwrite": sorted(overwrite),
            "th_insert": [(i, i % 5, i * 10) for i in range(1, 5001)]}


def test_four_models_written_at_once_hold_exactly_their_rows(mini_runs):
    """dbt threads: 4 on one Spark session: an upsert, an insert, an insert_overwrite and an
    upsert clustered inline run side by side (each sets its own shuffle and scan settings on
    the shared session), twice; every table then holds exactly its rows, read by DuckDB."""
    from tests.functional.readers import duckdb_rows
    _project, home, runs = mini_runs
    for step in (runs["threads1"], runs["threads2"]):
        assert step.returncode == 0, step.stdout[-4000:]
        lines = step.stdout.splitlines()
        starts = [i for i, line in enumerate(lines) if " START sql sized_incremental model" in line]
        done = [i for i, line in enumerate(lines) if " OK created sql sized_incremental" in line]
        assert len(starts) == 4 and len(done) == 4 and max(starts) < min(done)  # all at once
    warehouse = home / "warehouse" / "sized_it.db"
    for name, expected in _threads_expected().items():
        got = [(i, int(p), v) for i, p, v in duckdb_rows(warehouse / name, ["id", "p", "value"])]
        assert sorted(got) == expected, name


def _rows_per_day(table_dir):
    """{event_date: (rows, versions)} of a table's directory, read by DuckDB."""
    import duckdb
    return {str(d): (n, v) for d, n, v in duckdb.sql(
        f"select event_date, count(*), list(distinct version order by version) from "
        f"read_parquet('{table_dir}/**/*.parquet', hive_partitioning=true) group by 1").fetchall()}


def _operations(table_dir):
    from python_adapter.table.timeline import decode, meta_dir_of, parse_file_name
    timeline = Path(meta_dir_of(str(table_dir))) / "timeline"
    return [decode(p.read_bytes()).operation for p in sorted(timeline.iterdir())
            if (parsed := parse_file_name(p.name)) and parsed[2] == "completed"]


def test_microbatch_days_a_rerun_window_and_a_retried_batch(integration_runs):
    """dbt's microbatch through the sized engine on the integration project: five daily
    batches, a rerun of one day with changed rows, then a run whose middle batch fails and
    `dbt retry` runs that batch alone. Every day holds exactly its source rows once, in the
    version of its last batch; each batch is one commit; the month partition stays sized."""
    _project, home, runs = integration_runs
    days, rerun, failed, retried = (runs[n] for n in ("days", "rerun", "failed", "retried"))
    assert days.returncode == 0 and rerun.returncode == 0, days.stdout[-3000:] + rerun.stdout[-3000:]
    assert failed.returncode != 0 and "injected failure of the batch of 2025-01-07" in failed.stdout
    assert retried.returncode == 0, retried.stdout[-3000:]
    table = home / "warehouse" / "sized_it.db" / "events_microbatch"
    per_day = {f"2025-01-{d:02d}": int(300 * 1.1 ** ((d - 1) / 30.0)) for d in range(1, 9)}
    assert _rows_per_day(table) == {day: (n, [2] if day == "2025-01-03" else [1])
                                    for day, n in per_day.items()}
    # a full build of the first batch, then a commit per batch: 4 more days, the rerun day,
    # the two days whose batches passed, the retried day
    assert _operations(table) == ["full_refresh"] + ["microbatch"] * 8
    # the batches' rows packed into the month's small files: sized, not a file per batch
    sizes = sorted(p.stat().st_size for p in table.glob("event_month=2025-01/*.parquet"))
    assert sum(1 for s in sizes if s < 50_000) <= 1 and max(sizes) <= 1.25 * 64_000, sizes
    assert len(sizes) <= -(-sum(sizes) // 64_000) + 1, sizes
