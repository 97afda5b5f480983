"""Clustering plans (Hudi's size-based plan strategy). Pure.

Per partition, files below the clustering small-file limit are grouped, largest first, into
groups of at most `max_bytes_per_group`; each group is rewritten as ceil(bytes / target)
sorted files. A plan holds at most `max_groups` groups.
"""
import bisect
import itertools
import math
from dataclasses import dataclass
from typing import Collection, List, Mapping, Optional, Sequence, Tuple, Union

from python_adapter.core.config import ClusterOptions


@dataclass(frozen=True)
class ClusterGroup:
    group_id: str
    partition: str
    files: Tuple[Tuple[str, int], ...]     # (rel path, bytes)
    output_files: int

    @property
    def bytes(self) -> int:
        return sum(size for _, size in self.files)


def plan_groups(files_by_partition: Mapping[str, Sequence[Tuple[str, int]]],
                options: ClusterOptions, excluded: Collection[str] = ()) -> List[ClusterGroup]:
    """{partition: [(rel path, bytes)]} -> [ClusterGroup]; files in `excluded` (already in a
    pending plan) are left out."""
    groups: List[ClusterGroup] = []
    for part in sorted(files_by_partition):
        small = sorted(((rel, size) for rel, size in files_by_partition[part]
                        if size < options.small_file_limit and rel not in excluded),
                       key=lambda f: (-f[1], f[0]))
        current: List[Tuple[str, int]] = []
        current_bytes = 0
        for rel, size in small:
            if current and current_bytes + size > options.max_bytes_per_group:
                groups.append(_group(len(groups), part, current, options))
                current, current_bytes = [], 0
            current.append((rel, size))
            current_bytes += size
        if current:
            groups.append(_group(len(groups), part, current, options))
    return groups[:options.max_groups]


def _group(index, part, files, options):
    total = sum(s for _, s in files)
    return ClusterGroup(f"g{index}", part, tuple(files),
                        max(1, math.ceil(total / options.target_file_size)))


# ---------------------------------------------------------------------------------------
# Grid cells: where a Z-order or Hilbert group is cut into files
# ---------------------------------------------------------------------------------------
# A split may leave a side this far from its share of the rows before another column is
# tried (a column with few distinct values cannot split a group evenly).
SPLIT_TOLERANCE = 0.1


@dataclass(frozen=True)
class Split:
    """A cut of a group's rows on one clustering column: rows whose rank on column `dim`
    is below `below` go to `low`, the others to `high`. A cell is a Split or a file
    number."""
    dim: int
    below: int
    low: "Cell"
    high: "Cell"


Cell = Union[int, Split]


def grid_cells(points: Sequence[Tuple[int, ...]], files: int, first: int = 0) -> Cell:
    """Cells numbered first..first+files-1 holding about equal shares of `points` (rank
    tuples, a sample of the group's rows), cut as a k-d tree cuts: each split halves the
    files and cuts the column whose ranks spread widest among the cell's points at the
    matching quantile. Each file is then a box in the columns' ranks, close to a balanced
    grid's cell, so its min/max rule it out of a point query on any column; cutting the
    curve at equal row counts makes files that straddle a high-level quadrant boundary
    and span half a column's domain."""
    if files <= 1 or len(points) < 2:
        return first
    low_files = files // 2
    want = len(points) * low_files / files
    dim, below = _split(points, want)
    if dim is None:
        return first   # all points equal: one file holds them (the others stay empty)
    low = [p for p in points if p[dim] < below]
    high = [p for p in points if p[dim] >= below]
    return Split(dim, below, grid_cells(low, low_files, first),
                 grid_cells(high, files - low_files, first + low_files))


def _split(points, want) -> Tuple[Optional[int], int]:
    """(column, rank) of the cut closest to `want` points below it, on the widest-spread
    column that gets within SPLIT_TOLERANCE of it, else on the column that gets closest."""
    dims = range(len(points[0]))
    spread = {d: max(p[d] for p in points) - min(p[d] for p in points) for d in dims}
    best: Tuple[Optional[int], int, float] = (None, 0, math.inf)
    for d in sorted(dims, key=lambda d: (-spread[d], d)):
        if spread[d] == 0:
            continue
        below, count = _quantile_cut(sorted(p[d] for p in points), want)
        miss = abs(count - want)
        if miss <= SPLIT_TOLERANCE * want:
            return d, below
        if miss < best[2]:
            best = (d, below, miss)
    return best[0], best[1]


def _quantile_cut(values: Sequence[int], want: float) -> Tuple[int, int]:
    """(rank r, values below r) of the cut leaving closest to `want` of the sorted values
    (not all equal) below it: at the value at position `want`, or just above its ties."""
    at = values[min(max(round(want), 0), len(values) - 1)]
    above = bisect.bisect_right(values, at)
    candidates = [(at, bisect.bisect_left(values, at))]
    if above < len(values):
        candidates.append((values[above], above))
    return min(((r, n) for r, n in candidates if n > 0), key=lambda c: abs(c[1] - want))


def cell_of(point: Sequence[int], cell: Cell) -> int:
    """The file number of a point (the Spark expression mirrors this)."""
    while isinstance(cell, Split):
        cell = cell.low if point[cell.dim] < cell.below else cell.high
    return cell


# A cell table holds one file number per combination of slabs; beyond this many the Spark
# expression walks the tree instead (100 files on 2 columns take about 2,500).
CELL_TABLE_ENTRIES = 1 << 16


@dataclass(frozen=True)
class CellTable:
    """cell_of as two lookups, for Spark: the tree's cuts on each column divide its ranks
    into slabs (`slabs[d][r]`: how many cuts on column d are at or below rank r), and
    `files` holds the file of every combination of slabs, row-major (`sizes`: slabs per
    column). A row's file is then `files[sum(slab_d * stride_d)]`: a few array reads that
    whole-stage codegen keeps small, where a nested CASE of one branch per split made the
    generated method too long for the JIT (3x slower at 100 files)."""
    slabs: Tuple[Tuple[int, ...], ...]
    sizes: Tuple[int, ...]
    files: Tuple[int, ...]


def cell_table(cell: Cell, dims: int, bits: int,
               limit: int = CELL_TABLE_ENTRIES) -> Optional[CellTable]:
    """The CellTable of `cell` over ranks in [0, 2**bits) on `dims` columns; None when it
    would hold more than `limit` entries."""
    cuts = [sorted(c) for c in _cuts_by_column(cell, dims)]
    sizes = tuple(len(c) + 1 for c in cuts)
    if math.prod(sizes) > limit:
        return None
    slabs = tuple(tuple(bisect.bisect_right(c, r) for r in range(1 << bits)) for c in cuts)
    # each slab's lowest rank stands for all of it: no cut falls inside a slab
    lowest = [(0, *c) for c in cuts]
    files = tuple(cell_of([lowest[d][s] for d, s in enumerate(combo)], cell)
                  for combo in itertools.product(*(range(n) for n in sizes)))
    return CellTable(slabs, sizes, files)


def _cuts_by_column(cell: Cell, dims: int) -> List[set]:
    cuts: List[set] = [set() for _ in range(dims)]
    pending = [cell]
    while pending:
        c = pending.pop()
        if isinstance(c, Split):
            cuts[c.dim].add(c.below)
            pending += [c.low, c.high]
    return cuts
