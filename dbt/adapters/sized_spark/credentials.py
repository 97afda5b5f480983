"""Credentials: everything dbt-spark accepts, under the adapter type `sized_spark`, and one
method more: `connect`, a Spark Connect server (`host: sc://...`), where dbt runs with no JVM
and the sized engine reaches the table's storage through the server's extension."""
from dataclasses import dataclass

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


@dataclass
class SizedSparkCredentials(SparkCredentials):
    method: SizedSparkConnectionMethod = None  # type: ignore

    def __post_init__(self) -> None:
        if self.method == SizedSparkConnectionMethod.CONNECT:
            check_connect(self.host)
        super().__post_init__()

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
        return self.host  # type: ignore


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
