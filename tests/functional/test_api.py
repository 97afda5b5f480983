"""api.write_model: a model's SQL run and written as a sized table."""
import pytest
from pyspark.sql import functions as F

from python_adapter.api import write_model
from python_adapter.core.config import parse_config
from python_adapter.spark.catalog.tables import TableRef
from python_adapter.spark.session_conf import own_session
from python_adapter.api import write_dataframe
from python_adapter.table import faults, lock
from python_adapter.table.faults import InjectedCrash
from tests.functional.helpers import rows_of

QUIET = dict(log=lambda m: None)


@pytest.mark.parametrize("point,partition_by", [("published", ["day"]), ("synced", ["day"]),
                                                ("published", [])])
def test_a_model_reading_its_own_table_after_a_crash_reads_the_last_commit(
        spark, schema, events, monkeypatch, point, partition_by):
    """An incremental model's SQL that reads `{{ this }}` is analyzed before the write's
    lock and recovery; Spark lists the table's files only when the write runs it, after
    recovery, so a write that crashed after publishing is never read (partitioned tables
    list through the catalog, unpartitioned ones through a file index: both checked)."""
    table = TableRef(schema, "selfread")
    cfg = parse_config({"partition_by": partition_by, "unique_key": "id",
                        "target_file_size": 16_000})
    write_dataframe(spark, events(days=3), table, cfg, **QUIET)
    committed = dict(rows_of(spark, schema, "selfread"))
    monkeypatch.setenv("SIZED_SPARK_FAULT", point)
    faults.reset()
    crashed = spark.table(f"{schema}.selfread").where("id % 3 = 0") \
        .withColumn("tag", F.lit("uncommitted"))
    with pytest.raises(InjectedCrash):
        write_dataframe(spark, crashed, table, cfg, **QUIET)
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    lock.forget_held_locks()  # the crashed writer is gone, as a killed process is
    faults.reset()

    write_model(spark, table, f"select id, day, payload, amount, concat(tag, '+') as tag "
                              f"from {schema}.selfread where id % 5 = 0", cfg, **QUIET)
    expected = {k: (f"{v}+" if k % 5 == 0 else v) for k, v in committed.items()}
    assert dict(rows_of(spark, schema, "selfread")) == expected


@pytest.mark.parametrize("partition_by", [["day"], []])
@pytest.mark.parametrize("strategy", ["upsert", "insert"])
def test_a_model_reading_its_own_table_reads_what_a_writer_committed_before_its_lock(
        spark, schema, events, partition_by, strategy):
    """Another writer (another dbt thread or host) commits between the analysis of a model
    that reads its own table and the model's write, which waits for that writer's lock:
    the model reads the table as that commit left it (not the files it set aside, not
    without the rows it added)."""
    table = TableRef(schema, "selfread")
    cfg = parse_config({"partition_by": partition_by, "unique_key": "id",
                        "incremental_strategy": strategy, "target_file_size": 16_000})
    write_dataframe(spark, events(days=3), table, cfg, **QUIET)
    with own_session(spark, schema, "selfread") as session:
        model = session.sql(f"select id + 1000000 as id, day, payload, amount, tag "
                            f"from {schema}.selfread")
        # the other writer: new rows, and its rows rewrite files (upsert: every file;
        # insert: the small files it packs into)
        other = events(days=3, id_offset=500000, tag="other")
        write_dataframe(spark, other.unionByName(spark.table(f"{schema}.selfread")
                                                 .withColumn("tag", F.lit("v2"))),
                        table, cfg, **QUIET)
        after_other = rows_of(spark, schema, "selfread")
        write_dataframe(session, model, table, cfg, **QUIET)
    expected = sorted(after_other + [(i + 1000000, t) for i, t in after_other])
    assert rows_of(spark, schema, "selfread") == expected


PROPAGATION = "spark.sql.constraintPropagation.enabled"


@pytest.mark.parametrize("columns, propagation", [(40, "true"), (600, "false")])
def test_a_wide_models_write_runs_without_constraint_propagation(
        spark, schema, monkeypatch, columns, propagation):
    """Spark's constraint propagation over a model of hundreds of computed columns was the
    whole cost of its write (a 50-row full build of 2,000 columns ran over 16 minutes in the
    optimizer, issue 46): a wide model's write runs with it off, a narrow one's with it on
    (the filters it infers prune partitions through a model's joins), and the caller's
    session keeps its setting. Every row is written either way."""
    import python_adapter.api as api

    seen = []

    def observed(session, df, *args, **kwargs):  # the real write, its setting recorded
        seen.append(session.conf.get(PROPAGATION))
        return write_dataframe(session, df, *args, **kwargs)

    monkeypatch.setattr(api, "write_dataframe", observed)
    table = TableRef(schema, f"wide{columns}")
    cfg = parse_config({"partition_by": ["day"], "unique_key": "id"})
    values = ", ".join(f"concat('v', id * {i}) as c{i}" for i in range(columns - 2))
    sql = (f"select id, date_add(date'2025-01-01', cast(id % 3 as int)) as day, {values} "
           f"from range(30)")
    before = spark.conf.get(PROPAGATION, None)
    write_model(spark, table, sql, cfg, **QUIET)
    write_model(spark, table, sql.replace("concat('v'", "concat('w'"), cfg, **QUIET)
    assert seen == [propagation, propagation]
    assert spark.conf.get(PROPAGATION, None) == before
    got = spark.table(f"{schema}.wide{columns}").select("id", "c1").collect()
    assert sorted((r.id, r.c1) for r in got) == [(i, f"w{i}") for i in range(30)]


def test_the_operations_return_records_a_caller_acts_on(spark, schema, events, tmp_path,
                                                        monkeypatch):
    """rollback, restore, recover and report return a record each: the instant undone, the
    restore's own instant, the unfinished instants rolled back, the report's path; the line
    the dbt operation prints is the record's message."""
    from python_adapter import api
    table, name = TableRef(schema, "records"), f"{schema}.records"
    cfg = parse_config({"partition_by": ["day"], "unique_key": "id", "target_file_size": 16_000})
    first = write_dataframe(spark, events(days=2), table, cfg, **QUIET).instant
    second = write_dataframe(spark, events(days=3, tag="v2"), table, cfg, **QUIET).instant

    undone = api.rollback(spark, table, **QUIET)
    assert (undone.table, undone.instant) == (name, second)
    assert undone.message == f"Rolled back {name} to before commit {second}"

    restored = api.restore(spark, table, first, **QUIET)
    assert restored.restored_to == first
    assert restored.instant == api.timeline(spark, table)[-1][0] != first

    monkeypatch.setenv("SIZED_SPARK_FAULT", "published")
    faults.reset()
    with pytest.raises(InjectedCrash):
        write_dataframe(spark, events(days=2, tag="crashed"), table, cfg, **QUIET)
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    lock.forget_held_locks()
    faults.reset()
    recovered = api.recover(spark, table, **QUIET)
    assert len(recovered.instants) == 1
    assert recovered.message == f"Recovered {name}: 1 unfinished instant rolled back"
    assert api.recover(spark, table, **QUIET).instants == ()

    report = api.report(spark, table, str(tmp_path / "r.html"), **QUIET)
    assert report.path.endswith("r.html") and (tmp_path / "r.html").stat().st_size > 0
