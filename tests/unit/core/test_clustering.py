import bisect
import collections
import itertools
import random
from collections import Counter

import pytest

from python_adapter.core.config import cluster_options
from python_adapter.core.clustering import (Split, cell_of, cell_table, grid_cells,
                                            plan_groups)
from python_adapter.core.curves import (MAX_TABLE_ENTRIES, KEY_BITS, hilbert_index,
                                        hilbert_index_by_tables, hilbert_table,
                                        hilbert_table_levels, key_bits, quantile_boundaries,
                                        rank_of, search_levels, spread_table, z_value)


def test_groups_take_small_files_largest_first_within_bytes_bound():
    opts = cluster_options(["a"], target_file_size=100, cluster_small_file_limit=90,
                           cluster_max_bytes_per_group=200)
    files = {"d=1": [("f1", 10), ("f2", 80), ("f3", 95), ("f4", 60), ("f5", 70)],
             "d=2": [("g1", 20)]}
    groups = plan_groups(files, opts)
    assert [(g.partition, [f for f, _ in g.files]) for g in groups] == [
        ("d=1", ["f2", "f5"]), ("d=1", ["f4", "f1"]), ("d=2", ["g1"])]
    assert [g.output_files for g in groups] == [2, 1, 1]
    assert all(g.bytes <= 200 for g in groups)


def test_group_cap_and_exclusions():
    opts = cluster_options(["a"], target_file_size=100, cluster_small_file_limit=90,
                           cluster_max_bytes_per_group=100, cluster_max_groups=2)
    files = {"p": [(f"f{i}", 50) for i in range(10)]}
    groups = plan_groups(files, opts, excluded={"f0", "f1"})
    assert len(groups) == 2
    assert not {"f0", "f1"} & {f for g in groups for f, _ in g.files}


def test_defaults_scale_with_target_and_errors_name_keys():
    opts = cluster_options("a", target_file_size="128MB")
    assert opts.small_file_limit == 300_000_000 and opts.max_groups == 30
    assert opts.max_bytes_per_group == 16 * 128_000_000
    assert cluster_options("a", target_file_size="1GB").max_bytes_per_group == 16 * 1000**3


def test_a_table_below_2GB_at_a_small_target_is_sorted_as_one_group():
    """Issue 49: 14 MB at a 512 KB target was cut into two groups of 16 x target, each sorted
    alone, so a point query on the sort column read twice the rows one sorted run gives."""
    opts = cluster_options("a", target_file_size="512KB", cluster_small_file_limit="1GB")
    assert opts.max_bytes_per_group == 2 * 1000**3
    files = {"d=1": [(f"f{i}.parquet", 450 * 1000) for i in range(31)]}  # ~14 MB
    groups = plan_groups(files, opts)
    assert len(groups) == 1 and len(groups[0].files) == 31
    assert groups[0].output_files == 28  # ceil(13,950,000 / 512,000)
    with pytest.raises(ValueError, match="cluster_strategy.*peano"):
        cluster_options(["a"], strategy="peano")
    with pytest.raises(ValueError, match="cluster_by"):
        cluster_options([])
    with pytest.raises(ValueError, match="cluster_max_bytes_per_group"):
        cluster_options(["a"], target_file_size="10MB", cluster_max_bytes_per_group="1MB")


@pytest.mark.parametrize("curve", [z_value, hilbert_index])
@pytest.mark.parametrize("dims,bits", [(2, 3), (3, 2), (2, 5)])
def test_curves_are_bijections_of_the_grid(curve, dims, bits):
    points = list(itertools.product(range(2 ** bits), repeat=dims))
    values = sorted(curve(p, bits) for p in points)
    assert values == list(range(2 ** (bits * dims)))


@pytest.mark.parametrize("dims,bits", [(2, 4), (3, 3), (4, 2), (5, 2)])
def test_hilbert_steps_are_grid_neighbours(dims, bits):
    order = sorted(itertools.product(range(2 ** bits), repeat=dims),
                   key=lambda p: hilbert_index(p, bits))
    for a, b in zip(order, order[1:]):
        assert sum(abs(x - y) for x, y in zip(a, b)) == 1, (a, b)


def test_z_order_steps_are_not_all_grid_neighbours():
    zorder = sorted(itertools.product(range(16), repeat=2), key=lambda p: z_value(p, 4))
    assert max(sum(abs(x - y) for x, y in zip(a, b)) for a, b in zip(zorder, zorder[1:])) > 1


@pytest.mark.parametrize("dims,bits", [(2, 5), (3, 3), (4, 2), (5, 2), (6, 1)])
def test_the_hilbert_state_machine_walks_the_reference_curve(dims, bits):
    """Spark computes Hilbert keys by the tables' walk: it must give hilbert_index on every
    point of a small grid, and on random points at the bits a key has (10, 9 past 6 dims)."""
    for p in itertools.product(range(2 ** bits), repeat=dims):
        assert hilbert_index_by_tables(p, bits) == hilbert_index(p, bits), p
    rng = random.Random(dims)
    full = key_bits(dims, 10)
    for _ in range(500):
        p = [rng.randrange(2 ** full) for _ in range(dims)]
        assert hilbert_index_by_tables(p, full) == hilbert_index(p, full), p


@pytest.mark.parametrize("dims", range(2, 8))
def test_hilbert_tables_stay_small_and_cover_every_level(dims):
    levels = hilbert_table_levels(dims, 10)
    if dims <= 6:
        assert sum(levels) == 10
        assert all(len(hilbert_table(dims, n)) <= MAX_TABLE_ENTRIES for n in set(levels))
    else:
        assert levels == []     # the Spark side walks these levels with arithmetic


def test_spread_table_entries_or_together_into_the_morton_code():
    rng = random.Random(5)
    for dims in (1, 2, 3, 6):
        table = spread_table(dims, 10)
        for _ in range(200):
            p = [rng.randrange(1024) for _ in range(dims)]
            ored = 0
            for i, c in enumerate(p):
                ored |= table[c] << (dims - 1 - i)
            assert ored == z_value(p, 10)


def test_curve_values_fit_a_bigint():
    for dims in range(1, KEY_BITS + 1):
        bits = key_bits(dims, 10)
        assert bits == min(10, KEY_BITS // dims) and dims * bits <= 63
        assert z_value([2 ** bits - 1] * dims, bits) < 2 ** 63
    with pytest.raises(ValueError, match="1 to 63 coordinates"):
        key_bits(64, 10)


def test_z_value_interleaves_bits():
    assert z_value((0b11, 0b00), 2) == 0b1010
    assert z_value((0b00, 0b11), 2) == 0b0101


def test_rank_by_search_levels_counts_the_boundaries_below_a_value():
    rng = random.Random(3)
    values = sorted(rng.randrange(10_000) for _ in range(3000))
    bounds = quantile_boundaries(values, 256)
    levels = search_levels(bounds, 8)
    for v in [rng.randrange(-10, 10_010) for _ in range(2000)] + values[:50]:
        assert rank_of(v, levels) == bisect.bisect_left(bounds, v)


def test_quantile_ranks_share_values_evenly_and_keep_order():
    values = sorted(range(10_240))
    levels = search_levels(quantile_boundaries(values, 1024), 10)
    ranks = [rank_of(v, levels) for v in values]
    assert ranks == sorted(ranks) and ranks[0] == 0 and ranks[-1] == 1023
    assert set(collections.Counter(ranks).values()) == {10}


def test_fewer_values_than_ranks_still_rank_in_order():
    values = ["b", "d", "f"]
    levels = search_levels(quantile_boundaries(values, 16), 4)
    ranks = [rank_of(v, levels) for v in ["a", "b", "c", "d", "e", "f", "g"]]
    assert ranks == sorted(ranks) and ranks[0] < ranks[-1]


def _boxes(cell, lo, hi, out):
    """{file: (lows, highs)} of a grid: each file's box in rank space, [lo, hi)."""
    if not isinstance(cell, Split):
        out[cell] = (lo, hi)
        return out
    _boxes(cell.low, lo, hi[:cell.dim] + (cell.below,) + hi[cell.dim + 1:], out)
    _boxes(cell.high, lo[:cell.dim] + (cell.below,) + lo[cell.dim + 1:], hi, out)
    return out


@pytest.mark.parametrize("dims,files", [(2, 29), (2, 16), (3, 27), (3, 50), (2, 7)])
def test_grid_cells_are_equal_boxes_a_point_query_meets_few_of(dims, files):
    rnd = random.Random(dims * 100 + files)
    points = [tuple(rnd.randrange(1024) for _ in range(dims)) for _ in range(20_000)]
    grid = grid_cells(points, files)
    counts = Counter(cell_of(p, grid) for p in points)
    assert sorted(counts) == list(range(files))
    assert max(counts.values()) <= 1.1 * min(counts.values())
    boxes = _boxes(grid, (0,) * dims, (1024,) * dims, {})
    limit = files ** (1 - 1 / dims)     # a balanced grid's cells met by a point query
    for d in range(dims):
        met = [sum(1 for lo, hi in boxes.values() if lo[d] <= v < hi[d]) for v in range(1024)]
        assert sum(met) / len(met) <= 1.5 * limit, (d, sum(met) / len(met), limit)


def test_grid_cells_cut_another_column_where_one_cannot_split_evenly():
    # column 0 has two values (90% / 10%); column 1 spreads: halves are cut on column 1
    rnd = random.Random(3)
    points = [(0 if rnd.random() < 0.9 else 1000, rnd.randrange(1024)) for _ in range(10_000)]
    grid = grid_cells(points, 2)
    assert isinstance(grid, Split) and grid.dim == 1
    counts = Counter(cell_of(p, grid) for p in points)
    assert abs(counts[0] - counts[1]) < 0.05 * len(points)


def test_grid_cells_of_equal_points_is_one_file():
    assert grid_cells([(5, 5)] * 100, 8) == 0
    assert grid_cells([], 4) == 0 and grid_cells([(1, 2)], 1) == 0


@pytest.mark.parametrize("dims,files,bits", [(2, 100, 10), (3, 50, 10), (1, 9, 10), (2, 1, 10),
                                             (3, 16, 4)])
def test_cell_table_gives_every_rank_the_file_cell_of_does(dims, files, bits):
    rnd = random.Random(files)
    points = [tuple(rnd.randrange(1 << bits) for _ in range(dims)) for _ in range(5_000)]
    grid = grid_cells(points, files)
    table = cell_table(grid, dims, bits)
    strides = [1] * dims
    for d in range(dims - 2, -1, -1):
        strides[d] = strides[d + 1] * table.sizes[d + 1]
    probes = points + [tuple(rnd.randrange(1 << bits) for _ in range(dims)) for _ in range(5_000)]
    probes += [(0,) * dims, ((1 << bits) - 1,) * dims]
    for p in probes:
        index = sum(table.slabs[d][p[d]] * strides[d] for d in range(dims))
        assert table.files[index] == cell_of(p, grid), p


def test_cell_table_past_its_limit_is_none():
    rnd = random.Random(1)
    points = [tuple(rnd.randrange(1024) for _ in range(3)) for _ in range(20_000)]
    grid = grid_cells(points, 400)
    assert cell_table(grid, 3, 10) is None
    assert cell_table(grid, 3, 10, limit=10 ** 9) is not None
