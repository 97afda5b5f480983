"""The crash matrix: a write killed at every fault point of the table layer (and a
recovery killed in the middle of its moves) leaves the table, once recovered, holding
exactly the files of its last completed commit: none lost, none twice, none of the
crashed write's unless it completed. On local disk without Spark (LocalFS), with both of
the commit protocol's ways to move a file: by rename (local disk, HDFS) and by copy and
delete (an object store: LocalFS(copying=True)), whose publish and undo have a fault
point after every copy and every delete, so a file is caught at both paths.

Each case raises InjectedCrash at its point (SIZED_SPARK_FAULT), then treats the writer as
dead (table.lock.forget_held_locks: its locks are no longer held by anyone alive), then
recovers as the next writer does. FAULT_POINTS lists every point in python_adapter/table/;
a test fails when one is added there and not here, or is here and no case passes it.
"""
import os
import pathlib
import re
import subprocess
import sys

import pytest

from python_adapter.table import faults
from python_adapter.table.faults import InjectedCrash
from tests.unit.table.local_table import (LocalTable, after, crash_like_a_dead_process,
                                          files_of, retention)

TABLE_PACKAGE = pathlib.Path(__file__).resolve().parents[3] / "python_adapter" / "table"
FAULT_POINTS = (
    # table/commit.py: the protocol's steps; publish and undo after each of their renames
    "requested", "inflight", "publish", "published", "completed", "cleanup", "undo",
    # table/transaction.py: the catalog told, the settling (statistics, then cleanup)
    "synced", "settling", "statistics",
    # table/archive.py: the cleaner, each step of an archival
    "cleaned", "archive_history", "archive_checkpoint", "archive_timeline",
)

# Every write records a retention of its last commit only, so the crashing write's
# cleanup deletes the previous commit's set-aside files (cleaned) and, with ten instants
# past retention behind it, archives them (archive_*).
KEEP_LAST = retention(commits=1, hours=0)
CRASHING = {**files_of("wc", days=[3, 4], per_day=3), **files_of("wc", days=[5], per_day=2)}
CRASHING_REPLACES = ("day=3", "day=4")
MOVES = 2 + 2 + len(CRASHING)   # two files set aside in each replaced partition, then in
# on an object store each file set aside is copied, then deleted; each new one copied in
COPY_STEPS = 2 * (2 + 2) + len(CRASHING)
# the undo after a whole publish there: each new file deleted (its staged copy is kept),
# each set-aside one copied back
UNDO_COPY_STEPS = len(CRASHING) + 2 + 2
NEXT = files_of("wd", days=[5], per_day=1)


def history(table: LocalTable) -> dict:
    """Ten completed commits (a first write of four days, then one day replaced each);
    returns the files the table holds after them."""
    state = files_of("w0", days=[1, 2, 3, 4], per_day=2)
    table.write(state, extra=KEEP_LAST)
    for i in range(1, 10):
        files = files_of(f"w{i}", days=[1 + i % 4], per_day=2)
        table.write(files, replacing=[f"day={1 + i % 4}"], extra=KEEP_LAST)
        state = after(state, files, replacing=[f"day={1 + i % 4}"])
    return state


def crashing_write(table: LocalTable) -> None:
    table.write(CRASHING, replacing=CRASHING_REPLACES, extra=KEEP_LAST)


# (fault spec, whether the write has completed when it crashes there)
AFTER_PUBLISH = [
    ("published", False), ("synced", False),
    ("completed", True), ("settling", True), ("statistics", True), ("cleanup", True),
    ("cleaned", True), ("archive_history", True), ("archive_checkpoint", True),
    ("archive_timeline", True),
]
WRITE_CRASHES = [
    ("requested", False), ("inflight", False), ("publish:1", False), ("publish:3", False),
    ("publish:7", False), (f"publish:{MOVES}", False), ("published", False), ("synced", False),
    ("completed", True), ("settling", True), ("statistics", True), ("cleanup", True),
    ("cleaned", True), ("archive_history", True), ("archive_checkpoint", True),
    ("archive_timeline", True),
]
# (the write's crash, then the recovery's own crash)
RECOVERY_CRASHES = [
    ("published", "undo:1"), ("published", f"undo:{MOVES // 2}"), ("published", f"undo:{MOVES}"),
    ("publish:7", "undo:3"), ("settling", "cleanup"), ("statistics", "archive_history"),
    ("settling", "archive_checkpoint"),
]
# By copy and delete: in day=3 two copies aside (1, 2: the first file then at both
# paths), their deletes (3, 4), the new files copied in (5-7); then day=4 (8-14), day=5
COPY_WRITE_CRASHES = [(f"publish:{n}", False) for n in (1, 2, 3, 5, 8, 9, 10, COPY_STEPS)]
COPY_WRITE_CRASHES += AFTER_PUBLISH + [("requested", False), ("inflight", False)]
COPY_RECOVERY_CRASHES = [
    ("published", "undo:1"), ("published", "undo:4"), ("published", f"undo:{UNDO_COPY_STEPS}"),
    ("publish:5", "undo:1"), ("publish:9", "undo:2"), ("publish:10", "undo:3"),
]


def _crash(table, monkeypatch, spec, action):
    monkeypatch.setenv("SIZED_SPARK_FAULT", spec)
    faults.reset()
    with pytest.raises(InjectedCrash, match=spec.split(":")[0]):
        action()
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    crash_like_a_dead_process()


def _assert_holds_exactly(table, expected):
    """The table's readers and its timeline agree on `expected`, nothing is left pending,
    and the next write goes through."""
    assert table.visible() == expected
    assert table.recorded() == {rel: len(data) for rel, data in expected.items()}
    assert not table.timeline.pending()
    ids = [i.instant for i in table.timeline.instants()]
    assert len(ids) == len(set(ids))  # an instant archived and active would count twice
    assert not os.path.exists(table.meta("lock"))
    assert not os.listdir(table.meta("staging"))
    table.write(NEXT, replacing=["day=5"], extra=KEEP_LAST)
    assert table.visible() == after(expected, NEXT, replacing=["day=5"])


def test_every_fault_point_of_the_table_layer_is_in_the_matrix():
    calls, named = [], []
    for path in TABLE_PACKAGE.glob("*.py"):
        if path.name != "faults.py":  # where fault_point is defined
            text = path.read_text()
            calls += re.findall(r"\bfault_point\(", text)
            named += re.findall(r"\bfault_point\(\"(\w+)\"\)", text)
    assert len(named) == len(calls)  # every call names its point as a literal, found here
    assert set(named) == set(FAULT_POINTS)


@pytest.mark.parametrize("writes, recoveries", [(WRITE_CRASHES, RECOVERY_CRASHES),
                                                (COPY_WRITE_CRASHES, COPY_RECOVERY_CRASHES)])
def test_every_fault_point_has_a_case_that_crashes_there(writes, recoveries):
    specs = [s for s, _ in writes] + [s for pair in recoveries for s in pair]
    assert {spec.split(":")[0] for spec in specs} == set(FAULT_POINTS)


@pytest.mark.parametrize("copying, spec, completed",
                         [(False, *case) for case in WRITE_CRASHES] +
                         [(True, *case) for case in COPY_WRITE_CRASHES])
def test_a_write_killed_at_any_point_leaves_exactly_the_last_completed_commit(
        tmp_path, monkeypatch, copying, spec, completed):
    table = LocalTable(tmp_path, copying=copying)
    before = history(table)
    _crash(table, monkeypatch, spec, lambda: crashing_write(table))
    table.recover()
    _assert_holds_exactly(table, after(before, CRASHING, CRASHING_REPLACES) if completed
                          else before)


@pytest.mark.parametrize("copying, spec, recovery_spec",
                         [(False, *case) for case in RECOVERY_CRASHES] +
                         [(True, *case) for case in COPY_RECOVERY_CRASHES])
def test_a_recovery_killed_in_the_middle_is_finished_by_the_next(tmp_path, monkeypatch, copying,
                                                                spec, recovery_spec):
    table = LocalTable(tmp_path, copying=copying)
    before = history(table)
    _crash(table, monkeypatch, spec, lambda: crashing_write(table))
    _crash(table, monkeypatch, recovery_spec, table.recover)
    table.recover()
    completed = dict(WRITE_CRASHES + COPY_WRITE_CRASHES)[spec]
    _assert_holds_exactly(table, after(before, CRASHING, CRASHING_REPLACES) if completed
                          else before)


@pytest.mark.parametrize("copying, steps", [(False, MOVES), (True, COPY_STEPS)])
def test_the_last_publish_case_is_the_last_move(tmp_path, monkeypatch, copying, steps):
    """publish:MOVES (COPY_STEPS) crashes after the publish's last step: one more is never
    reached."""
    table = LocalTable(tmp_path, copying=copying)
    before = history(table)
    monkeypatch.setenv("SIZED_SPARK_FAULT", f"publish:{steps + 1}")
    crashing_write(table)
    assert table.visible() == after(before, CRASHING, CRASHING_REPLACES)


@pytest.mark.parametrize("steps", [1, 2, 9])
def test_on_an_object_store_a_file_caught_at_both_paths_is_there_once_after_recovery(
        tmp_path, monkeypatch, steps):
    """The case the object-store steps exist for: a file copied aside and not yet deleted
    is at both paths, in the table and set aside (a rename-based recovery skipped its move
    back and kept the copy it made as well: rows twice). Recovery deletes the copy where
    readers look once; the table holds its old files once, no set-aside copy in it."""
    table = LocalTable(tmp_path, copying=True)
    before = history(table)
    _crash(table, monkeypatch, f"publish:{steps}", lambda: crashing_write(table))
    half = table.visible()
    aside = table.meta("replaced")
    assert any(os.path.exists(os.path.join(aside, instant, rel)) for instant in os.listdir(aside)
               for rel in half)  # a file at both paths
    table.recover()
    _assert_holds_exactly(table, before)


@pytest.mark.parametrize("copying, total, done",
                         [(False, MOVES, n) for n in (1, MOVES // 2, MOVES - 1)] +
                         [(True, UNDO_COPY_STEPS, n) for n in (1, 4, UNDO_COPY_STEPS - 1)])
def test_a_repeated_recovery_makes_each_remaining_move_once(tmp_path, monkeypatch, copying,
                                                            total, done):
    table = LocalTable(tmp_path, copying=copying)
    before = history(table)
    _crash(table, monkeypatch, "published", lambda: crashing_write(table))
    _crash(table, monkeypatch, f"undo:{done}", table.recover)
    moved = []
    faults.run_at("undo", lambda: moved.append(1))
    try:
        table.recover()
    finally:
        faults.run_at("undo", None)
    assert len(moved) == total - done
    assert table.visible() == before


def test_an_undo_killed_while_undoing_an_ordinary_failure_is_finished_by_the_next(
        tmp_path, monkeypatch):
    """A catalog that refuses after the publish makes the writer undo at once; killed in
    the middle of that undo, the next writer's recovery finishes it."""
    table = LocalTable(tmp_path)
    before = history(table)
    table.catalog.fail_sync = RuntimeError("metastore refused")
    _crash(table, monkeypatch, "undo:2", lambda: crashing_write(table))
    table.catalog.fail_sync = None
    table.recover()
    _assert_holds_exactly(table, before)


def test_a_writer_process_really_killed_mid_publish_is_rolled_back(tmp_path):
    """The same as a real kill -9 (SIZED_SPARK_FAULT_MODE=exit: os._exit in the middle of
    the publish) of another process: its lock names a pid that is gone."""
    table = LocalTable(tmp_path)
    before = history(table)
    root = pathlib.Path(__file__).resolve().parents[3]
    child = subprocess.run(
        [sys.executable, "-c", "import pathlib, sys\n"
         "from tests.unit.table.local_table import LocalTable\n"
         "from tests.unit.table.test_crash_matrix import crashing_write\n"
         "crashing_write(LocalTable(pathlib.Path(sys.argv[1])))", str(tmp_path)],
        cwd=root, env={**os.environ, "PYTHONPATH": str(root), "SIZED_SPARK_FAULT": "publish:7",
                       "SIZED_SPARK_FAULT_MODE": "exit"},
        capture_output=True, text=True, timeout=120)
    assert child.returncode == 137, child.stderr
    assert table.visible() != before  # half published
    table.recover()
    assert any("stale writer lock" in m and "is gone" in m for m in table.logs), table.logs
    _assert_holds_exactly(table, before)
