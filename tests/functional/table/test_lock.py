"""Writer leases across hosts: a lock not renewed within its lease is stale whatever host
took it; a holder renews it while it works; a writer waits up to lock_timeout; a writer
whose lock was taken over publishes nothing; sized_unlock shows and breaks a lock."""
import json
import os
import threading
import time

import pytest

from python_adapter import api
from python_adapter.core.config import parse_config
from python_adapter.errors import LockError
from python_adapter.io.fs import HadoopFS
from python_adapter.spark.catalog.tables import TableRef, describe_table
from python_adapter.api import write_dataframe
from python_adapter.table.commit import CommitProtocol
from python_adapter.table.lock import LockOptions, holder_record
from python_adapter.table.timeline import Timeline, meta_dir_of
from tests.functional.helpers import rows_of, rows_of_df
from tests.functional.readers import local_dir

QUIET = dict(log=lambda m: None)


def _cfg(**extra):
    return parse_config({"partition_by": ["day"], "incremental_strategy": "insert_overwrite",
                         "target_file_size": 16_000, **extra})


def _lock_file(spark, table):
    fs = HadoopFS(spark)
    location = fs.qualify(describe_table(spark, table).location)
    return fs, location, f"{meta_dir_of(location)}/lock"


def _other_host(renewed_ago, lease=60.0):
    holder = holder_record("upsert", lease)
    now = int(time.time() * 1000)
    return {**holder, "host": "another-host", "pid": 4242, "renewed_ms": now - int(renewed_ago * 1000)}


def test_a_lock_of_another_host_is_stale_once_its_lease_expired(spark, schema, events):
    table = TableRef(schema, "lease_gone")
    write_dataframe(spark, events(days=2), table, _cfg(), **QUIET)
    fs, _location, path = _lock_file(spark, table)
    fs.write_bytes(path, json.dumps(_other_host(renewed_ago=120)).encode())
    logs = []
    write_dataframe(spark, events(days=2, tag="v2"), table, _cfg(), log=logs.append)
    assert any("stale writer lock" in m and "lease expired" in m for m in logs), logs
    assert rows_of(spark, schema, "lease_gone") == rows_of_df(events(days=2, tag="v2"))


def test_a_live_lease_of_another_host_fails_the_write_naming_it_and_the_way_out(spark, schema,
                                                                               events):
    table = TableRef(schema, "lease_live")
    write_dataframe(spark, events(days=2), table, _cfg(), **QUIET)
    fs, _location, path = _lock_file(spark, table)
    fs.write_bytes(path, json.dumps(_other_host(renewed_ago=1)).encode())
    with pytest.raises(LockError, match="host another-host, pid 4242, upsert .*lease expires in "
                                        ".*sized_unlock"):
        write_dataframe(spark, events(days=2, tag="v2"), table, _cfg(), **QUIET)
    shown = api.unlock(spark, table)
    assert shown.state is api.LockState.HELD and fs.exists(path)
    assert "another-host" in shown.message and "force: true" in shown.message
    assert api.unlock(spark, table, force=True).state is api.LockState.BROKEN
    assert not fs.exists(path)
    write_dataframe(spark, events(days=2, tag="v2"), table, _cfg(), **QUIET)
    assert api.unlock(spark, table).state is api.LockState.NOT_LOCKED


def test_a_writer_waits_for_the_lock_up_to_its_timeout(spark, schema, events):
    table = TableRef(schema, "waits")
    write_dataframe(spark, events(days=2), table, _cfg(), **QUIET)
    fs, location, _path = _lock_file(spark, table)
    other = CommitProtocol(fs, location, log=lambda m: None)
    other.acquire_lock("clustering")
    threading.Timer(3.0, other.release_lock).start()  # the other writer finishes in 3 s
    logs = []
    write_dataframe(spark, events(days=2, tag="v2"), table, _cfg(lock_timeout="2m"),
                    log=logs.append)
    assert any("waiting up to 2m00s for the writer lock" in m for m in logs), logs
    assert rows_of(spark, schema, "waits") == rows_of_df(events(days=2, tag="v2"))


def test_the_holder_renews_its_lease_and_loses_nothing_when_taken_over(spark, schema, events):
    table = TableRef(schema, "renewed")
    write_dataframe(spark, events(days=2), table, _cfg(), **QUIET)
    fs, location, path = _lock_file(spark, table)
    proto = CommitProtocol(fs, location, log=lambda m: None)
    proto.acquire_lock("upsert", LockOptions(lease=1.0))
    first = json.loads(fs.read_bytes(path))
    time.sleep(2.5)  # more than the lease: the heartbeat keeps it alive
    renewed = json.loads(fs.read_bytes(path))
    assert renewed["token"] == first["token"] and renewed["renewed_ms"] > first["renewed_ms"]
    # another writer breaks the lock (sized_unlock force); this one must not publish
    fs.delete(path, recursive=False)
    fs.write_bytes(path, json.dumps(_other_host(renewed_ago=0)).encode())
    instant = proto.request("insert_overwrite", ["day"])
    inflight = proto.mark_inflight(instant, [], [])
    with pytest.raises(LockError, match="no longer this writer's"):
        proto.publish(inflight)
    proto.lock.stop()
    fs.delete(path, recursive=False)
    assert [i.state for i in Timeline(fs, location).instants()][-1] == "inflight"
    write_dataframe(spark, events(days=2, tag="v3"), table, _cfg(), **QUIET)  # recovers
    assert rows_of(spark, schema, "renewed") == rows_of_df(events(days=2, tag="v3"))


def test_of_two_writers_that_judge_a_lock_stale_only_one_takes_it(spark, schema, events):
    """Takeover is a rename of the stale lock to a name of its own, not a delete: a writer
    that judged the same lock stale a moment later never removes the lock just taken."""
    from python_adapter.table.lock import WriterLock
    table = TableRef(schema, "race")
    write_dataframe(spark, events(days=1), table, _cfg(), **QUIET)
    fs, _location, path = _lock_file(spark, table)
    stale = _other_host(renewed_ago=120)
    fs.write_bytes(path, json.dumps(stale).encode())
    first, second = WriterLock(fs, path, log=lambda m: None), WriterLock(fs, path, log=lambda m: None)
    assert first._set_aside(stale)
    first.acquire("upsert", LockOptions(lease=60))
    taken = json.loads(fs.read_bytes(path))["token"]
    # the second writer read the same stale record before the first took over
    assert not second._set_aside(stale)           # its name is taken: the rename is refused
    assert json.loads(fs.read_bytes(path))["token"] == taken
    fs.delete(f"{path}.stale.{stale['token']}", recursive=False)
    assert not second._set_aside(stale)           # the rename caught the new lock: put back
    assert json.loads(fs.read_bytes(path))["token"] == taken
    first.ensure_held()
    first.release()
    assert not fs.exists(path)


def test_a_lock_being_written_is_not_taken_for_one_without_holder(spark, schema, events):
    """A writer creates the lock file and then writes its record (and a renewal rewrites
    it): another writer that looks in between finds it empty. It looks again before it
    judges: a record that arrives within a second is a live holder; only a lock that stays
    empty (its writer died between the two) is taken over."""
    from python_adapter.table.lock import WriterLock
    table = TableRef(schema, "being_taken")
    write_dataframe(spark, events(days=1), table, _cfg(), **QUIET)
    fs, _location, path = _lock_file(spark, table)
    live = _other_host(renewed_ago=0)
    fs.write_bytes(path, b"")
    late = threading.Timer(0.4, lambda: fs.write_bytes(path, json.dumps(live).encode(),
                                                          overwrite=True))
    late.start()
    with pytest.raises(LockError, match="another-host"):
        WriterLock(fs, path, log=lambda m: None).acquire("upsert", LockOptions(timeout=0))
    late.join()
    assert json.loads(fs.read_bytes(path))["token"] == live["token"]

    fs.write_bytes(path, b"", overwrite=True)  # a writer that died between create and write
    taken = []
    mine = WriterLock(fs, path, log=taken.append)
    mine.acquire("upsert", LockOptions(timeout=0))
    assert any("the lock records no holder" in m for m in taken), taken
    mine.ensure_held()
    mine.release()


def _stale_locks(directory):
    return sorted(n for n in os.listdir(directory) if ".stale." in n)


def _age(directory, names, hours=2.0):
    then = time.time() - hours * 3600
    for name in names:
        os.utime(os.path.join(directory, name), (then, then))


def test_the_cleaner_deletes_locks_set_aside_as_stale_after_an_hour_never_a_live_one(
        spark, schema, events):
    """A stale lock taken over is set aside as `<lock>.stale.<token>`: the cleaner (after
    every commit, and sized_clean) deletes those set aside more than an hour ago, and
    leaves younger ones and the lock in use, however old its file's time."""
    from python_adapter.spark.services.clean import clean_table
    from python_adapter.table.lock import WriterLock
    table = TableRef(schema, "stale_left")
    write_dataframe(spark, events(days=1), table, _cfg(), **QUIET)
    fs, _location, path = _lock_file(spark, table)
    meta = local_dir(path.rsplit("/", 1)[0])

    def take_over(lock_path):
        """A dead holder's lock (its lease expired) taken over and released."""
        fs.write_bytes(lock_path, json.dumps(_other_host(renewed_ago=120)).encode())
        taker = WriterLock(fs, lock_path, log=lambda m: None)
        taker.acquire("compaction")
        taker.release()

    service_lock = f"{path.rsplit('/', 1)[0]}/cluster.lock"
    take_over(path)
    take_over(service_lock)
    old = _stale_locks(meta)
    assert [n.split(".stale.")[0] for n in old] == ["cluster.lock", "lock"]
    _age(meta, old)
    take_over(path)
    fresh = sorted(set(_stale_locks(meta)) - set(old))
    write_dataframe(spark, events(days=1, tag="v2"), table, _cfg(), **QUIET)  # cleans
    assert _stale_locks(meta) == fresh

    live = WriterLock(fs, service_lock, log=lambda m: None)
    live.acquire("clustering", LockOptions(lease=3600))  # a table service at work
    try:
        _age(meta, fresh + ["cluster.lock"])
        result = clean_table(spark, table, log=lambda m: None)
        assert _stale_locks(meta) == [] and "1 stale lock file deleted" in result.message
        live.ensure_held()
    finally:
        live.release()
    assert rows_of(spark, schema, "stale_left") == rows_of_df(events(days=1, tag="v2"))
