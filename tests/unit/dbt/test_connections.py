"""The remote methods (thrift, http, odbc) are refused before any connection opens: real
credentials, the real connection manager, no Spark and no server. A real thrift server run
is in tests/functional/dbt/test_connection_methods.py; http and odbc cannot be started here."""
import json
import multiprocessing
import os
import pathlib
import subprocess
import sys
import types
from types import SimpleNamespace

import pytest
from dbt.adapters.spark.connections import SparkConnectionMethod
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.sized_spark.connections import SizedSparkConnectionManager
from dbt.adapters.sized_spark.credentials import SizedSparkCredentials

REPO = pathlib.Path(__file__).resolve().parents[3]
REMOTE = {
    "thrift": dict(host="127.0.0.1", port=10000),
    "http": dict(host="https://spark.example.com", port=443, token="t", cluster="c",
                 organization="0"),
    "odbc": dict(host="spark.example.com", port=443, token="t", endpoint="e",
                 driver="/opt/simba/spark/lib/64/libsparkodbc_sb64.so"),
}


def _manager(method, monkeypatch, **fields):
    if method == "odbc":
        # dbt-spark's credentials import pyodbc (it needs the unixODBC library, not installed
        # here); an empty stand-in is enough, the refusal happens before any driver call
        monkeypatch.setitem(sys.modules, "pyodbc", types.ModuleType("pyodbc"))
    creds = SizedSparkCredentials(method=SparkConnectionMethod(method), schema="analytics",
                                  **fields)
    profile = SimpleNamespace(credentials=creds)  # the manager reads profile.credentials only
    return SizedSparkConnectionManager(profile, multiprocessing.get_context("spawn"))


@pytest.mark.parametrize("method", sorted(REMOTE))
def test_remote_methods_fail_with_a_message_naming_method_session(method, monkeypatch):
    manager = _manager(method, monkeypatch, **REMOTE[method])
    with pytest.raises(DbtRuntimeError) as err:
        manager.require_session("sized_incremental model analytics.events")
    message = str(err.value)
    assert ("sized_incremental model analytics.events needs `method: session` or "
            f"`method: connect`, but this profile uses `method: {method}`.") in message
    # which strategies need the session: all of them
    assert ("Every sized_incremental strategy (full build, upsert, insert, insert_overwrite, "
            "microbatch) "
            "and the sized_* operations") in message
    # and what works over this method
    assert ("one of dbt-spark's own materializations (view, table, incremental), which work "
            f"over `method: {method}`") in message


@pytest.mark.parametrize("method", sorted(REMOTE))
def test_spark_session_refuses_before_opening_a_connection(method, monkeypatch):
    # no connection was acquired: had it got past the check, get_thread_connection() would
    # raise dbt's InvalidConnectionError instead of this message
    manager = _manager(method, monkeypatch, **REMOTE[method])
    with pytest.raises(DbtRuntimeError, match=f"sized_layout needs `method: session` or "
                                              f"`method: connect`, but this profile uses "
                                              f"`method: {method}`"):
        manager.spark_session("sized_layout")


PYSPARK_MAJOR = int(__import__("pyspark").__version__.split(".")[0])


@pytest.mark.skipif(PYSPARK_MAJOR < 4, reason="method: connect needs pyspark 4")
def test_connect_method_passes_the_check_and_needs_a_spark_connect_url(monkeypatch):
    creds = SizedSparkCredentials(method="connect", schema="analytics",
                                  host="sc://spark.internal:15002/;token=x")
    assert creds.is_session and creds.is_connect
    profile = SimpleNamespace(credentials=creds)
    manager = SizedSparkConnectionManager(profile, multiprocessing.get_context("spawn"))
    assert manager.require_session("sized_incremental model analytics.events") is None
    with pytest.raises(DbtRuntimeError, match=r"method: connect needs `host` to be a Spark "
                                              r"Connect URL such as sc://.*got host: "
                                              r"'spark.internal:15002'"):
        SizedSparkCredentials(method="connect", schema="analytics", host="spark.internal:15002")


@pytest.mark.skipif(PYSPARK_MAJOR >= 4, reason="pyspark 3.5's refusal")
def test_connect_method_on_pyspark_3_5_says_it_needs_pyspark_4():
    with pytest.raises(DbtRuntimeError, match=r"method: connect needs pyspark 4 \(pyspark 3.5 "
                                              r"runs method: session only\)"):
        SizedSparkCredentials(method="connect", schema="analytics",
                              host="sc://spark.internal:15002")


def test_session_method_passes_the_check(monkeypatch):
    manager = _manager("session", monkeypatch, host="localhost")
    assert manager.require_session("sized_incremental model analytics.events") is None


def test_importing_the_plugin_leaves_the_environment_as_it_was():
    """A cluster's driver (YARN, Kubernetes, a standalone master elsewhere) must not bind to
    loopback because the plugin was imported: only a local session sets anything, at open."""
    code = ("import json, os; before = dict(os.environ); "
            "import dbt.adapters.sized_spark, dbt.adapters.sized_spark.connections; "
            "print(json.dumps([before == dict(os.environ), "
            "[k for k in ('SPARK_LOCAL_IP', 'PYSPARK_PYTHON') if k in os.environ]]))")
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_LOCAL_IP", "PYSPARK_PYTHON")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [True, []]


@pytest.mark.parametrize("sql, reads", [
    ("select 1", True),
    ('/* {"app": "dbt", "node_id": "model.p.m"} */\nselect * from t', True),
    ("-- a comment\n  WITH x AS (select 1) select * from x", True),
    ("(select 1) union all (select 2)", True),
    ("show table extended in s like '*'", True),
    ("describe table extended s.t", True),
    ('/* {"app": "dbt"} */ alter table s.t set tblproperties (\'a\' = \'b\')', False),
    ("create or replace view s.v as select * from s.t", False),
    ("insert overwrite table s.t select 1", False),
    ("comment on table s.t is 'x'", False),
    ("analyze table s.t compute statistics", False),
    ("", False),
])
def test_only_statements_that_read_go_before_the_settling_of_sized_commits(sql, reads):
    """What dbt sends that may alter a table's metadata waits for the engine's commits to
    settle (their statistics), so a hook's ALTER and a statistics write never race."""
    from dbt.adapters.sized_spark.connections import reads_only

    assert reads_only(sql) is reads
