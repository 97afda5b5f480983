"""dbt over `method: connect` in the tests: a Spark Connect server started by
scripts/connect_server.sh (its warehouse and Derby metastore in a directory of the test's),
and dbt clients that can neither see that warehouse nor start a JVM: each runs in a mount
namespace of its own (`unshare -m`) with an empty tmpfs over the warehouse and over the
JVMs' directory, so a file access or a Java start on the dbt host fails the test instead of
passing by accident."""
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

REPO = Path(__file__).resolve().parents[2]
SCRIPT = str(REPO / "scripts/connect_server.sh")
# the server the tests of this process started: {"warehouse": path, "port": port}
SERVER: Dict[str, str] = {}


def java_dirs() -> List[str]:
    """The directories holding this machine's Java (the JVMs' home and $JAVA_HOME)."""
    found = set()
    java = shutil.which("java")
    if java:
        home = Path(os.path.realpath(java)).parents[1]  # .../<jdk>/bin/java
        found.add(str(home.parent if home.parent.name == "jvm" else home))
    if os.environ.get("JAVA_HOME"):
        found.add(os.environ["JAVA_HOME"])
    return sorted(found)


@contextmanager
def connect_server(state: Path, s3_env: Optional[Dict[str, str]] = None
                   ) -> Iterator[Tuple[str, Path]]:
    """A Connect server with our extension on a free port of 127.0.0.1 (a fixed one could be
    another worker's server's, which a killed server's client would then reach), its state
    (warehouse, metastore, log) in `state`; stopped by its pid on exit. Yields (URL, warehouse).
    s3_env: the SIZED_S3_* settings of a local S3 server the server keeps its warehouse on
    (`--s3`; the yielded warehouse is then a local directory that stays empty)."""
    from benchmarks.lib.session import free_port

    port = str(free_port())
    env = {**os.environ, "SIZED_CONNECT_DIR": str(state), "SIZED_CONNECT_PORT": port,
           "PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1", **(s3_env or {})}
    extra = ["--s3"] if s3_env else []
    started = subprocess.run(["bash", SCRIPT, "start", *extra], env=env, capture_output=True,
                             text=True, timeout=300)
    assert started.returncode == 0, started.stdout + started.stderr
    url = started.stdout.strip().splitlines()[-1]
    before = dict(SERVER)  # an enclosing server's (a module's), put back on exit
    SERVER.update(warehouse=str(state / "warehouse"), port=port)
    try:
        yield url, state / "warehouse"
    finally:
        SERVER.clear()
        SERVER.update(before)
        subprocess.run(["bash", SCRIPT, "stop"], env=env, capture_output=True, text=True)


def connect_client(command: List[str], env: Dict[str, str]) -> Tuple[List[str], Dict[str, str]]:
    """The command run as a dbt client of the test's server: in its own mount namespace,
    the warehouse and Java hidden (empty tmpfs over each), JAVA_HOME unset."""
    assert SERVER, "no Spark Connect server: use the connect_server fixture"
    hidden = [SERVER["warehouse"], *java_dirs()]
    mounts = " && ".join(f"mkdir -p '{d}' && mount -t tmpfs none '{d}'" for d in hidden)
    env = {k: v for k, v in env.items() if k != "JAVA_HOME"}
    env["SIZED_CONNECT_PORT"] = SERVER["port"]
    return ["unshare", "-m", "sh", "-c", f"{mounts} && exec \"$@\"", "_", *command], env


def drop_schema(url: str, schema: str) -> None:
    """DROP SCHEMA ... CASCADE on the server, from a client of the test process."""
    code = (f"from pyspark.sql import SparkSession; s = SparkSession.builder.remote({url!r})"
            f".create(); s.sql('DROP SCHEMA IF EXISTS {schema} CASCADE'); s.stop()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
