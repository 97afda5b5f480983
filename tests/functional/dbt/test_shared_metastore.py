"""The production shape: dbt processes on several hosts and a Spark reader sharing one Hive
metastore service (scripts/metastore.sh: Hive's metastore server backed by PostgreSQL, on
127.0.0.1). On host pod-b (its own UTS namespace, `unshare -u`), a dbt process builds the
table, then its next run is killed -9 while it publishes; two dbt processes on this host,
started together, wait for pod-b's lease to expire, one takes the table over and rolls
pod-b's instant back, the other queues behind it; a separate Spark process then reads
exactly the rows of the last commit through the catalog."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tests.functional.dbt.test_dbt_project import DBT, REPO, step_succeeded, steps_command
from tests.functional.helpers import SHORT_JVM
from tests.functional.readers import duckdb_rows

METASTORE_PORT, PG_PORT = "9183", "5533"
READER = """
import sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.hadoop.hive.metastore.uris", sys.argv[1]).enableHiveSupport().getOrCreate())
rows = spark.sql("select id, value from sized_it.orders").collect()
print("ROWS", sorted((r.id, r.value) for r in rows))
spark.stop()
"""


def _other_host_can_be_simulated():
    try:
        return subprocess.run(["unshare", "-u", "true"], capture_output=True).returncode == 0
    except OSError:
        return False


@pytest.fixture(scope="module")
def metastore(tmp_path_factory):
    """The metastore service of scripts/metastore.sh; stopped (its two pids) at the end."""
    env = {**os.environ, "SIZED_METASTORE_DIR": str(tmp_path_factory.mktemp("metastore")),
           "SIZED_METASTORE_PORT": METASTORE_PORT, "SIZED_METASTORE_PG_PORT": PG_PORT,
           "PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    script = str(REPO / "scripts/metastore.sh")
    started = subprocess.run(["bash", script, "start"], env=env, capture_output=True, text=True,
                             timeout=600)
    assert started.returncode == 0, started.stdout + started.stderr
    uri = started.stdout.strip().splitlines()[-1]
    assert uri == f"thrift://127.0.0.1:{METASTORE_PORT}"
    yield uri
    subprocess.run(["bash", script, "stop"], env=env, capture_output=True, text=True)


@pytest.mark.skipif(not _other_host_can_be_simulated(),
                    reason="needs `unshare -u` (root, or user namespaces) for a second hostname")
def test_writers_on_two_hosts_and_a_reader_share_one_metastore(metastore, tmp_path):
    project, home = tmp_path / "mini", tmp_path / "spark"
    shutil.copytree(REPO / "tests/functional/dbt_mini", project)
    shutil.copy(REPO / "integration_tests/profiles.yml", project / "profiles.yml")
    shared = {"SIZED_METASTORE_URI": metastore}

    # pod-b: the first run, then batch 2 with a 10s lease, paused after moving two files,
    # then killed -9 (one process, as an orchestrator's pod runs its commands)
    marker = tmp_path / "paused"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIZED_SPARK_FAULT")}
    # every process here is short: the JIT's first tier only (1:41 against 1:58 alone)
    env.update({"SPARK_LOCAL_IP": "127.0.0.1", "SIZED_SPARK_HOME": str(home), **shared,
                **SHORT_JVM, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
                "SIZED_SPARK_FAULT_MODE": "pause",
                "SIZED_SPARK_FAULT_MARKER": str(marker)})
    steps = steps_command(project, "embedded", ["run", "--select", "orders"],
                          ["!env", "SIZED_SPARK_FAULT", "publish:2"],
                          ["run", "--select", "orders", "--vars", "{batch: 2, lock_lease: 10s}"])
    pod_b_log = tmp_path / "pod-b.out"
    with open(pod_b_log, "w") as log:
        other = subprocess.Popen(
            ["unshare", "-u", "sh", "-c", 'hostname pod-b && exec "$0" "$@"', *steps],
            cwd=project, env=env, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 600
        while not marker.exists() and other.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert marker.exists(), (f"pod-b's run never reached publish (exit {other.poll()}):\n"
                                 + pod_b_log.read_text()[-4000:])
        assert step_succeeded(pod_b_log.read_text(), 0)  # its first run
        lock = json.loads((home / "warehouse/sized_it.db/.sized/orders/lock").read_text())
        assert lock["host"] == "pod-b" and lock["pid"] == other.pid
    finally:
        other.send_signal(signal.SIGKILL)  # exactly the process this test started
        other.wait()

    # two dbt processes on this host at once, each waiting up to 4m (shorter than the
    # default 5m lease: they get through only by pod-b's 10s lease; a loaded 2-core machine
    # needs more than 2m for one to wait out the other's run); one takes pod-b's lock
    # over and rolls its instant back, the other waits for it or comes after it
    runs = [subprocess.Popen([DBT, "run", "--select", "orders", "--vars",
                              "{batch: 2, lock_timeout: 4m}", "--profiles-dir", str(project),
                              "--target", "embedded", "--log-path", str(tmp_path / f"logs{i}"),
                              "--target-path", str(tmp_path / f"target{i}")],
                             cwd=project, env={**env, "SIZED_SPARK_FAULT": ""},
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for i in range(2)]
    outs = [run.communicate(timeout=900)[0] for run in runs]
    for run, out in zip(runs, outs):
        assert run.returncode == 0, "\n---\n".join(o[-3000:] for o in outs)
    both = "".join(outs)
    # (whether the second also waited for the first depends on timing: tests/functional/table/
    # test_lock.py shows the wait itself)
    assert len(re.findall(r"recovering stale writer lock of pid \d+ on pod-b \(its lease "
                          r"expired", both)) == 1, both[-4000:]
    assert both.count("rolling back unfinished commit") == 1

    # a separate Spark process reads the table through the shared catalog
    read = subprocess.run([sys.executable, "-c", READER, metastore], env=env,
                          capture_output=True, text=True, timeout=600)
    assert read.returncode == 0, read.stderr[-4000:]
    expected = sorted((i, i * 10 + (1 if i <= 3000 and i % 3 == 0 else 0))
                      for i in range(1, 4001))
    assert f"ROWS {expected}" in read.stdout
    assert duckdb_rows(home / "warehouse/sized_it.db/orders", ["id", "value"]) == \
        sorted(expected, key=repr)
