"""How often one api call asks the metastore to describe its table: once for a write and
once for a compaction (the table handle, spark/handle.py), and again only when the
description may have changed while the call waited for the lock (another writer's commit,
a new definition, recovery)."""
import pytest

from python_adapter.core.config import parse_config
from python_adapter.io import session_catalog
from python_adapter.spark.catalog.tables import TableRef, describe_table
from python_adapter.spark.services.cluster_exec import run_compaction
from python_adapter.api import write_dataframe
from python_adapter.table import faults, lock
from python_adapter.table.commit import CommitProtocol
from python_adapter.table.lock import LockOptions

QUIET = dict(log=lambda m: None)


@pytest.fixture
def describes(monkeypatch):
    """The metastore describes made while the test runs, as (database, table)."""
    calls = []
    real = session_catalog.SessionCatalog.describe

    def counted(self, db, name):
        calls.append((db, name))
        return real(self, db, name)
    monkeypatch.setattr(session_catalog.SessionCatalog, "describe", counted)
    return calls


def _rows(spark, start, n):
    return spark.sql(f"""select cast(id as bigint) as id, concat('v', id) as payload,
                                date'2025-03-01' + cast(id % 3 as int) as day
                         from range({start}, {start + n})""")


def _cfg(strategy="upsert"):
    return parse_config({"partition_by": ["day"], "unique_key": "id",
                         "incremental_strategy": strategy, "target_file_size": "64KB"})


def test_a_write_describes_its_table_once(spark, schema, describes):
    table = TableRef(schema, "once")
    write_dataframe(spark, _rows(spark, 0, 300), table, _cfg(), **QUIET)  # a first build
    assert len(describes) == 1
    for strategy in ("upsert", "insert_overwrite", "insert"):
        describes.clear()
        write_dataframe(spark, _rows(spark, 100, 300), table, _cfg(strategy), **QUIET)
        assert len(describes) == 1, strategy
    describes.clear()
    write_dataframe(spark, _rows(spark, 0, 50), table, _cfg(), full_refresh=True, **QUIET)
    assert len(describes) == 1


def test_a_compaction_describes_its_table_once(spark, schema, describes):
    table = TableRef(schema, "compacted")
    cfg = parse_config({"partition_by": ["day"], "target_file_size": "64KB", "file_count": 4})
    write_dataframe(spark, _rows(spark, 0, 600), table, cfg, **QUIET)
    describes.clear()
    result = run_compaction(spark, table, {"target_file_size": "64KB"}, **QUIET)
    assert result.groups and len(describes) == 1


def test_the_description_is_read_again_after_recovery(spark, schema, describes,
                                                     monkeypatch):
    """A crashed full refresh that changed the definition is rolled back by the next write,
    which then writes the table as the old definition has it."""
    table = TableRef(schema, "recovered")
    write_dataframe(spark, _rows(spark, 0, 300), table, _cfg(), **QUIET)
    wider = _rows(spark, 0, 300).selectExpr("*", "'x' as extra")
    cfg = _cfg()
    monkeypatch.setenv("SIZED_SPARK_FAULT", "defined")
    faults.reset()
    with pytest.raises(faults.InjectedCrash):
        write_dataframe(spark, wider, table, cfg, full_refresh=True, **QUIET)
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    lock.forget_held_locks()
    faults.reset()
    describes.clear()
    write_dataframe(spark, _rows(spark, 300, 30), table, cfg, **QUIET)
    assert len(describes) >= 2  # before the lock, and after the rollback
    assert "extra" not in describe_table(spark, table).column_names
    assert spark.table(f"{schema}.recovered").count() == 330


def test_the_description_is_read_again_after_another_writers_commit(spark, schema,
                                                                    describes, monkeypatch):
    """A writer that commits while this one waits for the lock may have changed the table;
    this one reads the description again (and only then)."""
    table = TableRef(schema, "raced")
    write_dataframe(spark, _rows(spark, 0, 300), table, _cfg(), **QUIET)
    real, raced = CommitProtocol.acquire_lock, []

    def another_writer_first(self, operation, options=LockOptions()):
        if not raced:  # the other writer takes the lock first and commits
            raced.append(operation)
            write_dataframe(spark, _rows(spark, 1000, 10), table, _cfg(), **QUIET)
        return real(self, operation, options)
    monkeypatch.setattr(CommitProtocol, "acquire_lock", another_writer_first)
    describes.clear()
    write_dataframe(spark, _rows(spark, 300, 30), table, _cfg(), **QUIET)
    assert len(describes) == 3  # this write's, the other's, this write's again
    assert spark.table(f"{schema}.raced").count() == 340
