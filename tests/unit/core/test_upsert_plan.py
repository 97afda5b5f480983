"""What an upsert writes where (core.upsert_plan), from tag statistics and the table's files,
without Spark."""
import pytest

from python_adapter.core.binpack import Sizing
from python_adapter.core.upsert_plan import TagGroup, plan_upsert
from python_adapter.errors import ConfigError

KB = 1000
SIZING = Sizing(bytes_per_row=10, target_file_size=100 * KB, small_file_limit=80 * KB)
FILES = {"d=1/a.parquet": 50 * KB, "d=1/b.parquet": 95 * KB, "d=2/c.parquet": 99 * KB}


def _group(values, rows, file=None, old=None, stays=False, deleted=False):
    return TagGroup((values,), (old or values,), file, stays, deleted, rows)


def test_updates_rewrite_the_file_that_holds_their_keys_and_nothing_else():
    plan = plan_upsert([_group("1", 7, "d=1/b.parquet", stays=True)], FILES, ["d"], SIZING)
    assert [(s.file, s.updates, s.inserts) for s in plan.slots] == [("d=1/b.parquet", 7, 0)]
    assert plan.ranges == () and plan.summary["updates"] == 7


def test_inserts_fill_small_files_first_then_new_files_by_ranges_of_the_key_hash():
    # d=1/a.parquet has room for 5,000 rows; 12,000 inserts: 5,000 there, 7,000 in new files
    plan = plan_upsert([_group("1", 12_000)], FILES, ["d"], SIZING)
    assert [(s.file, s.inserts) for s in plan.slots] == [
        ("d=1/a.parquet", 5_000), (None, 7_000)]
    ranges = [(r.slot, r.lo, r.hi, r.rewrites_file) for r in plan.ranges]
    assert ranges == [(0, 0.0, 5_000 / 12_000, True), (1, 5_000 / 12_000, 1.0, False)]
    assert all(r.values == ("1",) for r in plan.ranges)


def test_ranges_of_each_partition_cover_zero_to_one_once():
    groups = [_group("1", 30_000), _group("2", 21_000), _group("3", 5)]
    plan = plan_upsert(groups, FILES, ["d"], SIZING)
    for values in {r.values for r in plan.ranges}:
        spans = sorted((r.lo, r.hi) for r in plan.ranges if r.values == values)
        assert spans[0][0] == 0.0 and spans[-1][1] == 1.0
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    assert sum(s.inserts for s in plan.slots) == 51_005


def test_a_key_that_changes_partition_leaves_its_old_file_and_is_inserted_in_its_new_one():
    plan = plan_upsert([_group("2", 3, "d=1/b.parquet", old="1", stays=False)], FILES, ["d"],
                       SIZING)
    slots = {(s.partition, s.file): (s.updates, s.inserts) for s in plan.slots}
    assert slots[("d=1", "d=1/b.parquet")] == (3, 0)       # its old rows are dropped there
    assert sum(i for (part, _), (_, i) in slots.items() if part == "d=2") == 3


def test_deletes_rewrite_their_file_and_insert_nothing():
    plan = plan_upsert([_group("1", 4, "d=1/b.parquet", stays=True, deleted=True),
                        _group("2", 9, None, deleted=True)], FILES, ["d"], SIZING)
    assert [(s.file, s.updates, s.inserts) for s in plan.slots] == [("d=1/b.parquet", 4, 0)]


def test_files_of_a_pending_plan_take_no_inserts():
    plan = plan_upsert([_group("1", 100)], FILES, ["d"], SIZING, excluded={"d=1/a.parquet"})
    assert [s.file for s in plan.slots] == [None]


def test_weights_are_the_bytes_each_task_writes():
    plan = plan_upsert([_group("1", 100, "d=1/a.parquet", stays=True), _group("2", 50)],
                       FILES, ["d"], SIZING)
    assert plan.weights == {0: ("d=1", 50 * KB + 100 * 10), 1: ("d=2", 50 * 10)}


def test_a_value_hive_reads_back_as_null_is_refused():
    with pytest.raises(ConfigError, match="column d holds the value ''"):
        plan_upsert([_group("", 1)], FILES, ["d"], SIZING)


def test_a_rerun_that_deletes_every_row_of_its_files_refills_them_as_a_fresh_build():
    """Issue 49: a microbatch rerun of a day deletes all of its files' rows (window groups)
    and inserts the day again. Counted at their old sizes, the full files took nothing and
    the small one little, so the day came back as 5 files, two small; counted empty, the
    same files are refilled and at most one is below the target."""
    day = {f"d=1/f{i}.parquet": 100 * KB for i in range(3)} | {"d=1/f3.parquet": 20 * KB}
    rows = {f"d=1/f{i}.parquet": 10_000 for i in range(3)} | {"d=1/f3.parquet": 2_000}
    window = [_group("1", n, rel, stays=True, deleted=True) for rel, n in rows.items()]
    plan = plan_upsert(window + [_group("1", 32_000)], day, ["d"], SIZING, file_rows=rows)
    assert sorted(s.inserts for s in plan.slots) == [2_000, 10_000, 10_000, 10_000]
    assert all(s.file for s in plan.slots)  # the day's four files, no new one
    before = plan_upsert(window + [_group("1", 32_000)], day, ["d"], SIZING)  # no row counts
    assert sorted(s.inserts for s in before.slots if s.inserts) == [4_000, 8_000, 10_000, 10_000]


def test_a_file_losing_rows_packs_as_the_smaller_file_it_becomes():
    rows = {"d=1/b.parquet": 9_500}
    deletes = _group("1", 5_000, "d=1/b.parquet", stays=True, deleted=True)
    plan = plan_upsert([deletes, _group("1", 4_000)], FILES, ["d"], SIZING, file_rows=rows)
    slots = {s.file: (s.updates, s.inserts) for s in plan.slots}
    assert slots["d=1/b.parquet"][1] > 0  # 95 KB -> 45 KB: small now, it takes inserts
    updates = _group("1", 5_000, "d=1/b.parquet", stays=True)  # in place: no size change
    plan = plan_upsert([updates, _group("1", 4_000)], FILES, ["d"], SIZING, file_rows=rows)
    assert {s.file: s.inserts for s in plan.slots}["d=1/b.parquet"] == 0
