"""dbt end to end on S3, the second module (beside test_dbt_on_s3.py, so the two run on both
pytest workers): the mini project's upsert killed mid-publish (the dbt process exits on the
spot), recovered, then clustered, restored and cleaned; tests/functional/dbt_s3's models over
`method: connect`, the Connect server's warehouse in a bucket of the S3 server."""
import json
import shutil

import pytest

from tests.functional import object_store
from tests.functional.dbt.test_dbt_project import REPO, _dbt_steps, _mini_project
from tests.functional.s3.test_dbt_on_s3 import UPSERTED, _completed, _env, _rows


@pytest.fixture(scope="module")
def mini_s3(s3_server, tmp_path_factory):
    project, home = _mini_project(tmp_path_factory.mktemp("mini_s3"))
    return project, home


# extended (about 5 worker-minutes of CI, the S3 run's longest test after the engine's steps):
# a write killed at each step on S3 and recovered is test_crashes_on_s3.py's, every service on
# S3 test_table_on_s3.py's, and this dbt scenario runs on local disk (test_dbt_project.py)
@pytest.mark.extended
def test_an_upsert_killed_mid_publish_on_s3_is_recovered_and_the_services_run(mini_s3,
                                                                             s3_server):
    """The mini project's orders on S3: the dbt process exits on the spot after two steps of
    the upsert's publish (a file copied aside, not yet deleted: at both paths); the next
    process's sized_recover rolls it back, the upsert runs again, a Hilbert clustering and a
    restore of the first commit follow, then a clean; each keeps every key once (the
    project's data test). The whole scenario, with the timeline, layout, report and
    compaction operations, runs on local disk and over Connect (test_dbt_project.py)."""
    project, home = mini_s3
    env = _env(s3_server)
    first, *_, crashed = _dbt_steps(
        project, home, "s3", ["run", "--select", "orders"],
        ["!env", "SIZED_SPARK_FAULT", "publish:2"], ["!env", "SIZED_SPARK_FAULT_MODE", "exit"],
        ["run", "--select", "orders", "--vars", "{batch: 2}"], dies=True, env_extra=env)
    assert first.returncode == 0, first.stdout[-4000:]
    assert crashed.returncode == 137, crashed.stdout[-4000:]  # the fault's os._exit
    first_instant = _completed(s3_server, "orders")[0]
    recovered, rerun, clustered, check2, restored, check1, cleaned = _dbt_steps(
        project, home, "s3",
        ["run-operation", "sized_recover", "--args", "{relation: sized_it.orders}"],
        ["build", "--select", "orders", "orders_hold_each_key_once", "--vars", "{batch: 2}"],
        ["run-operation", "sized_cluster", "--args",
         "{relation: sized_it.orders, cluster_by: [value, payload], strategy: hilbert}"],
        ["test", "--select", "orders_hold_each_key_once", "--vars", "{batch: 2}"],
        ["run-operation", "sized_restore", "--args",
         f"{{relation: sized_it.orders, instant: '{first_instant}'}}"],
        ["test", "--select", "orders_hold_each_key_once", "--vars", "{batch: 1}"],
        ["run-operation", "sized_clean", "--args",
         "{relation: sized_it.orders, retain_commits: 1, retain_hours: 0}"], env_extra=env)
    assert recovered.returncode == 0, recovered.stdout[-4000:]
    assert "recovering stale writer lock" in recovered.stdout
    assert recovered.stdout.count("1 unfinished instant rolled back") == 1
    assert rerun.returncode == 0 and "PASS=2" in rerun.stdout, rerun.stdout[-4000:]
    assert clustered.returncode == 0 and "clustering: 1 plan, " in clustered.stdout
    for step in (check2, restored, check1, cleaned):
        assert step.returncode == 0, step.stdout[-4000:]
    assert f"Restored sized_it.orders to {first_instant}" in restored.stdout
    rows = _rows(s3_server, "orders", ["id"])   # the first commit's, after the restore
    assert sorted(rows) == [(i,) for i in range(1, 3001)]



CONNECT_BUCKET = "connect"


@pytest.fixture(scope="module")
def over_connect(s3_server, tmp_path_factory):
    """tests/functional/dbt_s3's models over `method: connect`: a Spark Connect server
    (`sized-spark serve connect start --s3`) keeps its warehouse in a bucket of the S3
    server; the dbt client sees neither S3 nor a Java (tests/functional/dbt_connect.py)."""
    from tests.functional.dbt_connect import connect_server

    tmp = tmp_path_factory.mktemp("s3_connect")
    project, home = tmp / "project", tmp / "spark"
    shutil.copytree(REPO / "tests/functional/dbt_s3", project)
    shutil.copy(REPO / "integration_tests/profiles.yml", project / "profiles.yml")
    object_store.arrow_store(s3_server).create_dir(CONNECT_BUCKET)
    s3_env = {**_env(s3_server), "SIZED_S3_BUCKET": CONNECT_BUCKET}
    with connect_server(tmp / "server", s3_env):
        steps = _dbt_steps(project, home, "connect",
                           ["run", "--select", "s3_events", "s3_python"],
                           ["run", "--select", "s3_events", "--vars",
                            json.dumps({"version": 2})])
    return steps


# extended: the server's writes on S3 are the engine's S3 path, which the session's scenarios
# above and test_table_on_s3.py run, over Connect (test_connect.py): about 4 minutes of CI
@pytest.mark.extended
def test_over_connect_the_server_writes_and_upserts_on_s3(over_connect, s3_server):
    for step in over_connect:
        assert step.returncode == 0, step.stdout[-4000:]
    prefix = f"s3a://{CONNECT_BUCKET}/warehouse/sized_it.db"
    events = object_store.pyarrow_rows(s3_server, f"{prefix}/s3_events", ["id", "tag"])
    assert events == UPSERTED
    days = object_store.pyarrow_rows(s3_server, f"{prefix}/s3_python", ["count"])
    assert days == [(100,)] * 3
