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


@pytest.fixture(autouse=True)
def no_jvm():
    """After each test: no py4j gateway, no JVM child; fault injection and the locks this
    process believes it holds as a fresh process has them."""
    yield
    faults.reset()
    lock.forget_held_locks()
    context = getattr(sys.modules.get("pyspark"), "SparkContext", None)
    assert context is None or context._gateway is None, "a test started Spark's JVM"
    assert not _java_children(), "a test started a JVM"
