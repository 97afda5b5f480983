"""dbt-tests-adapter's docs-generate test, with the catalog as Spark reports it.

dbt-spark builds the catalog from `show table extended`: column types are Spark's
schema strings (`long`, `string`, `timestamp`), relation types are `table`/`view`, the
owner is the Spark user, and a fresh Hive table carries no statistics.
"""
import pytest

from dbt.tests.adapter.basic import expected_catalog
from dbt.tests.adapter.basic.test_docs_generate import BaseDocsGenerate


class TestDocsGenerateSizedSpark(BaseDocsGenerate):
    @pytest.fixture(scope="class")
    def profile_user(self, project):
        # Spark records the session's user (SPARK_USER, else the Hadoop/OS user) as owner.
        from pyspark.sql import SparkSession

        return SparkSession.builder.getOrCreate().sparkContext.sparkUser()

    @pytest.fixture(scope="class")
    def expected_catalog(self, project, profile_user):
        return expected_catalog.base_expected_catalog(
            project,
            role=profile_user,
            id_type="long",
            text_type="string",
            time_type="timestamp",
            view_type="view",
            table_type="table",
            model_stats=expected_catalog.no_stats(),
        )
