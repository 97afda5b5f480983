"""Retention and archival on local disk without Spark (LocalFS): the cleaner keeps the
set-aside files retention says (the last `retain_commits`, and those of the last
`retain_hours`) and deletes the rest; old instants are folded into the archive in batches
and the table reads the same; an archival interrupted at any step is tidied by the next;
locks set aside as stale go after their grace, a live lock never."""
import json
import os
import time

import pytest

from python_adapter.core.retention import ARCHIVE_BATCH
from python_adapter.table import archive
from python_adapter.table.faults import InjectedCrash
from python_adapter.table.lock import SET_ASIDE_GRACE_MS, WriterLock, holder_record
from python_adapter.table.timeline import ARCHIVED
from tests.unit.table.local_table import (LocalTable, after, crash_like_a_dead_process,
                                          files_of, retention)


def _commits(table, count, keep):
    """A first write of three days, then `count - 1` writes each replacing day=1 (each
    sets two files aside). Returns (the completed instants, the files the table holds)."""
    state = files_of("w0", days=[1, 2, 3], per_day=2)
    done = [table.write(state, extra=keep)]
    for i in range(1, count):
        files = files_of(f"w{i}", days=[1], per_day=2)
        done.append(table.write(files, replacing=["day=1"], extra=keep))
        state = after(state, files, replacing=["day=1"])
    return done, state


def _set_aside(table):
    return sorted(os.listdir(table.meta("replaced")))


def test_the_set_aside_files_of_the_last_retained_commits_are_kept_the_rest_deleted(tmp_path):
    table = LocalTable(tmp_path)
    done, state = _commits(table, 6, retention(commits=2, hours=0))
    assert _set_aside(table) == [done[-2].instant, done[-1].instant]
    assert sorted(os.listdir(table.meta("replaced", done[-1].instant, "day=1"))) == [
        "w4-0.parquet", "w4-1.parquet"]
    assert table.visible() == state
    table.rollback_last()  # what retention keeps is what a rollback needs
    assert table.visible() == after(state, files_of("w4", days=[1], per_day=2), ["day=1"])


def test_the_set_aside_files_of_the_last_hours_are_kept_until_they_are_older(tmp_path):
    table = LocalTable(tmp_path)
    done, _state = _commits(table, 6, retention(commits=1, hours=24))
    assert _set_aside(table) == [i.instant for i in done[1:]]  # all within 24 h
    proto = table.protocol()
    later = int(time.time() * 1000) + 25 * 3_600_000
    cleaned = archive.clean(table.fs, proto.timeline, proto.replaced_dir, now_ms=later)
    assert cleaned.set_aside_dirs == 4 and cleaned.archived == 0  # 5 past retention < a batch
    assert _set_aside(table) == [done[-1].instant]


def test_set_aside_files_of_an_instant_the_timeline_does_not_know_are_deleted(tmp_path):
    table = LocalTable(tmp_path)
    _commits(table, 2, retention(commits=10, hours=24))
    stray = table.meta("replaced", "20200101000000000", "day=1")
    os.makedirs(stray)
    table.write(files_of("w9", days=[2], per_day=1), replacing=["day=2"])
    assert not os.path.exists(os.path.dirname(stray))


def test_instants_past_retention_are_archived_in_batches_and_the_table_reads_the_same(tmp_path):
    table = LocalTable(tmp_path)
    done, state = _commits(table, ARCHIVE_BATCH + 2, retention(commits=1, hours=0))
    # the (batch + 1)-th commit found `batch` past retention: archived; the last two remain
    assert sorted(os.listdir(table.meta("archive"))) == ["checkpoint-00000001.avro", "history"]
    assert os.listdir(table.meta("archive", "history")) == ["history-00000001.avro"]
    assert sorted(os.listdir(table.meta("timeline"))) == [
        f"{i.instant}.commit" for i in done[-2:]]
    instants = table.timeline.instants()
    assert [i.instant for i in instants] == [i.instant for i in done]
    assert [i.extra.get(ARCHIVED) for i in instants] == ["true"] * ARCHIVE_BATCH + [None] * 2
    assert table.visible() == state
    assert table.recorded() == {rel: len(data) for rel, data in state.items()}
    history = table.timeline.history()  # the archived instants with their file lists
    assert [f.path for f in history[0].added] == sorted(files_of("w0", [1, 2, 3], 2))


def _archival_killed_at(table, monkeypatch, point):
    """Ten commits, then an eleventh whose cleanup (it has completed) dies at `point` of
    the archival of the first ten. Returns the first ten."""
    keep = retention(commits=1, hours=0)
    done, _state = _commits(table, ARCHIVE_BATCH, keep)
    monkeypatch.setenv("SIZED_SPARK_FAULT", point)
    with pytest.raises(InjectedCrash, match=point):
        table.write(files_of("wa", days=[2], per_day=1), replacing=["day=2"], extra=keep)
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    crash_like_a_dead_process()
    return done


def test_an_archival_interrupted_before_its_checkpoint_is_done_again_once(tmp_path, monkeypatch):
    table = LocalTable(tmp_path)
    keep = retention(commits=1, hours=0)
    _archival_killed_at(table, monkeypatch, "archive_history")
    assert os.listdir(table.meta("archive")) == ["history"]  # a history without checkpoint
    table.write(files_of("wb", days=[3], per_day=1), replacing=["day=3"], extra=keep)
    assert sorted(os.listdir(table.meta("archive"))) == ["checkpoint-00000001.avro", "history"]
    assert os.listdir(table.meta("archive", "history")) == ["history-00000001.avro"]
    assert len(table.timeline.instants()) == ARCHIVE_BATCH + 2


def test_instant_files_an_interrupted_archival_left_are_tidied(tmp_path, monkeypatch):
    """Killed after its checkpoint, before deleting the instant files it holds: readers
    skip those files (no instant counted twice), the next archival deletes them."""
    table = LocalTable(tmp_path)
    done = _archival_killed_at(table, monkeypatch, "archive_checkpoint")
    assert len(os.listdir(table.meta("timeline"))) == ARCHIVE_BATCH + 1  # all still there
    ids = [i.instant for i in table.timeline.instants()]
    assert len(ids) == len(set(ids)) == ARCHIVE_BATCH + 1
    table.write(files_of("wb", days=[3], per_day=1), replacing=["day=3"],
                extra=retention(commits=1, hours=0))
    archived = {i.instant for i in done}
    left = os.listdir(table.meta("timeline"))
    assert len(left) == 2 and not {n.split(".")[0] for n in left} & archived


def test_locks_set_aside_as_stale_go_after_their_grace_never_a_live_lock(tmp_path):
    table = LocalTable(tmp_path)
    _commits(table, 1, retention(commits=1, hours=0))
    meta = table.meta()
    lock_path = f"{table.fs.qualify(meta)}/lock"

    def take_over():
        """A dead holder's lock (another host, its lease expired) taken over, released."""
        now = int(time.time() * 1000)
        dead = {**holder_record("upsert", 60), "host": "another-host", "renewed_ms": now - 120_000}
        table.fs.write_bytes(lock_path, json.dumps(dead).encode())
        taker = WriterLock(table.fs, lock_path, log=lambda m: None)
        taker.acquire("compaction")
        taker.release()
        return f"lock.stale.{dead['token']}"

    old, young = take_over(), take_over()
    then = time.time() - (SET_ASIDE_GRACE_MS / 1000 + 60)
    os.utime(os.path.join(meta, old), (then, then))
    live = WriterLock(table.fs, f"{table.fs.qualify(meta)}/cluster.lock", log=lambda m: None)
    live.acquire("clustering")  # a table service at work, its file as old as can be
    try:
        os.utime(os.path.join(meta, "cluster.lock"), (then, then))
        proto = table.protocol()
        cleaned = archive.clean(table.fs, proto.timeline, proto.replaced_dir)
        assert cleaned.stale_locks == 1
        assert sorted(n for n in os.listdir(meta) if "lock" in n) == ["cluster.lock", young]
        live.ensure_held()
    finally:
        live.release()
