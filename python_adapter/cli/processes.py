"""The processes behind `sized-spark serve`: started in the background with their output in
a log, recorded by pid in a state directory, waited for until they answer on their port,
and stopped by those pids alone (TERM, then KILL after a grace), never by name. What they
need from this machine (pyspark's Spark, Java) is looked up here with the way to get it."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from typing import Callable, List, Mapping, Optional, Sequence

from python_adapter.errors import ConfigError

STOP_GRACE_S = 30


def answers(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:port."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def free_ports(count: int) -> List[int]:
    """`count` distinct ports free on 127.0.0.1 now (held together while the kernel picks
    them, so none repeats)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def running_pids(pid_file: str) -> Optional[List[int]]:
    """The pids the file records, when every one of them runs; else None."""
    try:
        with open(pid_file, encoding="utf-8") as fh:
            pids = [int(p) for p in fh.read().split()]
        for pid in pids:
            os.kill(pid, 0)
        return pids or None
    except (OSError, ValueError):
        return None


def record(pid_file: str, pids: Sequence[int]) -> None:
    with open(pid_file, "w", encoding="utf-8") as fh:
        fh.write("\n".join(str(p) for p in pids))


def spawn(command: Sequence[str], env: Mapping[str, str], log_path: str,
          cwd: Optional[str] = None) -> subprocess.Popen:
    """The command in the background (its own session: a dbt run's Ctrl-C does not reach it),
    its output appended to log_path."""
    with open(log_path, "ab") as log:
        return subprocess.Popen(list(command), env=dict(env), stdout=log, stderr=log,
                                stdin=subprocess.DEVNULL, start_new_session=True, cwd=cwd)


def wait_ready(ready: Callable[[], bool], proc: subprocess.Popen, timeout_s: float,
               what: str, log_path: str) -> None:
    """Until ready() holds; ConfigError (naming the log, with its last lines) when the
    process exits first or time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ConfigError(f"{what} exited at start ({proc.returncode}); its log: "
                              f"{log_path}\n{tail(log_path)}")
        if ready():
            return
        time.sleep(0.5)
    raise ConfigError(f"{what} did not answer within {timeout_s:.0f} s; its log: {log_path}\n"
                      f"{tail(log_path)}")


def tail(path: str, lines: int = 20) -> str:
    try:
        with open(path, "rb") as fh:
            return b"\n".join(fh.read().splitlines()[-lines:]).decode(errors="replace")
    except OSError:
        return ""


def stop(pid_file: str) -> bool:
    """TERM each recorded pid, KILL those left after the grace; the record removed. False
    when none was running."""
    pids = running_pids(pid_file) or []
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in pids:
        if _alive(pid):
            _signal(pid, signal.SIGKILL)
    try:
        os.remove(pid_file)
    except FileNotFoundError:
        pass
    return bool(pids)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def _alive(pid: int) -> bool:
    try:  # a process this one started is its child: gone only once waited for
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def spark_home(env: Mapping[str, str]) -> str:
    """$SPARK_HOME, else the installed pyspark's (its bin/ and jars/)."""
    if env.get("SPARK_HOME"):
        return env["SPARK_HOME"]
    try:
        import pyspark
    except ImportError:
        raise ConfigError("this service runs Spark from the pyspark package, which is not "
                          "installed for " + sys.executable + ": pip install "
                          "'dbt-sized-spark[session]'") from None
    home = os.path.dirname(pyspark.__file__)
    if not os.path.isdir(os.path.join(home, "jars")):
        raise ConfigError(f"the pyspark at {home} has no Spark jars (pyspark-client, the "
                          f"Connect client alone?): pip install 'dbt-sized-spark[session]'")
    return home


def require_java(env: Mapping[str, str]) -> str:
    """The `java` Spark will run; ConfigError naming the way to Java 17 when there is none."""
    found = (os.path.join(env["JAVA_HOME"], "bin", "java") if env.get("JAVA_HOME")
             else shutil.which("java"))
    if not found or not os.access(found, os.X_OK):
        raise ConfigError("Spark needs Java 17 (or 21), and none was found (JAVA_HOME, or "
                          "`java` on the PATH): on Debian or Ubuntu, apt-get install "
                          "openjdk-17-jre-headless")
    return found
