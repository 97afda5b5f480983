"""A full refresh that changes the table's definition (columns, partitioning, location) is
one instant under the writer lock: killed at any step it leaves the old table or the new
one, exactly, once recovered; it never deletes a live writer's lock or staging; and tables
of earlier versions, whose metadata sat inside the table, keep working."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from python_adapter.table import faults
from python_adapter.table import lock
from python_adapter.spark.catalog.tables import TableRef, describe_table
from python_adapter.table.commit import CommitProtocol
from python_adapter.core.config import parse_config
from python_adapter.table.faults import InjectedCrash
from python_adapter.io.fs import HadoopFS
from python_adapter.errors import LockError
from python_adapter.table.timeline import Timeline, legacy_meta_dir_of, meta_dir_of
from python_adapter.errors import WriteError
from python_adapter.spark.services.rollback import recover_table, rollback_last_commit
from python_adapter.api import write_dataframe
from tests.functional.helpers import SHORT_JVM
from tests.functional.readers import DirectoryReader, local_dir, parquet_files

REPO = Path(__file__).resolve().parents[4]
QUIET = dict(log=lambda m: None)
# Every step of a definition-changing full refresh: publish:N is the N-th file moved,
# dropped / defined: the old definition dropped, the new one created.
POINTS = ["requested", "inflight", "publish:1", "publish:3", "published", "dropped", "defined",
          "completed", "cleanup"]


# extended (about 2 worker-minutes, three Spark processes): every step of a definition change
# is crashed in this process below, and a dbt process killed mid-publish and recovered by the
# next is test_dbt_project.py's upsert scenario
@pytest.mark.extended
def test_a_process_killed_during_a_definition_change_leaves_the_old_table(tmp_path):
    """Real crashes: a chain of processes (tests/functional/crash_chain.py), each killed
    like kill -9 while refreshing the table to the other definition (mid-publish; with the
    old definition dropped and the new one not yet created); the next process recovers,
    checks every row of the definition the table must hold, and reruns. Every step is
    crashed in process in test_a_crash_at_every_step_of_a_definition_change_is_rolled_back."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIZED_SPARK_FAULT")}
    env.update(SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=str(REPO), **SHORT_JVM)

    def run(expect, *actions):
        out = subprocess.run([sys.executable, str(REPO / "tests/functional/crash_chain.py"),
                              str(home), expect, *actions], cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=600)
        return out.returncode, out.stdout + out.stderr[-3000:]

    code, text = run("", "refresh:A", "crash:B:publish:3")
    assert code == 137, text
    code, text = run("A", "refresh:B", "crash:A:dropped")  # no table in the metastore
    assert code == 137, text
    code, text = run("B", "refresh:A")
    assert code == 0, text


@pytest.mark.parametrize("direction", ["columns", "partitioning"])
def test_a_crash_at_every_step_of_a_definition_change_is_rolled_back(spark, schema, monkeypatch,
                                                                     direction):
    table = TableRef(schema, f"steps_{direction}")
    name = f"{schema}.steps_{direction}"
    old, old_cfg = _old(spark), _cfg("p")
    if direction == "columns":  # same partitioning, a column renamed and one retyped
        new, new_cfg = old.selectExpr("id", "p", "cast(tag as binary) as payload"), _cfg("p")
    else:
        new, new_cfg = _new(spark), _cfg("q")
    write_dataframe(spark, old, table, old_cfg, **QUIET)
    fs = HadoopFS(spark)
    with DirectoryReader(local_dir(fs.qualify(describe_table(spark, table).location))) as reader:
        _crash_at_every_step(spark, table, name, (old, old_cfg), (new, new_cfg), monkeypatch)
    assert reader.listings > 0 and not reader.bad, sorted(reader.bad)[:5]


def _crash_at_every_step(spark, table, name, old_def, new_def, monkeypatch):
    (old, old_cfg), (new, new_cfg) = old_def, new_def
    for point in POINTS:
        monkeypatch.setenv("SIZED_SPARK_FAULT", point)
        faults.reset()
        with pytest.raises(InjectedCrash):
            write_dataframe(spark, new, table, new_cfg, full_refresh=True, **QUIET)
        monkeypatch.delenv("SIZED_SPARK_FAULT")
        lock.forget_held_locks()  # as a dead process, it holds no lock any more
        recover_table(spark, table, **QUIET)
        committed = point in ("completed", "cleanup")
        assert _rows(spark, name, new if committed else old), point
        fs = HadoopFS(spark)
        assert not Timeline(fs, fs.qualify(describe_table(spark, table).location)).pending()
        if committed:  # back to the old definition for the next step
            write_dataframe(spark, old, table, old_cfg, full_refresh=True, **QUIET)
            assert _rows(spark, name, old)


def _cfg(pcol, **extra):
    return parse_config({"partition_by": [pcol], "target_file_size": "20KB",
                         "incremental_strategy": "insert_overwrite", **extra})


def _old(spark):
    return spark.sql("select cast(id as bigint) as id, cast(id % 4 as int) as p, concat('a', id) "
                     "as tag from range(400)")


def _new(spark):
    return spark.sql("select cast(id as bigint) as id, concat('q', id % 3) as q, id * 1.5 as x "
                     "from range(300)")


def _rows(spark, name, df):
    got = spark.table(name).select(*df.columns)
    return sorted(map(tuple, got.collect())) == sorted(map(tuple, df.collect()))


def test_a_failing_model_leaves_the_old_definition_and_rows(spark, schema):
    table = TableRef(schema, "fails")
    write_dataframe(spark, _old(spark), table, _cfg("p"), **QUIET)
    broken = _new(spark).selectExpr("id", "q", "x / cast(assert_true(id < 0) as int) as x")
    with pytest.raises(Exception, match="is not true|id < 0"):
        write_dataframe(spark, broken, table, _cfg("q"), full_refresh=True, **QUIET)
    assert describe_table(spark, table).partition_columns == ("p",)
    assert _rows(spark, f"{schema}.fails", _old(spark))


@pytest.mark.parametrize("point", ["published", "dropped", "defined"])
def test_a_crash_while_moving_to_a_new_location_restores_the_old_table(spark, schema, tmp_path,
                                                                        monkeypatch, point):
    table = TableRef(schema, "moves")
    write_dataframe(spark, _old(spark), table, _cfg("p"), **QUIET)
    fs = HadoopFS(spark)
    old_location = fs.qualify(describe_table(spark, table).location)
    moved = TableRef(schema, "moves", location_root=f"file://{tmp_path}/elsewhere")
    monkeypatch.setenv("SIZED_SPARK_FAULT", point)
    faults.reset()
    with pytest.raises(InjectedCrash):
        write_dataframe(spark, _new(spark), moved, _cfg("q"), full_refresh=True, **QUIET)
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    lock.forget_held_locks()
    recover_table(spark, moved, **QUIET)  # the model's next run would do it first
    info = describe_table(spark, table)
    assert fs.qualify(info.location) == old_location and info.table_type == "MANAGED"
    assert _rows(spark, f"{schema}.moves", _old(spark))
    # the rerun moves it, and the old managed location is gone once the new one is committed
    write_dataframe(spark, _new(spark), moved, _cfg("q"), full_refresh=True, **QUIET)
    info = describe_table(spark, table)
    assert info.location.endswith("elsewhere/moves") and info.table_type == "EXTERNAL"
    assert _rows(spark, f"{schema}.moves", _new(spark))
    assert not fs.exists(old_location) and not fs.exists(meta_dir_of(old_location))


def test_a_definition_change_waits_for_a_live_writer_and_deletes_nothing_of_it(spark, schema):
    table = TableRef(schema, "busy")
    write_dataframe(spark, _old(spark), table, _cfg("p"), **QUIET)
    fs = HadoopFS(spark)
    location = fs.qualify(describe_table(spark, table).location)
    holder = CommitProtocol(fs, location, log=lambda m: None)
    holder.acquire_lock("upsert")  # another writer (a thread of this process) is at work
    try:
        staged = f"{holder.staging_dir('20261123000000000')}/data/p=1/part-0.parquet"
        fs.write_bytes(staged, b"staged by the live writer")
        with pytest.raises(LockError, match="lock file .*lock"):
            write_dataframe(spark, _new(spark), table, _cfg("q"), full_refresh=True, **QUIET)
        assert fs.exists(staged) and fs.exists(holder.lock_path)
    finally:
        holder.release_lock()
    assert _rows(spark, f"{schema}.busy", _old(spark))


def test_a_definition_change_is_not_rolled_back_by_sized_rollback(spark, schema):
    table = TableRef(schema, "norb")
    write_dataframe(spark, _old(spark), table, _cfg("p"), **QUIET)
    write_dataframe(spark, _new(spark), table, _cfg("q"), full_refresh=True, **QUIET)
    with pytest.raises(WriteError, match="changed the table's definition"):
        rollback_last_commit(spark, table, **QUIET)
    assert _rows(spark, f"{schema}.norb", _new(spark))
    # the timeline goes on across the change; the new definition's files are all it lists
    fs = HadoopFS(spark)
    timeline = Timeline(fs, fs.qualify(describe_table(spark, table).location))
    assert len(timeline.completed()) == 2
    assert {f.partition.split("=")[0] for f in timeline.file_index().values()} == {"q"}


def test_a_table_of_an_earlier_version_is_moved_to_the_new_layout(spark, schema):
    """Earlier versions kept the metadata in <table>/.sized, where DuckDB and polars globs
    find it; the first writer moves it beside the table, after rolling back an unfinished
    instant the old writer left."""
    table = TableRef(schema, "legacy")
    write_dataframe(spark, _old(spark), table, _cfg("p"), **QUIET)
    fs = HadoopFS(spark)
    location = fs.qualify(describe_table(spark, table).location)
    new_meta, old_meta = meta_dir_of(location), legacy_meta_dir_of(location)
    fs.rename(new_meta, old_meta)  # as an earlier version left it, with checksum files
    crc = os.path.join(local_dir(location), "p=1", ".part-old.parquet.crc")
    with open(crc, "wb") as fh:
        fh.write(b"crc")
    # ... with a crashed write of that version: requested, some files published
    old = CommitProtocol(fs, location, log=lambda m: None, meta_dir=old_meta)
    crashed = old.request("insert_overwrite", ["p"])
    stray = f"{old.staging_dir(crashed.instant)}/data/p=9/part-x.parquet"
    spark.range(5).write.parquet(f"{old.staging_dir(crashed.instant)}/tmp")
    fs.rename([f for f in fs.list_files(f"{old.staging_dir(crashed.instant)}/tmp")
               if f.name.endswith(".parquet")][0].path, stray)
    from python_adapter.table.files import file_entry
    inflight = old.mark_inflight(crashed, [file_entry("p=9", "p=9/part-x.parquet", 5, fs.size(stray),
                                                      staged_path=stray)], [])
    old.publish(inflight)
    assert fs.exists(f"{location}/p=9/part-x.parquet")

    more = spark.sql("select cast(id as bigint) as id, 7 as p, 'b' as tag from range(10)")
    write_dataframe(spark, more, table, _cfg("p"), **QUIET)
    assert not fs.exists(old_meta) and fs.exists(f"{new_meta}/timeline")
    expected = _old(spark).unionByName(more)
    assert _rows(spark, f"{schema}.legacy", expected)
    table_dir = local_dir(location)
    assert all(".sized" not in p for p in parquet_files(table_dir))
    assert not [p for p in os.listdir(table_dir) if p.startswith(".")]
    assert not os.path.exists(crc)
