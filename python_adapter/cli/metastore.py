"""A Hive metastore service on 127.0.0.1, the production shape of a shared catalog:
`sized-spark serve metastore`. The metastore server class the pyspark wheel ships
(org.apache.hadoop.hive.metastore.HiveMetaStore, Hive 2.3), backed by a PostgreSQL server of
its own (Debian's postgresql and its JDBC driver, installed when missing and run as root).

    SIZED_METASTORE_DIR (./.metastore: PostgreSQL's data, the config, logs, pids),
    SIZED_METASTORE_PORT (9083), SIZED_METASTORE_PG_PORT (5433).
A profile then says server_side_parameters: {spark.hadoop.hive.metastore.uris: <the URI>}."""
import glob
import os
import subprocess
import tempfile
from dataclasses import dataclass
from typing import List, Mapping, Optional

from python_adapter.cli import processes
from python_adapter.errors import ConfigError

START_TIMEOUT_S = 180
JDBC_JAR = "/usr/share/java/postgresql.jar"
# Hive 2.3's model classes (package.jdo of hive-metastore-2.3.x, the jar pyspark 3.5 and 4
# ship). Their tables are created at start-up, in one thread: created lazily, two requests'
# schema changes deadlock in PostgreSQL (ALTER TABLE ... ADD CONSTRAINT waits on a table
# another request's open transaction holds).
MODEL_CLASSES = ",".join(f"org.apache.hadoop.hive.metastore.model.M{name}" for name in (
    "Database", "FieldSchema", "Type", "Table", "Constraint", "SerDeInfo", "Order",
    "ColumnDescriptor", "StringList", "StorageDescriptor", "Partition", "Index", "Role",
    "RoleMap", "GlobalPrivilege", "DBPrivilege", "TablePrivilege", "PartitionPrivilege",
    "TableColumnPrivilege", "PartitionColumnPrivilege", "PartitionEvent", "MasterKey",
    "DelegationToken", "TableColumnStatistics", "PartitionColumnStatistics", "VersionTable",
    "ResourceUri", "Function", "NotificationLog", "NotificationNextId"))


@dataclass(frozen=True)
class Metastore:
    state: str
    port: int
    pg_port: int

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    @property
    def pid_file(self) -> str:
        return os.path.join(self.state, "metastore.pid")

    @property
    def log(self) -> str:
        return os.path.join(self.state, "metastore.log")


def service_from_env(env: Mapping[str, str]) -> Metastore:
    ports = {}
    for key, default in (("SIZED_METASTORE_PORT", "9083"), ("SIZED_METASTORE_PG_PORT", "5433")):
        value = env.get(key, default)
        if not value.isdigit():
            raise ConfigError(f"{key}: {value!r} is not a port number")
        ports[key] = int(value)
    return Metastore(state=os.path.abspath(env.get("SIZED_METASTORE_DIR", ".metastore")),
                     port=ports["SIZED_METASTORE_PORT"], pg_port=ports["SIZED_METASTORE_PG_PORT"])


def hive_site(service: Metastore) -> str:
    props = {"javax.jdo.option.ConnectionURL":
             f"jdbc:postgresql://127.0.0.1:{service.pg_port}/metastore",
             "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
             "javax.jdo.option.ConnectionUserName": "hive",
             "javax.jdo.option.ConnectionPassword": "hive",
             "datanucleus.schema.autoCreateAll": "true",
             "hive.metastore.schema.verification": "false",
             "hive.metastore.warehouse.dir": f"file://{service.state}/warehouse",
             "hive.metastore.event.db.notification.api.auth": "false",
             "hive.async.log.enabled": "false",
             "datanucleus.autoStartMechanism": "Classes",
             "datanucleus.autoStartClassNames": MODEL_CLASSES}
    body = "\n".join(f"  <property><name>{k}</name><value>{v}</value></property>"
                     for k, v in props.items())
    return f"<configuration>\n{body}\n</configuration>\n"


def _pg_bin() -> str:
    """PostgreSQL's server programs, installed from Debian's packages when missing."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version)
    if not found or not os.path.isfile(JDBC_JAR):
        if os.geteuid() != 0:
            raise ConfigError("the metastore service needs PostgreSQL and its JDBC driver: "
                              "apt-get install postgresql libpostgresql-jdbc-java (as root)")
        _run(["apt-get", "update", "-qq"])
        _run(["apt-get", "install", "-y", "-qq", "postgresql", "libpostgresql-jdbc-java"],
             env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version)
    return found[-1]


def _version(path: str) -> List[int]:
    return [int(p) for p in path.split("/")[-2].split(".") if p.isdigit()]


def _run(command: List[str], env: Optional[Mapping[str, str]] = None,
         log: Optional[str] = None) -> str:
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise ConfigError(f"{os.path.basename(command[0])} failed ({done.returncode}): "
                          f"{(done.stdout + done.stderr).strip()[-1500:]}"
                          + (f"\n{processes.tail(log)}" if log else ""))
    return done.stdout


def _as_pg(command: List[str]) -> List[str]:
    """PostgreSQL refuses to run as root: as root, its programs run as the postgres user."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def _pg_dir(service: Metastore) -> str:
    """PostgreSQL's data directory, where the user running it can reach it (recorded)."""
    record = os.path.join(service.state, "pg_dir")
    if os.path.isfile(record):
        with open(record, encoding="utf-8") as fh:
            return fh.read().strip()
    folder = os.path.join(service.state, "pg")
    if os.geteuid() == 0 and subprocess.run(
            ["runuser", "-u", "postgres", "--", "test", "-x", service.state]).returncode:
        folder = tempfile.mkdtemp(prefix="sized-metastore-pg.")
    os.makedirs(folder, exist_ok=True)
    if os.geteuid() == 0:
        _run(["chown", "postgres", folder])
    with open(record, "w", encoding="utf-8") as fh:
        fh.write(folder)
    return folder


def _start_postgres(service: Metastore, pg_bin: str) -> None:
    data = _pg_dir(service)
    if not os.path.isfile(os.path.join(data, "PG_VERSION")):
        _run(_as_pg([f"{pg_bin}/initdb", "-D", data, "-U", "hive", "--auth=trust"]))
    log = os.path.join(data, "server.log")
    _run(_as_pg([f"{pg_bin}/pg_ctl", "-D", data, "-l", log, "-w", "-t", "60", "start", "-o",
                 f"-p {service.pg_port} -c listen_addresses=127.0.0.1 -k {data}"]), log=log)
    have = _run(_as_pg([f"{pg_bin}/psql", "-h", "127.0.0.1", "-p", str(service.pg_port), "-U",
                        "hive", "-d", "postgres", "-tAc",
                        "select 1 from pg_database where datname = 'metastore'"]))
    if "1" not in have:
        _run(_as_pg([f"{pg_bin}/createdb", "-h", "127.0.0.1", "-p", str(service.pg_port),
                     "-U", "hive", "metastore"]))


def start(service: Metastore, env: Mapping[str, str]) -> str:
    """PostgreSQL, then the metastore server (waits until it answers); returns its URI."""
    if processes.running_pids(service.pid_file):
        return service.uri
    if processes.answers(service.port):
        raise ConfigError(f"SIZED_METASTORE_PORT: port {service.port} is taken by another "
                          f"process; set SIZED_METASTORE_PORT to a free one")
    home = processes.spark_home(env)
    processes.require_java(env)
    pg_bin = _pg_bin()
    conf = os.path.join(service.state, "conf")
    os.makedirs(conf, exist_ok=True)
    os.makedirs(os.path.join(service.state, "warehouse"), exist_ok=True)
    _start_postgres(service, pg_bin)
    with open(os.path.join(conf, "hive-site.xml"), "w", encoding="utf-8") as fh:
        fh.write(hive_site(service))
    # spark-class runs the class with the wheel's jars and the JVM options Spark needs
    run_env = {**env, "SPARK_HOME": home, "SPARK_LOCAL_IP": "127.0.0.1",
               "SPARK_DIST_CLASSPATH": f"{conf}:{JDBC_JAR}"}
    proc = processes.spawn([os.path.join(home, "bin", "spark-class"),
                            "org.apache.hadoop.hive.metastore.HiveMetaStore", "-p",
                            str(service.port)], run_env, service.log)
    processes.record(service.pid_file, [proc.pid])
    try:
        processes.wait_ready(lambda: processes.answers(service.port), proc, START_TIMEOUT_S,
                             "the metastore service", service.log)
    except ConfigError:
        stop(service)
        raise
    return service.uri


def stop(service: Metastore) -> bool:
    """The metastore server by its pid, then the PostgreSQL server of its data directory."""
    stopped = processes.stop(service.pid_file)
    record = os.path.join(service.state, "pg_dir")
    if os.path.isfile(record):
        with open(record, encoding="utf-8") as fh:
            data = fh.read().strip()
        if os.path.isfile(os.path.join(data, "postmaster.pid")):
            pg_bin = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version)[-1]
            subprocess.run(_as_pg([f"{pg_bin}/pg_ctl", "-D", data, "-m", "fast", "-w", "stop"]),
                           capture_output=True)
            stopped = True
    return stopped


def status(service: Metastore) -> Optional[str]:
    running = processes.running_pids(service.pid_file) and processes.answers(service.port)
    return service.uri if running else None
