"""Connections: dbt-spark's connection manager under the `sized_spark` type.

`method: session` runs PySpark inside the dbt process; `method: connect` talks to a Spark
Connect server (dbt's SQL and the sized engine's DataFrames both go there; the engine's file
and metastore work runs in the server's extension). The sized writes need one of the two
(they plan and write with the DataFrame API), so `spark_session()` hands the session out and
refuses the SQL-only methods (thrift, http, odbc) with a clear message. `require_session()`
is that check alone: it reads the profile only and opens no connection, so the
materialization calls it first, before hooks or any SQL run.
"""
import os
import re
from typing import Any, Dict, cast

from dbt.adapters.contracts.connection import ConnectionState
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.connections import SparkConnectionManager
from dbt.adapters.spark.session import Connection as SessionConnection
from dbt.adapters.spark.session import Cursor, SessionConnectionWrapper
from dbt_common.exceptions import DbtRuntimeError

from python_adapter.api import (FS_CLASS, STRATEGIES, class_archive, embedded_confs,
                                quiet_logging_confs, wait_for_settling, warm_up_at_exit)
from python_adapter.api import ConnectBound, is_closed, unanswered_message
from python_adapter.api import connect_session as new_connect_session

logger = AdapterLogger("SizedSpark")


class SizedSparkConnectionManager(SparkConnectionManager):
    TYPE = "sized_spark"

    @classmethod
    def open(cls, connection):
        creds = connection.credentials
        if creds.is_connect:
            return open_connect(connection)
        if creds.is_session and connection.state != "open":
            # Before dbt-spark's builder starts the JVM: quiet JVM logging, and an embedded
            # (local) session gets the local filesystem that sets permissions without a chmod
            # process per file, and the environment it needs (loopback, this Python).
            params = dict(creds.server_side_parameters or {})
            confs = {**params, **quiet_logging_confs(params)}
            embedded = embedded_confs(confs)
            if params.get("spark.hadoop.fs.file.impl") != FS_CLASS:  # not added by an earlier open
                confs.update(embedded.confs)
                logger.debug(f"embedded Spark: file: paths through {FS_CLASS} "
                             f"({embedded.jar or 'the running JVM'})" if embedded.confs else
                             f"embedded Spark: Hadoop's local filesystem as is ({embedded.why_not})")
            # The driver JVM starts from the classes an earlier start loaded (AppCDS). At
            # this process's exit it waits for its JVM to end (the next command finds the
            # Derby metastore free), and a separate process writes the archive if none is
            # there: never this JVM, which would hold the metastore a minute longer.
            if warm_up_at_exit(confs):  # the process's first session: its JVM is to start
                archive = class_archive(confs)
                confs.update(archive.confs)
                logger.debug(f"driver JVM class archive: {archive.note}")
            if confs != params:
                creds.server_side_parameters = confs
            # read by the JVM and by pyspark when dbt-spark's builder starts them; only what
            # the user left unset, and nothing at import (a cluster's driver must not bind
            # to loopback)
            os.environ.update(embedded.env)
        return super().open(connection)

    def add_query(self, sql, *args, **kwargs):
        # A statement that may change a table's metadata (a hook's ALTER, persist_docs, a
        # grant, a later model's DDL) waits for the sized commits settling in the background
        # (their statistics); reads do not.
        if not reads_only(sql):
            settled(logger)
        return super().add_query(sql, *args, **kwargs)

    def require_session(self, what="sized_incremental"):
        """Fail with a clear message unless the profile uses `method: session`."""
        creds = self.profile.credentials
        if not creds.is_session:
            raise DbtRuntimeError(session_required_message(what, creds.method))

    def spark_session(self, what="sized_incremental"):
        self.require_session(what)
        if self.profile.credentials.is_connect:
            conn = self.get_thread_connection()
            if conn.state != ConnectionState.OPEN:
                self.open(conn)
            return connect_session(self.profile.credentials)
        # Opening the connection runs dbt-spark's SparkSession.builder with the profile's
        # server_side_parameters, so the session we get carries them.
        conn = self.get_thread_connection()
        conn.handle.cursor().execute("select 1")
        from pyspark.sql import SparkSession

        return SparkSession.builder.getOrCreate()


_CONNECT_SESSIONS: Dict[str, Any] = {}  # {sc:// URL: the Spark Connect session of this process}


def connect_bound(creds) -> ConnectBound:
    """How long a Connect call waits for a server that does not answer: the profile's
    connect_timeout per attempt, connect_retries attempts more (python_adapter/io/
    connect_retries.py)."""
    return ConnectBound(creds.host, float(creds.connect_timeout), int(creds.connect_retries))


def connect_session(creds):
    """The process's Spark Connect session for the profile's URL, made once (again after its
    server closed it): its calls give up on a server that does not answer within
    connect_bound, and its first call is made here, so a server that is not there fails
    here (pyspark's error; open_connect words it). The profile's server_side_parameters are
    set on it (runtime settings; the server's own, such as spark.master, belong on its
    start command)."""
    url = creds.host
    if url in _CONNECT_SESSIONS and is_closed(_CONNECT_SESSIONS[url]):
        del _CONNECT_SESSIONS[url]
    if url not in _CONNECT_SESSIONS:
        spark = new_connect_session(connect_bound(creds))
        for key, value in (creds.server_side_parameters or {}).items():
            try:
                spark.conf.set(key, value)
            except Exception as exc:  # a static setting of the server
                logger.debug(f"Spark Connect: {key} not set on the session ({exc}); set it "
                             f"on the server's start command")
        _CONNECT_SESSIONS[url] = spark
    return _CONNECT_SESSIONS[url]


class ConnectCursor(Cursor):
    """dbt-spark's session cursor, its SQL sent to the Spark Connect session."""

    def __init__(self, spark) -> None:
        super().__init__()
        self._spark = spark

    def execute(self, sql: str, *parameters) -> None:
        if parameters:
            sql = sql % parameters
        from pyspark.errors import AnalysisException

        try:
            self._df = self._spark.sql(sql)
        except AnalysisException as exc:
            raise DbtRuntimeError(str(exc)) from exc


class ConnectConnection(SessionConnection):
    def __init__(self, spark) -> None:
        super().__init__()
        self._spark = spark

    def cursor(self) -> ConnectCursor:
        return ConnectCursor(self._spark)


def open_connect(connection):
    """dbt's connection over `method: connect`: dbt-spark's session wrapper around a cursor
    that sends its SQL to the Connect session."""
    if connection.state == ConnectionState.OPEN:
        return connection
    creds = connection.credentials
    try:
        spark = connect_session(creds)
    except Exception as exc:
        from dbt.adapters.exceptions import FailedToConnectError

        gone = unanswered_message(connect_bound(creds), exc)
        raise FailedToConnectError(gone or f"failed to connect to {creds.host}: "
                                           f"{type(exc).__name__}: {exc}") from exc
    connection.handle = SessionConnectionWrapper(ConnectConnection(spark))
    connection.state = ConnectionState.OPEN
    return connection


def session_required_message(what, method) -> str:
    method = getattr(method, "value", method)
    return (
        f"{what} needs `method: session` or `method: connect`, but this profile uses "
        f"`method: {method}`. "
        f"Every sized_incremental strategy (full build, {', '.join(STRATEGIES)}) and the "
        f"sized_* operations plan and write through the DataFrame API, with the dbt process as "
        f"the Spark driver; `method: {method}` only sends SQL to a remote server. Use "
        f"method: session (spark.master may point at your cluster), method: connect (a Spark "
        f"Connect server with this package's extension), or one of dbt-spark's own "
        f"materializations (view, table, incremental), which work over `method: {method}`."
    )


_LEADING_COMMENTS = re.compile(r"^(\s+|/\*.*?\*/|--[^\n]*(\n|$))*", re.DOTALL)
_READS = {"select", "with", "show", "describe", "desc", "explain", "values", "list", "use"}


def reads_only(sql: str) -> bool:
    """Whether a statement only reads (its first keyword, after dbt's query comment)."""
    body = _LEADING_COMMENTS.sub("", sql or "", count=1).lstrip("(")
    match = re.match(r"[A-Za-z]+", body)
    # bool() rules None out first; mypy does not narrow through bool()
    return bool(match) and cast("re.Match[str]", match).group(0).lower() in _READS


def settled(log) -> None:
    """Wait for the sized commits settling in the background; a failure of it (a lock not
    released) is logged: the commits are done, the next write to the table recovers."""
    try:
        wait_for_settling()
    except Exception as exc:
        log.warning(f"the sized engine's work after a commit did not finish: {exc}")
