"""The commit protocol end to end on local disk without Spark (LocalFS): a write, a second
one replacing some partitions, a rollback, an ordinary failure undone at once, an
unfinished instant rolled back by the next writer, settling in the background, the
metadata of an earlier version moved, a corrupt timeline refused, and what a reader
listing the table sees while a publish or a recovery moves its files."""
import os
import threading

import pytest

from python_adapter.errors import TimelineError
from python_adapter.table import faults, settle
from python_adapter.table.faults import InjectedCrash
from python_adapter.table.transaction import Transaction
from tests.unit.table.local_table import (PCOLS, LocalTable, after, crash_like_a_dead_process,
                                          files_of, stage)

FIRST = files_of("w1", days=[1, 2, 3], per_day=2)
SECOND = files_of("w2", days=[2, 4], per_day=3)


def _two_writes(tmp_path):
    table = LocalTable(tmp_path)
    first = table.write(FIRST)
    second = table.write(SECOND, replacing=["day=2"])
    return table, first, second


def test_a_second_write_replaces_its_partitions_and_keeps_the_others(tmp_path):
    table, first, second = _two_writes(tmp_path)
    expected = after(FIRST, SECOND, replacing=["day=2"])
    assert table.visible() == expected
    assert table.recorded() == {rel: len(data) for rel, data in expected.items()}
    assert [(i.instant, i.state) for i in table.timeline.instants()] == [
        (first.instant, "completed"), (second.instant, "completed")]
    # the replaced files are set aside under the second instant (a rollback brings them
    # back), staging is gone, the lock released
    aside = table.meta("replaced", second.instant, "day=2")
    assert sorted(os.listdir(aside)) == ["w1-0.parquet", "w1-1.parquet"]
    assert not os.listdir(table.meta("staging")) and not os.path.exists(table.meta("lock"))
    # the timeline directory holds one file per instant: earlier states dropped
    assert sorted(os.listdir(table.meta("timeline"))) == [
        f"{first.instant}.commit", f"{second.instant}.commit"]


def test_the_catalog_is_told_the_partitions_each_commit_changed_with_their_statistics(tmp_path):
    table, _first, _second = _two_writes(tmp_path)
    first, second = table.catalog.synced
    assert first.changed == {"day=1", "day=2", "day=3"}
    assert second.changed == {"day=2", "day=4"}
    assert second.partition_stats["day=2"].files == 3
    files = len(after(FIRST, SECOND, replacing=["day=2"]))
    assert second.table_stats.files == files and second.table_stats.rows == files  # 1 row each
    assert table.catalog.stats_written == table.catalog.synced  # each commit settled


def test_a_partition_left_without_files_loses_its_directory(tmp_path):
    table = LocalTable(tmp_path)
    table.write(FIRST)
    table.write(files_of("w2", days=[1], per_day=1), replacing=["day=1", "day=3"])
    assert sorted(os.listdir(table.location[len("file:"):])) == ["day=1", "day=2"]


def test_a_rollback_restores_the_files_the_last_commit_replaced(tmp_path):
    table, first, second = _two_writes(tmp_path)
    rolled = table.rollback_last()
    assert rolled.action == "rollback" and rolled.extra["rolled_back"] == second.instant
    assert table.visible() == FIRST
    assert table.recorded() == {rel: len(data) for rel, data in FIRST.items()}


def test_an_ordinary_failure_during_the_work_is_undone_at_once(tmp_path):
    table, _first, _second = _two_writes(tmp_path)
    before = table.visible()
    with pytest.raises(RuntimeError, match="the model failed"):
        with table.locked("insert_overwrite") as proto:
            with Transaction(proto, table.catalog, "insert_overwrite", PCOLS) as txn:
                txn.add(stage(proto, txn.id, files_of("w3", days=[1], per_day=1)))
                raise RuntimeError("the model failed")
    assert table.visible() == before and not table.timeline.pending()
    assert table.catalog.rolled_back == [[txn.id]]
    assert not os.path.exists(table.meta("lock"))
    assert not os.path.exists(table.meta("staging", txn.id))


def test_a_catalog_that_refuses_after_the_publish_gets_the_files_moved_back(tmp_path):
    table, _first, _second = _two_writes(tmp_path)
    before = table.visible()
    table.catalog.fail_sync = RuntimeError("metastore refused the partition")
    with pytest.raises(RuntimeError, match="metastore refused"):
        table.write(files_of("w3", days=[1, 5], per_day=2), replacing=["day=1"])
    assert table.visible() == before and not table.timeline.pending()
    assert len(table.catalog.rolled_back) == 1


def test_the_next_writer_rolls_back_what_a_crashed_one_left_and_again_is_harmless(
        tmp_path, monkeypatch):
    table, _first, _second = _two_writes(tmp_path)
    before = table.visible()
    monkeypatch.setenv("SIZED_SPARK_FAULT", "published")
    with pytest.raises(InjectedCrash):
        table.write(files_of("w3", days=[3, 5], per_day=2), replacing=["day=3"])
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    crash_like_a_dead_process()
    assert table.visible() != before  # the crashed write's files are in the table
    table.recover()
    assert any("stale writer lock" in m for m in table.logs)
    assert any("rolling back unfinished commit" in m for m in table.logs)
    assert table.visible() == before and not table.timeline.pending()
    table.recover()  # nothing left to do
    assert table.visible() == before


def test_settling_in_the_background_keeps_the_lock_until_it_is_done(tmp_path):
    """Inside settle.in_background a write returns once its instant completed; its
    statistics and cleanup run on the worker, the lock held until they are done."""
    table = LocalTable(tmp_path)
    table.write(FIRST)
    go = threading.Event()
    table.catalog.sync = lambda change: (lambda: go.wait(10))  # statistics that take a while
    with settle.in_background():
        done = table.write(SECOND, replacing=["day=2"])
    assert table.visible() == after(FIRST, SECOND, replacing=["day=2"])  # completed
    assert os.path.exists(table.meta("lock")) and settle.pending()
    assert os.path.exists(table.meta("timeline", f"{done.instant}.commit.inflight"))
    go.set()
    settle.wait()
    assert not os.path.exists(table.meta("lock"))
    assert sorted(os.listdir(table.meta("timeline")))[-1] == f"{done.instant}.commit"


def test_a_crash_while_settling_in_the_background_is_settled_by_the_next_writer(
        tmp_path, monkeypatch):
    table = LocalTable(tmp_path)
    table.write(FIRST)
    monkeypatch.setenv("SIZED_SPARK_FAULT", "statistics")
    with settle.in_background():
        done = table.write(SECOND, replacing=["day=2"])
    with pytest.raises(InjectedCrash):
        settle.wait()
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    assert os.path.exists(table.meta("lock"))  # kept, as a dead writer keeps it
    crash_like_a_dead_process()
    table.recover()
    assert table.catalog.settled == [[done.instant]]
    assert not any(name.endswith(".inflight") for name in os.listdir(table.meta("timeline")))
    assert table.visible() == after(FIRST, SECOND, replacing=["day=2"])


def test_a_staged_checksum_does_not_follow_its_file_into_the_table(tmp_path):
    table = LocalTable(tmp_path)
    with table.locked("insert_overwrite") as proto:
        with Transaction(proto, table.catalog, "insert_overwrite", PCOLS) as txn:
            entries = stage(proto, txn.id, FIRST)
            for e in entries:  # a Spark task's writer leaves one beside each file
                head, name = os.path.split(e.moved_path[len("file:"):])
                with open(os.path.join(head, f".{name}.crc"), "wb") as fh:
                    fh.write(b"crc")
            txn.add(entries)
    table_dir = table.location[len("file:"):]
    assert [n for _r, _d, names in os.walk(table_dir) for n in names if n.endswith(".crc")] == []
    assert table.visible() == FIRST


def test_the_metadata_of_an_earlier_version_moves_beside_the_table(tmp_path):
    """Tables written by earlier versions kept `.sized` inside the table: the next writer
    moves it beside the table and drops the checksum files Spark left in the table's
    directories (other engines' scans fail on them); the table reads the same."""
    table = LocalTable(tmp_path)
    table.write(FIRST)
    table_dir = table.location[len("file:"):]
    legacy = os.path.join(table_dir, ".sized")
    os.rename(table.meta(), legacy)
    crc = os.path.join(table_dir, "day=1", ".w1-0.parquet.crc")
    with open(crc, "wb") as fh:
        fh.write(b"crc")
    table.write(SECOND, replacing=["day=2"])
    assert not os.path.exists(legacy) and os.path.exists(table.meta("timeline"))
    assert any("moving the table's metadata" in m for m in table.logs)
    assert not os.path.exists(crc)
    assert table.visible() == after(FIRST, SECOND, replacing=["day=2"])


def test_a_corrupt_timeline_file_is_refused_never_rewritten(tmp_path):
    table = LocalTable(tmp_path)
    done = table.write(FIRST)
    path = table.meta("timeline", done.file_name)
    with open(path, "rb") as fh:
        original = fh.read()
    with open(path, "wb") as fh:
        fh.write(original[: len(original) // 2])
    with pytest.raises(TimelineError, match=f"{done.file_name}.*corrupt"):
        table.write(SECOND, replacing=["day=2"])
    with open(path, "rb") as fh:
        assert fh.read() == original[: len(original) // 2]
    assert table.visible() == FIRST and not os.path.exists(table.meta("lock"))


def test_the_timeline_listing_kept_under_the_lock_follows_every_change(tmp_path):
    table = LocalTable(tmp_path)
    table.write(FIRST)
    proto = table.protocol()

    def states():
        return [(i.action, i.state) for i in proto.timeline.instants()]

    proto.acquire_lock("test")
    try:
        requested = proto.request("insert_overwrite", PCOLS)
        assert states() == [("commit", "completed"), ("commit", "requested")]
        proto.mark_inflight(requested, [], [])
        assert states() == [("commit", "completed"), ("commit", "inflight")]
        proto.abort(requested)
        assert states() == [("commit", "completed")]
    finally:
        proto.release_lock()
    other = table.protocol()
    other.acquire_lock("test")
    other.request("insert_overwrite", PCOLS)
    other.release_lock()
    assert states() == [("commit", "completed"), ("commit", "requested")]


def _by_partition(table):
    out = {}
    for rel in table.visible():
        out.setdefault(os.path.dirname(rel), set()).add(rel)
    return out


def _half_moved(listing, before, after_):
    """Partitions a reader's listing shows neither as before nor as after a batch."""
    return [p for p in set(before) | set(after_) | set(listing)
            if listing.get(p, set()) not in (before.get(p, set()), after_.get(p, set()))]


def test_a_reader_during_a_publish_sees_at_most_one_partition_half_moved(tmp_path):
    """A publish moves partition by partition, the replaced files aside then the new ones
    in: a reader listing the table between any two renames finds every other partition
    as before the write or as after it, and never a file twice (old and new together)."""
    table = LocalTable(tmp_path)
    table.write(files_of("w1", days=[1, 2, 3, 4], per_day=2))
    before = _by_partition(table)
    seen = []
    faults.run_at("publish", lambda: seen.append(_by_partition(table)))
    try:
        table.write(files_of("w2", days=[2, 3, 4, 5], per_day=2),
                    replacing=["day=2", "day=3", "day=4"])
    finally:
        faults.run_at("publish", None)
    now = _by_partition(table)
    assert len(seen) == 3 * 2 + 4 * 2
    assert all(len(_half_moved(listing, before, now)) <= 1 for listing in seen), seen


def test_a_reader_during_a_recovery_sees_at_most_one_partition_half_moved(tmp_path,
                                                                         monkeypatch):
    table = LocalTable(tmp_path)
    table.write(files_of("w1", days=[1, 2, 3, 4], per_day=2))
    before = _by_partition(table)
    monkeypatch.setenv("SIZED_SPARK_FAULT", "published")
    with pytest.raises(InjectedCrash):
        table.write(files_of("w2", days=[2, 3, 4, 5], per_day=2),
                    replacing=["day=2", "day=3", "day=4"])
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    crash_like_a_dead_process()
    published = _by_partition(table)
    seen = []
    faults.run_at("undo", lambda: seen.append(_by_partition(table)))
    try:
        table.recover()
    finally:
        faults.run_at("undo", None)
    assert _by_partition(table) == before and len(seen) == 3 * 2 + 4 * 2
    assert all(len(_half_moved(listing, published, before)) <= 1 for listing in seen), seen
