"""The session a piece of user code (a dbt Python model) sees as the active one."""
import threading
from contextlib import contextmanager
from typing import Any, Iterator


@contextmanager
def active_session(spark: Any) -> Iterator[None]:
    """`spark` made the active session of this thread for the block, as a notebook's
    session is. dbt runs models on threads of its own, where a Spark Connect session is
    active only if set (a thread-local of pyspark's): pandas-on-Spark and
    SparkSession.active() would otherwise look for a session to make, and fail with
    CONNECT_URL_NOT_SET. A classic session shares its JVM's active session: nothing to do."""
    local = getattr(type(spark), "_active_session", None)  # Connect's threading.local
    if not isinstance(local, threading.local) or getattr(local, "session", None) is not None:
        yield
        return
    local.session = spark
    try:
        yield
    finally:
        local.session = None
