"""The writer lock on local disk without Spark (LocalFS): one holder at a time, a writer
that waits for it, a stale lock (a dead pid, a pid now another process, no holder, a lease
not renewed) taken over, a live one never, a lease renewed while its holder works, and a
holder whose lock was taken over publishing and completing nothing."""
import json
import os
import socket
import subprocess
import threading
import time

import pytest

from python_adapter.errors import LockError, LockLostError
from python_adapter.table import faults
from python_adapter.table.lock import (LockOptions, WriterLock, break_lock, holder_record,
                                       process_start)
from tests.unit.table.local_table import LocalTable, after, files_of

QUIET = dict(log=lambda m: None)
FIRST = files_of("w1", days=[1, 2], per_day=2)
SECOND = files_of("w2", days=[2, 3], per_day=1)


def _table(tmp_path):
    table = LocalTable(tmp_path)
    table.write(FIRST)
    return table, f"{table.fs.qualify(table.timeline.meta_dir)}/lock"


def _other_host(renewed_ago, lease=60.0):
    now = int(time.time() * 1000)
    return {**holder_record("upsert", lease), "host": "another-host", "pid": 4242,
            "renewed_ms": now - int(renewed_ago * 1000)}


@pytest.fixture
def other_process():
    """A live process of this host that holds no lock: stands in for a reused pid."""
    proc = subprocess.Popen(["sleep", "300"])
    yield proc.pid
    proc.kill()  # by its pid
    proc.wait()


@pytest.fixture
def dead_pid():
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_held_lock_keeps_a_second_writer_out_naming_the_holder(tmp_path):
    table, path = _table(tmp_path)
    holder = table.protocol()
    holder.acquire_lock("clustering")
    try:
        with pytest.raises(LockError, match=f"pid {os.getpid()}, clustering since .*lease "
                                            f"expires in .*; lock file {path}.*sized_unlock"):
            table.write(SECOND, replacing=["day=2"])
    finally:
        holder.release_lock()
    assert table.visible() == FIRST and not table.fs.exists(path)


def test_a_writer_waits_for_the_lock_up_to_its_timeout(tmp_path):
    table, _path = _table(tmp_path)
    holder = table.protocol()
    holder.acquire_lock("clustering")
    threading.Timer(0.5, holder.release_lock).start()
    waiter = table.protocol()
    start = time.monotonic()
    waiter.acquire_lock("upsert", LockOptions(timeout=30, poll=0.05))
    waited = time.monotonic() - start
    waiter.release_lock()
    assert 0.4 < waited < 10
    assert any("waiting up to 30.0s for the writer lock" in m for m in table.logs), table.logs


def test_a_writer_that_does_not_wait_still_waits_for_a_brief_holder(tmp_path):
    """A table service takes the lock for a short step only: a load beside it waits for
    it (up to BRIEF_WAIT) whatever its own lock_timeout."""
    table, _path = _table(tmp_path)
    holder = table.protocol()
    holder.acquire_lock("compaction commit", LockOptions(brief=True))
    threading.Timer(0.3, holder.release_lock).start()
    writer = table.protocol()
    writer.acquire_lock("upsert", LockOptions(timeout=0, poll=0.05))
    writer.release_lock()
    assert any("waiting up to 2m00s for the writer lock" in m for m in table.logs), table.logs


def test_a_timeout_names_how_long_it_waited(tmp_path):
    table, _path = _table(tmp_path)
    holder = table.protocol()
    holder.acquire_lock("clustering")
    try:
        with pytest.raises(LockError, match="waited .*lock_timeout"):
            table.protocol().acquire_lock("upsert", LockOptions(timeout=0.3, poll=0.1))
    finally:
        holder.release_lock()


def test_a_stale_lock_of_a_dead_process_is_taken_over(tmp_path, dead_pid):
    table, path = _table(tmp_path)
    table.fs.write_bytes(path, json.dumps({**holder_record("upsert"), "pid": dead_pid,
                                           "process_start": None}).encode())
    table.write(SECOND, replacing=["day=2"])
    assert any("stale writer lock" in m and f"pid {dead_pid} is gone" in m for m in table.logs)
    assert table.visible() == after(FIRST, SECOND, replacing=["day=2"])
    assert not table.fs.exists(path)


@pytest.mark.parametrize("record", ["started_after_the_lock", "other_start_time", "no_holder",
                                    "no_valid_pid"])
def test_a_lock_whose_holder_is_not_that_process_is_stale(tmp_path, other_process, record):
    table, path = _table(tmp_path)
    holder = {"host": socket.gethostname(), "pid": other_process, "operation": "upsert"}
    if record == "started_after_the_lock":  # a lock of an earlier version: no start time
        holder["since"] = "2023-01-01T00:00:00+0000"
    elif record == "other_start_time":
        holder.update(since="2026-11-22T10:00:00+0000",
                      process_start=process_start(other_process) - 100)
    elif record == "no_valid_pid":
        holder["pid"] = "unknown"
    else:
        holder = {}
    table.fs.write_bytes(path, json.dumps(holder).encode())
    table.write(SECOND, replacing=["day=2"])
    assert any("stale writer lock" in m for m in table.logs), table.logs
    assert table.visible() == after(FIRST, SECOND, replacing=["day=2"])


def test_a_live_process_keeps_its_lock(tmp_path, other_process):
    table, path = _table(tmp_path)
    holder = {**holder_record("upsert"), "pid": other_process,
              "process_start": process_start(other_process)}
    table.fs.write_bytes(path, json.dumps(holder).encode())
    with pytest.raises(LockError, match=f"pid {other_process}, upsert"):
        table.write(SECOND, replacing=["day=2"])
    assert json.loads(table.fs.read_bytes(path))["token"] == holder["token"]


def test_a_lease_of_another_host_is_stale_once_expired_and_held_while_it_runs(tmp_path):
    table, path = _table(tmp_path)
    table.fs.write_bytes(path, json.dumps(_other_host(renewed_ago=1)).encode())
    with pytest.raises(LockError, match="host another-host, pid 4242, upsert .*lease expires"):
        table.write(SECOND, replacing=["day=2"])
    table.fs.write_bytes(path, json.dumps(_other_host(renewed_ago=120)).encode(),
                         overwrite=True)
    table.write(SECOND, replacing=["day=2"])
    assert any("stale writer lock" in m and "lease expired" in m for m in table.logs)
    assert table.visible() == after(FIRST, SECOND, replacing=["day=2"])


def test_the_holder_renews_its_lease_while_it_works(tmp_path):
    table, path = _table(tmp_path)
    proto = table.protocol()
    # renewed every quarter of the lease; a lease of seconds, not less, so a loaded machine
    # (the suite's other worker, CI) does not let it expire between two renewals
    proto.acquire_lock("upsert", LockOptions(lease=4.0))
    try:
        first = json.loads(table.fs.read_bytes(path))
        deadline, renewed = time.monotonic() + 10, first
        while renewed["renewed_ms"] == first["renewed_ms"] and time.monotonic() < deadline:
            time.sleep(0.1)
            renewed = json.loads(table.fs.read_bytes(path))
        assert renewed["token"] == first["token"] and renewed["renewed_ms"] > first["renewed_ms"]
        assert table.protocol().lock.read()["token"] == first["token"]
        with pytest.raises(LockError):  # renewed: not stale to another writer
            table.protocol().acquire_lock("other", LockOptions(timeout=0))
    finally:
        proto.release_lock()


def test_a_heartbeat_that_finds_its_lock_taken_over_stops_and_says_so(tmp_path):
    table, path = _table(tmp_path)
    proto = table.protocol()
    proto.acquire_lock("upsert", LockOptions(lease=0.8))  # renewed every 0.2 s
    table.fs.write_bytes(path, json.dumps(_other_host(renewed_ago=0)).encode(), overwrite=True)
    deadline = time.monotonic() + 5
    while not any("was taken over" in m for m in table.logs) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert any("was taken over; this write will not commit" in m for m in table.logs)
    time.sleep(0.5)
    assert json.loads(table.fs.read_bytes(path))["host"] == "another-host"  # not overwritten
    proto.lock.stop()


def _taken_over_at(table, path, point):
    """At `point` of the next write, another writer breaks its lock and takes it
    (sized_unlock with force, then a write of its own that starts)."""
    other = WriterLock(table.fs, path, **QUIET)

    def take():
        break_lock(table.fs, path)
        other.acquire("upsert")

    faults.run_at(point, take)
    return other


@pytest.mark.parametrize("point", ["inflight", "published"])
def test_a_writer_whose_lock_was_taken_over_publishes_and_completes_nothing(tmp_path, point):
    """The lock checked before publishing and before completing: taken over at `point`,
    the write stops with LockLostError and leaves its instant unfinished, without undoing
    it (the table is the other writer's now); that writer's recovery rolls it back."""
    table, path = _table(tmp_path)
    other = _taken_over_at(table, path, point)
    try:
        with pytest.raises(LockLostError, match="no longer this writer's"):
            table.write(SECOND, replacing=["day=2"])
    finally:
        faults.run_at(point, None)
    [unfinished] = table.timeline.pending()
    assert unfinished.state == "inflight" and not table.catalog.rolled_back
    assert json.loads(table.fs.read_bytes(path))["token"] == other.token  # left to its holder
    other.release()
    table.recover()
    assert table.visible() == FIRST and not table.timeline.pending()


def test_a_frozen_holder_whose_lease_expired_is_taken_over_and_cannot_publish(tmp_path):
    """A holder frozen past its lease (its renewals stopped): the next writer takes the
    lock over; once the frozen one wakes up, it publishes nothing."""
    table, path = _table(tmp_path)
    frozen = table.protocol()
    frozen.acquire_lock("upsert", LockOptions(lease=60))
    record = json.loads(table.fs.read_bytes(path))
    table.fs.write_bytes(path, json.dumps({**record, "renewed_ms": record["renewed_ms"] - 120_000})
                         .encode(), overwrite=True)  # as the file reads after 2 min frozen
    table.write(SECOND, replacing=["day=2"])
    assert any("lease expired" in m for m in table.logs)
    instant = frozen.request("insert_overwrite", ["day"])
    with pytest.raises(LockLostError):
        frozen.publish(frozen.mark_inflight(instant, [], []))
    frozen.lock.stop()
    table.recover()
    assert table.visible() == after(FIRST, SECOND, replacing=["day=2"])
    assert not table.timeline.pending()


def test_of_two_writers_that_judge_a_lock_stale_only_one_takes_it(tmp_path):
    """Takeover is a rename of the stale lock to a name of its own, not a delete: a writer
    that judged the same lock stale a moment later never removes the lock just taken."""
    table, path = _table(tmp_path)
    stale = _other_host(renewed_ago=120)
    table.fs.write_bytes(path, json.dumps(stale).encode())
    first, second = WriterLock(table.fs, path, **QUIET), WriterLock(table.fs, path, **QUIET)
    assert first._set_aside(stale)
    first.acquire("upsert", LockOptions(lease=60))
    taken = first.token
    assert not second._set_aside(stale)
    assert json.loads(table.fs.read_bytes(path))["token"] == taken
    table.fs.delete(f"{path}.stale.{stale['token']}", recursive=False)
    assert not second._set_aside(stale)  # the rename caught the new lock: put back
    assert json.loads(table.fs.read_bytes(path))["token"] == taken
    first.ensure_held()
    first.release()
    assert not table.fs.exists(path)


def test_a_lock_being_written_is_not_taken_for_one_without_holder(tmp_path):
    """A writer creates the lock file and then writes its record: a look in between finds
    it empty. A record that arrives within a second is a live holder; a lock that stays
    empty (its writer died between the two) is taken over."""
    table, path = _table(tmp_path)
    live = _other_host(renewed_ago=0)
    table.fs.write_bytes(path, b"")
    late = threading.Timer(0.3, lambda: table.fs.write_bytes(path, json.dumps(live).encode(),
                                                             overwrite=True))
    late.start()
    with pytest.raises(LockError, match="another-host"):
        WriterLock(table.fs, path, **QUIET).acquire("upsert", LockOptions(timeout=0))
    late.join()
    table.fs.write_bytes(path, b"", overwrite=True)
    logs = []
    mine = WriterLock(table.fs, path, log=logs.append)
    mine.acquire("upsert", LockOptions(timeout=0))
    assert any("the lock records no holder" in m for m in logs), logs
    mine.ensure_held()
    mine.release()


def test_a_release_never_deletes_another_holders_lock(tmp_path):
    table, path = _table(tmp_path)
    mine = WriterLock(table.fs, path, **QUIET)
    mine.acquire("upsert")
    table.fs.write_bytes(path, json.dumps(_other_host(renewed_ago=0)).encode(), overwrite=True)
    mine.release()
    assert json.loads(table.fs.read_bytes(path))["host"] == "another-host"
    assert break_lock(table.fs, path) is None and not table.fs.exists(path)


class _PausedAfterCreate:
    """The table's LocalFS, but the first exclusive create of the lock file waits, once
    written, until told to go on: the window between a thread's create and its hold."""

    def __init__(self, fs, path):
        self.fs, self.path = fs, path
        self.created, self.go_on = threading.Event(), threading.Event()

    def __getattr__(self, name):
        return getattr(self.fs, name)

    def write_bytes(self, path, data, overwrite=False):
        self.fs.write_bytes(path, data, overwrite=overwrite)
        if path == self.path and not overwrite and not self.created.is_set():
            self.created.set()
            self.go_on.wait(10)


def test_two_threads_of_one_process_never_both_hold_the_lock(tmp_path):
    """A lock file naming this process, whose token no thread holds yet, is a thread taking
    it this moment, not a lock left by a crash: the second thread waits for it."""
    table, path = _table(tmp_path)
    fs = _PausedAfterCreate(table.fs, path)
    first, second = WriterLock(fs, path, **QUIET), WriterLock(fs, path, **QUIET)
    taking = threading.Thread(target=first.acquire, args=("upsert", LockOptions(timeout=0)))
    taking.start()
    try:
        assert fs.created.wait(10)
        with pytest.raises(LockError, match=f"pid {os.getpid()}, upsert"):
            second.acquire("upsert", LockOptions(timeout=0))
    finally:
        fs.go_on.set()
        taking.join(10)
    first.ensure_held()
    assert json.loads(table.fs.read_bytes(path))["token"] == first.token
    first.release()
