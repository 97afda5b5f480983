import pytest
from dbt.adapters.sized_spark.impl import SizedSparkAdapter
from dbt.tests.util import run_dbt


def _build(self, row_list, relation_info_func):
    rows = [row for row in row_list if not row[2]]
    return super(SizedSparkAdapter, self)._build_spark_relation_list(rows, relation_info_func)


class TestScratch:
    @pytest.fixture(scope="class")
    def models(self):
        return {"incremental_model.sql": "{{ config(materialized='incremental') }}\nselect 1 as id\n"}

    def test_it(self, project, monkeypatch):
        monkeypatch.setattr(SizedSparkAdapter, "_build_spark_relation_list", _build, raising=False)
        run_dbt(["run"])
        run_dbt(["run"])
        catalog = run_dbt(["docs", "generate", "--no-compile"])
        assert "model.test.incremental_model" in catalog.nodes
        print("NODES", sorted(catalog.nodes))
