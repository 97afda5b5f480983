import random
from datetime import date

from python_adapter.core.routing import assign_tasks, spark_hash_int, spark_hash_long


def _check(files, min_tasks):
    task_of, n = assign_tasks(files, min_tasks)
    assert len(task_of) == len(files)
    assert all(0 <= t < n for t in task_of)
    seen = set()
    for (part, _), task in zip(files, task_of):
        assert (part, task) not in seen, "two files of one partition in one task would merge"
        seen.add((part, task))
    return task_of, n


def test_many_small_partitions_share_a_few_tasks():
    files = [(f"d={i}", 100) for i in range(38)] + [("d=0", 100), ("d=1", 100)]
    task_of, n = _check(files, min_tasks=2)
    assert n == 2
    assert sorted(set(task_of)) == [0, 1]


def test_tasks_at_least_the_most_files_of_one_partition():
    files = [("d=a", 10)] * 5 + [("d=b", 10)] * 2
    task_of, n = _check(files, min_tasks=2)
    assert n == 5
    assert sorted(t for (p, _), t in zip(files, task_of) if p == "d=a") == [0, 1, 2, 3, 4]


def test_unpartitioned_is_one_task_per_file():
    files = [("", 1)] * 7
    task_of, n = _check(files, min_tasks=2)
    assert n == 7 and sorted(task_of) == list(range(7))


def test_never_more_tasks_than_files_and_load_is_spread():
    files = [(f"p={i}", w) for i, w in enumerate([50, 40, 30, 20, 10, 10])]
    task_of, n = _check(files, min_tasks=16)
    assert n == 6
    rng = random.Random(3)
    files = [(f"p={rng.randrange(50)}", rng.randrange(1, 100)) for _ in range(300)]
    task_of, n = _check(files, min_tasks=4)
    loads = [0] * n
    for (_, w), t in zip(files, task_of):
        loads[t] += w
    assert max(loads) - min(loads) <= max(w for _, w in files)


def test_nothing_to_write():
    assert assign_tasks([], 4) == ([], 0)


def test_exact_packs_small_partitions_and_keeps_big_writes_parallel():
    from python_adapter.spark.write.distribution import TASK_BYTES, exact_tasks
    from python_adapter.core.planning import PartitionPlan

    small = {(f"2025-01-{d:02d}",): PartitionPlan(rows=1000, files=1, rows_per_file=1000)
             for d in range(1, 29)}
    task_of, n = exact_tasks(small, bytes_per_row=100, parallelism=2)
    assert n == 2 and len(task_of) == 28
    # 10 files of ~TASK_BYTES each: one task per file, never fewer
    big = {("a",): PartitionPlan(rows=10 * 1_000_000, files=10, rows_per_file=1_000_000)}
    task_of, n = exact_tasks(big, bytes_per_row=TASK_BYTES / 1_000_000, parallelism=2)
    assert n == 10 and sorted(task_of) == list(range(10))
    # no size known (static file_count): one task per file
    task_of, n = exact_tasks(small, bytes_per_row=None, parallelism=2)
    assert n == 28 and task_of == list(range(28))


def test_spark_hash_int_matches_spark():
    # Spark 4.3: SELECT hash(v) for int literals v (computed once with F.hash(F.lit(v)))
    spark_says = {0: 933211791, 1: -559580957, -1: -1604776387, 42: 29417773,
                  2**31 - 1: 133916647, -2**31: 723455942, 123456789: -598405280}
    assert {v: spark_hash_int(v) for v in spark_says} == spark_says


def test_spark_hash_of_a_date_and_of_a_date_and_a_bigint_matches_spark():
    epoch = date(1970, 1, 1)
    # Spark 4.3: hash(DATE'...') hashes the days since the epoch as an int
    dates = {date(1970, 1, 1): 933211791, date(2025, 1, 1): 2071700725,
             date(2025, 12, 31): 1246504432}
    assert {d: spark_hash_int((d - epoch).days) for d in dates} == dates
    # Spark 4.3: hash(d, s) with d date, s bigint: each column seeds the next one's hash
    pairs = {(date(2025, 1, 1), 0): 1824449971, (date(2025, 1, 1), 1): -1352174210,
             (date(2025, 1, 1), 2): -1541306541, (date(2025, 1, 1), 3): 1581931839,
             (date(2025, 1, 1), 4): 602627686, (date(2025, 12, 31), 4): -534475096}
    got = {(d, s): spark_hash_long(s, seed=spark_hash_int((d - epoch).days)) for d, s in pairs}
    assert got == pairs
