"""A Spark Connect server killed (kill -9) while a client publishes a commit (issue 61,
item 9): the write fails within the profile's bound (connect_timeout x (connect_retries +
1)) with one error naming the server, the table, the unfinished commit it left and what
rolls it back; that rollback, by the table's next writer, leaves exactly the rows of the
last completed commit. The client is a process of its own (tests/functional/connect_gone.py,
no JVM); the rollback is the commit protocol's recovery, run here on the server's
warehouse, which is this machine's disk."""
import re
import subprocess
import sys

import pytest

from python_adapter.io.fs import HadoopFS
from python_adapter.table.commit import CommitProtocol
from python_adapter.table.lock import forget_held_locks
from tests.functional.dbt.test_dbt_project import REPO
from tests.functional.dbt_connect import connect_server
from tests.functional.readers import duckdb_rows

pyspark = pytest.importorskip("pyspark")
pytestmark = pytest.mark.skipif(int(pyspark.__version__.split(".")[0]) < 4,
                                reason="the Connect server extension is built for Spark 4")


def test_a_server_killed_mid_publish_is_named_with_the_unfinished_commit(spark, tmp_path):
    state = tmp_path / "connect"
    with connect_server(state) as (url, warehouse):
        done = subprocess.run([sys.executable, str(REPO / "tests/functional/connect_gone.py"),
                               url, str(state / "pid")], capture_output=True, text=True,
                              timeout=600, cwd=REPO, env={"PYTHONPATH": str(REPO),
                                                          "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [line] = [l for l in done.stdout.splitlines() if l.startswith("ERROR ")]
    _, seconds, kind, message = line.split(" ", 3)
    assert kind == "ConnectionLostError"
    assert float(seconds) < 2.0 * 2 + 3  # the bound (2 attempts of 2 s), and a little
    assert message.count(f"the Spark Connect server at {url} does not answer") == 1
    table_dir = warehouse / "ck.db" / "t"
    timeline = warehouse / "ck.db" / ".sized" / "t" / "timeline"
    [unfinished] = sorted(p.name.split(".")[0] for p in timeline.iterdir()
                          if p.name.endswith(".inflight"))
    assert (f"ck.t holds the unfinished commit {unfinished} of this run, which the next run "
            f"rolls back before it writes (or dbt run-operation sized_recover --args "
            f"'{{relation: ck.t}}', once the server is back)") in message
    assert "Traceback" not in done.stdout + done.stderr

    forget_held_locks()
    fs = HadoopFS(spark)
    proto = CommitProtocol(fs, fs.qualify(str(table_dir)), log=lambda m: None)
    proto.acquire_lock("test")  # the dead client's lock: its pid is gone
    try:
        assert [i.instant for i in proto.recover()] == [unfinished]
    finally:
        proto.release_lock()
    assert duckdb_rows(table_dir, ["id", "tag"]) == sorted(
        ((i, f"a{i}") for i in range(4000)), key=repr)
    assert not re.search(r"\.inflight$", " ".join(p.name for p in timeline.iterdir()))
