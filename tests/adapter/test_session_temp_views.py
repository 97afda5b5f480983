"""Temporary views left in the embedded session must not break `dbt docs generate`.

dbt-spark's incremental materialization creates `create or replace temporary view
<model>__dbt_tmp` on every incremental run and never drops it (SQL models). With
`method: session` the SparkSession lives as long as the Python process, so a later dbt
invocation in the same process (dbtRunner, an orchestrator, this test suite) still sees it.
`SHOW TABLE EXTENDED IN <schema> LIKE '*'` lists temporary views in every schema (namespace
'', isTemporary true), dbt-spark's `list_relations_without_caching` keeps them, and the
unfiltered catalog (`docs generate --no-compile`) then holds a table with no schema, on
which dbt-core's `CatalogTable.key()` fails with
`AttributeError: 'NoneType' object has no attribute 'lower'`.
"""
import pytest

from dbt.tests.util import run_dbt

incremental_sql = """
{{ config(materialized='incremental') }}
select 1 as id
"""


class TestDocsGenerateAfterIncrementalRun:
    @pytest.fixture(scope="class")
    def models(self):
        return {"incremental_model.sql": incremental_sql}

    def test_docs_generate_no_compile_after_incremental_run(self, project):
        run_dbt(["run"])
        run_dbt(["run"])  # incremental run: leaves incremental_model__dbt_tmp (temp view)
        catalog = run_dbt(["docs", "generate", "--no-compile"])
        assert "model.test.incremental_model" in catalog.nodes
