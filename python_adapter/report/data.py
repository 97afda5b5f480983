"""The numbers the table report shows, from a Layout and the timeline's instants.

Pure: no Spark, no files, no HTML. An instant is anything shaped like
python_adapter.table.timeline.Instant (instant, action, state, operation, created_at_ms,
added, removed, extra); this layer reads them and never imports the table layer.
"""
import bisect
import statistics
from dataclasses import dataclass
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple, cast

from python_adapter.core.layout import Layout, LayoutFile, by_partition
from python_adapter.core.sizes import format_size
from python_adapter.table.timeline import is_clustering, written_with
from python_adapter.table.extra import SMALL_FILE_LIMIT, TARGET_FILE_SIZE, is_output_files

OVERSIZE_RATIO = 1.25          # a file above 1.25 x target counts as oversized


class Limits(NamedTuple):
    """The sizes a file is judged by; None when neither the layout nor a commit knows them."""
    target: Optional[int]
    small: Optional[int]


def _int(value):
    # extra values are strings written by any version of the writer: a bad one is unknown
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def resolve_limits(layout: Layout, instants: Sequence = ()) -> Limits:
    """The layout's target file size and small-file limit, else those of the last write
    that recorded them (timeline.written_with); None when unknown."""
    extra = written_with(instants)
    target, small = layout.target_file_size, layout.small_file_limit
    return Limits(TARGET_FILE_SIZE.get(extra) if target is None else target,
                  SMALL_FILE_LIMIT.get(extra) if small is None else small)


def is_small(size: int, small_file_limit: Optional[int]) -> bool:
    """Below the limit; a limit of 0 (packing off) or None makes no file small."""
    # bool() rules None out first; mypy does not narrow through bool()
    return bool(small_file_limit) and size < cast(int, small_file_limit)


def is_oversized(size: int, target_file_size: Optional[int]) -> bool:
    # bool() rules None out first; mypy does not narrow through bool()
    return bool(target_file_size) and size > OVERSIZE_RATIO * cast(int, target_file_size)


# -- the files as they are -------------------------------------------------------------------

@dataclass(frozen=True)
class FileGroup:
    """The files of one partition, or of the whole table, as the report counts them."""
    name: str                   # the partition, '' when unpartitioned (or the whole table)
    sizes: Tuple[int, ...]      # bytes of each file, in layout order
    rows: int                   # a file whose row count is unknown (-1) adds none
    small: int                  # files below the small-file limit
    oversized: int              # files above OVERSIZE_RATIO x target

    @property
    def files(self) -> int:
        return len(self.sizes)

    @property
    def bytes(self) -> int:
        return sum(self.sizes)

    @property
    def smallest(self) -> int:
        return min(self.sizes)

    @property
    def median(self) -> float:
        return statistics.median(self.sizes)

    @property
    def largest(self) -> int:
        return max(self.sizes)


def file_group(name: str, files: Sequence[LayoutFile], limits: Limits) -> FileGroup:
    sizes = tuple(f.bytes for f in files)
    return FileGroup(name, sizes, sum(max(f.rows, 0) for f in files),
                     sum(1 for s in sizes if is_small(s, limits.small)),
                     sum(1 for s in sizes if is_oversized(s, limits.target)))


def partition_groups(layout: Layout, limits: Limits) -> List[FileGroup]:
    """One FileGroup per partition, in partition order."""
    return [file_group(p, fs, limits) for p, fs in by_partition(layout).items()]


def most_small_files(groups: Sequence[FileGroup], most: int) -> List[FileGroup]:
    """The `most` partitions with the most small files (then the most files), in partition
    order: the ones a reader has to look at when there are too many to show."""
    ranked = sorted(groups, key=lambda g: (-g.small, -g.files, g.name))
    return sorted(ranked[:most], key=lambda g: g.name)


@dataclass(frozen=True)
class SizeBin:
    lo: float
    hi: Optional[float]     # None: the open-ended overflow bin
    kind: str               # 'small', 'ok' or 'big'

    @property
    def label(self) -> str:
        if self.hi is None:
            return f"\u2265 {format_size(self.lo)}"
        return f"{format_size(self.lo)} \u2013 {format_size(self.hi)}"


def size_bins(target: Optional[int], small: Optional[int], max_bytes: int) -> List[SizeBin]:
    """Histogram bins: tenths of the target up to 1.5 x target (plus an overflow bin when a
    file is bigger), or twentieths of the largest file when the target is unknown. The
    small-file limit and 1.25 x target are bin edges, so every bin is of one kind."""
    if target:
        top = 1.5 * target
        step = target / 10
        specials = [s for s in (small, OVERSIZE_RATIO * target) if s and 0 < s < top]
    else:
        top = float(max(max_bytes, 1))
        step = top / 20
        specials = [small] if small and 0 < small < top else []
    regular = [i * step for i in range(1, round(top / step))]
    edges = [0.0] + [e for e in regular if all(abs(e - s) > 0.3 * step for s in specials)]
    edges = sorted(set(edges + [float(s) for s in specials])) + [top]
    bins = [SizeBin(lo, hi, _kind(lo, hi, target, small)) for lo, hi in zip(edges, edges[1:])]
    if target and max_bytes >= top:
        bins.append(SizeBin(top, None, "big"))
    return bins


def _kind(lo, hi, target, small):
    if small and hi <= small:
        return "small"
    if target and lo >= OVERSIZE_RATIO * target:
        return "big"
    return "ok"


def bin_counts(sizes: Sequence[int], bins: Sequence[SizeBin]) -> List[int]:
    """Files per bin; sizes past the last closed bin go to the overflow bin, or to the last."""
    edges = [b.lo for b in bins]
    counts = [0] * len(bins)
    for s in sizes:
        counts[min(max(0, bisect.bisect_right(edges, s) - 1), len(bins) - 1)] += 1
    return counts


# -- the timeline ----------------------------------------------------------------------------

@dataclass(frozen=True)
class TimelinePoint:
    """The table after one completed instant of the replayed timeline."""
    instant: str
    action: str
    operation: str
    created_at_ms: int
    added: int
    removed: int
    files: int
    small: int
    bytes: int


def replay_timeline(instants: Sequence, small_file_limit: Optional[int] = None
                    ) -> List[TimelinePoint]:
    """Replay the completed instants in order (a full build starts over from its adds) and
    return one TimelinePoint per instant: files, files below small_file_limit, bytes."""
    files: Dict[str, int] = {}
    points = []
    for inst in sorted(instants, key=lambda i: i.instant):
        if inst.state != "completed":
            continue
        if inst.action == "commit" and inst.operation == "full_refresh":
            files = {}
        for f in inst.removed:
            files.pop(f.path, None)
        for f in inst.added:
            files[f.path] = f.bytes
        points.append(TimelinePoint(
            instant=inst.instant, action=inst.action, operation=inst.operation,
            created_at_ms=inst.created_at_ms, added=len(inst.added), removed=len(inst.removed),
            files=len(files), small=sum(1 for b in files.values() if is_small(b, small_file_limit)),
            bytes=sum(files.values())))
    return points


def _is_scheduled_plan(inst):
    # a clustering plan: written as a requested replacecommit, it waits for its execution
    return inst.action == "replacecommit" and inst.extra.get("scheduled") == "true"


def unfinished(instants: Sequence) -> list:
    """The instants a crash left behind (the next write rolls them back): not completed and
    not a clustering plan waiting its turn."""
    return [i for i in instants if i.state != "completed" and not _is_scheduled_plan(i)]


# -- clustering ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ClusteringHistory:
    """The last completed clustering and what came since."""
    last: object            # the last completed replacecommit (an Instant)
    commits_since: int      # completed commits after it
    clusterings: int        # completed clusterings in all


def clustering_history(instants: Sequence) -> Optional[ClusteringHistory]:
    """None when the table has never been clustered."""
    done = [i for i in sorted(instants, key=lambda i: i.instant)
            if i.state == "completed" and is_clustering(i)]
    if not done:
        return None
    last = done[-1]
    since = sum(1 for i in instants if i.state == "completed" and i.action == "commit"
                and i.instant > last.instant)
    return ClusteringHistory(last, since, len(done))


@dataclass(frozen=True)
class PendingPlan:
    """A scheduled clustering plan and the files it will rewrite."""
    plan: object            # the requested replacecommit (an Instant)
    groups: int             # clustering groups: each becomes its own output files
    files: int
    bytes: int
    output_files: int       # the files the plan expects to write, over all groups


def pending_plans(instants: Sequence) -> List[PendingPlan]:
    """The scheduled clustering plans, oldest first."""
    plans = []
    for plan in sorted(instants, key=lambda i: i.instant):
        if not (_is_scheduled_plan(plan) and plan.state == "requested"):
            continue
        outputs = sum(_int(v) or 0 for k, v in plan.extra.items() if is_output_files(k))
        plans.append(PendingPlan(plan, len({f.file_group for f in plan.removed}),
                                 len(plan.removed), sum(f.bytes for f in plan.removed), outputs))
    return plans


def range_of(f: LayoutFile, column: str) -> Tuple:
    """(min, max) of a cluster column in a file; (None, None) when not recorded."""
    for c, lo, hi in f.ranges:
        if c == column:
            return lo, hi
    return None, None


def range_overlaps(intervals: Sequence) -> List[Optional[int]]:
    """For each (lo, hi) interval, how many of the others overlap it; None entries (unknown
    ranges) get None. Lower is better clustered: sorted files overlap no other file."""
    known = [(lo, hi) for lo, hi in (iv or (None, None) for iv in intervals)
             if lo is not None and hi is not None]
    try:
        los = sorted(lo for lo, _ in known)
        his = sorted(hi for _, hi in known)
        out: List[Optional[int]] = []
        for iv in intervals:
            lo, hi = iv or (None, None)
            if lo is None or hi is None:
                out.append(None)
                continue
            # others with lo_j <= hi minus those with hi_j < lo, minus itself
            out.append(bisect.bisect_right(los, hi) - bisect.bisect_left(his, lo) - 1)
        return out
    except TypeError:       # values of mixed types: no order to compare
        return [None] * len(intervals)


@dataclass(frozen=True)
class Overlaps:
    """How the cluster columns' ranges of the files overlap, within each partition."""
    per_file: Dict[Tuple[str, str], Optional[int]]     # (path, column): overlap, or None
    means: List[Tuple[str, Optional[float]]]            # (column, mean overlap), cluster order


def cluster_overlaps(layout: Layout) -> Overlaps:
    """Files of different partitions never meet in one scan's filter, so only the files of
    the same partition count as overlapping."""
    parts = by_partition(layout)
    per_file = {}
    means = []
    for c in layout.cluster_by:
        per_col = []
        for fs in parts.values():
            for f, o in zip(fs, range_overlaps([range_of(f, c) for f in fs])):
                per_file[(f.path, c)] = o
                if o is not None:
                    per_col.append(o)
        means.append((c, statistics.fmean(per_col) if per_col else None))
    return Overlaps(per_file, means)


def files_in_range_order(layout: Layout) -> List[LayoutFile]:
    """The files by partition, then by the first cluster column's minimum (unknown first),
    so a well clustered partition reads as ascending ranges; by path where values of mixed
    types have no order."""
    first = layout.cluster_by[0]

    def order(f):
        lo, _ = range_of(f, first)
        return (f.partition, lo is not None, "" if lo is None else lo, f.path)

    try:
        return sorted(layout.files, key=order)
    except TypeError:
        return sorted(layout.files, key=lambda f: (f.partition, f.path))
