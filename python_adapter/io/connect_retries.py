"""Spark Connect sessions that give up on a server that does not answer, within the bound
the profile sets (core/checks.ConnectBound: connect_timeout per attempt, connect_retries
attempts more).

pyspark's client, left to itself, waits a long time for a server that is gone: its retry
policy (retries.DefaultPolicy) tries an UNAVAILABLE call 15 times more with backoffs up to a
minute (over 10 minutes in all), and gRPC gives a connection 20 s to open before it counts
as failed. A `dbt debug` against a closed port printed nothing for minutes, and a run
whose server died mid-publish waited over two minutes before it said anything. So a
session made here gets, on its channel, a connection attempt of connect_timeout at most
and a quick reconnect (`grpc.min_reconnect_backoff_ms` is gRPC's minimum connect timeout,
despite its name), and ahead of pyspark's own policies one for UNAVAILABLE that allows
`retries` more attempts, each in its own slot of connect_timeout: a call the server never
answers fails within timeout * (retries + 1), whether the port refuses at once or a
connection hangs (against a hanging one, a retry that follows a timed-out attempt may fail
sooner than its slot: gRPC's channel is still backing off; measured 2.0 s for timeout 2 and
one retry, 6.0 s for three). Other errors keep pyspark's policies. The engine then sees pyspark's
`SparkConnectGrpcException` (status UNAVAILABLE); `server_gone` words it.
"""
import atexit
import functools
import os
import time
import warnings
from typing import Any, List, Optional, Tuple, cast

from python_adapter.core.checks import (ConnectBound, grpc_cause, server_gone_message,
                                        session_ended_message)

_GONE_MARKS = ("NO_ACTIVE_SESSION", "INVALID_HANDLE.SESSION_CHANGED")


def channel_options(bound: ConnectBound) -> List[Tuple[str, int]]:
    """gRPC channel options: a connection attempt takes at most connect_timeout, and a
    failed one is tried again within a second (the call's retries decide when to give up)."""
    timeout_ms = max(100, int(bound.timeout_s * 1000))
    again_ms = min(timeout_ms, 1000)
    return [("grpc.min_reconnect_backoff_ms", timeout_ms),
            ("grpc.initial_reconnect_backoff_ms", again_ms),
            ("grpc.max_reconnect_backoff_ms", again_ms)]


def connect_session(bound: ConnectBound) -> Any:
    """A new Spark Connect session to `bound.url` whose calls give up within the bound, after
    its first call (the server's Spark version): a server that is not there fails here, with
    pyspark's UNAVAILABLE error (`server_gone` words it). Made the process's default session,
    as `SparkSession.builder.remote(url).create()` does."""
    from pyspark.sql.connect.client.core import DefaultChannelBuilder
    from pyspark.sql.connect.session import SparkSession

    # What pyspark's own builder does for a remote session (pyspark/sql/session.py): with
    # the full pyspark installed, `pyspark.sql.functions` and Column send their calls to
    # Connect only under this mark, and fail on a missing SparkContext without it.
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    channel = DefaultChannelBuilder(bound.url, channel_options(bound))
    builder = SparkSession.builder
    spark = (builder.channelBuilder(channel).create() if hasattr(builder, "channelBuilder")
             else SparkSession(connection=channel))
    bound_calls(spark, bound)
    # pyspark's exit handler makes calls (its ML cache's cleanup); registered after it, this
    # runs first and closes a client whose server stopped answering, so the exit waits no
    # second bound
    atexit.register(_close_if_gone, spark)
    try:
        spark.version  # noqa: B018  (the first call: does the server answer?)
    except Exception:
        spark.release_session_on_close = False  # no call to a server that did not answer
        spark.stop()
        raise
    return spark


def _close_if_gone(spark):
    policy = next((p for p in spark.client.get_retry_policies() if bound_of_policy(p)), None)
    if policy is not None and policy.gave_up and not is_closed(spark):
        try:
            spark.client.close()
        except Exception:  # exiting: nothing left to tell
            pass


def bound_calls(spark: Any, bound: ConnectBound) -> None:
    """Put the bound's retry policy ahead of the session client's own."""
    client = spark.client
    kept = [p for p in client.get_retry_policies() if bound_of_policy(p) is None]
    client.set_retry_policies([_unanswered_policy()(bound), *kept])
    # pyspark warns "[RETRIES_EXCEEDED]" on stderr as it raises; the error we word says more
    warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]")


def bound_of(spark: Any) -> Optional[ConnectBound]:
    """The bound a session of connect_session has, else None."""
    client = getattr(spark, "client", None)
    for policy in client.get_retry_policies() if client is not None else ():
        if bound_of_policy(policy) is not None:
            return bound_of_policy(policy)
    return None


def bound_of_policy(policy: Any) -> Optional[ConnectBound]:
    return getattr(policy, "sized_bound", None)


def is_closed(spark: Any) -> bool:
    """Whether the session's client is closed (stopped, or told by a restarted server
    that its session changed): every later call would fail with NO_ACTIVE_SESSION."""
    return bool(getattr(spark.client, "is_closed", False))


def server_gone(spark: Any, exc: BaseException) -> Optional[str]:
    """The error to show for `exc`, raised by a call on `spark`, when it means the Spark
    Connect server is gone (no answer within the bound, or its session ended), else None."""
    bound = bound_of(spark)
    return unanswered_message(bound, exc) if bound is not None else None


def unanswered_message(bound: ConnectBound, exc: BaseException) -> Optional[str]:
    """server_gone's message for a session of `bound`."""
    text = str(exc)
    if _unavailable(exc):
        return server_gone_message(bound, grpc_cause(text))
    if any(mark in text for mark in _GONE_MARKS):
        return session_ended_message(bound.url)
    return None


def _unavailable(exc):
    status = getattr(exc, "getGrpcStatusCode", None)
    code = status() if callable(status) else getattr(exc, "code", lambda: None)()
    return getattr(code, "name", None) == "UNAVAILABLE" or "StatusCode.UNAVAILABLE" in str(exc)


@functools.lru_cache(maxsize=1)
def _unanswered_policy():
    """The retry policy class (made on first use: pyspark's Connect client and grpc are
    imported only over `method: connect`)."""
    import grpc
    from pyspark.sql.connect.client.retries import RetryPolicy, RetryPolicyState

    class SlotState(RetryPolicyState):
        """Retry k starts connect_timeout * k after the first attempt did (at once when
        the attempt before it took longer): a refused port is tried again a slot later,
        a connection that hangs for its whole timeout is tried again right away."""

        def __init__(self, policy) -> None:
            super().__init__(policy)
            self._started = time.monotonic()
            self._retried = 0

        def next_attempt(self, exception=None) -> Optional[int]:
            policy = cast("ServerUnanswered", self.policy)  # the only policy making a SlotState
            bound = policy.sized_bound
            if self._retried >= bound.retries:
                policy.gave_up = True
                return None
            self._retried += 1
            slot = self._started + self._retried * bound.timeout_s
            return int(max(0.0, slot - time.monotonic()) * 1000)

    class ServerUnanswered(RetryPolicy):
        """UNAVAILABLE (no connection, or it dropped): `retries` attempts more."""

        def __init__(self, bound: ConnectBound) -> None:
            super().__init__(max_retries=bound.retries,
                             initial_backoff=int(bound.timeout_s * 1000))
            self.sized_bound = bound
            self.gave_up = False  # a call failed for want of an answer

        def can_retry(self, exception: BaseException) -> bool:
            return (isinstance(exception, grpc.RpcError)
                    and exception.code() == grpc.StatusCode.UNAVAILABLE)

        def to_state(self) -> RetryPolicyState:
            return SlotState(self)

    return ServerUnanswered
