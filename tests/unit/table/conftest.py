"""The table layer's fast tier: no Spark session, no JVM. Every test here must leave none
started (the table layer imports pyspark's modules, through io/interfaces.py and
io/fs.py, but never starts its gateway)."""
import os
import sys

import pytest

from python_adapter.table import faults, lock


def _java_children():
    """Processes started by this one whose command is a JVM (pyspark launches its
    gateway's JVM as a child)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        comm, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:]
        if int(rest.split()[1]) == os.getpid() and "java" in comm:
            found.append(int(pid))
    return found


def _gateway_up() -> bool:
    context = getattr(sys.modules.get("pyspark"), "SparkContext", None)
    return context is not None and context._gateway is not None


@pytest.fixture(autouse=True)
def no_jvm():
    """After each test: no py4j gateway and no JVM child that the test started; fault
    injection and the locks this process believes it holds as a fresh process has them.
    A worker of pytest-xdist may have run a Spark module before this one (its session stays
    up until the worker ends): then only a new JVM child would tell, and the gateway check
    is left to a worker that starts here."""
    gateway_before, children_before = _gateway_up(), set(_java_children())
    yield
    faults.reset()
    lock.forget_held_locks()
    assert gateway_before or not _gateway_up(), "a test started Spark's JVM"
    assert set(_java_children()) <= children_before, "a test started a JVM"
