"""Fault injection for the crash-safety tests.

`SIZED_SPARK_FAULT=<point>[:<n>]` makes the n-th (default 1st) arrival at that point crash:
with `SIZED_SPARK_FAULT_MODE=exit` the process dies on the spot (os._exit, like kill -9);
with `SIZED_SPARK_FAULT_MODE=pause` it creates the file `SIZED_SPARK_FAULT_MARKER` names and
sleeps, for a test to kill it with a real signal (its other threads, the lock's heartbeat
among them, go on as a live writer's would); otherwise an InjectedCrash is raised, which the writer does not clean up after (it derives
from BaseException so no `except Exception` treats it as an ordinary failure).
"""
import os
import time

_hits = {}


class InjectedCrash(BaseException):
    pass


def fault_point(name: str) -> None:
    spec = os.environ.get("SIZED_SPARK_FAULT")
    if not spec:
        return
    point, _, nth = spec.partition(":")
    if point != name:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] != int(nth or 1):
        return
    mode = os.environ.get("SIZED_SPARK_FAULT_MODE")
    if mode == "exit":
        os._exit(137)
    if mode == "pause":
        with open(os.environ["SIZED_SPARK_FAULT_MARKER"], "w") as marker:
            marker.write(str(os.getpid()))
        while True:
            time.sleep(60)
    raise InjectedCrash(f"injected crash at {name}")


def reset() -> None:
    _hits.clear()
