import math
import random

from python_adapter.core.layout import Layout, LayoutFile, layout_problems, layout_rows, size_stats
from python_adapter.core.planning import (apportion_files, file_id_ranges, files_for_rows,
                                     ideal_file_count, plan_partitions, plan_static)
from python_adapter.core.routing import routing_keys, spark_hash_long


def test_file_count_formula_of_algorithm_1():
    assert files_for_rows(0, 100, 1000) == 0
    assert files_for_rows(1, 100, 1000) == 1
    assert files_for_rows(10, 100, 1000) == 1
    assert files_for_rows(11, 100, 1000) == 2
    assert files_for_rows(1_000_000, 128, 128_000_000) == 1


def test_plan_fills_files_to_target_last_takes_remainder():
    plans = plan_partitions({("a",): 2500, ("b",): 999, ("c",): 0}, 100, 100_000)
    assert set(plans) == {("a",), ("b",)}          # empty partitions get no file
    assert plans[("a",)].rows_per_file == 1000
    assert plans[("a",)].files == 3               # 1000 + 1000 + 500
    assert plans[("b",)].files == 1
    assert plan_partitions({(): 2500}, 100, 100_000, insert_split_size=600)[()].files == 5


def test_static_file_count_is_apportioned_by_rows():
    counts = apportion_files({"big": 900, "small": 100, "tiny": 1}, 10)
    assert sum(counts.values()) == 10
    assert counts["big"] > counts["small"] >= 1 and counts["tiny"] == 1
    # fewer files than partitions: every partition still gets one
    assert apportion_files({"a": 1, "b": 1, "c": 1}, 2) == {"a": 1, "b": 1, "c": 1}
    plans = plan_static({"x": 10, "y": 30}, 4)
    assert sum(p.files for p in plans.values()) == 4


def test_file_id_ranges_are_consecutive_and_deterministic():
    plans = plan_partitions({("b",): 30, ("a",): 10, (None,): 5}, 1, 10)
    ranges = file_id_ranges(plans)
    assert [key for key, _, _ in ranges] == [("a",), ("b",), (None,)]
    ids = [i for _, first, plan in ranges for i in range(first, first + plan.files)]
    assert ids == list(range(sum(p.files for p in plans.values())))


def test_ideal_file_count():
    assert ideal_file_count({"a": 250, "b": 100, "c": 0}, 100) == 4


def test_routing_keys_land_each_file_on_its_own_partition():
    for n in (1, 7, 365 * 5, 4000):
        keys = routing_keys(n)
        assert len(set(keys)) == n
        assert [spark_hash_long(k) % n for k in keys] == list(range(n))


def test_spark_hash_known_values():
    # Spark: SELECT hash(0L), hash(1L), hash(-1L) (checked against Spark in tests/functional)
    values = [spark_hash_long(v) for v in (0, 1, -1)]
    assert all(-2**31 <= v < 2**31 for v in values) and len(set(values)) == 3


def test_size_stats_and_layout_problems():
    st = size_stats([10, 20, 30])
    assert (st["min"], st["median"], st["max"]) == (10, 20, 30)
    assert math.isclose(st["cv"], (200 / 3) ** 0.5 / 20)
    layout = Layout(files=(
        LayoutFile("d=1", "d=1/a", 100, 10), LayoutFile("d=1", "d=1/b", 20, 2),
        LayoutFile("d=2", "d=2/c", 10, 1), LayoutFile("d=2", "d=2/e", 5, 1),
        LayoutFile("d=3", "d=3/f", 130, 13)), target_file_size=100, small_file_limit=50)
    rows = layout_rows(layout)
    assert [r[0] for r in rows] == ["d=1", "d=2", "d=3"]
    assert rows[0][1:4] == [2, 12, 120] and rows[1][7] == 2
    problems = layout_problems(layout, max_small_files_per_partition=1, max_file_size_ratio=1.25)
    assert [p[0] for p in problems] == ["d=2", "d=3"]
    assert layout_problems(layout, max_small_files_per_partition=2, max_file_size_ratio=1.5) == []


def test_random_plans_never_exceed_target_by_design():
    rng = random.Random(5)
    for _ in range(200):
        rows = {(i,): rng.randint(0, 10_000) for i in range(rng.randint(1, 30))}
        bpr, target = rng.uniform(10, 500), rng.randint(1_000, 1_000_000)
        plans = plan_partitions(rows, bpr, target)
        for key, plan in plans.items():
            assert plan.rows_per_file * bpr <= target or plan.rows_per_file == 1
            assert (plan.files - 1) * plan.rows_per_file < plan.rows <= plan.files * plan.rows_per_file


def test_a_small_batch_is_at_most_16MB_and_a_quarter_of_the_target():
    from python_adapter.core.planning import SMALL_BATCH_BYTES, is_small_batch

    assert is_small_batch(SMALL_BATCH_BYTES, 128 * 10**6)
    assert not is_small_batch(SMALL_BATCH_BYTES + 1, 128 * 10**6)
    assert is_small_batch(8_000, 32_000) and not is_small_batch(8_001, 32_000)


def test_which_writes_may_go_as_small_batches():
    from python_adapter.core.config import parse_config
    from python_adapter.core.planning import writes_small_batches

    def may(operation, **config):
        return writes_small_batches(parse_config(config), operation)

    assert may("full_refresh") and may("insert_overwrite") and may("insert")
    assert may("full_refresh", distribution="range")
    for setting in ({"distribution": "hash"}, {"distribution": "none"}, {"file_count": 4}):
        assert not may("full_refresh", **setting) and not may("insert_overwrite", **setting)
        assert may("insert", **setting)   # an insert's files do not follow these
    assert not may("insert", insert_split_size=100)
    assert not may("insert_overwrite", insert_split_size=100)
    assert may("upsert", unique_key="id") and not may("microbatch")
    assert not may("upsert", unique_key="id", insert_split_size=100)


def test_a_raw_size_bound_within_the_target_in_every_partition_spares_the_sample():
    from python_adapter.core.planning import FILE_OVERHEAD, RAW_OVERHEAD, bounded_bytes_per_row

    rows = {("2025-01-01",): 50_000, ("2025-01-02",): 10_000}
    raw = {("2025-01-01",): 50_000 * 100, ("2025-01-02",): 10_000 * 300}
    per_row = bounded_bytes_per_row(rows, raw, 6, 128_000_000)
    assert per_row == (5_000_000 + 3_000_000) * RAW_OVERHEAD / 60_000
    # the largest partition over the target at the average bound: sampled as before
    target = math.ceil(50_000 * per_row + FILE_OVERHEAD + 6 * 1024)
    assert bounded_bytes_per_row(rows, raw, 6, target) is not None
    assert bounded_bytes_per_row(rows, raw, 6, target - 1) is None
    # a partition's own bound over the target, though its rows at the average are not
    skewed = {("a",): 1_000, ("b",): 100_000}
    assert bounded_bytes_per_row(skewed, {("a",): 10**7, ("b",): 10**5}, 2, 5_000_000) is None
    assert bounded_bytes_per_row(skewed, {("a",): 10**6, ("b",): 10**5}, 2, 5_000_000)
    assert bounded_bytes_per_row({}, {}, 2, 10**9) is None


def test_a_file_a_partition_needs_an_estimate_within_the_target_and_the_exact_layout():
    from python_adapter.core.config import parse_config
    from python_adapter.core.planning import writes_a_file_a_partition
    cfg = parse_config({"target_file_size": "128MB"})
    mb = 1000 * 1000  # MB as the config reads it
    assert writes_a_file_a_partition(cfg, "full_refresh", 100 * mb, True)
    assert writes_a_file_a_partition(cfg, "insert_overwrite", 128 * mb, True)
    assert not writes_a_file_a_partition(cfg, "full_refresh", 129 * mb, True)
    assert not writes_a_file_a_partition(cfg, "full_refresh", 100 * mb, False)  # one file: planned
    assert not writes_a_file_a_partition(cfg, "upsert", 100 * mb, True)
    for other in ({"distribution": "range"}, {"file_count": 4}, {"insert_split_size": 1000}):
        assert not writes_a_file_a_partition(parse_config({"target_file_size": "128MB", **other}),
                                             "full_refresh", 100 * mb, True)
