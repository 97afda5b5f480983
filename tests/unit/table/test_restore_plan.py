"""What sized_restore can bring back: decided from the files that are kept, not from which
instants are archived (table/restore_plan.py)."""
from python_adapter.table.restore_plan import plan_restore, restorable_instants
from python_adapter.table.extra import FILES_ADDED
from python_adapter.table.timeline import (ARCHIVED, DEFINES_TABLE, FileEntry,
                                           Instant, replay)

ASIDE = "file:/w/.sized/t/replaced"


def _file(name):
    return FileEntry("d=1", f"d=1/{name}.parquet", 10, 100, name)


def _commit(ident, adds=(), removes=(), **extra):
    """A completed instant that sets what it removes aside in its own directory."""
    return Instant(instant=ident, action="commit", state="completed", operation="upsert",
                   added=tuple(_file(n) for n in adds),
                   removed=tuple(FileEntry("d=1", f"d=1/{n}.parquet", 10, 100, n,
                                           f"{ASIDE}/{ident}/d=1/{n}.parquet") for n in removes),
                   extra=dict(extra))


def _brought_back(inst, from_instant, names):
    """`inst` with adds that bring files back from `from_instant`'s set-aside directory."""
    return Instant(**{**vars(inst), "added": tuple(
        FileEntry("d=1", f"d=1/{n}.parquet", 10, 100, n,
                  f"{ASIDE}/{from_instant}/d=1/{n}.parquet") for n in names)})


def _current(history):
    return replay((), history)


def _kept(*dirs):
    return lambda copy: any(copy.startswith(f"{ASIDE}/{d}/") for d in dirs)


def test_the_state_after_an_instant_comes_back_from_the_newest_copies_kept():
    # build a, b; compact them into c; upsert c -> d; restore to the build: a and b come
    # back from the compaction's directory, d is set aside in the restore's
    history = [_commit("1", adds="ab"), _commit("2", adds="c", removes="ab"),
               _commit("3", adds="d", removes="c"),
               _brought_back(_commit("4", removes="d"), "2", "ab")]
    current = _current(history)
    assert sorted(current) == ["d=1/a.parquet", "d=1/b.parquet"]
    plan = plan_restore(history, current, "3", _kept("3", "4"))
    assert plan.possible
    assert [(f.path, f.moved_path) for f in plan.back] == \
        [("d=1/d.parquet", f"{ASIDE}/4/d=1/d.parquet")]
    assert [f.path for f in plan.gone] == ["d=1/a.parquet", "d=1/b.parquet"]
    # c's only copy is in 3's directory: kept, it comes back; cleaned, it is missing
    assert [f.moved_path for f in plan_restore(history, current, "2", _kept("3", "4")).back] \
        == [f"{ASIDE}/3/d=1/c.parquet"]
    lost = plan_restore(history, current, "2", _kept("4"))
    assert not lost.possible and [f.path for f in lost.missing] == ["d=1/c.parquet"]
    # the build's state is the table's now: nothing to bring back
    build = plan_restore(history, current, "1", _kept())
    assert build.possible and not build.back and not build.gone


def test_archived_instants_are_restorable_while_their_files_are_kept():
    """The adversarial pass's case: a clean with retain_commits 1 archived the build, the
    compaction and the upsert; the later restore kept the compaction's files aside."""
    history = [_commit("1", adds="ab"), _commit("2", adds="c", removes="ab"),
               _commit("3", adds="d", removes="c"),
               _commit("4", adds="c", removes="d")]  # restore to 2: c back, d aside in 4/
    # the archive keeps 1-3 with their lists in its history files
    current = _current(history)
    kept = _kept("4")                                  # 1-3's directories were cleaned
    plan = plan_restore(history, current, "3", kept)
    assert plan.possible and [f.path for f in plan.back] == ["d=1/d.parquet"]
    assert plan.back[0].moved_path == f"{ASIDE}/4/d=1/d.parquet"
    assert plan_restore(history, current, "2", kept).possible   # the state now: nothing moves
    # the build's a and b were set aside by 2, whose directory is gone
    before = plan_restore(history, current, "1", kept)
    assert not before.possible and not before.blocked
    assert sorted(f.path for f in before.missing) == ["d=1/a.parquet", "d=1/b.parquet"]
    assert restorable_instants(history, current, kept) == ["2", "3", "4"]


def test_a_new_definition_or_lost_file_lists_stop_the_walk_back():
    history = [_commit("1", adds="ab"), _commit("2", adds="c", removes="ab",
                                                **{DEFINES_TABLE: "true"}),
               _commit("3", adds="d", removes="c")]
    current = _current(history)
    everything = _kept("1", "2", "3")
    assert "2, defined the table again" in plan_restore(history, current, "1", everything).blocked
    assert restorable_instants(history, current, everything) == ["2", "3"]
    # an archived summary whose history file is gone: its adds and removes are unknown
    summary = Instant(**{**vars(history[2]), "added": (), "removed": (),
                         "extra": {ARCHIVED: "true", **FILES_ADDED.entry(1)}})
    lost = [_commit("1", adds="ab"), summary, _commit("4", adds="e", removes="d")]
    assert "file lists of a later instant, 3" in plan_restore(
        lost, _current(lost), "1", everything).blocked


def test_unknown_and_unfinished_instants_are_named_as_such():
    done = [_commit("1", adds="ab"), _commit("2", adds="c", removes="ab")]
    history = done + [Instant(instant="5", action="commit", state="inflight", operation="upsert")]
    current = _current(done)
    assert plan_restore(history, current, "9", _kept()).blocked == \
        "it is not an instant of the table"
    assert plan_restore(history, current, "5", _kept()).blocked == "it is inflight, not completed"
