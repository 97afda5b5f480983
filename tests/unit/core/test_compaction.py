"""Compaction plans: small files bin-packed per partition, oversized files split, groups
that would not reduce the files left out, bounds, and the partitions a run is limited to."""
import datetime

import pytest

from python_adapter.core.compaction import (file_runs, pack_groups, pack_outputs, partition_filter,
                                            plan_compaction)
from python_adapter.core.config import compact_options
from python_adapter.errors import ConfigError

KB = 1000
OPTS = compact_options(target_file_size=64 * KB, small_file_limit=50 * KB)


def _files(prefix, *sizes):
    return [(f"{prefix}/f{i}.parquet", s * KB) for i, s in enumerate(sizes)]


def test_small_files_of_a_partition_become_target_sized_files():
    plan = plan_compaction({"day=1": _files("day=1", *[10] * 10)}, OPTS)
    assert len(plan) == 1
    assert plan[0].partition == "day=1" and len(plan[0].files) == 10
    assert plan[0].output_files == 2  # 100 KB at 64 KB a file


def test_a_file_above_1_8_x_target_is_split_and_large_files_stay():
    parts = {"day=1": _files("day=1", 150, 60, 64), "day=2": _files("day=2", 115)}
    plan = plan_compaction(parts, OPTS)
    assert [(g.files, g.output_files) for g in plan] == [((("day=1/f0.parquet", 150 * KB),), 3)]


def test_groups_that_would_not_reduce_the_files_are_left_out():
    parts = {"day=1": _files("day=1", 30, 70),      # one small file alone
             "day=2": _files("day=2", 40, 40),      # 80 KB is two files either way
             "day=3": _files("day=3", 40, 20)}      # 60 KB: one file
    plan = plan_compaction(parts, OPTS)
    assert [(g.partition, len(g.files), g.output_files) for g in plan] == [("day=3", 2, 1)]


def test_groups_are_bounded_by_16_targets_and_a_run_by_max_groups_and_max_bytes():
    many = {"day=1": _files("day=1", *[40] * 60)}   # 2.4 MB of small files
    plan = plan_compaction(many, OPTS)
    assert all(g.bytes <= 16 * 64 * KB for g in plan) and len(plan) == 3
    assert sum(len(g.files) for g in plan) == 60
    parts = {f"day={d}": _files(f"day={d}", 10, 10) for d in range(5)}
    assert len(plan_compaction(parts, compact_options(64 * KB, 50 * KB, max_groups=2))) == 2
    assert len(plan_compaction(parts, compact_options(64 * KB, 50 * KB, max_bytes="45KB"))) == 2
    excluded = {"day=0/f0.parquet"}
    assert "day=0" not in {g.partition for g in plan_compaction(parts, OPTS, excluded)}


def test_the_limit_defaults_to_the_tables_small_file_limit():
    assert compact_options(64 * KB, write_small_file_limit=20 * KB).small_file_limit == 20 * KB
    assert compact_options("128MB").small_file_limit == 100 * 1000**2


@pytest.mark.parametrize("key,value", [("max_bytes", "0"), ("small_file_limit", "lots"),
                                       ("max_groups", -1), ("target_file_size", "0KB")])
def test_bad_options_name_the_key_and_the_value(key, value):
    with pytest.raises(ConfigError, match=f"{key}.*{value}"):
        compact_options(**{key: value})


def test_partitions_select_by_value_or_by_column():
    one = partition_filter(["day"], [datetime.date(2025, 2, 1), "2025-02-03"])
    assert one("day=2025-02-01") and one("day=2025-02-03") and not one("day=2025-02-02")
    two = partition_filter(["day", "region"], [{"region": "eu"}, {"DAY": 5, "region": "us"}])
    assert two("day=1/region=eu") and two("day=5/region=us") and not two("day=1/region=us")
    assert partition_filter(["day"], None)("day=anything")
    assert partition_filter(["day"], "2025-02-01")("day=2025-02-01")


@pytest.mark.parametrize("pcols,wanted,message", [
    (["day"], [{"nope": 1}], "partitions: .*nope.*not a partition column"),
    (["day", "region"], ["2025-02-01"], "partitions: '2025-02-01' is one value"),
    ([], ["2025-02-01"], "partitions: .*not partitioned")])
def test_partitions_that_cannot_match_are_refused(pcols, wanted, message):
    with pytest.raises(ConfigError, match=message):
        partition_filter(pcols, wanted)


def test_a_file_both_oversized_and_below_the_limit_is_split_once():
    opts = compact_options(target_file_size=64 * KB, small_file_limit=300 * KB)
    plan = plan_compaction({"day=1": _files("day=1", 200, 20)}, opts)
    assert sorted((len(g.files), g.output_files) for g in plan) == [(1, 4)]


def test_partial_progress_commits_every_few_groups():
    assert compact_options(64 * KB).partial_progress_groups is None   # one commit per plan
    assert compact_options(64 * KB, partial_progress=True).partial_progress_groups == 10
    assert compact_options(64 * KB, partial_progress="true",
                           partial_progress_groups="3").partial_progress_groups == 3
    assert compact_options(64 * KB, partial_progress=False).partial_progress_groups is None


@pytest.mark.parametrize("given,message", [
    ({"partial_progress": "yes"}, "partial_progress: expected true or false, got 'yes'"),
    ({"partial_progress": True, "partial_progress_groups": 0},
     "partial_progress_groups: must be > 0, got 0"),
    ({"partial_progress_groups": 5},
     "partial_progress_groups: 5 given, but partial_progress is not true")])
def test_bad_partial_progress_names_the_key_and_the_value(given, message):
    with pytest.raises(ConfigError, match=message):
        compact_options(64 * KB, **given)


@pytest.mark.parametrize("parallelism", [1, 4, 50])
def test_output_files_are_packed_into_tasks_never_two_of_a_partition_in_one(parallelism):
    groups = [(f"g{i}", f"day={i % 7}", 1 + i % 3) for i in range(40)]  # 7 days
    total = sum(n for _g, _p, n in groups)
    tasks, first = pack_outputs(groups, parallelism)
    per_day = {}
    for gid, part, n in groups:
        per_day[part] = per_day.get(part, 0) + n
    assert tasks == max(max(per_day.values()), min(total, parallelism))
    held = {}
    for gid, part, n in groups:
        for k in range(n):
            task = (first[gid] + k) % tasks
            assert (task, part) not in held, (gid, k, held.get((task, part)))
            held[(task, part)] = gid
    assert len(held) == total and {t for t, _ in held} == set(range(tasks))
    assert pack_outputs([], parallelism) == (1, {})


@pytest.mark.parametrize("parallelism", [1, 4, 50])
def test_groups_are_packed_whole_into_tasks_never_two_of_a_partition_in_one(parallelism):
    # 7 days, a day holding up to 6 groups, of unequal bytes
    groups = [(f"g{i}", f"day={i % 7}", 1000 + 300 * (i % 5)) for i in range(40)]
    tasks = pack_groups(groups, parallelism)
    assert len(tasks) == max(6, min(40, parallelism))
    assert sorted(g for ids in tasks for g in ids) == sorted(g for g, _p, _b in groups)
    part = {g: p for g, p, _b in groups}
    for ids in tasks:
        assert len({part[g] for g in ids}) == len(ids), ids   # a partition once a task
    size = {g: b for g, _p, b in groups}
    loads = [sum(size[g] for g in ids) for ids in tasks]
    # largest first onto the lightest task: no task is more than a group above another
    assert max(loads) - min(loads) <= max(size.values()), loads
    assert pack_groups([], parallelism) == [[]]
    assert pack_groups([("a", "day=1", 5)], parallelism) == [["a"]]


@pytest.mark.parametrize("sizes,outputs,counts", [
    ([700] * 12, 2, [6, 6]),                              # equal files: equal halves
    ([900, 100, 100, 400, 1000, 500], 2, [4, 2]),         # the boundary nearest half
    ([300] * 10 + [100], 3, [3, 4, 4]),
    ([5, 5], 1, [2])])
def test_a_groups_files_cut_into_runs_of_about_equal_bytes(sizes, outputs, counts):
    assert file_runs(sizes, outputs) == counts


@pytest.mark.parametrize("sizes,outputs", [
    ([1800], 2),                   # one file split in two: rows must be cut, not files
    ([100, 100, 1000], 2),         # one file is more than its share
    ([900, 100, 100, 900, 500, 500], 2),   # the nearest cut leaves 1,100 and 1,900
    ([700, 700], 3)])              # fewer files than outputs
def test_groups_whole_files_cannot_split_evenly_have_no_runs(sizes, outputs):
    assert file_runs(sizes, outputs) is None
