"""The embedded Spark's log4j2 configuration (python_adapter/io/log4j2.properties) drops the
copies of a failed task's exception that Spark logs before its job fails with it, and keeps
every other line of those loggers. log4j's RegexFilter matches the whole message, as
`re.fullmatch` does; the patterns use no syntax where Java's and Python's regexes differ."""
import re
from collections import defaultdict

import pytest

from python_adapter.io.spark_logging import CONFIG

# (logger, message) as Spark 3.5 / 4.x log them when one task of a write fails
DROPPED = [
    ("org.apache.spark.executor.Executor", "Exception in task 1.0 in stage 3.0 (TID 7)"),
    ("org.apache.spark.util.Utils", "Aborting task"),
    # the other task, interrupted by the failure, fails again closing its writer
    ("org.apache.spark.util.Utils",
     "Suppressing exception in catch: [TASK_WRITE_FAILED] Task failed while writing rows to "
     "file:/w/.sized/t/staging/1/data. SQLSTATE: 58030"),
    ("org.apache.spark.util.Utils", "Suppressing exception in finally: Stream closed"),
    ("org.apache.spark.sql.execution.datasources.FileFormatWriter",
     "Aborting job 5b1e1c9e-1f7a-4b0e-9d52-6b8f8c3f2f43."),
    ("org.apache.spark.scheduler.TaskSetManager",
     "Lost task 0.0 in stage 3.0 (TID 7) (127.0.0.1 executor driver): java.io.IOException"),
    ("org.apache.spark.scheduler.TaskSetManager", "Task 0 in stage 3.0 failed 1 times; aborting job"),
]
KEPT = [
    ("org.apache.spark.util.Utils", "Your hostname resolves to a loopback address"),
    ("org.apache.spark.executor.Executor", "Issue communicating with driver in heartbeater"),
    ("org.apache.spark.scheduler.TaskSetManager", "Stage 3 contains a task of very large size"),
]


def _deny_patterns():
    """{logger name: [regex]} of the filters that DENY on a match."""
    props = {}
    for line in open(CONFIG, encoding="utf-8"):
        if "=" in line and not line.lstrip().startswith("#"):
            key, value = line.split("=", 1)
            props[key.strip()] = value.strip()
    patterns = defaultdict(list)
    for key, value in props.items():
        parts = key.split(".")
        if parts[0] == "logger" and len(parts) == 5 and parts[2] == "filter" and parts[4] == "regex":
            prefix = ".".join(parts[:4])
            assert props[f"{prefix}.onMatch"] == "DENY"
            patterns[props[f"logger.{parts[1]}.name"]].append(value)
    return patterns


@pytest.mark.parametrize("logger,message", DROPPED)
def test_a_failed_tasks_copies_are_dropped(logger, message):
    assert any(re.fullmatch(p, message) for p in _deny_patterns()[logger]), (logger, message)


@pytest.mark.parametrize("logger,message", KEPT)
def test_other_lines_of_those_loggers_stay(logger, message):
    assert not any(re.fullmatch(p, message) for p in _deny_patterns()[logger]), (logger, message)
