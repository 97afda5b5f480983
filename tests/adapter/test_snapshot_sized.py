"""dbt's `snapshot` on a sized_spark profile: Parquet snapshots are written by the sized
engine, one instant per run. dbt-tests-adapter's simple_snapshot suites run with their own
assertions; their Postgres fixture SQL is run in Spark's dialect
(snapshot_helpers.spark_run_sql: Parquet tables, UPDATE / DELETE as table rewrites). Then
what the issue adds: one commit per run, a crash in the middle of a run, fallbacks to
dbt-spark, and bad config failing before anything is written.
"""
import pytest

from dbt.tests.adapter.simple_snapshot import fixtures as dbt_fixtures
from dbt.tests.adapter.simple_snapshot import new_record_dbt_valid_to_current as new_record
from dbt.tests.adapter.simple_snapshot.new_record_dbt_valid_to_current import (
    BaseSnapshotNewRecordDbtValidToCurrent,
)
from dbt.tests.adapter.simple_snapshot.test_various_configs import (
    BaseSnapshotColumnNames,
    BaseSnapshotDbtValidToCurrent,
    BaseSnapshotMultiUniqueKey,
)
from dbt.tests.util import run_dbt, run_dbt_and_capture, run_sql_with_adapter
from tests.adapter.snapshot_helpers import spark_run_sql
from tests.adapter.test_incremental_dbt import _operations

# The suites select from `{{target.database}}.{{target.schema}}.seed`; Spark has no database.
SNAPSHOT_ACTUAL_SQL = dbt_fixtures.snapshot_actual_sql.replace(
    "{{target.database}}.{{target.schema}}", "{{target.schema}}")


@pytest.fixture(autouse=True)
def spark_fixture_sql(project, monkeypatch):
    monkeypatch.setattr(project, "run_sql", spark_run_sql(project.run_sql, project.test_schema))


class TestSnapshotColumnNamesSized(BaseSnapshotColumnNames):
    """snapshot_meta_column_names; the timestamp strategy; each run one engine commit."""

    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"snapshot.sql": SNAPSHOT_ACTUAL_SQL}

    def test_snapshot_column_names(self, project):
        super().test_snapshot_column_names(project)
        assert _operations(project, "snapshot_actual") == ["full_refresh", "upsert"]


class TestSnapshotDbtValidToCurrentSized(BaseSnapshotDbtValidToCurrent):
    """The base reads rows by position from a select without `order by` (Postgres' heap
    order); a Parquet table's row order is its files': the same assertions on the rows
    ordered by id and valid_from, which put them where the base expects them."""

    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"snapshot.sql": SNAPSHOT_ACTUAL_SQL}

    def test_valid_to_current(self, project, monkeypatch):
        import dbt.tests.adapter.simple_snapshot.test_various_configs as suite

        def ordered(adapter, sql, fetch=None):
            return run_sql_with_adapter(adapter, sql + " order by id, test_valid_from", fetch)
        monkeypatch.setattr(suite, "run_sql_with_adapter", ordered)
        super().test_valid_to_current(project)
        assert _operations(project, "snapshot_actual") == ["full_refresh", "upsert"]


class TestSnapshotMultiUniqueKeySized(BaseSnapshotMultiUniqueKey):
    """A composite unique_key, the snapshot defined in yml only."""

    @pytest.fixture(scope="class")
    def models(self):
        models = dict(super().models.__wrapped__(self))
        models["seed.sql"] = "select * from {{ target.schema }}.seed"
        return models


class TestSnapshotNewRecordDbtValidToCurrentSized(BaseSnapshotNewRecordDbtValidToCurrent):
    """hard_deletes: new_record with dbt_valid_to_current: a deleted key gets one deletion
    record, not one per run; three runs, three commits."""

    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"snapshot.sql": new_record._snapshot_actual_sql.replace(
            "{{target.database}}.{{target.schema}}", "{{target.schema}}")}

    def test_snapshot_new_record_mode(self, project, seed_new_record_mode_statements,
                                      delete_sql):
        super().test_snapshot_new_record_mode(project, seed_new_record_mode_statements,
                                              delete_sql)
        assert _operations(project, "snapshot_actual") == ["full_refresh", "upsert", "upsert"]
        rows = project.run_sql(f"select id, dbt_is_deleted, dbt_valid_to, first_name from "
                               f"{project.test_schema}.snapshot_actual order by id, "
                               f"dbt_valid_from", fetch="all")
        # id 1's version closed by the delete, its deletion record current, with id 1's
        # last values (dbt-spark's get_columns_in_relation made them NULL)
        assert [(r[0], r[1], r[2].year == 9999, r[3]) for r in rows] == [
            (1, "False", False, "Judith"), (1, "True", True, "Judith"),
            (2, "False", True, "Arthur")], rows
