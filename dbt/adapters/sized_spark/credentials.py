"""Credentials: everything dbt-spark accepts, under the adapter type `sized_spark`, and one
method more: `connect`, a Spark Connect server (`host: sc://...`), where dbt runs with no JVM
and the sized engine reaches the table's storage through the server's extension."""
from dataclasses import dataclass
from typing import Any, Iterable, Tuple

from dbt.adapters.spark.connections import SparkConnectionMethod, SparkCredentials
from dbt_common.dataclass_schema import StrEnum
from dbt_common.exceptions import DbtRuntimeError


class SizedSparkConnectionMethod(StrEnum):
    THRIFT = "thrift"
    HTTP = "http"
    ODBC = "odbc"
    SESSION = "session"
    CONNECT = "connect"


# The methods the sized engine runs on (the others send SQL only).
ENGINE_METHODS = (SizedSparkConnectionMethod.SESSION, SizedSparkConnectionMethod.CONNECT)

# What `dbt debug` shows of a profile (Credentials.connection_info): the fields the method
# in use reads, not dbt-spark's one list for all (port 443, cluster and organization mean
# nothing to an embedded session).
CONNECTION_KEYS = {
    SizedSparkConnectionMethod.SESSION: ("method", "schema"),
    SizedSparkConnectionMethod.CONNECT: ("method", "host", "schema", "connect_timeout",
                                         "connect_retries"),
    SizedSparkConnectionMethod.THRIFT: ("method", "host", "port", "schema", "user", "auth",
                                        "kerberos_service_name", "use_ssl"),
    SizedSparkConnectionMethod.HTTP: ("method", "host", "port", "cluster", "endpoint",
                                      "organization", "schema", "connect_timeout",
                                      "connect_retries"),
    SizedSparkConnectionMethod.ODBC: ("method", "host", "port", "driver", "cluster",
                                      "endpoint", "organization", "schema"),
}
# ... and for method: session, the settings of server_side_parameters that say where Spark
# runs and where the tables and the catalog live, with what Spark does when one is unset.
SESSION_SETTINGS = (
    ("spark.master", "local[*] (pyspark's default)"),
    ("spark.sql.warehouse.dir", "spark-warehouse (Spark's default, in the directory dbt runs in)"),
    ("spark.hadoop.javax.jdo.option.ConnectionURL",
     "metastore_db (an embedded Derby, in the directory dbt runs in)"),
    ("spark.hadoop.hive.metastore.uris", None),
)


@dataclass
class SizedSparkCredentials(SparkCredentials):
    method: SizedSparkConnectionMethod = None  # type: ignore[assignment]  # the profile sets it; the enum adds connect

    def __post_init__(self) -> None:
        if self.method == SizedSparkConnectionMethod.CONNECT:
            check_connect(self.host)
            check_connect_bound(self.connect_timeout, self.connect_retries)
        super().__post_init__()

    def _connection_keys(self) -> Tuple[str, ...]:
        return CONNECTION_KEYS.get(self.method, super()._connection_keys())

    def connection_info(self, *, with_aliases: bool = False) -> Iterable[Tuple[str, Any]]:
        yield from super().connection_info(with_aliases=with_aliases)
        if self.method == SizedSparkConnectionMethod.SESSION:
            params = self.server_side_parameters or {}
            for key, unset in SESSION_SETTINGS:
                if params.get(key) or unset is not None:
                    yield key, params.get(key) or unset

    @property
    def type(self) -> str:
        return "sized_spark"

    @property
    def is_session(self) -> bool:
        """Whether the sized engine can run: `method: session` or `method: connect`."""
        return self.method in ENGINE_METHODS

    @property
    def is_connect(self) -> bool:
        return self.method == SizedSparkConnectionMethod.CONNECT

    @property
    def unique_field(self) -> str:
        return self.host  # type: ignore[return-value]  # as dbt-spark's: host is Optional


def check_connect_bound(timeout, retries) -> None:
    """connect_timeout (seconds a Connect call waits for the server to answer) and
    connect_retries (attempts more) must make a bound: a clear error before anything runs."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise DbtRuntimeError(f"connect_timeout must be a positive number of seconds (how "
                              f"long a call waits for the Spark Connect server to answer), "
                              f"got connect_timeout: {timeout!r}")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise DbtRuntimeError(f"connect_retries must be 0 or more (how many times a call the "
                              f"server did not answer is tried again), got connect_retries: "
                              f"{retries!r}")


def check_connect(host) -> None:
    """A clear error before anything runs: the host must be a Spark Connect URL, and the
    Connect client (pyspark 4's, with grpcio, pandas and pyarrow) must be installed."""
    if not host or not str(host).startswith("sc://"):
        raise DbtRuntimeError(
            f"method: connect needs `host` to be a Spark Connect URL such as "
            f"sc://spark-connect.internal:15002 (with any options, ;token=...), got host: "
            f"{host!r}")
    try:
        import pyspark

        if int(pyspark.__version__.split(".")[0]) < 4:
            raise ImportError(f"pyspark {pyspark.__version__} is installed; method: connect "
                              f"needs pyspark 4 (pyspark 3.5 runs method: session only)")
        import pyspark.sql.connect.session  # noqa: F401  (checks grpcio, pandas, pyarrow)
    except Exception as exc:  # ImportError, or pyspark's PySparkImportError
        raise DbtRuntimeError(
            f"method: connect needs the Spark Connect client (pyspark 4 or pyspark-client, "
            f"with grpcio, grpcio-status, googleapis-common-protos, pandas, pyarrow): "
            f"pip install 'dbt-sized-spark[connect]'. Import failed: {exc}") from None


assert SparkConnectionMethod.SESSION == SizedSparkConnectionMethod.SESSION  # by value
