"""A new user's first commands, as `dbt` processes: `dbt init` with the answers typed on
stdin (dbt/include/sized_spark/profile_template.yml), then `dbt debug` and `dbt run` in the
project it made. method: session writes an embedded profile whose warehouse, Derby
metastore and derby.log live under the project's .spark/, and `dbt debug` checks Java, the
session, the helper jar, the metastore and the warehouse, showing only the session's
fields; a warehouse that cannot be written fails naming it and the fix. method: connect
writes the server's URL and its bound, and a `dbt debug` with no server there gives up
within that bound, naming the server (python_adapter/io/connect_retries.py).

Three Spark starts in all (the session's debug and run, the unwritable warehouse's debug);
the Connect client starts none."""
import os
import re
import socket
import subprocess
import time
from types import SimpleNamespace

import pytest
import yaml
from dbt.version import __version__ as DBT_VERSION

from benchmarks.lib.session import free_port
from tests.functional.dbt.test_dbt_project import DBT, _plain
from tests.functional.helpers import SHORT_JVM
from tests.functional.readers import duckdb_rows

pyspark = pytest.importorskip("pyspark")
PYSPARK_MAJOR = int(pyspark.__version__.split(".")[0])
needs_connect = pytest.mark.skipif(PYSPARK_MAJOR < 4, reason="method: connect needs pyspark 4")
# `  <check>: [<status> <detail>]`, as dbt/adapters/sized_spark/debug.py prints each check
CHECK = re.compile(r"^(?P<name>[\w .]+): \[(?P<status>OK|WARN|ERROR) ?(?P<detail>.*)\]$")
CONNECT_TIMEOUT, CONNECT_RETRIES = 2, 1
# dbt-core 1.12 ends `dbt init` with a `dbt debug` (--skip-debug turns it off); 1.11 does not
INIT_RUNS_DEBUG = tuple(int(p) for p in DBT_VERSION.split(".")[:2]) >= (1, 12)


def _dbt(cwd, *args, answers=None):
    """One `dbt` process in `cwd`, `answers` its stdin (dbt init's prompts read it). Returns
    its exit status, what it printed (colours removed, stdout then stderr) and its seconds."""
    # SIZED_SPARK_HOME is read by the integration project's profile only: without it, what
    # `dbt init` wrote alone decides where the session's state goes
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SIZED_SPARK_FAULT") and k != "SIZED_SPARK_HOME"}
    env.update({"SPARK_LOCAL_IP": "127.0.0.1", "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
                **SHORT_JVM})
    started = time.monotonic()
    done = subprocess.run([DBT, *args], cwd=cwd, env=env, input=answers or "",
                          capture_output=True, text=True, timeout=120)
    return SimpleNamespace(code=done.returncode, output=_plain(done.stdout + done.stderr),
                           seconds=time.monotonic() - started)


def _lines(output):
    """dbt's lines without their time stamps."""
    return [re.sub(r"^\d\d:\d\d:\d\d\s+", "", line).rstrip() for line in output.splitlines()]


def _checks(output):
    """{check: (status, detail)} of `dbt debug`'s check lines."""
    found = (CHECK.match(line) for line in _lines(output))
    return {m["name"]: (m["status"], m["detail"]) for m in found if m}


def _connection_fields(output):
    """The `key: value` lines `dbt debug` prints under "Connection:" (connection_info)."""
    lines = _lines(output)
    fields = {}
    for line in lines[lines.index("Connection:") + 1:]:
        key, sep, value = line.partition(": ")
        if not sep or " " in key:  # "Registered adapter: ...", the end of the block
            break
        fields[key] = value
    return fields


def _profile(profiles_dir, name):
    """The dev target dbt init wrote for project `name`."""
    profile = yaml.safe_load((profiles_dir / "profiles.yml").read_text())[name]
    assert profile["target"] == "dev"
    return profile["outputs"]["dev"]


def _write_profile(profiles_dir, name, target):
    profiles_dir.mkdir(parents=True, exist_ok=True)
    profile = {name: {"target": "dev", "outputs": {"dev": target}}}
    (profiles_dir / "profiles.yml").write_text(yaml.safe_dump(profile))


@pytest.fixture(scope="module")
def adapter_number(tmp_path_factory):
    """The number `dbt init` gives sized_spark in its list of the installed adapters (it
    depends on what else is installed): read off a `dbt init` given no answers, which lists
    them and stops at the prompt."""
    root = tmp_path_factory.mktemp("probe")
    done = _dbt(root, "init", "probe", "--profiles-dir", str(root))
    found = re.search(r"^\[(\d+)\] sized_spark$", done.output, re.M)
    assert found, done.output[-3000:]
    return found.group(1)


@pytest.fixture(scope="module")
def session_init(tmp_path_factory, adapter_number):
    """`dbt init starter` choosing sized_spark, then session, the defaults for the rest (its
    own debug skipped: the tests run `dbt debug` in the project)."""
    root = tmp_path_factory.mktemp("session")
    profiles = root / "profiles"
    skip = ["--skip-debug"] if INIT_RUNS_DEBUG else []
    init = _dbt(root, "init", "starter", "--profiles-dir", str(profiles), *skip,
                answers=f"{adapter_number}\n1\n\n\n")
    assert init.code == 0, init.output[-3000:]
    return SimpleNamespace(init=init, project=root / "starter", profiles=profiles)


@pytest.fixture(scope="module")
def connect_init(tmp_path_factory, adapter_number):
    """`dbt init remote` choosing sized_spark, then connect, a server URL where nothing
    listens and a bound of 2 s, 1 retry; dbt init's own debug (dbt-core 1.12) fails."""
    root = tmp_path_factory.mktemp("connect")
    profiles = root / "profiles"
    url = f"sc://127.0.0.1:{free_port()}"
    init = _dbt(root, "init", "remote", "--profiles-dir", str(profiles),
                answers=f"{adapter_number}\n2\n{url}\n{CONNECT_TIMEOUT}\n{CONNECT_RETRIES}\n\n\n")
    return SimpleNamespace(init=init, url=url, project=root / "remote", profiles=profiles)


def test_init_choosing_session_writes_an_embedded_profile_under_dot_spark(
        session_init, adapter_number):
    init = session_init.init
    assert init.code == 0, init.output[-3000:]
    assert f"[{adapter_number}] sized_spark" in init.output
    assert "[1] session: Spark runs inside dbt (tables under .spark/ in the project)" in \
        init.output
    target = _profile(session_init.profiles, "starter")
    params = target.pop("server_side_parameters")
    assert target == {"type": "sized_spark", "method": "session", "host": "localhost",
                      "schema": "analytics", "threads": 1}
    assert params["spark.sql.warehouse.dir"] == ".spark/warehouse"
    assert params["spark.hadoop.javax.jdo.option.ConnectionURL"] == \
        "jdbc:derby:;databaseName=.spark/metastore_db;create=true"
    assert params["spark.driver.extraJavaOptions"] == "-Dderby.system.home=.spark"
    # loopback only, no UI: nothing listens beyond this machine
    assert params["spark.driver.bindAddress"] == "127.0.0.1"
    assert params["spark.ui.enabled"] == "false"
    assert (session_init.project / "dbt_project.yml").is_file()


def test_debug_in_the_new_project_checks_every_part_and_shows_the_session_only(session_init):
    project = session_init.project
    done = _dbt(project, "debug", "--profiles-dir", str(session_init.profiles))
    assert done.code == 0, done.output[-4000:]
    checks = _checks(done.output)
    assert checks["Java"][0] == "OK", checks
    assert checks["Spark session"] == ("OK", f"Spark {pyspark.__version__} on local[*]")
    assert checks["helper jar"][0] in ("OK", "WARN"), checks  # runs work without it
    assert checks["metastore"] == (
        "OK", f"the embedded Derby metastore {project}/.spark/metastore_db answers")
    assert checks["warehouse"] == (
        "OK", f"file:{project}/.spark/warehouse (spark.sql.warehouse.dir) can be written and "
              f"committed to")
    assert checks["Connection test"][0] == "OK"
    assert _connection_fields(done.output) == {
        "method": "session", "schema": "analytics", "spark.master": "local[*]",
        "spark.sql.warehouse.dir": ".spark/warehouse",
        "spark.hadoop.javax.jdo.option.ConnectionURL":
            "jdbc:derby:;databaseName=.spark/metastore_db;create=true"}
    # the session's state went under .spark/, Derby's log too; none beside the project's files
    assert (project / ".spark" / "derby.log").is_file()
    assert not {"derby.log", "metastore_db", "spark-warehouse"} & set(os.listdir(project))


def test_run_builds_the_starter_models_into_the_projects_warehouse(session_init):
    project = session_init.project
    done = _dbt(project, "run", "--profiles-dir", str(session_init.profiles))
    assert done.code == 0, done.output[-4000:]
    assert "PASS=2 WARN=0 ERROR=0" in done.output
    table = project / ".spark" / "warehouse" / "analytics.db" / "my_first_dbt_model"
    assert list(table.glob("*.parquet")), sorted(os.listdir(table.parent))
    # the starter model's rows, read from its Parquet files by another engine
    assert duckdb_rows(table, ["id"]) == [(1,), (None,)]
    assert not {"metastore_db", "spark-warehouse"} & set(os.listdir(project))


def test_debug_of_a_warehouse_that_cannot_be_written_names_it_and_the_fix(session_init,
                                                                           tmp_path):
    # a directory below a regular file cannot be made, root or not
    blocker = tmp_path / "not_a_directory"
    blocker.write_text("")
    warehouse = blocker / "warehouse"
    target = _profile(session_init.profiles, "starter")
    target["server_side_parameters"]["spark.sql.warehouse.dir"] = str(warehouse)
    _write_profile(tmp_path / "profiles", "starter", target)
    done = _dbt(session_init.project, "debug", "--profiles-dir", str(tmp_path / "profiles"))
    assert done.code != 0, done.output[-4000:]
    checks = _checks(done.output)
    assert checks["metastore"][0] == "OK"  # only the warehouse is wrong
    status, detail = checks["warehouse"]
    assert status == "ERROR"
    assert detail.startswith(f"cannot write to file:{warehouse} (spark.sql.warehouse.dir): ")
    assert "Not a directory" in detail
    # dbt's summary repeats it with the way out
    assert (f"warehouse: {detail}. Make that directory writable by the user dbt runs as, or "
            f"set spark.sql.warehouse.dir in the profile's server_side_parameters") in \
        " ".join(_lines(done.output))


@needs_connect
def test_init_choosing_connect_writes_the_server_and_its_bound(connect_init):
    init = connect_init.init
    assert "[2] connect: a Spark Connect server (sc://host:port)" in init.output
    assert _profile(connect_init.profiles, "remote") == {
        "type": "sized_spark", "method": "connect", "host": connect_init.url,
        "connect_timeout": CONNECT_TIMEOUT, "connect_retries": CONNECT_RETRIES,
        "schema": "analytics", "threads": 1}
    assert init.seconds < 60, init.seconds
    if not INIT_RUNS_DEBUG:
        return
    # dbt init's own debug finds no server there, says so and does not hang
    assert f"the Spark Connect server at {connect_init.url} does not answer" in init.output
    assert "Your profile may need adjustments" in init.output


@needs_connect
@pytest.mark.parametrize("server", ["closed port", "silent listener"])
def test_debug_without_a_server_fails_within_the_bound_naming_it(connect_init, server,
                                                                 tmp_path):
    """A closed port refuses at once; a socket that accepts and never answers is the server
    that hangs (pyspark's own retries waited minutes on both)."""
    with socket.socket() as listener:
        url, profiles = connect_init.url, connect_init.profiles
        if server == "silent listener":  # the kernel accepts; nobody reads or writes
            listener.bind(("127.0.0.1", 0))
            listener.listen(64)
            url = f"sc://127.0.0.1:{listener.getsockname()[1]}"
            profiles = tmp_path / "profiles"
            _write_profile(profiles, "remote", {**_profile(connect_init.profiles, "remote"),
                                                "host": url})
        done = _dbt(connect_init.project, "debug", "--profiles-dir", str(profiles))
    assert done.code != 0, done.output[-4000:]
    # the bound is 2 s x 2 attempts; 60 s only tells "gave up" from "hung"
    assert done.seconds < 60, done.seconds
    assert _connection_fields(done.output) == {
        "method": "connect", "host": url, "schema": "analytics",
        "connect_timeout": str(CONNECT_TIMEOUT), "connect_retries": str(CONNECT_RETRIES)}
    status, detail = _checks(done.output)["Spark Connect server"]
    assert status == "ERROR"
    assert detail.startswith(f"the Spark Connect server at {url} does not answer (")
    assert (f"connect_timeout {CONNECT_TIMEOUT}, connect_retries {CONNECT_RETRIES}). Start "
            f"the server") in detail
    assert "check `host` in profiles.yml" in detail
    assert "Traceback" not in done.output
    print(f"{server}: dbt debug gave up in {done.seconds:.1f} s")
