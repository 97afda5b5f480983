"""dbt over `method: thrift`, against a real Spark Thrift server on loopback
(scripts/thrift_server.sh, jars of the pyspark wheel): dbt-spark's own materializations
build, and a sized_incremental model fails with the message naming `method: session` before
anything of it is written -- not its table, not even its pre-hook's.

One dbt process (plus ~20 s to start the server), then `show tables` over thrift with PyHive.
Select with `pytest -m thrift`; skipped only when Java is missing.
"""
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.functional.helpers import SHORT_JVM

REPO = Path(__file__).resolve().parents[3]
DBT = str(Path(sys.executable).with_name("dbt"))
SCRIPT = str(REPO / "scripts/thrift_server.sh")

pytestmark = pytest.mark.thrift


def _java_available():
    home = os.environ.get("JAVA_HOME")
    return bool(home and os.access(os.path.join(home, "bin", "java"), os.X_OK)) \
        or shutil.which("java") is not None


@pytest.fixture(scope="module")
def thrift_server(request, tmp_path_factory):
    """(host, port) of a Spark Thrift server; its pid is stopped when the module is done."""
    if not _java_available():
        pytest.skip("Java is missing: the Spark Thrift server needs a JVM (scripts/setup.sh installs Java 17)")
    state = tmp_path_factory.mktemp("thrift")
    env = {k: v for k, v in os.environ.items() if k != "SIZED_THRIFT_PORT"}  # a free port
    # the server lives for one dbt run of small models: the JIT's first tier only
    env.update({"SIZED_THRIFT_DIR": str(state), "PYTHON": sys.executable,
                "SPARK_LOCAL_IP": "127.0.0.1", **SHORT_JVM})

    def stop():
        pid_file = state / "pid"
        pid = int(pid_file.read_text()) if pid_file.exists() else None
        subprocess.run(["bash", SCRIPT, "stop"], env=env, capture_output=True, text=True,
                       timeout=120)
        if pid is not None:  # the script kills exactly this pid; make sure it is gone
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    request.addfinalizer(stop)
    started = subprocess.run(["bash", SCRIPT, "start"], env=env, capture_output=True,
                             text=True, timeout=300)
    assert started.returncode == 0, started.stdout + started.stderr
    return "127.0.0.1", int((state / "port").read_text())


def _show_tables(host, port, schema):
    from pyhive import hive

    conn = hive.connect(host=host, port=port, username="dbt")
    try:
        cur = conn.cursor()
        cur.execute(f"show tables in {schema}")
        # rows: (namespace, tableName, isTemporary)
        return {row[1] for row in cur.fetchall() if not row[2]}
    finally:
        conn.close()


def test_thrift_builds_dbt_spark_models_and_refuses_sized_incremental(thrift_server, tmp_path):
    host, port = thrift_server
    project = tmp_path / "dbt_thrift"
    shutil.copytree(REPO / "tests/functional/dbt_thrift", project)
    env = {**os.environ, "SIZED_THRIFT_PORT": str(port), "SPARK_LOCAL_IP": "127.0.0.1",
           "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
    out = subprocess.run([DBT, "run", "--profiles-dir", str(project)], cwd=project, env=env,
                         capture_output=True, text=True, timeout=600)
    text = out.stdout
    assert out.returncode != 0, text[-4000:]
    # dbt-spark's own materializations work over thrift
    assert "OK created sql table model sized_thrift.plain_table" in text, text[-4000:]
    assert "OK created sql view model sized_thrift.plain_view" in text, text[-4000:]
    assert "PASS=2" in text and "ERROR=2" in text, text[-4000:]
    # a Python model reaches dbt-spark's submission (Databricks only), not dbt-core's guard
    assert "Databricks cluster_id is required for all_purpose_cluster submission" in text, \
        text[-4000:]
    assert "submit_python_job is not intended" not in text
    # the sized model fails with the message naming method: session and method: connect
    assert ("sized_incremental model sized_thrift.sized_orders needs `method: session` or "
            "`method: connect`, but this profile uses `method: thrift`.") in text, text[-4000:]
    assert "Every sized_incremental strategy" in text
    assert "dbt-spark's own materializations (view, table, incremental)" in text
    # and nothing of it was written: no table, and its pre-hook did not run either
    tables = _show_tables(host, port, "sized_thrift")
    assert {"plain_table", "plain_view"} <= tables, tables
    assert "sized_orders" not in tables, tables
    assert "sized_orders_pre_hook" not in tables, tables
