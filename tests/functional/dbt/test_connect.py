"""dbt over `method: connect`: the dbt process is a Spark Connect client with no JVM that
cannot see the warehouse (tests/functional/dbt_connect.py), against a Connect server started
by scripts/connect_server.sh with our extension. The scenarios are the session's own
(test_dbt_project.py), run over Connect: the same assertions hold."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from benchmarks.lib.session import free_port
from tests.functional.dbt.test_dbt_project import (REPO, _dbt_log, _dbt_steps, _plain,
                                                   upsert_crash_recovery_and_clustering)
from tests.functional.dbt.test_python_models import (check_builds, check_failures,
                                                     python_project, python_runs)
from tests.functional.dbt_connect import connect_server, drop_schema
from tests.functional.readers import duckdb_rows, polars_rows, pyarrow_rows


def _unshare_works():
    try:
        return subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0
    except FileNotFoundError:
        return False


# CI runs these (as root); elsewhere a machine without `unshare -m` skips them
pytestmark = pytest.mark.skipif(
    not _unshare_works() and os.environ.get("CI") != "true", reason="needs `unshare -m` (root or CAP_SYS_ADMIN) to hide the "
                                 "warehouse and Java from the dbt client")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    state = tmp_path_factory.mktemp("connect")
    with connect_server(state) as (url, _warehouse):
        yield url, state


def _project(tmp_path, source):
    project = tmp_path / "project"
    shutil.copytree(REPO / source, project,
                    ignore=shutil.ignore_patterns(".spark", "target", "logs"))
    shutil.copy(REPO / "integration_tests/profiles.yml", project / "profiles.yml")
    return project


def test_upsert_crash_recovery_and_clustering_over_connect(server, tmp_path):
    """The session's scenario over Connect: a full build, an upsert whose client dies
    mid-publish (recovered by the next run), recover, rerun, timeline, Hilbert clustering,
    layout, report, compaction, a refused condition, restore, clean and restore again."""
    url, state = server
    drop_schema(url, "sized_it")
    upsert_crash_recovery_and_clustering(_project(tmp_path, "tests/functional/dbt_mini"),
                                         state, "connect")


# extended: the project's models are built on the session in test_dbt_project.py, and over
# Connect a sized write is the upsert scenario's above (about 4 minutes of CI)
@pytest.mark.extended
def test_integration_project_over_connect(server, tmp_path):
    """dbt's own views, tables, seeds, tests and incrementals and every sized model of the
    integration project, built once, with its data tests (each source row once, files
    sized). Built once, not again incrementally as on the session (test_dbt_project.py):
    an incremental run over Connect is the upsert scenario's above, and a second build of
    the whole project cost two minutes of CI."""
    url, state = server
    drop_schema(url, "sized_it")
    project = _project(tmp_path, "integration_tests")
    small = ["--vars", "{event_days: 20, base_rows_per_day: 300}"]
    (first,) = _dbt_steps(project, state, "connect", ["build", *small])
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
    assert "Completed successfully" in first.stdout and "ERROR=0" in first.stdout
    out = _plain(first.stdout)
    assert "OK created sql sized_incremental model sized_it.events_upsert" in out


def test_python_models_over_connect(server, tmp_path):
    """The Python models of test_python_models.py over Connect: each model's function runs in
    the dbt process on its Connect session, the engine writes what it returns, sized, and
    the failing ones name their cause and write nothing, as on an embedded session."""
    url, state = server
    drop_schema(url, "sized_it")
    runs = python_runs(python_project(tmp_path), state, "connect")
    db = state / "warehouse" / "sized_it.db"
    check_builds(runs, db)
    check_failures(runs, db)


def test_a_write_over_connect_runs_on_the_callers_session_and_puts_its_settings_back(server):
    """Over Connect a write runs on the caller's session (a server-side clone has a class
    loader of its own, so its generated code was compiled and warmed up again at every
    write): a temporary view made before it is there, and what writes raise for their
    reads is put back once the last of them ends."""
    url, _state = server
    code = f"""
from pyspark.sql import SparkSession
from python_adapter.spark.session_conf import own_session, raise_on_own_session
s = SparkSession.builder.remote({url!r}).create()
key = "spark.sql.sources.parallelPartitionDiscovery.threshold"
before = s.conf.get(key)
s.range(3).createOrReplaceTempView("sized_view")
assert not raise_on_own_session(s, key, 500)
with own_session(s, "default", "sized_no_table") as own:
    assert own is s
    assert raise_on_own_session(own, key, 500) and s.conf.get(key) == "500"
    with own_session(s, "default", "sized_other") as beside:  # a write on another thread
        assert raise_on_own_session(beside, key, 700)
    assert s.conf.get(key) == "700", "the first write still runs"
    assert own.table("sized_view").count() == 3
assert s.conf.get(key) == before, (s.conf.get(key), before)
assert not raise_on_own_session(s, key, 900)
print("OK")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=REPO)
    assert done.returncode == 0 and done.stdout.strip().endswith("OK"), done.stderr[-3000:]


def test_which_columns_files_hold_no_dictionary_for_is_read_in_the_server(server):
    """The footers a rewrite chooses its encodings from are read where the storage is."""
    url, state = server
    out = str(state / "encodings")
    code = f"""
import glob
from pyspark.sql import SparkSession
from python_adapter.io.footers import plain_columns
s = SparkSession.builder.remote({url!r}).create()
s.sql("select id, concat('k-', id % 4) as kind from range(12000)").coalesce(1) \\
    .write.parquet({out!r})
files = ["file://" + p for p in glob.glob({out!r} + "/*.parquet")]
assert len(files) == 1 and plain_columns(s, files) == ["id"], plain_columns(s, files)
print("OK")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=REPO)
    assert done.returncode == 0 and done.stdout.strip().endswith("OK"), done.stderr[-3000:]


def test_a_commit_under_a_service_lock_is_fenced_by_the_writer_lock_in_the_server(server):
    """A compaction holds cluster.lock and takes the writer lock for each commit: once
    another writer has broken the writer lock, the server refuses the commit's next change,
    though the service lock is still this client's (the fence is the lock taken last)."""
    url, _state = server
    code = f"""
import json
from pyspark.sql import SparkSession
from python_adapter.io.filesystems import filesystem
from python_adapter.table.lock import WriterLock
s = SparkSession.builder.remote({url!r}).create()
fs = filesystem(s)
root = fs.qualify(s.conf.get("spark.sql.warehouse.dir")) + "/fence_probe"
table, meta = root + "/t", root + "/.sized/t"
fs.mkdirs(meta)
quiet = lambda line: None
service = WriterLock(fs, meta + "/cluster.lock", log=quiet, covers=(table, meta))
writer = WriterLock(fs, meta + "/lock", log=quiet, covers=(table, meta))
service.acquire("compact")
writer.acquire("compact")
fs.write_bytes(table + "/a.parquet", b"held")
other = dict(writer.read(), token="another writer's")
fs.write_bytes(meta + "/lock", json.dumps(other).encode(), overwrite=True)
try:
    fs.write_bytes(table + "/b.parquet", b"broken")
    print("WRITTEN")
except Exception as exc:
    print("REFUSED", str(exc)[:300])
writer.stop()
service.release()
print("b exists:", fs.exists(table + "/b.parquet"))
fs.delete(root)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "REFUSED" in done.stdout and "b exists: False" in done.stdout, done.stdout


def test_a_server_without_the_extension_fails_the_model_naming_what_to_add(tmp_path):
    """A Connect server started without our jar: the sized model fails before anything is
    written, and the error says which --jars / --conf lines the server's start command
    needs; dbt's own models still run there."""
    import os

    from tests.functional.dbt_connect import SERVER

    spark_home = os.path.dirname(__import__("pyspark").__file__)
    state = tmp_path / "bare"
    state.mkdir()
    port = free_port()  # a fixed one was another module's server's, on the other worker
    server = subprocess.Popen(
        [f"{spark_home}/bin/spark-submit", "--class",
         "org.apache.spark.sql.connect.service.SparkConnectServer", "--master", "local[1]",
         "--conf", f"spark.connect.grpc.binding.port={port}",
         "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
         "--conf", "spark.ui.enabled=false", "--conf", "spark.driver.host=127.0.0.1",
         "--conf", f"spark.sql.warehouse.dir={state}/warehouse",
         "--conf", f"spark.driver.extraJavaOptions=-Dderby.system.home={state}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=state,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    before = dict(SERVER)  # the module's server, put back after
    try:
        import socket
        import time
        for _ in range(120):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(1)
        SERVER.update(warehouse=str(state / "warehouse"), port=str(port))
        project = _project(tmp_path, "tests/functional/dbt_mini")
        (run,) = _dbt_steps(project, state, "connect", ["run", "--select", "orders"])
        assert run.returncode != 0
        text = _plain(run.stdout)
        assert "has no dbt-sized-spark extension" in text, text[-3000:]
        assert "spark.connect.extensions.relation.classes=sizedspark.connect.SizedOps" in text
        assert not (state / "warehouse" / "sized_it.db" / "orders").exists()
    finally:
        SERVER.clear()
        SERVER.update(before)
        server.terminate()
        server.wait(timeout=60)


SLOW_MODEL = """
{{ config(materialized='sized_incremental', partition_by=['day'], unique_key='id',
          incremental_strategy='upsert', target_file_size='1MB') }}
select id, date_add(date'2025-03-01', id % 3) as day,
{% if var('slow', false) %}
       aggregate(sequence(1, 30000), sha2(cast(id as string), 256), (acc, x) -> sha2(acc, 256))
{% else %}
       sha2(cast(id as string), 256)
{% endif %} as payload
from (select explode(sequence(1, 20000)) as id)
"""


# the slow payload: 600M SHA-256 rounds, minutes of both cores on any machine here, so the
# kill 8 s in always falls into running jobs (with a tenth of them a fast machine finished the
# run in 7.7 s); the jobs are cancelled by the next run, never run to their end
KILLED_SLOW_RUN = (["!env", "SIZED_SPARK_FAULT", "requested"],
                   ["!env", "SIZED_SPARK_FAULT_MODE", "exit_after:8"],
                   ["run", "--select", "slow", "--vars", "{slow: true}"])


def _assert_dead_clients_session_ended(out):
    ended = re.search(r"ended the Spark Connect session \S+ of the former writer: (\d+) "
                      r"operations? interrupted, (\d+) jobs? cancelled", out)
    assert ended and int(ended.group(1)) + int(ended.group(2)) >= 1, out[-3000:]
    assert not re.search(r"jobs? still running", out), out[-3000:]


# extended (about 2 worker-minutes): a client killed mid-publish and recovered over Connect is
# the upsert scenario's above
@pytest.mark.extended
def test_a_dead_clients_job_still_running_on_the_server_is_stopped_before_recovery(
        server, tmp_path):
    """A dbt client dies (kill -9) eight seconds into an upsert whose Spark jobs take
    minutes: the server keeps running them, waiting for the client to reattach. The
    next run takes over the dead client's lock; a second client dies the same way and
    `sized_unlock` with force breaks its lock. Each time the dead client's Connect session
    is ended (its operations interrupted, its jobs cancelled and waited for) and only then
    is its instant rolled back, so nothing of a dead write lands afterwards: the table
    holds exactly the rows of the last commit and the dead instants' staging directory
    stays gone. (One chain of three client processes, not one per way: CI time.)"""
    import time

    import duckdb

    url, state = server
    drop_schema(url, "sized_it")
    project = _project(tmp_path, "tests/functional/dbt_mini")
    (project / "models" / "slow.sql").write_text(SLOW_MODEL)
    first, _, _, died = _dbt_steps(project, state, "connect", ["run", "--select", "slow"],
                                   *KILLED_SLOW_RUN, dies=True)
    taken_over, _, _, died_again = _dbt_steps(
        project, state, "connect", ["run", "--select", "slow"], *KILLED_SLOW_RUN, dies=True)
    unlocked, recovered = _dbt_steps(
        project, state, "connect",
        ["run-operation", "sized_unlock", "--args", "{relation: sized_it.slow, force: true}"],
        ["run", "--select", "slow"])
    assert first.returncode == 0, first.stdout[-3000:]
    assert died.returncode == 137 and died_again.returncode == 137, died_again.stdout[-3000:]
    # the next run
    assert taken_over.returncode == 0, taken_over.stdout[-4000:]
    out = _plain(taken_over.stdout)
    assert "recovering stale writer lock" in out, out[-3000:]
    _assert_dead_clients_session_ended(out)
    assert "rolling back unfinished commit" in out
    # sized_unlock
    assert unlocked.returncode == 0, unlocked.stdout[-4000:]
    out = _plain(unlocked.stdout)
    assert "broke the writer lock of `sized_it`.`slow`" in out, out[-3000:]
    _assert_dead_clients_session_ended(out)
    assert recovered.returncode == 0, recovered.stdout[-4000:]
    assert "rolling back unfinished commit" in _plain(recovered.stdout)
    time.sleep(5)  # a dead job that were still running would have written by now
    table = state / "warehouse" / "sized_it.db" / "slow"
    rows = duckdb.sql(f"select count(*), count(distinct id) from "
                      f"read_parquet('{table}/**/*.parquet', hive_partitioning=true)").fetchall()
    assert rows == [(20000, 20000)]
    staging = state / "warehouse" / "sized_it.db" / ".sized" / "slow" / "staging"
    assert not staging.exists() or not any(p.is_file() for p in staging.rglob("*")), \
        sorted(str(p) for p in staging.rglob("*"))


# extended: a cluster is test_dbt_project.py's (the embedded session's), Connect the module
# server's; both together cost about 3 minutes of CI
@pytest.mark.extended
def test_upsert_on_a_standalone_cluster_through_connect(tmp_path):
    """The Connect server drives scripts/spark_cluster.sh's cluster (its executors in their
    own JVMs): a sized full build and an upsert from a dbt client that sees neither the
    warehouse nor a JVM, each key once (the project's data test)."""
    import os
    import sys

    from tests.functional.helpers import SHORT_JVM

    env = {**os.environ, "SIZED_CLUSTER_DIR": str(tmp_path / "cluster"), "PYTHON": sys.executable,
           "SIZED_CLUSTER_PORT": "7277", **SHORT_JVM}
    cluster = str(REPO / "scripts/spark_cluster.sh")
    started = subprocess.run(["bash", cluster, "start"], env=env, capture_output=True, text=True)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        os.environ["SIZED_CONNECT_MASTER"] = "spark://127.0.0.1:7277"
        try:
            with connect_server(tmp_path / "connect") as (_url, warehouse):
                project = _project(tmp_path, "tests/functional/dbt_mini")
                first, second = _dbt_steps(
                    project, tmp_path / "connect", "connect", ["build", "--select", "orders+"],
                    ["build", "--select", "orders+", "--vars", "{batch: 2}"])
                log = (tmp_path / "connect" / "server.log").read_text()
        finally:
            os.environ.pop("SIZED_CONNECT_MASTER")
    finally:
        subprocess.run(["bash", cluster, "stop"], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stdout[-4000:] + log[-3000:]
    assert second.returncode == 0, second.stdout[-4000:]
    assert "PASS=2" in second.stdout
    assert "1,000 new, 1,000 updated" in _plain(second.stdout)
    assert any((warehouse / "sized_it.db" / "orders").glob("day=*/*.parquet"))


def _snapshot_source(state):
    """{id: version} of kr_snapshot_source at KR_STATE=state (tests/functional/dbt_killed)."""
    rows = {}
    for i in range(1, 21 + 4 * state):
        if state in (3, 4) and i % 5 == 1:
            continue
        rows[i] = max([1] + [t for t in range(2, state + 1) if i % t == 0])
    return rows


def _expected_snapshot(states):
    """(rows, current rows) a timestamp snapshot with hard_deletes='invalidate' holds after
    runs at `states`: a row per version of an id while it is present, closed when the id
    changes or goes."""
    current, total = {}, 0
    for state in states:
        source = _snapshot_source(state)
        for i, version in source.items():
            if current.get(i) != version:
                total += 1
        current = dict(source)
    return total, len(current)


# extended: snapshots and microbatch run on the session (tests/adapter, test_dbt_project.py) and
# go through the same engine calls over Connect as the upsert scenario above
@pytest.mark.extended
def test_snapshots_and_microbatch_over_connect(server, tmp_path):
    """dbt snapshot through the engine (three states of the source: updates, new keys,
    deleted keys invalidated) and a microbatch window and its rerun, over Connect: the
    snapshot holds a row per version of each key, the microbatch model each event of its
    window once (read with DuckDB from the test process)."""
    import duckdb

    url, state = server
    drop_schema(url, "sized_it")
    project = _project(tmp_path, "tests/functional/dbt_killed")
    steps = []
    for s in (1, 2, 3):
        steps += [["!env", "KR_STATE", str(s)], ["snapshot", "--select", "kr_snap"]]
    window = ["--event-time-start", "2025-01-01", "--event-time-end", "2025-01-05"]
    rerun = ["--event-time-start", "2025-01-02", "--event-time-end", "2025-01-04"]
    steps += [["run", "--select", "kr_events", "kr_mb", *window],
              ["run", "--select", "kr_mb", *rerun]]
    results = _dbt_steps(project, state, "connect", *steps)
    for step, result in zip(steps, results):
        assert result.returncode == 0, (step, result.stdout[-4000:])
    base = state / "warehouse" / "sized_it.db"

    def read(table, sql):
        return duckdb.sql(sql.format(t=f"read_parquet('{base / table}/**/*.parquet', "
                                       f"hive_partitioning=true)")).fetchall()[0]

    total, live = _expected_snapshot([1, 2, 3])
    assert read("kr_snap", "select count(*), count(*) filter (where dbt_valid_to is null) "
                           "from {t}") == (total, live)
    # days 1-4 of kr_events: 150 + 160 + 170 + 180 events, each once after the rerun
    assert read("kr_mb", "select count(*), count(distinct event_id) from {t}") == (660, 660)
    # plain Parquet, as over session: polars and pyarrow read exactly the rows DuckDB reads
    for table, columns in (("kr_snap", ["id", "region", "name", "dbt_scd_id"]),
                           ("kr_mb", ["event_id", "event_date", "amount", "event_month"])):
        seen = duckdb_rows(base / table, columns)
        assert len(seen) == read(table, "select count(*) from {t}")[0], table
        for reader in (pyarrow_rows, polars_rows):
            assert _as_text(reader(base / table, columns)) == _as_text(seen), \
                (table, reader.__name__)


def _as_text(rows):
    """Rows with each value as text, in a stable order: the readers type a partition value
    each their own way."""
    return sorted(tuple(None if v is None else str(v) for v in r) for r in rows)


PLAIN_MODEL = """
-- dbt-spark's own incremental (sized=false): three tasks write a file into each day
{{ config(materialized='incremental', incremental_strategy='insert_overwrite',
          partition_by=['day'], file_format='parquet', sized=false) }}
select /*+ REPARTITION(3) */ id, date_add(date'2025-03-01', id % 4) as day,
       sha2(cast(id as string), 256) as payload
from (select explode(sequence(1, 3000)) as id)
"""

MERGED_MODEL = """
-- batch 1: ids 1..2000, version 1; batch 2: each of ids %4, ids %10 and ids 2001..2400 sent
-- twice (versions 2 and 3: the larger wins), ids %10 up to 2000 deleted
{{ config(materialized='sized_incremental', partition_by=['day'], unique_key='id',
          incremental_strategy='merge', target_file_size='16KB', delete_column='gone',
          precombine_column='version') }}
{% if var('batch') | int == 1 %}
select id, date_add(date'2025-03-01', id % 4) as day, 1 as version, false as gone,
       sha2(cast(id as string), 256) as payload
from (select explode(sequence(1, 2000)) as id)
{% else %}
select id, date_add(date'2025-03-01', id % 4) as day, version,
       id % 10 = 0 and id <= 2000 as gone, sha2(cast(id * version as string), 256) as payload
from (select explode(sequence(1, 2400)) as id) lateral view explode(array(2, 3)) v as version
where id % 4 = 0 or id % 10 = 0 or id > 2000
{% endif %}
"""


def _merged_expected():
    """{id: version} MERGED_MODEL holds after its two batches."""
    rows = {i: 1 for i in range(1, 2001)}
    for i in range(1, 2401):
        if i % 10 == 0 and i <= 2000:
            rows.pop(i)
        elif i % 4 == 0 or i > 2000:
            rows[i] = 3
    return rows


def _table_rows(table_dir, columns):
    """{first column: second} of a table's directory, read by DuckDB."""
    return dict(duckdb_rows(table_dir, columns))


def _metastore_statistics(url, table, partition):
    """(table, partition) statistics as Spark reads them from the metastore through the
    server: DESCRIBE's `<bytes> bytes, <rows> rows`."""
    code = f"""
from pyspark.sql import SparkSession
s = SparkSession.builder.remote({url!r}).create()
def stats(sql, key):
    s.sql("REFRESH TABLE {table}")
    return {{r[0]: r[1] for r in s.sql(sql).collect()}}[key]
print(stats("DESCRIBE TABLE EXTENDED {table}", "Statistics"))
print(stats("DESCRIBE TABLE EXTENDED {table} PARTITION ({partition})", "Partition Statistics"))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-2:]


def _files_figures(directory):
    """'<bytes> bytes' of the Parquet files under directory, as the metastore should say."""
    return f"{sum(p.stat().st_size for p in directory.rglob('*.parquet'))} bytes"


# extended: deletes, precombine, adoption and the services run on the session (tests/functional/
# spark, test_dbt_project.py); over Connect their file operations are the upsert scenario's
@pytest.mark.extended
def test_deletes_precombine_adoption_and_the_services_over_connect(server, tmp_path):
    """What the other scenarios leave out, over Connect: a dbt-spark table adopted by its
    first compaction, a merge with deletes and precombine whose client dies (kill -9) while
    the server tags its batch, `sized_unlock` (holder shown, then broken with force), the
    recovery, the merge again, linear clustering undone by `sized_rollback`, a file deleted
    behind the table's back refused and then recorded by `sized_repair`. After each: the
    rows DuckDB reads, and the metastore statistics equal to the files and rows."""
    url, state = server
    drop_schema(url, "sized_it")
    project = _project(tmp_path, "tests/functional/dbt_mini")
    (project / "models" / "plain_days.sql").write_text(PLAIN_MODEL)
    (project / "models" / "merged.sql").write_text(MERGED_MODEL)
    base = state / "warehouse" / "sized_it.db"
    plain, compacted, first, _, _, died = _dbt_steps(
        project, state, "connect", ["run", "--select", "plain_days"],
        ["run-operation", "sized_compact", "--args",
         "{relation: sized_it.plain_days, target_file_size: 64KB}"],
        ["run", "--select", "merged"],
        ["!env", "SIZED_SPARK_FAULT", "tagging"],
        ["!env", "SIZED_SPARK_FAULT_MODE", "exit_after:0.2"],
        ["run", "--select", "merged", "--vars", "{batch: 2}"], dies=True)
    assert plain.returncode == 0, plain.stdout[-3000:]
    assert compacted.returncode == 0, compacted.stdout[-3000:]
    assert re.search(r"adopting sized_it\.plain_days: \d+ files", _dbt_log(project))
    assert len(list((base / "plain_days").rglob("*.parquet"))) == 4  # one a day, from 12
    assert _table_rows(base / "plain_days", ["id", "day"]).keys() == set(range(1, 3001))
    assert first.returncode == 0, first.stdout[-3000:]
    assert died.returncode == 137, died.stdout[-3000:]
    assert _table_rows(base / "merged", ["id", "version"]) == {i: 1 for i in range(1, 2001)}

    held, broken, recovered, merged, clustered, rolled_back = _dbt_steps(
        project, state, "connect",
        ["run-operation", "sized_unlock", "--args", "{relation: sized_it.merged}"],
        ["run-operation", "sized_unlock", "--args", "{relation: sized_it.merged, force: true}"],
        ["run-operation", "sized_recover", "--args", "{relation: sized_it.merged}"],
        ["run", "--select", "merged", "--vars", "{batch: 2}"],
        ["run-operation", "sized_cluster", "--args",
         "{relation: sized_it.merged, cluster_by: [payload], strategy: linear}"],
        ["run-operation", "sized_rollback", "--args", "{relation: sized_it.merged}"])
    assert "`sized_it`.`merged` is locked by host" in held.stdout, held.stdout[-3000:]
    assert "Add force: true to break the lock" in held.stdout
    assert "broke the writer lock of `sized_it`.`merged`" in broken.stdout, broken.stdout[-3000:]
    assert recovered.returncode == 0, recovered.stdout[-3000:]
    assert "rolled back" in recovered.stdout, recovered.stdout[-3000:]
    assert merged.returncode == 0, merged.stdout[-3000:]
    assert "deleted" in _plain(merged.stdout)  # the status: new, updated, deleted
    assert clustered.returncode == 0 and "clustering: 1 plan, " in clustered.stdout, \
        clustered.stdout[-3000:]
    assert "Rolled back sized_it.merged to before commit" in rolled_back.stdout
    expected = _merged_expected()
    assert _table_rows(base / "merged", ["id", "version"]) == expected
    day = base / "merged" / "day=2025-03-02"
    in_day = sum(1 for i in expected if i % 4 == 1)
    assert _metastore_statistics(url, "sized_it.merged", "day='2025-03-02'") == [
        f"{_files_figures(base / 'merged')}, {len(expected)} rows",
        f"{_files_figures(day)}, {in_day} rows"]

    # a file deleted behind the table's back: the next merge is refused, the repair records it
    import pyarrow.parquet as pq

    gone = sorted(day.glob("*.parquet"))[0]
    lost = set(pq.read_table(gone, columns=["id"]).column("id").to_pylist())
    gone.unlink()
    refused, repaired = _dbt_steps(
        project, state, "connect", ["run", "--select", "merged", "--vars", "{batch: 2}"],
        ["run-operation", "sized_repair", "--args", "{relation: sized_it.merged}"])
    assert refused.returncode != 0 and "sized_repair" in refused.stdout, refused.stdout[-3000:]
    assert repaired.returncode == 0, repaired.stdout[-3000:]
    left = {i: v for i, v in expected.items() if i not in lost}
    assert lost and _table_rows(base / "merged", ["id", "version"]) == left
    assert _metastore_statistics(url, "sized_it.merged", "day='2025-03-02'") == [
        f"{_files_figures(base / 'merged')}, {len(left)} rows",
        f"{_files_figures(day)}, {in_day - len(lost)} rows"]
