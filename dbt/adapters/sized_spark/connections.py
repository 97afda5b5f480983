"""Connections: dbt-spark's connection manager under the `sized_spark` type.

`method: session` runs PySpark inside the dbt process; the sized writes need that session
(they plan and write with the DataFrame API), so `spark_session()` hands it out and refuses
the remote methods (thrift, http, odbc) with a clear message. `require_session()` is that
check alone: it reads the profile only and opens no connection, so the materialization calls
it first, before hooks or any SQL run.
"""
import os

from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.connections import SparkConnectionManager
from dbt_common.exceptions import DbtRuntimeError

from python_adapter.api import (FS_CLASS, STRATEGIES, class_archive_confs, embedded_confs,
                                quiet_logging_confs)

logger = AdapterLogger("SizedSpark")


class SizedSparkConnectionManager(SparkConnectionManager):
    TYPE = "sized_spark"

    @classmethod
    def open(cls, connection):
        creds = connection.credentials
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
            # the driver JVM starts from the classes an earlier start loaded (AppCDS)
            confs.update(class_archive_confs(confs))
            if confs != params:
                creds.server_side_parameters = confs
            # read by the JVM and by pyspark when dbt-spark's builder starts them; only what
            # the user left unset, and nothing at import (a cluster's driver must not bind
            # to loopback)
            os.environ.update(embedded.env)
        return super().open(connection)

    def require_session(self, what="sized_incremental"):
        """Fail with a clear message unless the profile uses `method: session`."""
        creds = self.profile.credentials
        if not creds.is_session:
            raise DbtRuntimeError(session_required_message(what, creds.method))

    def spark_session(self, what="sized_incremental"):
        self.require_session(what)
        # Opening the connection runs dbt-spark's SparkSession.builder with the profile's
        # server_side_parameters, so the session we get carries them.
        conn = self.get_thread_connection()
        conn.handle.cursor().execute("select 1")
        from pyspark.sql import SparkSession

        return SparkSession.builder.getOrCreate()


def session_required_message(what, method) -> str:
    method = getattr(method, "value", method)
    return (
        f"{what} needs `method: session`, but this profile uses `method: {method}`. "
        f"Every sized_incremental strategy (full build, {', '.join(STRATEGIES)}) and the "
        f"sized_* operations plan and write through the DataFrame API, with the dbt process as "
        f"the Spark driver; `method: {method}` only sends SQL to a remote server. Use "
        f"method: session (spark.master may point at your cluster), or one of dbt-spark's own "
        f"materializations (view, table, incremental), which work over `method: {method}`."
    )
