"""persist_docs on sized_incremental tables, read back with `DESCRIBE TABLE EXTENDED`:
dbt-tests-adapter's BasePersistDocs models and descriptions, then an incremental run that
appends a column and a full refresh that defines the table again with other column types.
"""
import pytest

from dbt.tests.adapter.persist_docs import fixtures
from dbt.tests.adapter.persist_docs.test_persist_docs import BasePersistDocsBase
from dbt.tests.util import relation_from_name, run_dbt, run_dbt_and_capture, write_file

PERSIST = {"models": {"test": {"+persist_docs": {"relation": True, "columns": True}}}}


def described(project, name):
    """(the table comment, {column: comment}) from DESCRIBE TABLE EXTENDED."""
    relation = relation_from_name(project.adapter, name)
    rows = project.run_sql(f"describe table extended {relation}", fetch="all")
    columns, table_comment = {}, None
    in_columns = True
    for col_name, _data_type, comment in rows:
        if not col_name or col_name.startswith("#"):
            in_columns = False
        elif in_columns:
            columns[col_name] = comment
        elif col_name == "Comment":
            table_comment = _data_type
    return table_comment, columns


# The Hive metastore keeps a column comment in VARCHAR(256); the base's `name` column
# description (its docs block) is longer, so the block loses the one line no assertion
# reads. What a longer comment becomes is pinned by TestPersistDocsSizedSchemaChanges.
MY_FUN_DOCS = fixtures._DOCS__MY_FUN_DOCS.replace(
    "80% of statistics are made up on the spot\n", "")
SPARK_TABLE_YML = """
version: 2
models:
  - name: spark_table
    description: "dbt-spark's table on Parquet"
    columns:
      - name: id
        description: "its id"
  - name: spark_incremental
    description: "dbt-spark's incremental on Parquet"
    columns:
      - name: name
        description: "its name"
"""


class TestPersistDocsSizedIncremental(BasePersistDocsBase):
    """BasePersistDocs' models and descriptions, its table model sized_incremental, read
    back with DESCRIBE TABLE EXTENDED: dbt-spark's catalog has no comments at all (it
    reads `show table extended`, whose schema lines carry none), so the base's catalog
    test cannot see them on any Spark table."""

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return PERSIST

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "no_docs_model.sql": fixtures._MODELS__NO_DOCS_MODEL,
            "table_model.sql": fixtures._MODELS__TABLE.replace(
                "materialized='table'", "materialized='sized_incremental'"),
            "view_model.sql": fixtures._MODELS__VIEW,
            "spark_table.sql": fixtures._MODELS__TABLE,
            "spark_incremental.sql": fixtures._MODELS__TABLE.replace(
                "materialized='table'", "materialized='incremental'"),
        }

    @pytest.fixture(scope="class")
    def properties(self):
        assert MY_FUN_DOCS != fixtures._DOCS__MY_FUN_DOCS
        return {"my_fun_docs.md": MY_FUN_DOCS, "schema.yml": fixtures._PROPERTIES__SCHEMA_YML,
                "spark_table.yml": SPARK_TABLE_YML}

    def test_comments_read_back_with_describe_table_extended(self, project):
        table_comment, columns = described(project, "table_model")
        assert table_comment.startswith("Table model description")
        assert columns["id"].startswith("id Column description")
        assert columns["name"].startswith("Some stuff here and then a call to")
        # quotes, newlines and comment markers arrive as written
        self._assert_common_comments(table_comment, columns["id"], columns["name"])
        # dbt-spark's table and incremental on Parquet get their column comments too
        assert described(project, "spark_table") == (
            "dbt-spark's table on Parquet", {"id": "its id", "name": None})
        assert described(project, "spark_incremental") == (
            "dbt-spark's incremental on Parquet", {"id": None, "name": "its name"})
        # views are dbt-spark's, as they were
        view_comment, view_columns = described(project, "view_model")
        assert view_comment.startswith("View model description")
        assert view_columns["id"].startswith("id Column description")
        assert view_columns["name"] is None
        # (dbt-spark gives a view without a description an empty comment)
        assert described(project, "no_docs_model") == ("", {"id": None, "name": None})


EVENTS_V1 = """
{{ config(materialized='sized_incremental', partition_by=['day'],
          on_schema_change='append_new_columns', bytes_per_row=100) }}
select 1 as id, 'a' as name, date'2025-01-01' as day
"""
EVENTS_V2 = """
{{ config(materialized='sized_incremental', partition_by=['day'],
          on_schema_change='append_new_columns', bytes_per_row=100) }}
select 2 as id, 'b' as name, 'new' as extra, date'2025-01-02' as day
"""
# id becomes a bigint: a full refresh defines the table again
EVENTS_V3 = """
{{ config(materialized='sized_incremental', partition_by=['day'],
          on_schema_change='append_new_columns', bytes_per_row=100) }}
select cast(3 as bigint) as id, 'c' as name, 'newer' as extra, date'2025-01-03' as day
"""
LONG = ", and a long story" * 20  # past the metastore's 256 characters
EVENTS_YML = """
version: 2
models:
  - name: events
    description: "Events, one row per event; it's 'quoted' and has a \\\\ backslash"
    columns:
      - name: id
        description: "the event id"
      - name: name
        description: "who did it"
      - name: extra
        description: "added later{long}"
      - name: day
        description: "the partition"
""".replace("{long}", LONG)
COMMENTS = {"id": "the event id", "name": "who did it", "extra": ("added later" + LONG)[:256]}


class TestPersistDocsSizedSchemaChanges:
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return PERSIST

    @pytest.fixture(scope="class")
    def models(self):
        return {"events.sql": EVENTS_V1, "schema.yml": EVENTS_YML}

    def test_comments_survive_append_new_columns_and_a_redefining_full_refresh(self, project):
        description = "Events, one row per event; it's 'quoted' and has a \\ backslash"
        _, log = run_dbt_and_capture(["run"])
        # Spark cannot comment a partition column of an existing table: said, not failed
        assert "left out: day" in log
        assert described(project, "events") == (
            description, {"id": "the event id", "name": "who did it", "day": None})

        write_file(EVENTS_V2, "models", "events.sql")
        # incremental: the new column is appended and gets its comment, cut to 256 characters
        _, log = run_dbt_and_capture(["run"])
        assert "cut to 256: extra (371)" in " ".join(log.split())
        assert described(project, "events") == (description, {**COMMENTS, "day": None})

        write_file(EVENTS_V3, "models", "events.sql")
        run_dbt(["run", "--full-refresh"])  # the table is defined again (id: int -> bigint)
        assert described(project, "events") == (description, {**COMMENTS, "day": None})
        relation = relation_from_name(project.adapter, "events")
        assert project.run_sql(f"select id, extra from {relation}", fetch="all") == [(3, "newer")]
