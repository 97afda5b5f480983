"""Crash safety: a crash after every step of the commit protocol (and in the middle of
publishing) loses no row and duplicates none; locks and a corrupt timeline fail clearly."""
import json
import os
import socket

import pytest

from python_adapter.table import commit
from python_adapter.table import faults
from python_adapter.table import lock
from python_adapter.spark.catalog.tables import TableRef, describe_table
from python_adapter.errors import LockError
from python_adapter.core.config import parse_config
from python_adapter.table.faults import InjectedCrash
from python_adapter.io.fs import HadoopFS
from python_adapter.table.timeline import Timeline, meta_dir_of
from python_adapter.errors import TimelineError
from python_adapter.spark.services.rollback import recover_table
from python_adapter.api import write_dataframe
from tests.functional.helpers import rows_of, rows_of_df
from tests.functional.readers import duckdb_rows, local_dir, not_live, parquet_files

CFG = parse_config({"partition_by": ["day"], "incremental_strategy": "insert_overwrite",
                    "target_file_size": 16_000, "distribution": "exact"})
QUIET = dict(log=lambda m: None)


def _crash_like_a_dead_process():
    """A real crash takes the process's memory with it: it no longer holds its locks."""
    lock.forget_held_locks()
    faults.reset()


def _location(spark, schema, name):
    fs = HadoopFS(spark)
    return fs, fs.qualify(describe_table(spark, TableRef(schema, name)).location)


# requested .. cleanup are the protocol's steps; publish:N is the N-th file move.
POINTS = ["requested", "inflight", "publish:1", "publish:4", "publish:9", "published",
          "completed", "settling", "statistics", "cleanup"]


@pytest.mark.parametrize("point", POINTS)
def test_crash_at_any_step_keeps_exactly_the_last_completed_commit(spark, schema, events,
                                                                   monkeypatch, point):
    table = TableRef(schema, "crash")
    first = events(days=6)
    write_dataframe(spark, first, table, CFG, **QUIET)
    second = events(days=4, start="2025-01-04", id_offset=10**9, tag="v2")
    expected_first = rows_of_df(first)
    expected_second = sorted(rows_of_df(events(days=3)) + rows_of_df(second))

    monkeypatch.setenv("SIZED_SPARK_FAULT", point)
    faults.reset()
    with pytest.raises(InjectedCrash):
        write_dataframe(spark, second, table, CFG, **QUIET)
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    _crash_like_a_dead_process()

    committed = point in ("completed", "settling", "statistics", "cleanup")
    recover_table(spark, table, **QUIET)
    assert rows_of(spark, schema, "crash") == (expected_second if committed else expected_first)
    fs, location = _location(spark, schema, "crash")
    assert not Timeline(fs, location).pending()

    # and the next run goes through as if nothing had happened
    write_dataframe(spark, second, table, CFG, **QUIET)
    assert rows_of(spark, schema, "crash") == expected_second


def test_crash_during_recovery_is_recovered_by_the_next_run(spark, schema, events, monkeypatch):
    table = TableRef(schema, "rec")
    write_dataframe(spark, events(days=4), table, CFG, **QUIET)
    monkeypatch.setenv("SIZED_SPARK_FAULT", "publish:5")
    faults.reset()
    with pytest.raises(InjectedCrash):
        write_dataframe(spark, events(days=4, tag="v2"), table, CFG, full_refresh=True, **QUIET)
    _crash_like_a_dead_process()
    # recovery itself dies half way (simulated by a second crash in the next writer's publish)
    monkeypatch.setenv("SIZED_SPARK_FAULT", "publish:2")
    with pytest.raises(InjectedCrash):
        write_dataframe(spark, events(days=4, tag="v3"), table, CFG, full_refresh=True, **QUIET)
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    _crash_like_a_dead_process()
    recover_table(spark, table, **QUIET)
    assert rows_of(spark, schema, "rec") == rows_of_df(events(days=4))


def _crashed_at_published(spark, schema, events, monkeypatch, name):
    """A table whose second write (3 partitions replaced, 1 new) crashed right after its
    publish: (its table, the rows of the first write, location, the unfinished instant)."""
    table = TableRef(schema, name)
    first = events(days=6)
    write_dataframe(spark, first, table, CFG, **QUIET)
    monkeypatch.setenv("SIZED_SPARK_FAULT", "published")
    faults.reset()
    with pytest.raises(InjectedCrash):
        write_dataframe(spark, events(days=4, start="2025-01-04", id_offset=10**9, tag="v2"),
                        table, CFG, **QUIET)
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    _crash_like_a_dead_process()
    fs, location = _location(spark, schema, name)
    [pending] = Timeline(fs, location).pending()
    return table, rows_of_df(first), location, pending


def _moves_of(instant):
    return sum(1 for e in (*instant.added, *instant.removed) if e.moved_path)


def test_a_recovery_killed_half_way_through_its_moves_is_finished_by_the_next(
        spark, schema, events, monkeypatch):
    table, expected, location, pending = _crashed_at_published(spark, schema, events,
                                                               monkeypatch, "undo")
    total = _moves_of(pending)
    monkeypatch.setenv("SIZED_SPARK_FAULT", f"undo:{total // 2}")
    faults.reset()
    with pytest.raises(InjectedCrash):
        recover_table(spark, table, **QUIET)
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    _crash_like_a_dead_process()

    moved = []
    faults.run_at("undo", lambda: moved.append(1))
    try:
        recover_table(spark, table, **QUIET)
    finally:
        faults.run_at("undo", None)
    assert len(moved) == total - total // 2  # the rest of the moves, each once
    assert rows_of(spark, schema, "undo") == expected
    table_dir = local_dir(location)
    assert duckdb_rows(table_dir, ["id", "tag"]) == sorted(expected, key=repr)
    assert [f for f in parquet_files(table_dir) if not_live(f, table_dir)] == []
    assert not Timeline(HadoopFS(spark), location).pending()


def _files_by_partition(table_dir):
    out = {}
    for f in parquet_files(table_dir):
        if not not_live(f, table_dir):
            out.setdefault(os.path.dirname(os.path.relpath(f, table_dir)), set()).add(f)
    return out


def test_a_reader_during_recovery_sees_at_most_one_partition_half_moved(
        spark, schema, events, monkeypatch):
    """Recovery moves partition by partition, the new files out then the old ones back:
    at any moment of its batch of renames a reader listing the table finds every other
    partition either as published or as it was before."""
    table, expected, location, pending = _crashed_at_published(spark, schema, events,
                                                               monkeypatch, "undoorder")
    table_dir = local_dir(location)
    published = _files_by_partition(table_dir)
    seen = []
    faults.run_at("undo", lambda: seen.append(_files_by_partition(table_dir)))
    try:
        recover_table(spark, table, **QUIET)
    finally:
        faults.run_at("undo", None)
    restored = _files_by_partition(table_dir)
    assert len(seen) == _moves_of(pending)
    for listing in seen:
        half = [p for p in set(published) | set(restored) | set(listing)
                if listing.get(p, set()) not in (published.get(p, set()), restored.get(p, set()))]
        assert len(half) <= 1, half
    assert rows_of(spark, schema, "undoorder") == expected


def test_a_reader_during_a_publish_sees_at_most_one_partition_half_moved(spark, schema, events):
    """A publish moves partition by partition, the replaced files aside then the new ones
    in: at any moment of its batch of renames a reader listing the table finds every other
    partition either as before the write or as after it (setting every old file aside
    before moving any new one in showed a reader most of the table's partitions empty)."""
    table = TableRef(schema, "publishorder")
    write_dataframe(spark, events(days=6), table, CFG, **QUIET)
    _fs, location = _location(spark, schema, "publishorder")
    table_dir = local_dir(location)
    before = _files_by_partition(table_dir)
    seen = []
    faults.run_at("publish", lambda: seen.append(_files_by_partition(table_dir)))
    try:
        write_dataframe(spark, events(days=4, start="2025-01-04", id_offset=10**9, tag="v2"),
                        table, CFG, **QUIET)
    finally:
        faults.run_at("publish", None)
    after = _files_by_partition(table_dir)
    changed = [p for p in set(before) | set(after) if before.get(p) != after.get(p)]
    assert len(changed) >= 4 and len(seen) > len(changed)  # 3 replaced, 1 new
    for listing in seen:
        half = [p for p in set(before) | set(after) | set(listing)
                if listing.get(p, set()) not in (before.get(p, set()), after.get(p, set()))]
        assert len(half) <= 1, half


def _moved(part, name, moved):
    """A file of partition `part` recorded as moved from / to the directory `moved` ('' in
    place)."""
    from python_adapter.table.timeline import FileEntry
    return FileEntry(partition=part, path=f"{part}/{name}", rows=1, bytes=1,
                     moved_path=moved and f"{moved}/{part}/{name}")


def test_publish_moves_partition_by_partition_old_files_out_first():
    """A publish's renames, from the inflight instant: per partition the replaced files
    aside, then the new ones in; files recorded in place stay."""
    from python_adapter.table.timeline import Instant

    inflight = Instant("1", "commit", "inflight", "upsert",
                       added=(_moved("d=2", "new", "st"), _moved("d=1", "same", "st"),
                              _moved("d=1", "adopted", "")),
                       removed=(_moved("d=1", "same", "rp"), _moved("d=2", "old", "rp")))
    assert commit.publish_order(inflight, lambda rel: f"t/{rel}") == [
        ("t/d=1/same", "rp/d=1/same"), ("st/d=1/same", "t/d=1/same"),
        ("t/d=2/old", "rp/d=2/old"), ("st/d=2/new", "t/d=2/new")]


def test_undo_moves_skip_what_is_done_and_free_a_name_before_reusing_it():
    """What a (repeated) recovery moves, from the instant and the paths that exist."""
    from python_adapter.table.timeline import Instant

    instant = Instant("1", "commit", "inflight", "upsert",
                      added=(_moved("d=2", "new", "st"), _moved("d=1", "same", "st"),
                             _moved("d=1", "repaired", "")),
                      removed=(_moved("d=1", "same", "rp"), _moved("d=1", "old", "rp")))
    order = commit.undo_order(instant, lambda rel: f"t/{rel}")
    assert order == [("t/d=1/same", "st/d=1/same"), ("rp/d=1/same", "t/d=1/same"),
                     ("rp/d=1/old", "t/d=1/old"), ("t/d=2/new", "st/d=2/new")]
    present = {"t/d=1/same", "rp/d=1/same", "t/d=1/old", "t/d=2/new"}  # 'old' moved already
    assert commit.still_to_move(order, present) == [order[0], order[1], order[3]]
    # a file whose destination is taken by something else stays where it is
    assert commit.still_to_move(order, present | {"st/d=2/new"}) == [order[0], order[1]]


def test_a_second_writer_fails_at_once_naming_the_holder(spark, schema, events):
    table = TableRef(schema, "locked")
    write_dataframe(spark, events(days=2), table, CFG, **QUIET)
    fs, location = _location(spark, schema, "locked")
    # a live process on this host (our parent) holds the lock
    holder = {**lock.holder_record("upsert"), "pid": os.getppid(),
              "process_start": lock.process_start(os.getppid())}
    fs.write_bytes(f"{meta_dir_of(location)}/lock", json.dumps(holder).encode())
    with pytest.raises(LockError, match=f"pid {os.getppid()}.*upsert"):
        write_dataframe(spark, events(days=2, tag="v2"), table, CFG, **QUIET)
    assert rows_of(spark, schema, "locked") == rows_of_df(events(days=2))
    fs.delete(f"{meta_dir_of(location)}/lock")


def test_a_stale_lock_of_a_dead_process_is_recovered(spark, schema, events):
    table = TableRef(schema, "stale")
    write_dataframe(spark, events(days=2), table, CFG, **QUIET)
    fs, location = _location(spark, schema, "stale")
    dead = {"host": socket.gethostname(), "pid": 2**22 + 12345, "operation": "x", "since": "-"}
    fs.write_bytes(f"{meta_dir_of(location)}/lock", json.dumps(dead).encode())
    logs = []
    write_dataframe(spark, events(days=2, tag="v2"), table, CFG, log=logs.append)
    assert any("stale writer lock" in m for m in logs)
    assert rows_of(spark, schema, "stale") == rows_of_df(events(days=2, tag="v2"))
    assert not fs.exists(f"{meta_dir_of(location)}/lock")


@pytest.fixture
def other_process():
    """A live process of this host that holds no lock: stands in for a reused pid."""
    import subprocess
    proc = subprocess.Popen(["sleep", "300"])
    yield proc.pid
    proc.kill()  # by its pid
    proc.wait()


@pytest.mark.parametrize("record", ["started_after_the_lock", "other_start_time", "no_holder"])
def test_a_lock_whose_holder_is_not_that_process_is_stale(spark, schema, events, other_process,
                                                          record):
    table = TableRef(schema, f"reused_{record}")
    write_dataframe(spark, events(days=2), table, CFG, **QUIET)
    fs, location = _location(spark, schema, f"reused_{record}")
    holder = {"host": socket.gethostname(), "pid": other_process, "operation": "upsert"}
    if record == "started_after_the_lock":  # a lock of an earlier version: no start time
        holder["since"] = "2023-01-01T00:00:00+0000"
    elif record == "other_start_time":
        holder.update(since="2026-11-22T10:00:00+0000",
                      process_start=lock.process_start(other_process) - 100)
    else:
        holder = {}
    fs.write_bytes(f"{meta_dir_of(location)}/lock", json.dumps(holder).encode())
    logs = []
    write_dataframe(spark, events(days=2, tag="v2"), table, CFG, log=logs.append)
    assert any("stale writer lock" in m for m in logs), logs
    assert rows_of(spark, schema, f"reused_{record}") == rows_of_df(events(days=2, tag="v2"))


def test_a_live_holder_keeps_its_lock_and_the_error_says_how_to_break_it(spark, schema, events,
                                                                        other_process):
    table = TableRef(schema, "held")
    write_dataframe(spark, events(days=2), table, CFG, **QUIET)
    fs, location = _location(spark, schema, "held")
    path = f"{meta_dir_of(location)}/lock"
    holder = {**lock.holder_record("upsert"), "pid": other_process,
              "process_start": lock.process_start(other_process)}
    fs.write_bytes(path, json.dumps(holder).encode())
    with pytest.raises(LockError, match=f"pid {other_process}, upsert since .* ago, lease "
                                        f"expires in .*; lock file {path}.*sized_unlock"):
        write_dataframe(spark, events(days=2, tag="v2"), table, CFG, **QUIET)
    assert fs.exists(path)
    fs.delete(path)


def test_corrupt_timeline_is_a_clear_error_never_a_silent_rewrite(spark, schema, events):
    table = TableRef(schema, "corrupt")
    write_dataframe(spark, events(days=2), table, CFG, **QUIET)
    fs, location = _location(spark, schema, "corrupt")
    [done] = Timeline(fs, location).completed()
    path = f"{meta_dir_of(location)}/timeline/{done.file_name}"
    original = fs.read_bytes(path)
    fs.write_bytes(path, original[: len(original) // 2], overwrite=True)
    with pytest.raises(TimelineError, match=f"{done.file_name}.*corrupt"):
        write_dataframe(spark, events(days=2, tag="v2"), table, CFG, **QUIET)
    assert fs.read_bytes(path) == original[: len(original) // 2]  # left for a human to look at
    assert rows_of(spark, schema, "corrupt") == rows_of_df(events(days=2))
    assert not fs.exists(f"{meta_dir_of(location)}/lock")


def test_an_ordinary_failure_rolls_back_and_releases_the_lock(spark, schema, events):
    table = TableRef(schema, "fail")
    write_dataframe(spark, events(days=3), table, CFG, **QUIET)
    # a model whose SQL fails while Spark runs it
    broken = events(days=3, tag="v2").selectExpr(
        "id", "day", "payload", "amount",
        "concat(tag, coalesce(cast(assert_true(id < 0) as string), '')) as tag")
    with pytest.raises(Exception, match="is not true|id < 0"):
        write_dataframe(spark, broken, table, CFG, **QUIET)
    assert rows_of(spark, schema, "fail") == rows_of_df(events(days=3))
    fs, location = _location(spark, schema, "fail")
    assert not fs.exists(f"{meta_dir_of(location)}/lock")
    assert not Timeline(fs, location).pending()


@pytest.mark.parametrize("point", ["inflight", "publish:2", "published"])
def test_crash_during_rollback_keeps_the_last_completed_state(spark, schema, events,
                                                              monkeypatch, point):
    from python_adapter.spark.services.rollback import rollback_last_commit

    table = TableRef(schema, "rbcrash")
    upsert = parse_config({"partition_by": ["day"], "unique_key": "id",
                           "target_file_size": 16_000, "distribution": "exact"})
    base = events(days=3)
    write_dataframe(spark, base, table, upsert, **QUIET)
    batch = events(days=3, tag="v2").where("id % 5 = 0")
    write_dataframe(spark, batch, table, upsert, **QUIET)
    after_batch = rows_of(spark, schema, "rbcrash")
    monkeypatch.setenv("SIZED_SPARK_FAULT", point)
    faults.reset()
    with pytest.raises(InjectedCrash):
        rollback_last_commit(spark, table, **QUIET)
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    _crash_like_a_dead_process()
    recover_table(spark, table, **QUIET)
    assert rows_of(spark, schema, "rbcrash") == after_batch
    rollback_last_commit(spark, table, **QUIET)
    assert rows_of(spark, schema, "rbcrash") == rows_of_df(base)


def test_the_timeline_listing_kept_under_the_lock_follows_every_change(spark, schema, events):
    """Under the writer lock the timeline's listing is kept between reads; each instant the
    protocol writes or rolls back must still show at once, and once the lock is released
    changes made by another writer must show too."""
    table = TableRef(schema, "kept")
    write_dataframe(spark, events(days=2), table, CFG, **QUIET)
    fs, location = _location(spark, schema, "kept")
    proto = commit.CommitProtocol(fs, location, log=lambda m: None)

    def states():
        return [(i.action, i.state) for i in proto.timeline.instants()]

    proto.acquire_lock("test")
    try:
        assert states() == [("commit", "completed")]
        requested = proto.request("insert_overwrite", ["day"])
        assert states() == [("commit", "completed"), ("commit", "requested")]
        proto.mark_inflight(requested, [], [])
        assert states() == [("commit", "completed"), ("commit", "inflight")]
        proto.abort(requested)
        assert states() == [("commit", "completed")]
    finally:
        proto.release_lock()
    other = commit.CommitProtocol(fs, location, log=lambda m: None)
    other.acquire_lock("test")
    other.request("insert_overwrite", ["day"])
    other.release_lock()
    assert states() == [("commit", "completed"), ("commit", "requested")]
