"""What the timeline makes of its records: a full refresh starts the table's files over
(the files it replaced are all it could list: a file deleted behind the timeline's back
leaves the record with it), and the error of an unreadable completed record names its
path, the quarantine and both ways on, with the table's name once the caller knows it."""
from python_adapter.errors import UnreadableInstantError
from python_adapter.table.lock import BRIEF_WAIT, LockOptions, wait_for
from python_adapter.table.timeline import FileEntry, Instant, replay


def _commit(ident, operation, added=(), removed=()):
    return Instant(instant=ident, action="commit", state="completed", operation=operation,
                   added=tuple(FileEntry("d=1", p, 1, 10) for p in added),
                   removed=tuple(FileEntry("d=1", p, 1, 10) for p in removed))


def test_a_full_refresh_starts_the_files_over():
    first = _commit("1", "upsert", added=["d=1/a", "d=1/b"])
    # d=1/b was deleted outside the table: the full refresh could only replace d=1/a
    refresh = _commit("2", "full_refresh", added=["d=1/c"], removed=["d=1/a"])
    later = _commit("3", "insert", added=["d=1/d"])
    assert sorted(replay((), [first, refresh, later])) == ["d=1/c", "d=1/d"]
    assert sorted(replay((), [first, _commit("2", "insert_overwrite", added=["d=1/c"],
                                             removed=["d=1/a"])])) == ["d=1/b", "d=1/c"]


def test_the_unreadable_record_error_names_the_path_and_both_ways_on():
    error = UnreadableInstantError("file:/w/.sized/t/timeline/1.commit", "Expected 10 bytes",
                                   "file:/w/.sized/t/quarantine")
    named = str(error.of("analytics.events"))
    assert "timeline file file:/w/.sized/t/timeline/1.commit is corrupt or unreadable" in named
    assert "sized_repair --args '{relation: analytics.events}'" in named
    assert "--full-refresh" in named and "file:/w/.sized/t/quarantine/" in named
    assert "<schema.table>" in str(error) and "<schema.table>" not in named


def test_a_brief_holder_is_waited_for_whatever_the_timeout():
    assert wait_for({"brief": True}, LockOptions(timeout=0)) == BRIEF_WAIT
    assert wait_for({}, LockOptions(timeout=0)) == 0
    assert wait_for({"brief": True}, LockOptions(timeout=900)) == 900
