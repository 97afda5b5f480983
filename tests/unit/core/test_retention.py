"""Which set-aside files a table keeps and what is archived (what a table can be restored to:
tests/unit/table/test_restore_plan.py)."""
from python_adapter.core.retention import Done, Retention, archivable, retained

HOUR = 3_600_000
NOW = 1_000 * HOUR


def _done(n, every_ms=HOUR):
    """n instants, one every `every_ms`, the last completed at NOW."""
    return [Done(f"{i:03d}", NOW - (n - 1 - i) * every_ms) for i in range(n)]


def test_the_last_commits_are_kept_whatever_their_age():
    done = _done(20)
    assert retained(done, Retention(commits=3, hours=0), NOW) == {"017", "018", "019"}


def test_instants_completed_within_the_hours_are_kept_beyond_the_count():
    done = _done(20)
    assert retained(done, Retention(commits=1, hours=5), NOW) == \
        {f"{i:03d}" for i in range(14, 20)}


def test_archival_waits_for_a_batch_of_instants_past_retention():
    assert archivable(_done(12), Retention(commits=3, hours=0), NOW, batch=10) == []
    assert archivable(_done(13), Retention(commits=3, hours=0), NOW, batch=10) == \
        [f"{i:03d}" for i in range(10)]
    assert archivable(_done(13), Retention(commits=3, hours=48), NOW, batch=1) == []
