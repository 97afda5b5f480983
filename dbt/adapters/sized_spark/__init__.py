from dbt.adapters.base import AdapterPlugin

from dbt.adapters.sized_spark.connections import SizedSparkConnectionManager  # noqa: F401
from dbt.adapters.sized_spark.credentials import SizedSparkCredentials
from dbt.adapters.sized_spark.impl import SizedSparkAdapter
from dbt.include import sized_spark

Plugin = AdapterPlugin(
    adapter=SizedSparkAdapter,  # type: ignore[arg-type]  # as dbt-spark's Plugin: AdapterProtocol is stricter
    credentials=SizedSparkCredentials,
    include_path=sized_spark.PACKAGE_PATH,
    dependencies=["spark"],
)
