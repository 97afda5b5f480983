"""dbt-tests-adapter's incremental unique-key and on_schema_change suites, run against
`materialized='sized_incremental'` instead of dbt's `incremental`.

Only fixtures are overridden (the models' config blocks, and the unique-key suite's seed);
every inherited test method and assertion is the base class's. Where sized_incremental
deliberately differs from dbt's incremental, the single base method is skipped with the
reason and a `test_sized__*` method next to it pins what sized_incremental does instead.

The models' `{% if is_incremental() %}` branches must be taken on the second run. dbt's own
is_incremental() is true only for `materialized == 'incremental'`, so these suites need the
adapter to provide an is_incremental() that is true for sized_incremental models too.
"""
import pytest

from dbt.artifacts.schemas.results import RunStatus
from dbt.tests.adapter.incremental import fixtures as osc
from dbt.tests.adapter.incremental import test_incremental_unique_id as uk
from dbt.tests.adapter.incremental.test_incremental_on_schema_change import (
    BaseIncrementalOnSchemaChange,
)
from dbt.tests.adapter.incremental.test_incremental_unique_id import BaseIncrementalUniqueKey
from dbt.tests.util import run_dbt, run_dbt_and_capture

INCREMENTAL = "materialized='incremental'"


def replace_once(text, old, new):
    assert text.count(old) == 1, f"expected {old!r} once in the base fixture:\n{text}"
    return text.replace(old, new)


def sized(sql, strategy="upsert"):
    """The base model with its config block switched to sized_incremental / `strategy`."""
    return replace_once(
        sql, INCREMENTAL,
        f"materialized='sized_incremental',\n        incremental_strategy='{strategy}'")


# -- unique_key ------------------------------------------------------------------------
#
# The base seed has two rows with state NY and one with an empty city. dbt's merge keeps
# them all; a sized_incremental upsert table is keyed, and every build (the first one too)
# fails on a repeated key unless precombine_column picks one row, and on a null key
# (python_adapter/upsert.py validate_keys). So the seed gets another state instead of the
# second NY row. The empty city is replaced too: besides being a null key, in session mode
# dbt-spark loads an empty CSV value as the string 'None' (its session cursor binds None as
# "'None'"), which could never equal the expected models' null. The two expected models,
# which list the seed's rows, change to match; every other row, and the rows the update
# scripts add, are the base's. What the base's two rows do to a sized_incremental upsert is
# pinned by test_sized__duplicate_and_null_keys_fail_the_build below.
SEED_CSV = replace_once(
    replace_once(uk.seeds__seed_csv, "NY,New York,Manhattan,2021-04-01",
                 "NV,Clark,Las Vegas,2021-04-01"),
    "CO,Denver,,2021-06-18", "CO,Denver,Denver,2021-06-18")


def expected_model(sql):
    sql = replace_once(sql, "select 'NY','New York','Manhattan','2021-04-01'",
                       "select 'NV','Clark','Las Vegas','2021-04-01'")
    return replace_once(sql, "select 'CO','Denver',null,'2021-06-18'",
                        "select 'CO','Denver','Denver','2021-06-18'")


# Spark's default (ANSI) store assignment does not cast a string literal into the seed's
# date column; the base scripts insert '2022-..' strings, so the dates are typed here.
SEEDS_DUPLICATE_INSERT_SQL = """
-- the base's duplicate_insert.sql with a typed date (Spark store assignment)
insert into {schema}.seed
    (state, county, city, last_visit_date)
values ('CT','Hartford','Hartford',date'2022-02-14');
"""

SEEDS_ADD_NEW_ROWS_SQL = """
-- the base's add_new_rows.sql with typed dates (Spark store assignment)
insert into {schema}.seed
    (state, county, city, last_visit_date)
values ('WA','King','Seattle',date'2022-02-01');

insert into {schema}.seed
    (state, county, city, last_visit_date)
values ('CA','Los Angeles','Los Angeles',date'2022-02-01');
"""

# The base's str_unique_key and trinary_unique_key_list models on the base seed's rows: the
# adapted seed plus the row the base seed has instead.
MODEL_DUPLICATE_KEY = replace_once(
    sized(uk.models__str_unique_key_sql), "from {{ ref('seed') }}",
    "from {{ ref('seed') }}\n"
    "union all select 'NY', 'New York', 'Manhattan', date'2021-04-01'")
MODEL_NULL_KEY = replace_once(
    sized(uk.models__trinary_unique_key_list_sql), "from {{ ref('seed') }}",
    "from {{ ref('seed') }} where state <> 'CO'\n"
    "union all select 'CO', 'Denver', cast(null as string), date'2021-06-18'")

BAD_KEY_SKIP = (
    "sized_incremental checks every column a config names before anything is written, on "
    "the first build too (README: 'Every value is checked before anything is written'); the "
    "base expects the first --full-refresh build with a unique_key that is not a column to "
    "pass and only the second run to fail. test_sized__bad_unique_key{,_list}_fails_first_build "
    "check the same error, one run earlier"
)


class SkipsBaseBadKeyTests:
    """The base's two bad-key tests, skipped for BAD_KEY_SKIP (checked one run earlier)."""

    @pytest.mark.skip(reason=BAD_KEY_SKIP)
    def test__bad_unique_key(self, project):
        pass

    @pytest.mark.skip(reason=BAD_KEY_SKIP)
    def test__bad_unique_key_list(self, project):
        pass


class TestIncrementalUniqueKeySizedSpark(SkipsBaseBadKeyTests, BaseIncrementalUniqueKey):
    @pytest.fixture(scope="class")
    def seeds(self):
        return {
            "duplicate_insert.sql": SEEDS_DUPLICATE_INSERT_SQL,
            "seed.csv": SEED_CSV,
            "add_new_rows.sql": SEEDS_ADD_NEW_ROWS_SQL,
        }

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "trinary_unique_key_list.sql": sized(uk.models__trinary_unique_key_list_sql),
            "nontyped_trinary_unique_key_list.sql": sized(
                uk.models__nontyped_trinary_unique_key_list_sql),
            "unary_unique_key_list.sql": sized(uk.models__unary_unique_key_list_sql),
            "not_found_unique_key.sql": sized(uk.models__not_found_unique_key_sql),
            # No key (none, [] or ''): upsert refuses to run without one (config.py), and
            # these tests check that a model without a key appends, which is 'insert'.
            "empty_unique_key_list.sql": sized(uk.models__empty_unique_key_list_sql, "insert"),
            "no_unique_key.sql": sized(uk.models__no_unique_key_sql, "insert"),
            "empty_str_unique_key.sql": sized(uk.models__empty_str_unique_key_sql, "insert"),
            "str_unique_key.sql": sized(uk.models__str_unique_key_sql),
            "duplicated_unary_unique_key_list.sql": sized(
                uk.models__duplicated_unary_unique_key_list_sql),
            "not_found_unique_key_list.sql": sized(uk.models__not_found_unique_key_list_sql),
            "duplicate_key.sql": MODEL_DUPLICATE_KEY,
            "null_key.sql": MODEL_NULL_KEY,
            "expected": {
                "one_str__overwrite.sql": expected_model(
                    uk.models__expected__one_str__overwrite_sql),
                "unique_key_list__inplace_overwrite.sql": expected_model(
                    uk.models__expected__unique_key_list__inplace_overwrite_sql),
            },
        }


    def first_build_error(self, model):
        run_dbt(["seed", "--select", "seed", "--full-refresh"])
        result = run_dbt(["run", "--select", model, "--full-refresh"], expect_pass=False).results[0]
        assert result.status == RunStatus.Error
        return result.message

    def test_sized__bad_unique_key_fails_first_build(self, project):
        message = self.first_build_error("not_found_unique_key")
        assert "unique_key" in message and "thisisnotacolumn" in message.lower()

    def test_sized__bad_unique_key_list_fails_first_build(self, project):
        message = self.first_build_error("not_found_unique_key_list")
        assert "unique_key" in message and "thisisnotacolumn" in message.lower()

    def test_sized__duplicate_and_null_keys_fail_the_build(self, project):
        """The base seed's second NY row and empty city fail the first upsert build with
        messages that say what to do (dbt's incremental would keep both rows)."""
        run_dbt(["seed", "--select", "seed", "--full-refresh"])
        results = run_dbt(["run", "--select", "duplicate_key", "null_key", "--full-refresh"],
                          expect_pass=False).results
        by_model = {r.node.name: r for r in results}
        assert {m: r.status for m, r in by_model.items()} == {
            "duplicate_key": RunStatus.Error, "null_key": RunStatus.Error}
        duplicate = by_model["duplicate_key"].message
        assert "same key more than once (e.g. NY)" in duplicate
        assert "precombine_column" in duplicate
        null = by_model["null_key"].message
        assert "null state / county / city" in null

    def test_sized__failed_first_build_leaves_no_table(self, project):
        """Like dbt's incremental: a first build that fails leaves no table behind, so the
        next run is a first build again rather than an incremental run on an empty table."""
        run_dbt(["seed", "--select", "seed", "--full-refresh"])
        run_dbt(["run", "--select", "duplicate_key"], expect_pass=False)
        with project.adapter.connection_named("__test"):
            relation = project.adapter.get_relation(
                project.database, project.test_schema, "duplicate_key")
        assert relation is None


# -- on_schema_change ------------------------------------------------------------------
#
# Every incremental model of this suite has unique_key='id', so all of them are upserts.



class TestIncrementalOnSchemaChangeSizedSpark(BaseIncrementalOnSchemaChange):
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "incremental_sync_remove_only.sql": sized(osc._MODELS__INCREMENTAL_SYNC_REMOVE_ONLY),
            "incremental_ignore.sql": sized(osc._MODELS__INCREMENTAL_IGNORE),
            "incremental_sync_remove_only_target.sql":
                osc._MODELS__INCREMENTAL_SYNC_REMOVE_ONLY_TARGET,
            "incremental_ignore_target.sql": osc._MODELS__INCREMENTAL_IGNORE_TARGET,
            "incremental_fail.sql": sized(osc._MODELS__INCREMENTAL_FAIL),
            "incremental_sync_all_columns.sql": sized(osc._MODELS__INCREMENTAL_SYNC_ALL_COLUMNS),
            "incremental_append_new_columns_remove_one.sql": sized(
                osc._MODELS__INCREMENTAL_APPEND_NEW_COLUMNS_REMOVE_ONE),
            "model_a.sql": osc._MODELS__A,
            "incremental_append_new_columns_target.sql":
                osc._MODELS__INCREMENTAL_APPEND_NEW_COLUMNS_TARGET,
            "incremental_append_new_columns.sql": sized(
                osc._MODELS__INCREMENTAL_APPEND_NEW_COLUMNS),
            "incremental_sync_all_columns_target.sql":
                osc._MODELS__INCREMENTAL_SYNC_ALL_COLUMNS_TARGET,
            "incremental_append_new_columns_remove_one_target.sql":
                osc._MODELS__INCREMENTAL_APPEND_NEW_COLUMNS_REMOVE_ONE_TARGET,
        }

    def test_sized__fail_on_schema_change_fails_the_run(self, project):
        """The base test's runs; the model fails naming the changed columns and the table
        keeps the first build's columns."""
        select = "model_a incremental_fail"
        run_dbt(["run", "--models", select, "--full-refresh"])
        results_two = run_dbt(["run", "--models", select], expect_pass=False)
        failed = results_two[1]
        assert failed.node.name == "incremental_fail" and failed.status == RunStatus.Error
        assert "on_schema_change" in failed.message and "'fail'" in failed.message
        assert "field2" in failed.message and "field3" in failed.message
        relation = project.adapter.Relation.create(
            database=project.database, schema=project.test_schema, identifier="incremental_fail")
        with project.adapter.connection_named("__test"):
            columns = [c.name for c in project.adapter.get_columns_in_relation(relation)]
        assert columns == ["id", "field1", "field3"]


# -- dbt's merge options on sized_incremental: the same suites, the model switched ----------
from dbt.tests.adapter.incremental import test_incremental_merge_exclude_columns as mx  # noqa: E402
from dbt.tests.adapter.incremental import test_incremental_predicates as pr  # noqa: E402


def _sized_materialized(sql):
    return replace_once(sql, "materialized = 'incremental'", "materialized = 'sized_incremental'")


class TestIncrementalPredicatesSizedSpark(pr.BaseIncrementalPredicates):
    @pytest.fixture(scope="class")
    def models(self):
        return {"delete_insert_incremental_predicates.sql":
                _sized_materialized(pr.models__delete_insert_incremental_predicates_sql)}


class TestMergeExcludeColumnsSizedSpark(mx.BaseMergeExcludeColumns):
    @pytest.fixture(scope="class")
    def models(self):
        return {"merge_exclude_columns.sql":
                _sized_materialized(mx.models__merge_exclude_columns_sql)}


# -- microbatch needs dbt's batches, which dbt makes only for materialized='incremental' ----
from dbt.tests.adapter.incremental import test_incremental_microbatch as mb  # noqa: E402


class TestMicrobatchOnSizedIncrementalIsRefused:
    """The base microbatch model as sized_incremental: dbt gives it no batch, so every run
    (the first build, a full refresh, a later run) fails before writing, naming the
    materialization that batches. Before, the first build wrote every source row, days
    outside --event-time-start/--event-time-end included."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"input_model.sql": mb._input_model_sql,
                "microbatch_model.sql": replace_once(
                    mb._microbatch_model_sql, INCREMENTAL, "materialized='sized_incremental'")}

    def test_every_run_is_refused_before_anything_is_written(self, project):
        run_dbt(["run", "--select", "input_model"])
        window = ["--event-time-start", "2020-01-02", "--event-time-end", "2020-01-03"]
        for extra in ([], ["--full-refresh"], []):
            results = run_dbt(["run", "--select", "microbatch_model", *window, *extra],
                              expect_pass=False)
            [failed] = results.results
            assert failed.status == RunStatus.Error
            assert "materialized='incremental'" in failed.message
            assert "'microbatch'" in failed.message and "nothing was written" in failed.message
            tables = project.run_sql(f"show tables in {project.test_schema}", fetch="all")
            assert sorted(r[1] for r in tables) == ["input_model"]


# -- a typo in a model's config fails the model, naming the key it looks like -------------
_TYPO_MODEL = """
{{ config(materialized='sized_incremental', unique_key='id', target_filesize='1MB') }}
select 1 as id, 'a' as name
"""
_PACKAGE_KEYS_MODEL = """
{{ config(materialized='sized_incremental', unique_key='id', target_file_size='1MB',
          owner='data-team', elementary_timestamp_column='loaded_at', tags=['daily']) }}
select 1 as id, 'a' as name
"""


class TestConfigKeyTypos:
    @pytest.fixture(scope="class")
    def models(self):
        return {"typo.sql": _TYPO_MODEL, "package_keys.sql": _PACKAGE_KEYS_MODEL}

    def test_a_typo_fails_before_anything_is_written_and_other_keys_pass(self, project):
        results = run_dbt(["run"], expect_pass=False)
        status = {r.node.name: r for r in results.results}
        assert status["package_keys"].status == RunStatus.Success
        typo = status["typo"]
        assert typo.status == RunStatus.Error
        assert "target_filesize" in typo.message
        assert "did you mean `target_file_size`?" in typo.message
        tables = project.run_sql(f"show tables in {project.test_schema}", fetch="all")
        assert sorted(r[1] for r in tables) == ["package_keys"]

    def test_parse_warns_of_the_typo_and_a_selection_without_it_runs(self, project):
        # told before any Spark start, as a warning: dbt runs what is selected
        _, parsed = run_dbt_and_capture(["parse"])
        warned = [line for line in parsed.splitlines() if "target_filesize" in line]
        assert len(warned) == 1, parsed[-3000:]
        assert (f"sized_incremental model {project.test_schema}.typo: " in warned[0]
                and "did you mean `target_file_size`?" in warned[0]
                and "the model fails when it runs" in warned[0]), warned
        assert "package_keys" not in parsed
        results, _ = run_dbt_and_capture(["run", "--select", "package_keys"])
        assert [r.status for r in results.results] == [RunStatus.Success]


# -- dbt's log style: a short status, and the write's figures in run_results.json ---------
_FIGURES_MODEL = """
{{ config(materialized='sized_incremental', unique_key='id', partition_by=['part'],
          target_file_size='1MB') }}
select id, cast(id % 3 as int) as part, '{{ var("tag", "v1") }}' as tag
from range({{ var("rows", 30) }})
"""


class TestRunResultsCarryTheWritesFigures:
    @pytest.fixture(scope="class")
    def models(self):
        return {"figures.sql": _FIGURES_MODEL}

    def test_status_and_adapter_response(self, project):
        [built] = run_dbt(["run"]).results
        assert built.message == "30 rows, 3 files in 3 partitions"
        response = built.adapter_response
        assert (response["rows_inserted"], response["rows_updated"], response["rows_deleted"],
                response["files_written"], response["files_in_table"],
                response["partitions"]) == (30, 0, 0, 3, 3, 3)
        assert response["bytes_written"] > 0 and response["rows_affected"] == 30
        assert response["route"] == "small batch"  # 30 rows: one task, no count
        # every key again with a new tag, and 10 new keys: each partition's file rewritten
        # with its updates and its new rows
        [upserted] = run_dbt(["run", "--vars", "{tag: v2, rows: 40}"]).results
        assert upserted.message == "10 new, 30 updated, 3 files in 3 partitions"
        response = upserted.adapter_response
        assert (response["rows_inserted"], response["rows_updated"], response["files_written"],
                response["files_replaced"], response["files_in_table"]) == (10, 30, 3, 3, 3)
        assert response["route"] == "small upsert"
        assert len(upserted.message) <= 60


# -- a commit's statistics settle while dbt goes on ------------------------------------
_HOOKED_MODEL = """
{{ config(materialized='sized_incremental', incremental_strategy='append',
          partition_by=['part'],
          post_hook="alter table {{ this }} set tblproperties ('team' = 'data',
                     'run' = '{{ invocation_id }}')") }}
select id + {{ var("offset", 0) }} as id, cast(id % 3 as int) as part from range(30)
"""
_AFTER_HOOKED_MODEL = "select count(*) as n from {{ ref('hooked') }}"


class TestStatisticsSettleWhileDbtGoesOn:
    """The statistics of partitions registered already, and of the table, are written on
    the engine's settle worker while dbt goes on: the model's post-hook (an ALTER of the
    same table) waits for them, so neither write is lost, and at the end of each command
    the metastore's figures are those of the table's files."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"hooked.sql": _HOOKED_MODEL, "after_hooked.sql": _AFTER_HOOKED_MODEL}

    def test_hooks_and_statistics_both_stay(self, project):
        from pyspark.sql import SparkSession

        from dbt_common.invocation import get_invocation_id

        from tests.functional.helpers import metastore_params

        spark = SparkSession.builder.getOrCreate()
        for offset in (0, 1000, 2000):
            run_dbt(["run", "--vars", f"{{offset: {offset}}}"])
            relation = f"{project.test_schema}.hooked"
            props = dict(spark.sql(f"show tblproperties {relation}").collect())
            assert (props["team"], props["run"]) == ("data", get_invocation_id())
            files = spark.sql(f"select input_file_name() as f, part from {relation}") \
                .distinct().collect()
            parts, table = metastore_params(spark, project.test_schema, "hooked")
            rows = (offset // 1000 + 1) * 30
            assert table["numRows"] == rows and table["numFiles"] == len({f.f for f in files})
            assert sum(p["numRows"] for p in parts.values()) == rows
            assert [r.n for r in spark.table(f"{project.test_schema}.after_hooked")
                    .collect()] == [rows]
