"""`dbt debug` on `method: session` and `method: connect` (SizedSparkAdapter.debug_query).

dbt-spark's test is `select 1`, which says nothing of what fails a first run. This checks,
in the order a run needs them, and prints each as dbt debug prints its own lines
(`  <check>: [OK ...]`):

- session: the Java pyspark starts (17 or later), the Spark session (dbt's own connection,
  so with the profile's settings), the helper jar in its JVM (a warning: runs work
  without it), the metastore (its databases listed: an embedded Derby another process has
  open fails here), the warehouse directory (a probe file created and removed);
- connect: the server answers within connect_timeout (tried connect_retries times more:
  the same bound every call of the session has), it runs this package's extension, its
  catalog answers, the warehouse can be written there.

A check that fails stops the ones that need it; the failures are raised as one error,
each with its fix, which dbt prints under its "Connection test: [ERROR]".
"""
from typing import Iterator, List

from dbt_common.exceptions import DbtRuntimeError
from dbt_common.ui import green, red, yellow

from python_adapter import api

_COLOR = {"OK": green, "WARN": yellow, "ERROR": red}


def run_checks(connections) -> None:
    """Run and print the checks of the profile's method; raise when one failed."""
    creds = connections.profile.credentials
    found = connect_checks(connections) if creds.is_connect else session_checks(connections)
    failed: List[api.Check] = []
    for check in found:
        _print(check)
        if check.failed:
            failed.append(check)
    if failed:
        raise DbtRuntimeError("\n  >".join(check.summary() for check in failed))


def session_checks(connections) -> Iterator[api.Check]:
    java = api.check_java()
    yield java
    if java.failed:
        return  # Spark cannot start
    spark = yield from _session(connections, "Spark session",
                                "See logs/dbt.log for the whole error of the start")
    if spark is None:
        return
    yield api.Check("Spark session", "OK", f"Spark {spark.version} on "
                                           f"{spark.sparkContext.master}")
    yield api.check_helper_jar(spark, connections.profile.credentials.server_side_parameters)
    yield api.check_metastore(spark)
    yield api.check_warehouse(spark)


def connect_checks(connections) -> Iterator[api.Check]:
    creds = connections.profile.credentials
    # its error names the server, the cause and the way out (connections.open_connect)
    spark = yield from _session(connections, "Spark Connect server")
    if spark is None:
        return
    yield api.Check("Spark Connect server", "OK", f"{creds.host} answers (Spark "
                                                  f"{spark.version})")
    extension = api.check_extension(spark)
    yield extension
    if not extension.failed:
        yield api.check_metastore(spark)
        yield api.check_warehouse(spark)


def _session(connections, name, fix=""):
    """The profile's session through dbt's connection, or None after yielding why not."""
    try:
        return connections.spark_session("dbt debug")
    except Exception as exc:  # the start's own error is the check's answer
        text = str(getattr(exc, "msg", None) or exc).strip()
        yield api.Check(name, "ERROR", text.splitlines()[0] if text else type(exc).__name__,
                        fix)
        return None


def _print(check: api.Check) -> None:
    from dbt.events.types import DebugCmdOut
    from dbt_common.events.functions import fire_event

    detail = check.detail + (f". {check.fix}" if check.status == "WARN" and check.fix else "")
    fire_event(DebugCmdOut(msg=f"  {check.name}: [{_COLOR[check.status](check.status)} "
                               f"{detail}]"))
