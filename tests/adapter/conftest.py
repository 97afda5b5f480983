"""dbt's adapter test suite (dbt-tests-adapter) against an embedded Spark session.

The profile is `type: sized_spark, method: session`: PySpark runs inside the pytest
process, with a Derby metastore and the warehouse under one temporary directory made for
the test session, so nothing is written into the repository.
"""
import os

import pytest

# Spark binds to loopback only; must be set before the JVM starts.
os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"

# dbt's pytest plugin (the `project` fixture and friends). dbt-spark registers it with
# `pytest_plugins = ["dbt.tests.fixtures.project"]` in its top-level tests/conftest.py; pytest
# refuses `pytest_plugins` in a conftest below the rootdir when the whole suite is collected
# (`pytest` from the repo root with testpaths = tests), so the plugin's fixtures are
# imported here instead, which scopes them to tests/adapter. The module defines fixtures
# only (no hooks), so this is equivalent.
from dbt.tests.fixtures.project import *  # noqa: E402,F401,F403


def pytest_configure(config):
    # dbt-tests-adapter's base classes declare class-scoped fixtures as instance methods,
    # which pytest 9 warns about once per fixture; nothing here can change that.
    config.addinivalue_line(
        "filterwarnings",
        "ignore:Class-scoped fixtures defined as instance methods are deprecated"
        ":pytest.PytestRemovedIn10Warning",
    )


@pytest.fixture(scope="session")
def spark_home(tmp_path_factory):
    """One directory for the warehouse, the Derby metastore and Derby's log."""
    return tmp_path_factory.mktemp("spark_home")


@pytest.fixture(scope="session")
def dbt_profile_target(spark_home):
    home = str(spark_home)
    return {
        "type": "sized_spark",
        "method": "session",
        "host": "localhost",
        "threads": 1,
        "server_side_parameters": {
            "spark.master": "local[2]",
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "4",
            "spark.sql.warehouse.dir": os.path.join(home, "warehouse"),
            "spark.hadoop.javax.jdo.option.ConnectionURL": (
                f"jdbc:derby:;databaseName={os.path.join(home, 'metastore_db')};create=true"
            ),
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={home}",
        },
    }


@pytest.fixture(scope="class", autouse=True)
def drop_session_temp_views():
    """Start every test class without temporary views left by earlier classes.

    Each dbt CLI invocation has its own SparkSession, so temporary views (dbt-spark's
    incremental materialization leaves `<model>__dbt_tmp` behind) die with the process.
    Here every invocation shares the pytest process's session, so drop them between
    classes to keep the classes independent. What such leftovers do to the adapter within
    one process is pinned by test_session_temp_views.py.
    """
    from pyspark.sql import SparkSession

    session = SparkSession._instantiatedSession
    if session is not None and session._jsc is not None:
        for row in session.sql("show tables").collect():
            if row.isTemporary:
                session.catalog.dropTempView(row.tableName)
    yield


@pytest.fixture(scope="session", autouse=True)
def stop_spark_session():
    """Stop the embedded SparkSession at the end of the run so the JVM exits."""
    yield
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return
    session = SparkSession.getActiveSession()
    if session is None:
        # The active session is per thread; dbt may have opened it on a worker thread,
        # so fall back to the process's instantiated (default) session.
        session = SparkSession._instantiatedSession
    if session is not None:
        session.stop()
