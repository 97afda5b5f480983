"""dbt's own `incremental` (and `table`) on a sized_spark profile: Parquet SQL models are
written by the sized engine, with dbt's strategy names and semantics; dbt-tests-adapter's
suites run on `materialized='incremental'` with their own assertions. Fixtures change only
where the base's data does not fit a keyed table (the unique-key suite's seed, as in
test_incremental_sized.py) or its SQL is Postgres'. A model with `sized: false` gets
dbt-spark's materializations unchanged: the basic suite runs on them too.
"""
import pytest

from dbt.tests.adapter.basic.test_base import BaseSimpleMaterializations
from dbt.tests.adapter.basic.test_incremental import BaseIncremental
from dbt.tests.adapter.incremental import test_incremental_unique_id as uk
from dbt.tests.adapter.incremental.test_incremental_merge_exclude_columns import (
    BaseMergeExcludeColumns,
)
from dbt.tests.adapter.incremental.test_incremental_microbatch import BaseMicrobatch
from dbt.tests.adapter.incremental.test_incremental_on_schema_change import (
    BaseIncrementalOnSchemaChange,
)
from dbt.tests.adapter.incremental.test_incremental_predicates import BaseIncrementalPredicates
from dbt.tests.adapter.incremental.test_incremental_unique_id import BaseIncrementalUniqueKey
from dbt.tests.util import run_dbt
from tests.adapter.test_incremental_sized import (SkipsBaseBadKeyTests, SEED_CSV,
                                                  SEEDS_ADD_NEW_ROWS_SQL,
                                                  SEEDS_DUPLICATE_INSERT_SQL, expected_model)


def _operations(project, name):
    """The operations of the instants the sized engine committed to a model's table (its
    timeline beside the table), [] when the engine never wrote it."""
    import os
    from urllib.parse import urlparse

    from python_adapter.table.timeline import meta_dir_of, parse_file_name

    rows = project.run_sql(f"describe table extended {project.test_schema}.{name}", fetch="all")
    location = urlparse(next(r[1] for r in rows if r[0] == "Location")).path
    timeline = f"{meta_dir_of(location)}/timeline"
    if not os.path.isdir(timeline):
        return []
    from python_adapter.table.timeline import decode
    out = []
    for entry in sorted(os.listdir(timeline)):
        parsed = parse_file_name(entry)
        if parsed and parsed[2] == "completed":
            with open(os.path.join(timeline, entry), "rb") as fh:
                out.append(decode(fh.read()).operation)
    return out


class TestIncrementalUniqueKeyOnDbtIncremental(SkipsBaseBadKeyTests,
                                               BaseIncrementalUniqueKey):
    """unique_key without a strategy: an upsert (dbt's merge)."""

    @pytest.fixture(scope="class")
    def seeds(self):
        return {"duplicate_insert.sql": SEEDS_DUPLICATE_INSERT_SQL, "seed.csv": SEED_CSV,
                "add_new_rows.sql": SEEDS_ADD_NEW_ROWS_SQL}

    @pytest.fixture(scope="class")
    def models(self):
        models = dict(super().models.__wrapped__(self))
        models["expected"] = {
            "one_str__overwrite.sql": expected_model(uk.models__expected__one_str__overwrite_sql),
            "unique_key_list__inplace_overwrite.sql": expected_model(
                uk.models__expected__unique_key_list__inplace_overwrite_sql)}
        return models



class TestIncrementalOnSchemaChangeOnDbtIncremental(BaseIncrementalOnSchemaChange):
    pass


class TestIncrementalPredicatesOnDbtIncremental(BaseIncrementalPredicates):
    """delete+insert with incremental_predicates ["id != 2"]: key 2's old row is outside
    them, so it stays beside the new one."""


class TestMergeExcludeColumnsOnDbtIncremental(BaseMergeExcludeColumns):
    pass


class TestMicrobatchOnDbtIncremental(BaseMicrobatch):
    def test_each_batch_is_a_commit_of_the_engine(self, project):
        from dbt.tests.adapter.incremental.test_incremental_microbatch import (
            patch_microbatch_end_time)
        # a full refresh first: the class's other test may have built the table already
        with patch_microbatch_end_time("2020-01-03 13:57:00"):
            run_dbt(["run", "--full-refresh"])
        with patch_microbatch_end_time("2020-01-03 14:57:00"):
            run_dbt(["run"])
        # three days (the first batch builds the table), then the last day again with dbt's
        # default lookback of one batch: one microbatch commit per batch
        operations = _operations(project, "microbatch_model")
        last_build = len(operations) - 1 - operations[::-1].index("full_refresh")
        assert operations[last_build:] == ["full_refresh"] + ["microbatch"] * 4


class TestSimpleMaterializationsOptedOut(BaseSimpleMaterializations):
    """sized: false: dbt-spark's table and incremental, as on a spark profile."""

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"name": "base", "models": {"+sized": False}}


class TestIncrementalOptedOut(BaseIncremental):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"name": "incremental", "models": {"+sized": False}}

    def test_the_engine_never_writes_an_opted_out_model(self, project):
        run_dbt(["seed"])
        run_dbt(["run"])
        assert _operations(project, "incremental") == []


class TestIncrementalWrittenSized(BaseIncremental):
    """The same suite without the opt-out: the sized engine writes it (append = insert)."""

    def test_the_engine_writes_dbts_incremental(self, project):
        run_dbt(["seed"])
        run_dbt(["run"])
        run_dbt(["run"])
        assert _operations(project, "incremental") == ["full_refresh", "insert"]
