"""A snapshot run on the engine, as the `snapshot` materialization drives it
(macros/materializations/snapshot.sql): roll back a crashed run, then dbt's staging rows
(new versions to insert, current rows to close) written as one upsert keyed by dbt_scd_id
in which a matched row takes only dbt_valid_to. A crash anywhere in a run, then the next
run: each key's history exact, no version lost or doubled; only files holding closed
versions (and small files topped up with new ones) are rewritten."""
import pytest

# dbt's snapshot SQL for the timestamp strategy, one copy: the benchmark's
from benchmarks.snapshot import first_build_sql, staging_sql
from python_adapter.core.config import parse_config
from python_adapter.io.fs import HadoopFS
from python_adapter.spark.catalog.tables import TableRef, describe_table
from python_adapter.spark.services.rollback import recover_table
from python_adapter.api import write_dataframe
from python_adapter.table import faults, lock
from python_adapter.table.faults import InjectedCrash
from python_adapter.table.timeline import Timeline

QUIET = dict(log=lambda m: None)
KEYS = 600


def _cfg():
    return parse_config({"unique_key": "dbt_scd_id", "incremental_strategy": "upsert",
                         "merge_update_columns": ["dbt_valid_to"],
                         "on_schema_change": "append_new_columns",
                         "target_file_size": 12_000, "small_file_limit": 9_000})


def _source(day, keys=KEYS, every=7):
    """The source on `day`: ids 1..keys; those divisible by `every` change every day (from
    day 2)."""
    version = f"if(id % {every} = 0, {day}, 1)"
    return f"""select id, concat('v', {version}) as name,
                      timestamp'2024-01-01' + make_interval(0, 0, 0, {version} - 1) as updated_at
               from range(1, {keys} + 1)"""


def _run(spark, table, day, **source):
    """One snapshot run as the materialization makes it."""
    name = f"{table.schema}.{table.identifier}"
    if describe_table(spark, table) is None:
        return write_dataframe(spark, spark.sql(first_build_sql(_source(day, **source))),
                               table, _cfg(), full_refresh=True, **QUIET)
    recover_table(spark, table, **QUIET)
    spark.catalog.refreshTable(name)
    return write_dataframe(spark, spark.sql(staging_sql(_source(day, **source), name)), table,
                           _cfg(), **QUIET)


def _histories(spark, table):
    rows = spark.sql(f"select id, name, dbt_valid_from, dbt_valid_to from "
                     f"{table.schema}.{table.identifier}").collect()
    out = {}
    for r in sorted(rows, key=lambda r: (r[0], r[2])):
        out.setdefault(r[0], []).append((r[1], r[2].day, r[3].day if r[3] else None))
    return out


def _expected(days, keys=KEYS, every=7):
    out = {}
    for i in range(1, keys + 1):
        versions = list(range(1, days + 1)) if i % every == 0 else [1]
        out[i] = [(f"v{d}", d, d + 1 if d < versions[-1] else None) for d in versions]
    return out


def _timeline(spark, table):
    fs = HadoopFS(spark)
    return Timeline(fs, fs.qualify(describe_table(spark, table).location))


@pytest.mark.parametrize("point", ["publish:2", "completed"])
def test_a_crash_in_a_snapshot_run_then_the_next_run_keeps_each_history_exact(
        spark, schema, monkeypatch, point):
    table = TableRef(schema, "snap")
    _run(spark, table, 1)
    _run(spark, table, 2)
    monkeypatch.setenv("SIZED_SPARK_FAULT", point)
    faults.reset()
    with pytest.raises(InjectedCrash):
        _run(spark, table, 3)
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    lock.forget_held_locks()  # as if the process had died
    faults.reset()
    _run(spark, table, 3)  # a crash after completing leaves nothing to do: no version twice
    assert _histories(spark, table) == _expected(3)
    writes = [i.operation for i in _timeline(spark, table).completed() if i.action != "rollback"]
    assert writes == ["full_refresh", "upsert", "upsert", "upsert"][:len(writes)]
    assert len(writes) == (4 if point == "completed" else 3)


def test_a_snapshot_run_rewrites_only_files_holding_closed_versions(spark, schema):
    table = TableRef(schema, "snap_files")
    source = dict(keys=3000, every=1000)  # 3 keys of 3000 change
    _run(spark, table, 1, **source)
    before = _timeline(spark, table).file_index()
    _run(spark, table, 2, **source)
    last = _timeline(spark, table).completed()[-1]
    changed = spark.sql(f"select distinct _metadata.file_name from {schema}.snap_files "
                        f"where dbt_valid_to is not null").collect()
    assert last.operation == "upsert"
    # every file holding a closed version was rewritten; besides them, only small files
    # (topped up with the new versions) were
    assert {f.path.split("/")[-1] for f in last.added} >= {r[0] for r in changed}
    limit = _cfg().small_file_limit
    others = [f for f in last.removed if f.bytes >= limit]
    assert len(others) <= len(changed), (others, changed)
    assert len(before) > 3 and len(last.removed) < len(before)  # the rest kept as they were
    assert _histories(spark, table) == _expected(2, **source)
