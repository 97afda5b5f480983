"""Connections: dbt-spark's connection manager under the `sized_spark` type.

`method: session` runs PySpark inside the dbt process; the sized writes need that session
(they plan and write with the DataFrame API), so `spark_session()` hands it out and refuses
the remote methods with a clear message.
"""
import os
import sys

from dbt.adapters.spark.connections import SparkConnectionManager
from dbt_common.exceptions import DbtRuntimeError

# Spark binds to loopback unless told otherwise; set before the JVM starts.
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# Executors start Python workers with the driver's interpreter unless told otherwise.
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


class SizedSparkConnectionManager(SparkConnectionManager):
    TYPE = "sized_spark"

    def spark_session(self, what="sized_incremental"):
        creds = self.profile.credentials
        if not creds.is_session:
            raise DbtRuntimeError(
                f"{what} needs `method: session` (the dbt process drives Spark through the "
                f"DataFrame API); this profile uses `method: {creds.method}`, which only sends "
                f"SQL. Use method: session, with spark.master pointing at your cluster."
            )
        # Opening the connection runs dbt-spark's SparkSession.builder with the profile's
        # server_side_parameters, so the session we get carries them.
        conn = self.get_thread_connection()
        conn.handle.cursor().execute("select 1")
        from pyspark.sql import SparkSession

        return SparkSession.builder.getOrCreate()
