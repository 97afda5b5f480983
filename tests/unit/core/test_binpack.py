"""Hudi copy-on-write insert bin-packing (docs/design.md, Algorithms 3). Pure, no Spark."""
import random

import pytest

from python_adapter.core.binpack import (
    FileRewrite,
    PartitionWritePlan,
    plan_inserts,
    Sizing,
    plan_partition_write,
    summarize,
)

MB = 1000 * 1000  # decimal MB so the Hudi article's numbers are exact with 1000-byte rows
ROW = 1000
HUDI_FILES = [("f1", 40 * MB), ("f2", 80 * MB), ("f3", 90 * MB), ("f4", 130 * MB), ("f5", 105 * MB)]


def _total(plan):
    return sum(n for _, n in plan)


def test_hudi_article_example():
    # 150k rows top up f1..f3 to 120MB, 300k remain -> 120k, 120k, 60k in new files.
    plan = plan_inserts(HUDI_FILES, 450_000, ROW, 120 * MB, 100 * MB, insert_split_size=120_000)
    assert plan == [
        ("f1", 80_000),   # 80MB worth
        ("f2", 40_000),   # 40MB worth
        ("f3", 30_000),   # 30MB worth
        (None, 120_000),
        (None, 120_000),
        (None, 60_000),
    ]


def test_small_files_taken_in_ascending_size_then_file_id_order():
    files = [("b", 50 * MB), ("z", 10 * MB), ("a", 50 * MB)]
    plan = plan_inserts(files, 10, ROW, 120 * MB, 100 * MB)
    assert plan == [("z", 10)]
    plan = plan_inserts(files, 110_000 + 70_000 + 5, ROW, 120 * MB, 100 * MB)
    assert [f for f, _ in plan] == ["z", "a", "b"]
    assert plan[-1] == ("b", 5)


def test_small_file_limit_zero_turns_packing_off():
    plan = plan_inserts(HUDI_FILES, 450_000, ROW, 120 * MB, 0, insert_split_size=120_000)
    assert all(f is None for f, _ in plan)
    assert [n for _, n in plan] == [120_000, 120_000, 120_000, 90_000]


def test_all_inserts_fit_in_small_files_no_new_file():
    plan = plan_inserts(HUDI_FILES, 100_000, ROW, 120 * MB, 100 * MB)
    assert plan == [("f1", 80_000), ("f2", 20_000)]


def test_no_small_files_only_new_files():
    files = [("big1", 110 * MB), ("big2", 130 * MB)]
    plan = plan_inserts(files, 250_000, ROW, 120 * MB, 100 * MB)
    # default split = target / bytes_per_row = 120k rows
    assert plan == [(None, 120_000), (None, 120_000), (None, 10_000)]


def test_insert_split_size_override():
    plan = plan_inserts([], 100, ROW, 120 * MB, 100 * MB, insert_split_size=30)
    assert plan == [(None, 30), (None, 30), (None, 30), (None, 10)]


def test_default_split_size_is_at_least_one_row():
    # a row larger than the target still goes somewhere: one row per new file
    plan = plan_inserts([], 3, 500, 100, 0)
    assert plan == [(None, 1), (None, 1), (None, 1)]


def test_last_new_file_takes_remainder():
    plan = plan_inserts([], 1_000_001, ROW, 120 * MB, 100 * MB)
    assert [n for _, n in plan[:-1]] == [120_000] * 8
    assert plan[-1] == (None, 40_001)
    exact = plan_inserts([], 240_000, ROW, 120 * MB, 100 * MB)
    assert exact == [(None, 120_000), (None, 120_000)]  # no empty trailing file


def test_zero_inserts_returns_empty_plan():
    assert plan_inserts(HUDI_FILES, 0, ROW, 120 * MB, 100 * MB) == []
    assert plan_inserts([], 0, ROW, 120 * MB, 100 * MB) == []


def test_files_at_or_above_target_or_limit_are_untouched():
    plan = plan_inserts(HUDI_FILES, 10_000_000, ROW, 120 * MB, 100 * MB)
    touched = {f for f, _ in plan if f is not None}
    assert touched == {"f1", "f2", "f3"}  # f4 (130MB) and f5 (105MB) are never rewritten
    # exactly at the limit is not small
    assert plan_inserts([("edge", 100 * MB)], 5, ROW, 120 * MB, 100 * MB) == [(None, 5)]


def test_small_file_without_a_whole_row_of_room_is_skipped():
    # limit == target: a file 500 bytes short of the target has no room for a 1000-byte row
    files = [("full", 120 * MB - 500), ("roomy", 120 * MB - 2500)]
    plan = plan_inserts(files, 5, ROW, 120 * MB, 120 * MB)
    assert plan == [("roomy", 2), (None, 3)]


def test_float_bytes_per_row_estimate():
    plan = plan_inserts([("a", 0)], 10, 2.5, 10, 10)
    assert plan == [("a", 4), (None, 4), (None, 2)]


def test_total_assigned_equals_num_inserts():
    for n in (1, 7, 149_999, 150_000, 150_001, 450_000, 1_234_567):
        assert _total(plan_inserts(HUDI_FILES, n, ROW, 120 * MB, 100 * MB)) == n


def test_randomized_properties():
    rng = random.Random(20261122)
    for _ in range(2000):
        bytes_per_row = rng.choice([1, 7, 100, 1000, rng.randint(1, 5000), rng.uniform(0.5, 3000)])
        target = rng.randint(1, 200_000)
        limit = rng.choice([0, target, rng.randint(0, target)])
        files = [(f"f{i}", rng.choice([0, rng.randint(0, 2 * target), target, target - 1]))
                 for i in range(rng.randint(0, 8))]
        n = rng.choice([0, 1, rng.randint(0, 50), rng.randint(0, 2000)])
        split = rng.choice([None, rng.randint(1, 300)])
        sizes = dict(files)

        plan = plan_inserts(files, n, bytes_per_row, target, limit, insert_split_size=split)

        assert _total(plan) == n
        assert all(count > 0 for _, count in plan)
        existing = [(f, c) for f, c in plan if f is not None]
        assert len({f for f, _ in existing}) == len(existing)  # each file at most once
        for f, c in existing:
            assert sizes[f] < limit  # only small files receive inserts
            assert sizes[f] + c * bytes_per_row <= target + bytes_per_row
        expected_split = split if split is not None else max(1, int(target // bytes_per_row))
        new = [c for f, c in plan if f is None]
        assert all(c <= expected_split for c in new)
        assert sum(1 for c in new if c < expected_split) <= 1
        assert new == sorted(new, reverse=True)  # only the last one is short
        if new:  # new files only once every small file is full
            for f, size in files:
                if size < limit:
                    room = int((target - size) // bytes_per_row)
                    got = dict(existing).get(f, 0)
                    assert got == max(0, room)


@pytest.mark.parametrize("kwargs, name", [
    (dict(num_inserts=-1), "num_inserts"),
    (dict(bytes_per_row=0), "bytes_per_row"),
    (dict(bytes_per_row=-5), "bytes_per_row"),
    (dict(target_file_size=0), "target_file_size"),
    (dict(target_file_size=-1, small_file_limit=-2), "target_file_size"),
    (dict(small_file_limit=-1), "small_file_limit"),
    (dict(small_file_limit=121 * MB), "small_file_limit"),
    (dict(insert_split_size=0), "insert_split_size"),
    (dict(files=[("a", -1)]), "files"),
    (dict(files=[("a", 1), ("a", 2)]), "files"),
])
def test_validation_errors_name_the_argument(kwargs, name):
    args = dict(files=HUDI_FILES, num_inserts=10, bytes_per_row=ROW,
                target_file_size=120 * MB, small_file_limit=100 * MB)
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        plan_inserts(**args)


def test_partition_write_merges_updates_and_inserts_and_skips_idle_files():
    plan = plan_partition_write(
        HUDI_FILES, {"f2": 7, "f4": 3}, 150_010, Sizing(ROW, 120 * MB, 100 * MB))
    assert plan == PartitionWritePlan(
        rewrites=[
            FileRewrite("f1", 0, 80_000),
            FileRewrite("f2", 7, 40_000),   # updated and small: one rewrite with both
            FileRewrite("f3", 0, 30_000),
            FileRewrite("f4", 3, 0),        # big file with updates is rewritten anyway
        ],
        new_files=[10],
    )
    assert "f5" not in {r.file_id for r in plan.rewrites}  # nothing to do: never rewritten


def test_partition_write_excluded_files_get_no_inserts():
    # f1 is in a pending clustering plan: packing skips it, updates to it still land
    plan = plan_partition_write(
        HUDI_FILES, {"f1": 2}, 100_000, Sizing(ROW, 120 * MB, 100 * MB), excluded={"f1", "f3"})
    assert plan.rewrites == [FileRewrite("f1", 2, 0), FileRewrite("f2", 0, 40_000)]
    assert plan.new_files == [60_000]
    # an excluded file with nothing to do is not in the plan at all
    plan = plan_partition_write(HUDI_FILES, {}, 5, Sizing(ROW, 120 * MB, 100 * MB), excluded=["f1"])
    assert plan.rewrites == [FileRewrite("f2", 0, 5)]


def test_partition_write_only_updates_no_inserts():
    plan = plan_partition_write(HUDI_FILES, {"f5": 1, "f1": 0}, 0, Sizing(ROW, 120 * MB, 100 * MB))
    assert plan.rewrites == [FileRewrite("f5", 1, 0)]
    assert plan.new_files == []


def test_partition_write_validates_updates():
    with pytest.raises(ValueError, match="updates_by_file"):
        plan_partition_write(HUDI_FILES, {"nope": 1}, 0, Sizing(ROW, 120 * MB, 100 * MB))
    with pytest.raises(ValueError, match="updates_by_file"):
        plan_partition_write(HUDI_FILES, {"f1": -1}, 0, Sizing(ROW, 120 * MB, 100 * MB))
    with pytest.raises(ValueError, match="files"):
        plan_partition_write([("a", 1), ("a", 2)], {}, 0, Sizing(ROW, 120 * MB, 100 * MB))


def test_partition_write_uses_plan_inserts_result():
    files = [("x", 3 * MB), ("y", 119 * MB), ("z", 50 * MB)]
    for n in (0, 1, 1_000, 187_000, 500_000):
        plan = plan_partition_write(files, {}, n, Sizing(ROW, 120 * MB, 100 * MB))
        assigned = plan_inserts(files, n, ROW, 120 * MB, 100 * MB)
        assert [(r.file_id, r.inserts) for r in plan.rewrites] == \
            sorted([(f, c) for f, c in assigned if f], key=lambda t: [f for f, _ in files].index(t[0]))
        assert plan.new_files == [c for f, c in assigned if f is None]
        assert plan.inserts_into_existing + plan.inserts_into_new == n


def test_summarize_counts():
    a = plan_partition_write(HUDI_FILES, {"f2": 7, "f4": 3}, 150_010, Sizing(ROW, 120 * MB, 100 * MB))
    b = plan_partition_write([], {}, 250_000, Sizing(ROW, 120 * MB, 100 * MB))
    expected = {"files_rewritten": 4, "new_files": 4, "updates": 10,
                "inserts_into_existing": 150_000, "inserts_into_new": 250_010}
    assert summarize([a, b]) == expected
    assert summarize({"p=1": a, "p=2": b}) == expected
    assert summarize([]) == {"files_rewritten": 0, "new_files": 0, "updates": 0,
                             "inserts_into_existing": 0, "inserts_into_new": 0}


def test_small_files_are_topped_up_emptiest_first_ties_by_name():
    from python_adapter.core.binpack import small_files

    files = [("b", 50), ("a", 50), ("c", 10), ("big", 200), ("d", 99)]
    assert small_files(files, 100) == [(10, "c"), (50, "a"), (50, "b"), (99, "d")]
    assert small_files(files, 0) == []   # packing off
    plan = plan_inserts(files, 5, bytes_per_row=1.0, target_file_size=200, small_file_limit=100)
    assert plan == [("c", 5)]            # the insert path's small batches top up the same file
