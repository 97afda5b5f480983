"""The one builder of a private local Spark session, for the benchmarks, the tests
(tests/functional/conftest.py) and the crash chain (tests/functional/crash_chain.py):
LocalSpark says what differs between them, start(spec) starts it (Hive support, warehouse,
Derby metastore and scratch space under its home, bound to loopback, the UI off);
start_spark, the benchmarks' shorthand; conf_set, session conf for a block; Cluster, a
standalone cluster of scripts/spark_cluster.sh on a free port."""
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from typing import Optional, Tuple

from python_adapter.cli.processes import free_ports

LOCAL_MASTER = "local[2]"


@dataclass(frozen=True)
class LocalSpark:
    """A private session whose files all live under `home`.
    master: local[2], or a standalone cluster's spark://127.0.0.1:PORT.
    driver_memory: None leaves Spark's default (1g; the tests').
    fast_local_fs=False: Hadoop's own local filesystem (a chmod process per file), not the
    one a dbt profile's embedded session gets (python_adapter.io.fast_local_fs.configure).
    warehouse_uri: the warehouse as a file:// URI (a cluster's executors share this disk).
    class_archive: the driver JVM starts from the class archive dbt's sessions start from
    (the one scripts/test.sh has written before the suite): the tests' faster start.
    conf: more (key, value) settings."""
    home: str
    driver_memory: Optional[str] = None
    master: str = LOCAL_MASTER
    app_name: str = "sized-spark"
    fast_local_fs: bool = True
    warehouse_uri: bool = False
    class_archive: bool = False
    conf: Tuple[Tuple[str, str], ...] = ()


def driver_java_options(home: str) -> str:
    """The driver JVM's options for a local session whose Derby metastore lives in `home`:
    started from the class archive, as dbt's sessions are. Its key is the classpath
    `configure` gives a local session (the helper jar), the archive
    python_adapter/io/class_warmup.py writes."""
    from python_adapter.io.fast_local_fs import embedded_confs
    from python_adapter.io.jvm_startup import JAVA_OPTIONS, class_archive_confs
    options = {JAVA_OPTIONS: f"-Dderby.system.home={home}"}
    key = {**embedded_confs({"spark.master": LOCAL_MASTER}).confs, **options}
    return class_archive_confs(key).get(JAVA_OPTIONS, options[JAVA_OPTIONS])


def start(spec: LocalSpark):
    """The session `spec` describes, started (or the one this process already runs)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from python_adapter.io.fast_local_fs import configure
    from python_adapter.io.jvm_startup import JAVA_OPTIONS

    home = str(spec.home)
    warehouse = os.path.join(home, "warehouse")
    java_options = (driver_java_options(home) if spec.class_archive
                    else f"-Dderby.system.home={home}")
    builder = SparkSession.builder.master(spec.master)
    if spec.fast_local_fs:
        builder = configure(builder, spec.master)
    builder = (
        builder.appName(spec.app_name)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.warehouse.dir", ("file://" if spec.warehouse_uri else "") + warehouse)
        .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                f"jdbc:derby:;databaseName={os.path.join(home, 'metastore_db')};create=true")
        .config(JAVA_OPTIONS, java_options)
    )
    if spec.driver_memory:
        builder = builder.config("spark.driver.memory", spec.driver_memory)
    for key, value in spec.conf:
        builder = builder.config(key, value)
    spark = builder.enableHiveSupport().getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def start_spark(work_dir, driver_memory, *, master=LOCAL_MASTER,
                app_name="sized-backfill-benchmark", fast_local_fs=True, warehouse_uri=False,
                conf=()):
    """A benchmark's session: start(LocalSpark(...)) in UTC, its scratch space in work_dir."""
    timing = (("spark.sql.session.timeZone", "UTC"),
              ("spark.local.dir", os.path.join(work_dir, "spark-local")))
    return start(LocalSpark(work_dir, driver_memory, master=master, app_name=app_name,
                            fast_local_fs=fast_local_fs, warehouse_uri=warehouse_uri,
                            conf=timing + tuple(conf)))


class conf_set:
    """Set session conf for a block, restore afterwards."""

    def __init__(self, spark, **pairs):
        self.spark, self.pairs, self.old = spark, pairs, {}

    def __enter__(self):
        for k, v in self.pairs.items():
            self.old[k] = self.spark.conf.get(k, None)
            self.spark.conf.set(k, str(v))

    def __exit__(self, *exc):
        for k, v in self.old.items():
            if v is None:
                self.spark.conf.unset(k)
            else:
                self.spark.conf.set(k, v)


CLUSTER_SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "scripts", "spark_cluster.sh")


def free_port():
    return free_ports(1)[0]


class Cluster:
    """scripts/spark_cluster.sh on a private state dir and port; stop() stops exactly the pids
    the script's start recorded."""

    def __init__(self, state_dir, port):
        self.state, self.port = state_dir, port
        self.env = {**os.environ, "SIZED_CLUSTER_DIR": state_dir,
                    "SIZED_CLUSTER_PORT": str(port), "PYTHON": sys.executable}
        self.master = f"spark://127.0.0.1:{port}"

    def _run(self, cmd):
        return subprocess.run(["bash", CLUSTER_SCRIPT, cmd], env=self.env, capture_output=True,
                              text=True, timeout=300)

    def start(self):
        with socket.socket() as s:  # never attach workers to somebody else's master
            if s.connect_ex(("127.0.0.1", self.port)) == 0:
                raise RuntimeError(f"port {self.port} is in use; set SIZED_CLUSTER_PORT to a "
                                   f"free port")
        r = self._run("start")
        if r.returncode != 0:
            raise RuntimeError(f"cluster did not start: {r.stdout}{r.stderr}")
        return r.stdout.strip()

    def stop(self):
        r = self._run("stop")
        return (r.stdout + r.stderr).strip()
