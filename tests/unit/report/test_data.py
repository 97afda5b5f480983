"""The numbers of the report: the replayed timeline, size bins, range overlaps."""
from python_adapter.report.data import bin_counts, range_overlaps, replay_timeline, size_bins
from tests.unit.report.samples import SMALL, TARGET, commit, fe


def test_replay_counts_small_files_after_each_instant():
    small3 = [fe("d=1", f"s{i}.parquet", 100) for i in range(3)]
    inst = [commit("001", "full_refresh", small3),
            commit("002", "cluster", [fe("d=1", "c.parquet", 300)], small3,
                   action="replacecommit")]
    points = replay_timeline(inst, SMALL)
    assert [p.files for p in points] == [3, 1]
    assert [p.small for p in points] == [3, 1]           # 300 B is still below 800 B
    assert [p.operation for p in points] == ["full_refresh", "cluster"]
    assert points[-1].bytes == 300

    big = [commit("001", "full_refresh", small3),
           commit("002", "cluster", [fe("d=1", "c.parquet", 900)], small3,
                  action="replacecommit")]
    assert [p.small for p in replay_timeline(big, SMALL)] == [3, 0]


def test_replay_skips_unfinished_instants_and_restarts_at_full_builds():
    a, b, c = fe("d=1", "a", 100), fe("d=1", "b", 900), fe("d=2", "c", 50)
    inst = [commit("001", "full_refresh", [a, b]),
            commit("002", "insert", [c], state="inflight"),           # crashed: not applied
            commit("003", "cluster", [], [a], action="replacecommit", state="requested",
                   scheduled="true"),                                   # a plan: not applied
            commit("004", "insert_overwrite", [c], [a]),
            commit("005", "rollback", [a], [c], action="rollback", rolled_back="004"),
            commit("006", "full_refresh", [b])]                         # starts over
    points = replay_timeline(list(reversed(inst)), SMALL)              # order does not matter
    assert [p.instant for p in points] == ["001", "004", "005", "006"]
    assert [p.files for p in points] == [2, 2, 2, 1]
    assert [p.small for p in points] == [1, 1, 1, 0]


def test_histogram_bins_hold_every_file_once_and_split_at_the_limits():
    bins = size_bins(TARGET, SMALL, 5000)
    edges = [b.lo for b in bins]
    assert SMALL in edges and 1.25 * TARGET in edges
    assert bins[-1].hi is None and bins[-1].kind == "big"                # overflow bin
    assert all(b.kind == "small" for b in bins if b.hi is not None and b.hi <= SMALL)
    sizes = [0, 1, 799, 800, 999, 1000, 1249, 1250, 1499, 1500, 5000]
    counts = bin_counts(sizes, bins)
    assert sum(counts) == len(sizes)
    small_bins = sum(c for b, c in zip(bins, counts) if b.kind == "small")
    assert small_bins == 3                                              # 0, 1, 799
    # no target: bins span the largest file, which lands in the last bin
    plain = size_bins(None, None, 777)
    assert plain[-1].hi == 777 and bin_counts([777, 0], plain) == [1] + [0] * 18 + [1]


def test_range_overlaps():
    assert range_overlaps([(0, 9), (10, 19), (20, 29)]) == [0, 0, 0]
    assert range_overlaps([(0, 99), (0, 99), (50, 60)]) == [2, 2, 2]
    assert range_overlaps([(0, 10), (10, 20), None, (None, 5)]) == [1, 1, None, None]
    assert range_overlaps([("a", "c"), ("b", "d")]) == [1, 1]
    assert range_overlaps([(1, 2), ("a", "b")]) == [None, None]     # no order across types
