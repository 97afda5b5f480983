"""table/commit.py's moves on an object store, planned from the instant and the paths a
listing shows (pure): per partition the copies, then the deletes of what leaves the
table; a move caught between its copy and its delete finished by the delete alone; a
source outside the table left for its directory's deletion; and an instant that would
reuse a path refused before anything moves."""
import pytest

from python_adapter.table import commit
from python_adapter.table.timeline import FileEntry, Instant


def _entry(part, name, moved):
    return FileEntry(partition=part, path=f"{part}/{name}", rows=1, bytes=1,
                     moved_path=moved and f"{moved}/{part}/{name}")


INSTANT = Instant("1", "commit", "inflight", "upsert",
                  added=(_entry("d=2", "new2", "st"), _entry("d=1", "new1", "st"),
                         _entry("d=1", "adopted", "")),
                  removed=(_entry("d=1", "old1", "rp"), _entry("d=2", "old2", "rp")))


def _in_table(path):
    return path.startswith("t/")


def _final(rel):
    return f"t/{rel}"


def test_a_publish_copies_old_files_aside_deletes_them_then_copies_new_ones_in():
    groups = commit.publish_groups(INSTANT, _final)
    sources = {src for group in groups for src, _ in group}
    assert commit.object_store_steps(groups, sources, _in_table) == [
        ("copy", [("t/d=1/old1", "rp/d=1/old1")]), ("delete", ["t/d=1/old1"]),
        ("copy", [("st/d=1/new1", "t/d=1/new1")]),
        ("copy", [("t/d=2/old2", "rp/d=2/old2")]), ("delete", ["t/d=2/old2"]),
        ("copy", [("st/d=2/new2", "t/d=2/new2")])]


def test_an_undo_after_a_whole_publish_deletes_new_files_and_copies_old_ones_back():
    # published: the new files in the table with their staged copies kept, the old ones
    # set aside only
    present = {"t/d=1/new1", "st/d=1/new1", "t/d=2/new2", "st/d=2/new2", "rp/d=1/old1",
               "rp/d=2/old2"}
    assert commit.object_store_steps(commit.undo_groups(INSTANT, _final), present,
                                     _in_table) == [
        ("delete", ["t/d=1/new1"]), ("copy", [("rp/d=1/old1", "t/d=1/old1")]),
        ("delete", ["t/d=2/new2"]), ("copy", [("rp/d=2/old2", "t/d=2/old2")])]


def test_a_file_caught_at_both_paths_is_finished_by_deleting_the_copy_readers_see():
    # publish stopped after copying old1 aside, before its delete: old1 at both paths
    present = {"t/d=1/old1", "rp/d=1/old1", "t/d=2/old2", "st/d=1/new1", "st/d=2/new2"}
    undo = commit.object_store_steps(commit.undo_groups(INSTANT, _final), present, _in_table)
    assert undo == []  # old1 is in the table already; its set-aside copy goes with rp/
    # the other way: a new file copied in, its staged copy kept: deleted from the table
    present = {"rp/d=1/old1", "t/d=1/new1", "st/d=1/new1", "t/d=2/old2", "st/d=2/new2"}
    assert commit.object_store_steps(commit.undo_groups(INSTANT, _final), present,
                                     _in_table) == [
        ("delete", ["t/d=1/new1"]), ("copy", [("rp/d=1/old1", "t/d=1/old1")])]


def test_a_new_file_without_its_staged_copy_is_copied_back_before_it_leaves():
    present = {"t/d=1/new1", "rp/d=1/old1", "t/d=2/old2"}
    steps = commit.object_store_steps(commit.undo_groups(INSTANT, _final), present, _in_table)
    assert steps[:3] == [("copy", [("t/d=1/new1", "st/d=1/new1")]), ("delete", ["t/d=1/new1"]),
                         ("copy", [("rp/d=1/old1", "t/d=1/old1")])]


def test_planning_again_from_what_is_there_after_the_steps_finds_nothing_to_do():
    groups = commit.undo_groups(INSTANT, _final)
    present = {"t/d=1/new1", "st/d=1/new1", "t/d=2/new2", "rp/d=1/old1", "rp/d=2/old2"}
    for kind, items in commit.object_store_steps(groups, present, _in_table):
        if kind == "copy":
            present |= {dst for _src, dst in items}
        else:
            present -= set(items)
    assert commit.object_store_steps(groups, present, _in_table) == []
    assert {p for p in present if p.startswith("t/")} == {"t/d=1/old1", "t/d=2/old2"}


def test_an_instant_moving_a_new_file_to_the_path_of_one_it_replaces_is_refused():
    added = (_entry("d=1", "same", "st"), _entry("d=1", "kept", ""))
    removed = (_entry("d=1", "same", "rp"), _entry("d=1", "kept", ""))
    with pytest.raises(RuntimeError, match=r"instant 7 moves a new file to the path of a file "
                       r"it replaces \(d=1/same, 1 in all\): a bug"):
        commit.refuse_reused_paths("7", added, removed)
    commit.refuse_reused_paths("7", added[1:], removed)  # one recorded in place: not moved
