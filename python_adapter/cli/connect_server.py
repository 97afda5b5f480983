"""A Spark Connect server on 127.0.0.1 from the installed pyspark (Spark 4), with the
package's server extension (the jar of python_adapter/io/java_connect), Hive support and a
Derby metastore of its own, for `method: connect` profiles: `sized-spark serve connect`.

    SIZED_CONNECT_DIR (./.connect-server: warehouse, metastore, log, pid),
    SIZED_CONNECT_PORT (15002), SIZED_CONNECT_WAREHOUSE (<dir>/warehouse, a path or a URI),
    SIZED_CONNECT_MASTER (local[2]; a spark:// URL runs it on a standalone cluster),
    SIZED_METASTORE_URI (a metastore service instead of Derby),
    SIZED_CONNECT_DRIVER_MEMORY (the server's --driver-memory; Spark's 1g when unset).
With `--s3` the server reaches the local S3 server of `sized-spark serve s3` (SIZED_S3_*)
through S3A, its jars on the server's classpath, and keeps its warehouse there unless
SIZED_CONNECT_WAREHOUSE says otherwise."""
import os
import sys
from dataclasses import dataclass, replace
from typing import List, Mapping, Optional, Tuple

from python_adapter.cli import object_store, processes
from python_adapter.errors import ConfigError

START_TIMEOUT_S = 180
EXTENSION = "sizedspark.connect.SizedOps"


@dataclass(frozen=True)
class ConnectServer:
    state: str
    port: int
    warehouse: str               # a local path or a URI
    master: str = "local[2]"
    metastore_uri: str = ""      # a metastore service; Derby in `state` when empty
    driver_memory: str = ""
    confs: Tuple[Tuple[str, str], ...] = ()    # more settings (--conf)
    jars: Tuple[str, ...] = ()                 # more jars on the server's classpath

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    @property
    def pid_file(self) -> str:
        return os.path.join(self.state, "pid")

    @property
    def log(self) -> str:
        return os.path.join(self.state, "server.log")

    @property
    def warehouse_uri(self) -> str:
        return f"file://{self.warehouse}" if self.warehouse.startswith("/") else self.warehouse


def server_from_env(env: Mapping[str, str]) -> ConnectServer:
    state = os.path.abspath(env.get("SIZED_CONNECT_DIR", ".connect-server"))
    port = env.get("SIZED_CONNECT_PORT", "15002")
    if not port.isdigit():
        raise ConfigError(f"SIZED_CONNECT_PORT: {port!r} is not a port number")
    warehouse = env.get("SIZED_CONNECT_WAREHOUSE") or os.path.join(state, "warehouse")
    return ConnectServer(state=state, port=int(port), warehouse=warehouse,
                         master=env.get("SIZED_CONNECT_MASTER", "local[2]"),
                         metastore_uri=env.get("SIZED_METASTORE_URI", ""),
                         driver_memory=env.get("SIZED_CONNECT_DRIVER_MEMORY", ""))


def on_s3(server: ConnectServer, s3: object_store.S3Server, jars: List[str],
          env: Mapping[str, str]) -> ConnectServer:
    """The server with S3A's jars and its settings for `s3`; its warehouse in the bucket
    unless SIZED_CONNECT_WAREHOUSE names one."""
    warehouse = (server.warehouse if env.get("SIZED_CONNECT_WAREHOUSE")
                 else f"s3a://{s3.bucket}/warehouse")
    confs = tuple((f"spark.hadoop.{k}", v) for k, v in s3.hadoop_settings().items())
    return replace(server, warehouse=warehouse, confs=server.confs + confs,
                   jars=server.jars + tuple(jars))


def command(server: ConnectServer, spark_home: str, extension_jar: str,
            log4j: str) -> List[str]:
    """spark-submit of Spark's Connect server with the extension and these settings."""
    jars = ",".join((extension_jar, *server.jars))
    out = [os.path.join(spark_home, "bin", "spark-submit"),
           "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
           "--name", "Spark Connect server (dbt-sized-spark)", "--master", server.master,
           "--jars", jars, "--driver-class-path", os.pathsep.join((extension_jar, *server.jars))]
    if server.driver_memory:
        out += ["--driver-memory", server.driver_memory]
    for key, value in _confs(server, extension_jar, log4j):
        out += ["--conf", f"{key}={value}"]
    return out


def _confs(server: ConnectServer, extension_jar: str, log4j: str) -> List[Tuple[str, str]]:
    confs = [("spark.connect.extensions.relation.classes", EXTENSION),
             ("spark.connect.grpc.binding.port", str(server.port)),
             ("spark.connect.grpc.binding.address", "127.0.0.1"),
             ("spark.sql.catalogImplementation", "hive"),
             ("spark.sql.warehouse.dir", server.warehouse_uri),
             ("spark.hadoop.fs.file.impl", "sizedspark.fs.NioLocalFileSystem"),
             ("spark.driver.host", "127.0.0.1"), ("spark.ui.enabled", "false"),
             ("spark.driver.extraJavaOptions",
              f"-Dlog4j2.configurationFile={log4j} -Dderby.system.home={server.state}")]
    if server.metastore_uri:
        confs.append(("spark.hadoop.hive.metastore.uris", server.metastore_uri))
    else:
        confs.append(("spark.hadoop.javax.jdo.option.ConnectionURL",
                      f"jdbc:derby:;databaseName={server.state}/metastore_db;create=true"))
    if not server.master.startswith("local"):
        # executors in their own JVMs: the extension's filesystem on their classpath
        confs += [("spark.executor.extraClassPath", extension_jar),
                  ("spark.executor.memory", "1g"), ("spark.cores.max", "2")]
    return confs + list(server.confs)


def start(server: ConnectServer, env: Mapping[str, str]) -> str:
    """Starts the server unless it runs (waits until it answers); returns its URL."""
    if processes.running_pids(server.pid_file):
        return server.url
    if processes.answers(server.port):
        raise ConfigError(f"SIZED_CONNECT_PORT: port {server.port} is taken by another "
                          f"process; set SIZED_CONNECT_PORT to a free one")
    from python_adapter.io.fast_local_fs import connect_jar
    from python_adapter.io.spark_logging import CONFIG

    home = processes.spark_home(env)
    processes.require_java(env)
    os.makedirs(server.state, exist_ok=True)
    if server.warehouse.startswith("/"):
        os.makedirs(server.warehouse, exist_ok=True)
    run_env = {**env, "SPARK_HOME": home, "SPARK_LOCAL_IP": "127.0.0.1",
               "PYSPARK_PYTHON": env.get("PYSPARK_PYTHON", sys.executable)}
    proc = processes.spawn(command(server, home, connect_jar(env), CONFIG), run_env,
                           server.log)
    processes.record(server.pid_file, [proc.pid])
    try:
        processes.wait_ready(lambda: processes.answers(server.port), proc, START_TIMEOUT_S,
                             "the Spark Connect server", server.log)
    except ConfigError:
        stop(server)
        raise
    return server.url


def stop(server: ConnectServer) -> bool:
    return processes.stop(server.pid_file)


def status(server: ConnectServer) -> Optional[str]:
    """The URL when it runs, else None."""
    return server.url if processes.running_pids(server.pid_file) else None
