"""Fault injection for the crash-safety tests.

`SIZED_SPARK_FAULT=<point>[:<n>]` makes the n-th (default 1st) arrival at that point crash:
with `SIZED_SPARK_FAULT_MODE=exit` the process dies on the spot (os._exit, like kill -9);
with `SIZED_SPARK_FAULT_MODE=pause` it creates the file `SIZED_SPARK_FAULT_MARKER` names and
sleeps, for a test to kill it with a real signal (its other threads, the lock's heartbeat
among them, go on as a live writer's would); with `SIZED_SPARK_FAULT_MODE=exit_after:<s>`
the process goes on and dies <s> seconds later wherever it is (mid-write: a Spark Connect
client dying while the server still runs its job); otherwise an InjectedCrash is raised, which the writer does not clean up after (it derives
from BaseException so no `except Exception` treats it as an ordinary failure).
"""
import os
import time
from typing import Callable, Dict, Optional

_hits: Dict[str, int] = {}
# point -> callable run there (tests that make another writer act at that moment)
_hooks: Dict[str, Callable[[], None]] = {}


class InjectedCrash(BaseException):
    pass


def run_at(point: str, action: Optional[Callable[[], None]]) -> None:
    """Run `action` whenever the code passes `point` (None removes it): a test makes a real
    concurrent writer commit at an exact moment of another operation."""
    if action is None:
        _hooks.pop(point, None)
    else:
        _hooks[point] = action


def fault_point(name: str) -> None:
    if name in _hooks:
        _hooks[name]()
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
    if mode and mode.startswith("exit_after:"):
        import threading

        delay = float(mode.split(":", 1)[1])
        threading.Thread(target=lambda: (time.sleep(delay), os._exit(137)),  # type: ignore[func-returns-value]  # the tuple only sequences the calls
                         daemon=True, name="sized-fault-exit").start()
        return
    if mode == "pause":
        with open(os.environ["SIZED_SPARK_FAULT_MARKER"], "w") as marker:
            marker.write(str(os.getpid()))
        while True:
            time.sleep(60)
    raise InjectedCrash(f"injected crash at {name}")


def reset() -> None:
    _hits.clear()
