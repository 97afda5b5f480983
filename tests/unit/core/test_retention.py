"""Which set-aside files a table keeps, what it can be restored to, what is archived."""
from dataclasses import replace

from python_adapter.core.retention import Done, Retention, archivable, restorable, retained

HOUR = 3_600_000
NOW = 1_000 * HOUR


def _done(n, every_ms=HOUR, defines=()):
    """n instants, one every `every_ms`, the last completed at NOW."""
    return [Done(f"{i:03d}", NOW - (n - 1 - i) * every_ms, i in defines) for i in range(n)]


def test_the_last_commits_are_kept_whatever_their_age():
    done = _done(20)
    assert retained(done, Retention(commits=3, hours=0), NOW) == {"017", "018", "019"}


def test_instants_completed_within_the_hours_are_kept_beyond_the_count():
    done = _done(20)
    assert retained(done, Retention(commits=1, hours=5), NOW) == \
        {f"{i:03d}" for i in range(14, 20)}


def test_restorable_back_to_the_first_instant_whose_set_aside_files_are_gone():
    done = [replace(d, kept=int(d.instant) >= 17) for d in _done(20)]
    assert restorable(done) == ["016", "017", "018", "019"]  # 16's state needs 17's files
    assert restorable(_done(5)) == ["000", "001", "002", "003", "004"]


def test_restorable_stops_at_a_new_definition_and_at_the_archive():
    assert restorable(_done(20, defines={16})) == ["016", "017", "018", "019"]
    done = [replace(d, archived=int(d.instant) < 12) for d in _done(20)]
    assert restorable(done) == [f"{i:03d}" for i in range(12, 20)]


def test_archival_waits_for_a_batch_of_instants_past_retention():
    assert archivable(_done(12), Retention(commits=3, hours=0), NOW, batch=10) == []
    assert archivable(_done(13), Retention(commits=3, hours=0), NOW, batch=10) == \
        [f"{i:03d}" for i in range(10)]
    assert archivable(_done(13), Retention(commits=3, hours=48), NOW, batch=1) == []
