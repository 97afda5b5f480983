"""Credentials: everything dbt-spark accepts, under the adapter type `sized_spark`."""
from dataclasses import dataclass

from dbt.adapters.spark.connections import SparkConnectionMethod, SparkCredentials


@dataclass
class SizedSparkCredentials(SparkCredentials):
    @property
    def type(self) -> str:
        return "sized_spark"

    @property
    def is_session(self) -> bool:
        return self.method == SparkConnectionMethod.SESSION
