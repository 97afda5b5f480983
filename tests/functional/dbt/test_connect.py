"""dbt over `method: connect`: the dbt process is a Spark Connect client with no JVM that
cannot see the warehouse (tests/functional/dbt_connect.py), against a Connect server started
by scripts/connect_server.sh with our extension. The scenarios are the session's own
(test_dbt_project.py), run over Connect: the same assertions hold."""
import re
import shutil
import subprocess

import pytest

from tests.functional.dbt.test_dbt_project import (REPO, _dbt_steps, _plain,
                                                   upsert_crash_recovery_and_clustering)
from tests.functional.dbt_connect import connect_server, drop_schema

PORT = "15102"


def _unshare_works():
    try:
        return subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0
    except FileNotFoundError:
        return False


pytestmark = pytest.mark.skipif(
    not _unshare_works(), reason="needs `unshare -m` (root or CAP_SYS_ADMIN) to hide the "
                                 "warehouse and Java from the dbt client")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    state = tmp_path_factory.mktemp("connect")
    with connect_server(state, PORT) as (url, _warehouse):
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


def test_integration_project_over_connect(server, tmp_path):
    """dbt's own views, tables, seeds, tests and incrementals and every sized model of the
    integration project, built and then built again incrementally, with its data tests
    (each source row once, files sized)."""
    url, state = server
    drop_schema(url, "sized_it")
    project = _project(tmp_path, "integration_tests")
    small = ["--vars", "{event_days: 20, base_rows_per_day: 300}"]
    first, second = _dbt_steps(project, state, "connect", ["build", *small], ["build", *small])
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
    assert "Completed successfully" in first.stdout
    assert second.returncode == 0, second.stdout[-4000:]
    out = _plain(first.stdout)
    assert "OK created sql sized_incremental model sized_it.events_upsert" in out
    assert "ERROR=0" in second.stdout


def test_a_server_without_the_extension_fails_the_model_naming_what_to_add(tmp_path):
    """A Connect server started without our jar: the sized model fails before anything is
    written, and the error says which --jars / --conf lines the server's start command
    needs; dbt's own models still run there."""
    import os
    import subprocess
    import sys

    from tests.functional.dbt_connect import SERVER, java_dirs

    spark_home = os.path.dirname(__import__("pyspark").__file__)
    state = tmp_path / "bare"
    state.mkdir()
    server = subprocess.Popen(
        [f"{spark_home}/bin/spark-submit", "--class",
         "org.apache.spark.sql.connect.service.SparkConnectServer", "--master", "local[1]",
         "--conf", "spark.connect.grpc.binding.port=15103",
         "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
         "--conf", "spark.ui.enabled=false", "--conf", "spark.driver.host=127.0.0.1",
         "--conf", f"spark.sql.warehouse.dir={state}/warehouse",
         "--conf", f"spark.driver.extraJavaOptions=-Dderby.system.home={state}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=state,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    try:
        import socket
        import time
        for _ in range(120):
            try:
                socket.create_connection(("127.0.0.1", 15103), timeout=1).close()
                break
            except OSError:
                time.sleep(1)
        SERVER.update(warehouse=str(state / "warehouse"), port="15103")
        project = _project(tmp_path, "tests/functional/dbt_mini")
        (run,) = _dbt_steps(project, state, "connect", ["run", "--select", "orders"])
        assert run.returncode != 0
        text = _plain(run.stdout)
        assert "has no dbt-sized-spark extension" in text, text[-3000:]
        assert "spark.connect.extensions.relation.classes=sizedspark.connect.SizedOps" in text
        assert not (state / "warehouse" / "sized_it.db" / "orders").exists()
    finally:
        SERVER.clear()
        server.terminate()
        server.wait(timeout=60)


SLOW_MODEL = """
{{ config(materialized='sized_incremental', partition_by=['day'], unique_key='id',
          incremental_strategy='upsert', target_file_size='1MB') }}
select id, date_add(date'2025-03-01', id % 3) as day,
{% if var('slow', false) %}
       aggregate(sequence(1, 3000), sha2(cast(id as string), 256), (acc, x) -> sha2(acc, 256))
{% else %}
       sha2(cast(id as string), 256)
{% endif %} as payload
from (select explode(sequence(1, 20000)) as id)
"""


def test_a_dead_clients_job_still_running_on_the_server_is_stopped_before_recovery(
        server, tmp_path):
    """A dbt client dies (kill -9) three seconds into an upsert whose Spark jobs take about
    half a minute: the server keeps running them, waiting for the client to reattach. The
    next run takes over the dead client's lock, ends its Connect session (its operations
    interrupted, its jobs cancelled and waited for) and only then rolls its instant back, so
    nothing of the dead write lands afterwards: the table holds exactly the rows of the
    last commit and the dead instant's staging directory stays gone."""
    import time

    import duckdb

    url, state = server
    drop_schema(url, "sized_it")
    project = _project(tmp_path, "tests/functional/dbt_mini")
    (project / "models" / "slow.sql").write_text(SLOW_MODEL)
    first, _, _, died = _dbt_steps(
        project, state, "connect", ["run", "--select", "slow"],
        ["!env", "SIZED_SPARK_FAULT", "requested"],
        ["!env", "SIZED_SPARK_FAULT_MODE", "exit_after:3"],
        ["run", "--select", "slow", "--vars", "{slow: true}"], dies=True)
    (recovered,) = _dbt_steps(project, state, "connect", ["run", "--select", "slow"])
    assert first.returncode == 0, first.stdout[-3000:]
    assert died.returncode == 137, died.stdout[-3000:]
    assert recovered.returncode == 0, recovered.stdout[-4000:]
    out = _plain(recovered.stdout)
    assert "recovering stale writer lock" in out, out[-3000:]
    ended = re.search(r"ended the Spark Connect session \S+ of the former writer: (\d+) "
                      r"operation\(s\) interrupted, (\d+) job\(s\) cancelled", out)
    assert ended and int(ended.group(1)) + int(ended.group(2)) >= 1, out[-3000:]
    assert "job(s) still running" not in out
    assert "rolling back unfinished commit" in out
    time.sleep(5)  # a dead job that were still running would have written by now
    table = state / "warehouse" / "sized_it.db" / "slow"
    rows = duckdb.sql(f"select count(*), count(distinct id) from "
                      f"read_parquet('{table}/**/*.parquet', hive_partitioning=true)").fetchall()
    assert rows == [(20000, 20000)]
    staging = state / "warehouse" / "sized_it.db" / ".sized" / "slow" / "staging"
    assert not staging.exists() or not any(p.is_file() for p in staging.rglob("*")), \
        sorted(str(p) for p in staging.rglob("*"))
