"""`sized-spark`: the commands around the engine that are not dbt's.

    sized-spark serve s3 start|stop|status   a local S3 server (SeaweedFS) on 127.0.0.1
    sized-spark jars s3a                     the S3A jars for the installed pyspark, fetched
                                             once; prints them as a spark.jars value
"""
import argparse
import os
import sys
from typing import List, Optional

from python_adapter.errors import SizedError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sized-spark", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="start, stop or look at a local service")
    serve.add_argument("service", choices=["s3"])
    serve.add_argument("action", choices=["start", "stop", "status"])
    jars = sub.add_parser("jars", help="fetch JVM jars the pyspark wheel lacks")
    jars.add_argument("which", choices=["s3a"])
    return parser


def _serve_s3(action: str) -> int:
    from python_adapter.cli import object_store

    server = object_store.server_from_env(os.environ)
    if action == "start":
        print(object_store.start(server))
    elif action == "stop":
        print("stopped" if object_store.stop(server) else "not running")
    else:
        pid = object_store.running_pid(server)
        print(f"running (pid {pid}): {server.endpoint}" if pid else "not running")
        return 0 if pid else 3
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "serve":
            return _serve_s3(args.action)
        from python_adapter.cli.jars import s3a_jars

        print(",".join(s3a_jars(os.environ)))
        return 0
    except SizedError as exc:
        print(f"sized-spark: {exc}", file=sys.stderr)
        return 1


