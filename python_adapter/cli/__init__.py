"""`sized-spark`: the commands around the engine that are not dbt's.

    sized-spark serve s3 start|stop|status          a local S3 server (SeaweedFS) on 127.0.0.1
    sized-spark serve connect start|stop|status     a Spark Connect server with the engine's
                 [--s3]                             extension (--s3: on that S3 server)
    sized-spark serve metastore start|stop|status   a Hive metastore service (PostgreSQL)
    sized-spark jars s3a                            the S3A jars for the installed pyspark,
                                                    fetched once; prints a spark.jars value

Each service runs from the Python that runs this command (its pyspark, its packages), keeps
its state in a directory ($SIZED_S3_DIR, $SIZED_CONNECT_DIR, $SIZED_METASTORE_DIR) and is
stopped by the pids its start recorded. `start` prints the address to use as its last line.
"""
import argparse
import os
import sys
from typing import Callable, Dict, List, Mapping, Optional

from python_adapter.errors import SizedError

# what `status` exits with when the service does not run (as `systemctl status` does)
NOT_RUNNING = 3


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sized-spark", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="start, stop or look at a local service")
    serve.add_argument("service", choices=sorted(_SERVICES))
    serve.add_argument("action", choices=["start", "stop", "status"])
    serve.add_argument("--s3", action="store_true",
                       help="connect: reach the local S3 server (sized-spark serve s3) and "
                            "keep the warehouse there")
    jars = sub.add_parser("jars", help="fetch JVM jars the pyspark wheel lacks")
    jars.add_argument("which", choices=["s3a"])
    return parser


def _serve_s3(action: str, env: Mapping[str, str], _on_s3: bool) -> int:
    from python_adapter.cli import object_store

    server = object_store.server_from_env(env)
    if action == "start":
        print(object_store.start(server))
    elif action == "stop":
        print("stopped" if object_store.stop(server) else "not running")
    else:
        pid = object_store.running_pid(server)
        print(f"running (pid {pid}): {server.endpoint}" if pid else "not running")
        return 0 if pid else NOT_RUNNING
    return 0


def _serve_connect(action: str, env: Mapping[str, str], on_s3: bool) -> int:
    from python_adapter.cli import connect_server, object_store
    from python_adapter.cli.jars import s3a_jars

    server = connect_server.server_from_env(env)
    if on_s3:
        server = connect_server.on_s3(server, object_store.server_from_env(env),
                                      s3a_jars(env), env)
    if action == "start":
        url = connect_server.start(server, env)
        print(f"Spark Connect server up (log {server.log}); warehouse {server.warehouse_uri}")
        print(url)
    elif action == "stop":
        print("stopped" if connect_server.stop(server) else "not running")
    else:
        running = connect_server.status(server)
        print(f"running: {running}" if running else "not running")
        return 0 if running else NOT_RUNNING
    return 0


def _serve_metastore(action: str, env: Mapping[str, str], _on_s3: bool) -> int:
    from python_adapter.cli import metastore

    service = metastore.service_from_env(env)
    if action == "start":
        uri = metastore.start(service, env)
        print(f"metastore up (PostgreSQL on 127.0.0.1:{service.pg_port}, log {service.log})")
        print(uri)
    elif action == "stop":
        print("stopped" if metastore.stop(service) else "not running")
    else:
        running = metastore.status(service)
        print(f"running: {running}" if running else "not running")
        return 0 if running else NOT_RUNNING
    return 0


_SERVICES: Dict[str, Callable[[str, Mapping[str, str], bool], int]] = {
    "s3": _serve_s3, "connect": _serve_connect, "metastore": _serve_metastore}


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "serve":
            return _SERVICES[args.service](args.action, os.environ, args.s3)
        from python_adapter.cli.jars import s3a_jars

        print(",".join(s3a_jars(os.environ)))
        return 0
    except SizedError as exc:
        print(f"sized-spark: {exc}", file=sys.stderr)
        return 1
