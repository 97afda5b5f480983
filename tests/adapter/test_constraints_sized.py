"""dbt-tests-adapter's constraint suites on `materialized='sized_incremental'`.

Only fixtures change: the models' config blocks (`sized_incremental` instead of `table` /
`incremental`), Spark's type names where the base has Postgres' (`text` -> `string`, the
data-type cases below, as dbt-spark's own tests do), and the error the not_null rollback
test expects (the engine's, naming the column and the rows). Every inherited test method
and assertion is the base class's.

The base's data-type tests write `fixtures.my_model_data_type_sql`, a `table` model, when
they run; the `sized_data_type_model` fixture points it at a sized_incremental model for
this module's classes. That model sets `full_refresh=true`: the correct-types test builds
the one model again with each type in turn, and a sized_incremental table refuses to cast
a column's values into another type on an incremental run (README: on_schema_change).
"""
import pytest

from dbt.tests.adapter.constraints import fixtures
from dbt.tests.adapter.constraints.test_constraints import (
    BaseConstraintsColumnsEqual,
    BaseIncrementalConstraintsColumnsEqual,
    BaseIncrementalConstraintsRollback,
)
from dbt.tests.util import relation_from_name, run_dbt, run_dbt_and_capture, write_file

SIZED = 'materialized = "sized_incremental"'


def sized(sql, old):
    assert sql.count(old) == 1, f"expected {old!r} once in the base fixture:\n{sql}"
    return sql.replace(old, SIZED)


def incremental(sql):
    return sized(sql, 'materialized = "incremental"')


def table(sql):
    """sized_incremental with an enforced contract needs on_schema_change fail or
    append_new_columns, as dbt's incremental does."""
    return sized(sql, 'materialized = "table"').replace(
        SIZED, SIZED + ', on_schema_change = "fail"')


# Spark has no type named text; its name for it is string.
SCHEMA_YML = fixtures.model_schema_yml.replace("data_type: text", "data_type: string")
# bytes_per_row skips measuring a sample: these one-row builds are about the types
DATA_TYPE_MODEL = table(fixtures.my_model_data_type_sql).replace(
    SIZED, SIZED + ",\n    full_refresh = true,\n    bytes_per_row = 100")


SAME_DATA_TYPE_MODEL = (
    "the base's data-type tests build the same model in both variants "
    "(my_model_data_type_sql); TestSizedIncrementalConstraintsColumnsEqual runs them")


class SparkTypes:
    """The base's data-type cases in Spark's types: (SQL value, contract type, the type
    as the contract error prints it)."""

    @pytest.fixture
    def string_type(self):
        return "string"

    @pytest.fixture
    def int_type(self):
        return "int"

    @pytest.fixture
    def data_types(self):
        return [
            ["1", "int", "int"],
            ["'1'", "string", "string"],
            ["true", "boolean", "boolean"],
            ["cast('2019-01-01' as date)", "date", "date"],
            ["cast('2013-11-03 00:00:00' as timestamp)", "timestamp", "timestamp"],
            ["array('a','b','c')", "array<string>", "array<string>"],
            ["array(1,2,3)", "array<int>", "array<int>"],
            ["6.45", "decimal(3,2)", "decimal(3,2)"],
        ]

    @pytest.fixture(autouse=True)
    def sized_data_type_model(self, monkeypatch):
        monkeypatch.setattr(fixtures, "my_model_data_type_sql", DATA_TYPE_MODEL)


class TestSizedIncrementalConstraintsColumnsEqual(SparkTypes,
                                                   BaseIncrementalConstraintsColumnsEqual):
    """The incremental variant: models with on_schema_change='append_new_columns'."""

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "my_model_wrong_order.sql": incremental(
                fixtures.my_model_incremental_wrong_order_sql),
            "my_model_wrong_name.sql": incremental(fixtures.my_model_incremental_wrong_name_sql),
            "constraints_schema.yml": SCHEMA_YML,
        }

    def test_sized__contract_order_and_constraint_warnings(self, project):
        """The model's columns are written in the contract's order; the not_null constraint
        is enforced (no warning), the others get dbt's not-enforced warning; a second run
        (incremental) checks the contract again and appends."""
        write_file(SCHEMA_YML, "models", "constraints_schema.yml")  # data-type tests replace it
        _, log = run_dbt_and_capture(["run", "-s", "my_model_wrong_order", "--full-refresh"])
        log = " ".join(log.split())  # dbt wraps its warnings' lines
        assert "The constraint type primary_key is not enforced by sized_spark" in log
        assert "The constraint type check is not enforced by sized_spark" in log
        assert "constraint type not_null" not in log
        run_dbt(["run", "-s", "my_model_wrong_order"])
        relation = relation_from_name(project.adapter, "my_model_wrong_order")
        rows = project.run_sql(f"select * from {relation}", fetch="all")
        assert [tuple(r) for r in rows] == [(1, "blue", "2019-01-01")] * 2


class TestSizedTableConstraintsColumnsEqual(SparkTypes, BaseConstraintsColumnsEqual):
    """The table variant: the same models as first builds (on_schema_change fail)."""

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "my_model_wrong_order.sql": table(fixtures.my_model_wrong_order_sql),
            "my_model_wrong_name.sql": table(fixtures.my_model_wrong_name_sql),
            "constraints_schema.yml": SCHEMA_YML,
        }

    @pytest.mark.skip(reason=SAME_DATA_TYPE_MODEL)
    def test__constraints_wrong_column_data_types(self):
        pass

    @pytest.mark.skip(reason=SAME_DATA_TYPE_MODEL)
    def test__constraints_correct_column_data_types(self):
        pass


class TestSizedIncrementalConstraintsRollback(BaseIncrementalConstraintsRollback):
    """A null id breaks the contract's not_null: the incremental run fails before anything
    is written and the table keeps its rows (the base test); a first build with a null
    fails the same way and leaves no table."""

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "my_model.sql": incremental(fixtures.my_incremental_model_sql),
            # the schema's my_model_error has the same contract as my_model
            "my_model_error.sql": incremental(fixtures.my_model_incremental_with_nulls_sql),
            # no on_schema_change: sized_incremental's default, ignore
            "my_model_wrong_order.sql": sized(fixtures.my_model_wrong_order_sql,
                                              'materialized = "table"'),
            "constraints_schema.yml": SCHEMA_YML,
        }

    @pytest.fixture(scope="class")
    def null_model_sql(self):
        return incremental(fixtures.my_model_incremental_with_nulls_sql)

    @pytest.fixture(scope="class")
    def expected_error_messages(self):
        return ["not_null constraint violated by the new data: column id is null in 1 row",
                "nothing was written"]

    def test_sized__null_in_first_build(self, project):
        results = run_dbt(["run", "-s", "my_model_error"], expect_pass=False)
        assert "column id is null in 1 row" in results[0].message
        with project.adapter.connection_named("__test"):
            relation = project.adapter.get_relation(
                project.database, project.test_schema, "my_model_error")
        assert relation is None

    def test_sized__contract_with_on_schema_change_ignore_is_refused(self, project):
        """As dbt refuses it for `incremental`: an enforced contract with on_schema_change
        ignore, which would drop the contract's new columns, fails before anything runs."""
        results = run_dbt(["run", "-s", "my_model_wrong_order"], expect_pass=False)
        assert "Invalid value for on_schema_change: ignore" in results[0].message
        assert "must set on_schema_change to 'append_new_columns' or 'fail'" in \
            results[0].message
        with project.adapter.connection_named("__test"):
            assert project.adapter.get_relation(
                project.database, project.test_schema, "my_model_wrong_order") is None
