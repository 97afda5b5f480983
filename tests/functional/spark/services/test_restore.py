"""Retention, restore, the cleaner and the timeline's archive on real tables: a table can be
brought back to any retained instant (and the restore undone), set-aside files past
retention are deleted and never a needed one, old instants are archived without changing
what the table holds, and a crash at any step of these loses no row and duplicates none."""
import os
import time

import pytest

from python_adapter.core.config import parse_config
from python_adapter.errors import ConfigError
from python_adapter.io.fs import HadoopFS
from python_adapter.spark.catalog.tables import TableRef, describe_table
from python_adapter.spark.services.clean import clean_table
from python_adapter.spark.services.cluster_exec import run_compaction
from python_adapter.spark.services.describe import read_layout, timeline_rows
from python_adapter.spark.services.restore import restore_table
from python_adapter.spark.services.rollback import recover_table, rollback_last_commit
from python_adapter.api import write_dataframe
from python_adapter.table import archive, faults, lock
from python_adapter.table.archive import ARCHIVE_BATCH
from python_adapter.table.faults import InjectedCrash
from python_adapter.table.timeline import Timeline, meta_dir_of, replay
from tests.functional.helpers import crash_points, rows_of
from tests.functional.readers import duckdb_rows, local_dir

QUIET = dict(log=lambda m: None)


def _cfg(**kw):
    return parse_config({"partition_by": ["day"], "unique_key": "id",
                         "target_file_size": 16_000, **kw})


def _batch(spark, ids, tag, days=3):
    return spark.sql(f"""
        select cast(id as bigint) as id, date_add(date'2025-01-01', cast(id % {days} as int)) as day,
               sha2(cast(id as string), 256) as payload, '{tag}' as tag
        from (select explode(array({', '.join(map(str, ids))})) as id)""")


def _timeline(spark, table):
    fs = HadoopFS(spark)
    return fs, Timeline(fs, fs.qualify(describe_table(spark, table).location))


def _write(spark, table, ids, tag, **cfg):
    write_dataframe(spark, _batch(spark, ids, tag), table, _cfg(**cfg), **QUIET)
    return rows_of(spark, table.schema, table.identifier)


def _set_aside_dirs(fs, timeline):
    return sorted(st.name for st in fs.list_dir(f"{timeline.meta_dir}/replaced"))


def _crash_like_a_dead_process():
    lock.forget_held_locks()
    faults.reset()


def test_restore_brings_back_a_retained_instant_and_is_undone_by_rollback(spark, schema):
    table = TableRef(schema, "rs")
    states = [_write(spark, table, range(0, 40), "v0")]
    states.append(_write(spark, table, range(20, 60), "v1"))     # updates and inserts
    states.append(_write(spark, table, range(0, 10), "v2"))
    fs, timeline = _timeline(spark, table)
    first, second, _third = [i.instant for i in timeline.completed()]

    restore_table(spark, table, first, **QUIET)
    assert rows_of(spark, schema, "rs") == states[0]
    columns = ["id", "tag"]
    assert duckdb_rows(local_dir(timeline.location), columns) == \
        sorted(states[0], key=repr)

    restore_table(spark, table, second, **QUIET)    # forward again, to a state before it
    assert rows_of(spark, schema, "rs") == states[1]

    rollback_last_commit(spark, table, **QUIET)     # a restore is undone like a commit
    assert rows_of(spark, schema, "rs") == states[0]


def test_services_after_a_restore_go_on_with_the_sizes_the_table_was_written_with(
        spark, schema):
    """A restore commits no sizes of its own: compaction and the layout after one use the
    last write's target, not the default (128 MB made one file of each partition)."""
    table = TableRef(schema, "rssizes")
    cfg = parse_config({"partition_by": ["day"], "incremental_strategy": "insert",
                        "target_file_size": 16_000, "small_file_limit": 0})  # packing off
    for v in range(4):  # each load adds a small file (~9 KB) to each of the 3 partitions
        write_dataframe(spark, _batch(spark, range(v * 300, v * 300 + 300), f"v{v}"), table,
                        cfg, **QUIET)
    _fs, timeline = _timeline(spark, table)
    loaded = timeline.completed()[-1].instant

    def compacted():
        run_compaction(spark, table, {}, **QUIET)
        layout = read_layout(spark, table)
        return layout.target_file_size, sorted(f.bytes for f in layout.files)

    first = compacted()
    assert first[0] == 16_000 and len(first[1]) > 3   # more than a file a partition
    restore_table(spark, table, loaded, **QUIET)      # back to the four loads' files
    assert read_layout(spark, table).target_file_size == 16_000
    assert compacted() == first


def test_restore_refuses_instants_it_cannot_restore_and_names_those_it_can(spark, schema):
    table = TableRef(schema, "rsbad")
    for v in range(4):
        _write(spark, table, range(v * 5, v * 5 + 20), f"v{v}", retain_commits=2,
               retain_hours=0)
    fs, timeline = _timeline(spark, table)
    ids = [i.instant for i in timeline.completed()]
    before = rows_of(spark, schema, "rsbad")
    for bad, why in [("20990101000000000", "it is not an instant of the table"),
                     (ids[0], "files it held were deleted by the cleaner, past the table's "
                              "retention \\(retain_commits=2, retain_hours=0\\)")]:
        # the state after ids[1] is at hand: what it held, the two kept commits set aside
        with pytest.raises(ConfigError, match=f"{why}.*can be restored to {ids[1]}, {ids[2]}, "
                                              f"{ids[3]}"):
            restore_table(spark, table, bad, **QUIET)
    assert rows_of(spark, schema, "rsbad") == before
    assert [i.instant for i in Timeline(fs, timeline.location).completed()] == ids


def test_restore_decides_from_the_files_kept_not_from_the_archive(spark, schema):
    """The adversarial pass's case: a restore sets the newer files aside; a clean keeping one
    commit archives every instant before it. The archived instant's files are still kept,
    in the restore's set-aside directory, so the table can be restored to it, as
    sized_rollback of the restore would."""
    table = TableRef(schema, "rsarch")
    states = [_write(spark, table, range(0, 40), "v0")]
    states.append(_write(spark, table, range(0, 40), "v1"))   # every file rewritten
    fs, timeline = _timeline(spark, table)
    first, second = [i.instant for i in timeline.completed()]
    restore_table(spark, table, first, **QUIET)               # v1's files set aside
    cleaned = clean_table(spark, table, {"retain_commits": 1, "retain_hours": 0}, **QUIET)
    assert cleaned.archived == 2 and cleaned.set_aside_dirs >= 1

    restore_table(spark, table, second, **QUIET)
    assert rows_of(spark, schema, "rsarch") == states[1]
    assert duckdb_rows(local_dir(timeline.location), ["id", "tag"]) == \
        sorted(states[1], key=repr)
    # and back to the archived first build: its files are now in that restore's directory
    restore_table(spark, table, first, **QUIET)
    assert rows_of(spark, schema, "rsarch") == states[0]
    rollback_last_commit(spark, table, **QUIET)               # undo that restore: v1 again
    assert rows_of(spark, schema, "rsarch") == states[1]


@pytest.mark.parametrize("point", crash_points(
    ["requested", "inflight", "publish:2", "published", "completed", "cleanup"],
    ci=["inflight", "publish:2", "completed"]))
def test_a_crash_at_any_step_of_a_restore_keeps_the_last_completed_commit(
        spark, schema, monkeypatch, point):
    table = TableRef(schema, "rscrash")
    old = _write(spark, table, range(0, 40), "v0")
    new = _write(spark, table, range(0, 30), "v1")
    _fs, timeline = _timeline(spark, table)
    first = timeline.completed()[0].instant
    monkeypatch.setenv("SIZED_SPARK_FAULT", point)
    faults.reset()
    with pytest.raises(InjectedCrash):
        restore_table(spark, table, first, **QUIET)
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    _crash_like_a_dead_process()
    recover_table(spark, table, **QUIET)
    committed = point in ("completed", "cleanup")
    assert rows_of(spark, schema, "rscrash") == (old if committed else new)
    restore_table(spark, table, first, **QUIET)  # and it goes through after recovery
    assert rows_of(spark, schema, "rscrash") == old


def test_set_aside_files_are_kept_for_the_retained_commits_only(spark, schema):
    table = TableRef(schema, "ret")
    for v in range(5):
        _write(spark, table, range(0, 30), f"v{v}", retain_commits=3, retain_hours=0)
    fs, timeline = _timeline(spark, table)
    ids = [i.instant for i in timeline.completed()]
    # each commit rewrote every file, so each set files aside; the last three kept theirs
    assert _set_aside_dirs(fs, timeline) == ids[-3:]
    # the default keeps 10 commits and a day: nothing of these five is deleted
    other = TableRef(schema, "ret_default")
    for v in range(5):
        _write(spark, other, range(0, 30), f"v{v}")
    fs, timeline = _timeline(spark, other)
    assert _set_aside_dirs(fs, timeline) == [i.instant for i in timeline.completed()][1:]


def test_old_instants_are_archived_and_the_table_reads_the_same(spark, schema):
    table = TableRef(schema, "arch")
    expected = None
    for v in range(12):
        expected = _write(spark, table, range(v * 3, v * 3 + 12), f"v{v}", retain_commits=1,
                          retain_hours=0)
    fs, timeline = _timeline(spark, table)
    checkpoint = timeline.checkpoint()
    assert checkpoint is not None and len(checkpoint.archived) == ARCHIVE_BATCH
    # a file per instant left in the timeline directory: the retained and the not yet due
    assert len(fs.list_dir(timeline.dir)) == len(timeline.active()) == 12 - ARCHIVE_BATCH
    history = timeline.history()
    assert len(history) == 12 and all(i.added for i in history)
    # the listing a write makes to find the checkpoint: the checkpoint and the history's
    # directory, however many archivals there were
    assert [st.name for st in fs.list_dir(timeline.archive_dir)] == \
        ["checkpoint-00000001.avro", "history"]
    # the index a write reads (checkpoint + active instants) is the whole history replayed
    assert timeline.file_index() == replay((), history)
    assert [r[0] for r in timeline_rows(spark, table)] == [i.instant for i in history]
    assert rows_of(spark, schema, "arch") == expected
    # writes go on over the archive: bytes per row, the files, the key ranges
    expected = _write(spark, table, range(0, 50), "v12", retain_commits=1, retain_hours=0)
    assert rows_of(spark, schema, "arch") == expected


@pytest.mark.parametrize("point", ["cleaned", "archive_history", "archive_checkpoint",
                                   "archive_timeline"])
def test_a_crash_while_cleaning_or_archiving_loses_nothing(spark, schema, monkeypatch, point):
    monkeypatch.setattr(archive, "ARCHIVE_BATCH", 2)  # fewer commits to reach an archival
    table = TableRef(schema, "archcrash")
    for v in range(2):
        _write(spark, table, range(v * 3, v * 3 + 12), f"v{v}", retain_commits=1,
               retain_hours=0)
    monkeypatch.setenv("SIZED_SPARK_FAULT", point)
    faults.reset()
    with pytest.raises(InjectedCrash):  # the 3rd commit completes, then cleans and archives
        _write(spark, table, range(6, 18), "v2", retain_commits=1, retain_hours=0)
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    _crash_like_a_dead_process()
    recover_table(spark, table, **QUIET)
    fs, timeline = _timeline(spark, table)
    history = timeline.history()
    assert len(history) == len({i.instant for i in history}) == 3
    assert timeline.file_index() == replay((), history)
    expected = [(i, "v0") for i in range(3)] + [(i, "v1") for i in range(3, 6)] + \
        [(i, "v2") for i in range(6, 18)]
    assert rows_of(spark, schema, "archcrash") == expected  # the crashed commit had completed
    after = _write(spark, table, range(60, 70), "v3", retain_commits=1, retain_hours=0)
    assert after == sorted(expected + [(i, "v3") for i in range(60, 70)])
    fs, timeline = _timeline(spark, table)
    assert len(timeline.history()) == 4 and timeline.checkpoint() is not None
    leftovers = fs.list_dir(timeline.archive_dir) + fs.list_dir(timeline.history_dir)
    assert not [st for st in leftovers if st.name.endswith(".tmp")]
    assert [st.name for st in fs.list_dir(timeline.history_dir)] == \
        [f"history-{n:08d}.avro" for n in range(1, timeline.checkpoint().sequence + 1)]


def test_clean_applies_a_retention_now_removes_leftovers_and_keeps_unrecorded_data(spark,
                                                                                 schema):
    table = TableRef(schema, "cln")
    for v in range(5):
        expected = _write(spark, table, range(0, 30), f"v{v}")
    fs, timeline = _timeline(spark, table)
    directory = local_dir(timeline.location)
    old = time.time() - 3 * 3600
    leftovers = [f"{directory}/_temporary/0/part-0.parquet", f"{directory}/day=2025-01-01/_committed_1"]
    for path in leftovers:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "wb").close()
    for path in leftovers + [f"{directory}/_temporary/0", f"{directory}/_temporary"]:
        os.utime(path, (old, old))
    fresh = f"{directory}/day=2025-01-02/_SUCCESS"
    open(fresh, "wb").close()
    # a data file another engine wrote into the table: readers see its rows, it stays
    _batch(spark, [999], "foreign").drop("day").coalesce(1).write.parquet(f"{directory}/x_tmp")
    foreign = next(f for f in os.listdir(f"{directory}/x_tmp") if f.endswith(".parquet"))
    os.rename(f"{directory}/x_tmp/{foreign}", f"{directory}/day=2025-01-03/{foreign}")
    fs.delete(f"{timeline.location}/x_tmp")
    spark.catalog.refreshTable(f"{schema}.cln")

    result = clean_table(spark, table, {"retain_commits": 1, "retain_hours": 0}, **QUIET)
    assert (result.set_aside_dirs, result.leftovers, result.unrecorded) == (3, 2, 1)
    assert result.archived == 4 and "sized_repair records such files" in result.message
    assert not any(os.path.exists(p) for p in leftovers) and os.path.exists(fresh)
    assert _set_aside_dirs(fs, timeline) == [Timeline(fs, timeline.location).completed()[-1].instant]
    assert rows_of(spark, schema, "cln") == sorted(expected + [(999, "foreign")])
    with pytest.raises(ConfigError, match="retain_commits: must be > 0, got 0"):
        clean_table(spark, table, {"retain_commits": 0}, **QUIET)


def test_the_metadata_of_an_archived_table_is_beside_it_not_in_it(spark, schema):
    """Archive files live in the table's meta dir: readers of the table's directory see
    exactly its data files."""
    table = TableRef(schema, "archdir")
    for v in range(3):
        expected = _write(spark, table, range(v * 3, v * 3 + 12), f"v{v}", retain_commits=1,
                          retain_hours=0)
    clean_table(spark, table, **QUIET)  # archives what is due at once
    fs, timeline = _timeline(spark, table)
    assert len(timeline.checkpoint().archived) == 2
    assert timeline.archive_dir.startswith(meta_dir_of(timeline.location))
    assert duckdb_rows(local_dir(timeline.location), ["id", "tag"]) == sorted(expected, key=repr)
