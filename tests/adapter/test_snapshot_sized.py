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


def _source_sql(schema, changed=(), new=(), extra_column=False, gone=()):
    """The `src` view the snapshots read: ids 1..20 at 2024-01-01, `changed` ids a day later
    with a new name, `new` ids added, `gone` ids left out; extra_column adds `tier` (a
    schema change)."""
    ids = ", ".join(str(i) for i in [*range(1, 21), *new] if i not in gone)
    moved = ", ".join(str(i) for i in changed) or "null"
    tier = ", concat('t', id) as tier" if extra_column else ""
    return f"""create or replace view {schema}.src as
        select id, if(id in ({moved}), concat('n', id, 'b'), concat('n', id)) as name,
               if(id in ({moved}), timestamp'2024-01-02', timestamp'2024-01-01') as updated_at
               {tier}
        from (select explode(array({ids})) as id)"""


def _history(project, name):
    """{id: [(name, valid_from, valid_to), ...]} in version order."""
    rows = project.run_sql(f"select id, name, dbt_valid_from, dbt_valid_to from "
                           f"{project.test_schema}.{name} order by id, dbt_valid_from", fetch="all")
    out = {}
    for r in rows:
        out.setdefault(r[0], []).append((r[1], str(r[2]), str(r[3])))
    return out


def _expected(changed=(), new=()):
    day1, day2 = "2024-01-01 00:00:00", "2024-01-02 00:00:00"
    out = {i: [(f"n{i}", day1, "None")] for i in range(1, 21)}
    for i in changed:
        out[i] = [(f"n{i}", day1, day2), (f"n{i}b", day2, "None")]
    for i in new:
        out[i] = [(f"n{i}", day1, "None")]
    return out


HISTORY_SQL = """
{% snapshot history %}
{{ config(strategy='timestamp', unique_key='id', updated_at='updated_at') }}
select * from {{ target.schema }}.src
{% endsnapshot %}
"""

INVALIDATED_SQL = """
{% snapshot invalidated %}
{{ config(strategy='timestamp', unique_key='id', updated_at='updated_at',
          hard_deletes='invalidate') }}
select * from {{ target.schema }}.src
{% endsnapshot %}
"""

OPTED_OUT_SQL = """
{% snapshot opted_out %}
{{ config(strategy='check', unique_key='id', check_cols='all', sized=false) }}
select * from {{ target.schema }}.src
{% endsnapshot %}
"""

DELTA_SQL = """
{% snapshot delta_snap %}
{{ config(strategy='check', unique_key='id', check_cols='all', file_format='delta') }}
select * from {{ target.schema }}.src
{% endsnapshot %}
"""

BAD_STRATEGY_SQL = """
{% snapshot bad_strategy %}
{{ config(strategy='bogus', unique_key='id') }}
select * from {{ target.schema }}.src
{% endsnapshot %}
"""

BAD_KEY_SQL = """
{% snapshot bad_key %}
{{ config(strategy='timestamp', unique_key='no_such_column', updated_at='updated_at') }}
select * from {{ target.schema }}.src
{% endsnapshot %}
"""


class TestSnapshotRunsSized:
    """One snapshot's life: each run one commit, sized_rollback undoes a run, a new source
    column is added. Then what does not go to the engine, and bad config. (A crash in the
    middle of a run is tested on the engine, tests/functional/spark/write/test_snapshot_upsert.py:
    an injected crash, a BaseException, would stop dbt's worker thread, not the run.)"""

    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"history.sql": HISTORY_SQL, "invalidated.sql": INVALIDATED_SQL,
                "opted_out.sql": OPTED_OUT_SQL,
                "delta_snap.sql": DELTA_SQL, "bad_strategy.sql": BAD_STRATEGY_SQL,
                "bad_key.sql": BAD_KEY_SQL}

    def test_each_run_is_one_commit_undone_by_sized_rollback(self, project):
        schema = project.test_schema
        project.run_sql(_source_sql(schema))
        run_dbt(["snapshot", "--select", "history"])
        assert _history(project, "history") == _expected()
        project.run_sql(_source_sql(schema, changed=range(1, 6), new=range(21, 26)))
        run_dbt(["snapshot", "--select", "history"])
        assert _history(project, "history") == _expected(range(1, 6), range(21, 26))
        assert _operations(project, "history") == ["full_refresh", "upsert"]
        run_dbt(["run-operation", "sized_rollback", "--args", f"{{relation: {schema}.history}}"])
        assert _history(project, "history") == _expected()
        run_dbt(["snapshot", "--select", "history"])
        assert _history(project, "history") == _expected(range(1, 6), range(21, 26))

    def test_new_source_columns_are_added(self, project):
        schema = project.test_schema
        project.run_sql(_source_sql(schema, changed=range(1, 8), new=range(21, 26),
                                    extra_column=True))
        run_dbt(["snapshot", "--select", "history"])
        tiers = project.run_sql(f"select id, tier from {schema}.history where "
                                f"dbt_valid_to is null and id in (1, 6, 7, 8)", fetch="all")
        # 6 and 7 changed: their new versions have the column; 1 and 8 did not change
        assert sorted(tuple(r) for r in tiers) == [(1, None), (6, "t6"), (7, "t7"), (8, None)]
        assert _operations(project, "history")[-2:] == ["upsert", "upsert"]

    def test_hard_deletes_invalidate_closes_deleted_keys_once(self, project):
        schema = project.test_schema
        project.run_sql(_source_sql(schema))
        run_dbt(["snapshot", "--select", "invalidated"])
        project.run_sql(_source_sql(schema, gone=(19, 20)))
        run_dbt(["snapshot", "--select", "invalidated"])
        closed = _history(project, "invalidated")
        assert [v[2] != "None" for v in closed[19] + closed[20]] == [True, True]
        # back with the updated_at seen before: its dbt_scd_id exists, so, as dbt's MERGE
        # does, no version is added and the old one is not reopened
        project.run_sql(_source_sql(schema))
        run_dbt(["snapshot", "--select", "invalidated"])
        assert _history(project, "invalidated") == closed
        assert _operations(project, "invalidated") == ["full_refresh", "upsert", "upsert"]

    def test_other_snapshots_go_to_dbt_spark(self, project):
        project.run_sql(_source_sql(project.test_schema))
        _, out = run_dbt_and_capture(["snapshot", "--select", "opted_out"], expect_pass=False)
        assert "Invalid file format: parquet" in out  # dbt-spark's own check
        _, out = run_dbt_and_capture(["snapshot", "--select", "delta_snap"], expect_pass=False)
        assert "delta" in out.lower()  # dbt-spark's CREATE TABLE ... USING delta failed
        tables = {r[1] for r in project.run_sql(f"show tables in {project.test_schema}",
                                                fetch="all")}
        assert not tables & {"opted_out", "delta_snap"}

    def test_bad_config_fails_naming_it_before_anything_is_written(self, project):
        project.run_sql(_source_sql(project.test_schema))
        _, out = run_dbt_and_capture(["snapshot", "--select", "bad_strategy"], expect_pass=False)
        assert "strategy 'bogus' is unknown" in out
        _, out = run_dbt_and_capture(["snapshot", "--select", "bad_key"], expect_pass=False)
        assert "no_such_column" in out
        tables = {r[1] for r in project.run_sql(f"show tables in {project.test_schema}",
                                                fetch="all")}
        assert not tables & {"bad_strategy", "bad_key"}
        import os
        missing_key = os.path.join(str(project.project_root), "snapshots", "no_key.sql")
        with open(missing_key, "w") as fh:
            fh.write("{% snapshot no_key %}{{ config(strategy='check', check_cols='all') }} "
                     "select 1 as id {% endsnapshot %}")
        try:
            with pytest.raises(Exception) as failed:  # dbt's parser refuses the project
                run_dbt(["snapshot", "--select", "no_key"], expect_pass=False)
            out = str(failed.value)
        finally:
            os.remove(missing_key)
        assert "must be configured with a 'strategy' and 'unique_key'" in out
