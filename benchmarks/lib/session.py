"""The benchmarks' Spark session: start_spark, a private session with Hive support whose
warehouse, Derby metastore and scratch space live in the run's work directory, bound to
loopback with the UI off; conf_set, session conf for a block; Cluster, a standalone cluster
of scripts/spark_cluster.sh on a free port."""
import os
import socket
import subprocess
import sys

LOCAL_MASTER = "local[2]"


def start_spark(work_dir, driver_memory, *, master=LOCAL_MASTER,
                app_name="sized-backfill-benchmark", fast_local_fs=True, warehouse_uri=False,
                conf=()):
    """A private session with Hive support; everything it writes is under work_dir.
    master: local[2], or a standalone cluster's spark://127.0.0.1:PORT.
    fast_local_fs=False: Hadoop's own local filesystem (a chmod process per file), not the
    one a dbt profile's embedded session gets (python_adapter.io.fast_local_fs.configure).
    warehouse_uri: the warehouse as a file:// URI (a cluster's executors share this disk).
    conf: more (key, value) settings."""
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    from python_adapter.io.fast_local_fs import configure

    warehouse = os.path.join(work_dir, "warehouse")
    metastore = os.path.join(work_dir, "metastore_db")
    builder = SparkSession.builder.master(master)
    if fast_local_fs:
        builder = configure(builder, master)
    builder = (
        builder.appName(app_name)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", driver_memory)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.warehouse.dir", ("file://" if warehouse_uri else "") + warehouse)
        .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                f"jdbc:derby:;databaseName={metastore};create=true")
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={work_dir}")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.local.dir", os.path.join(work_dir, "spark-local"))
    )
    for key, value in conf:
        builder = builder.config(key, value)
    spark = builder.enableHiveSupport().getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


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
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
