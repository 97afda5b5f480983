"""File-layout statistics of a table: pure functions over a list of files."""
import statistics
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union, cast

from python_adapter.core.sizes import count_of, format_size, parse_size
from python_adapter.errors import ConfigError

LAYOUT_COLUMNS = ["partition", "files", "rows", "bytes", "min_file", "median_file", "max_file",
                  "small_files", "size"]


@dataclass(frozen=True)
class LayoutFile:
    partition: str      # 'event_date=2024-01-01', '' when unpartitioned
    path: str           # relative to the table location
    bytes: int
    rows: int
    ranges: Tuple = ()  # ((column, min, max), ...) of the cluster columns, when asked for


@dataclass(frozen=True)
class Layout:
    files: Tuple[LayoutFile, ...]
    target_file_size: Optional[int] = None   # from the table's last commit, when known
    small_file_limit: Optional[int] = None
    cluster_by: Tuple[str, ...] = ()


def file_columns(layout: Layout) -> List[str]:
    cols = ["partition", "file", "rows", "bytes"]
    for c in layout.cluster_by:
        cols += [f"{c}_min", f"{c}_max"]
    return cols


def file_rows(layout: Layout) -> List[List[Any]]:
    """One row per file with the min / max of each cluster column: how well files prune."""
    out = []
    for f in sorted(layout.files, key=lambda f: f.path):
        row = [f.partition or "(unpartitioned)", f.path.rsplit("/", 1)[-1], f.rows, f.bytes]
        for _col, lo, hi in f.ranges:
            row += ["" if lo is None else str(lo), "" if hi is None else str(hi)]
        out.append(row)
    return out


def size_stats(sizes: Sequence[int]) -> Dict[str, float]:
    """min / median / max / coefficient of variation of a list of file sizes."""
    if not sizes:
        return {"files": 0, "min": 0, "median": 0, "max": 0, "cv": 0.0}
    mean = statistics.fmean(sizes)
    cv = statistics.pstdev(sizes) / mean if mean else 0.0
    return {"files": len(sizes), "min": min(sizes), "median": statistics.median(sizes),
            "max": max(sizes), "cv": cv}


def _limits(layout, small_file_limit, target_file_size):
    target = parse_size(target_file_size, "target_file_size") if target_file_size is not None \
        else layout.target_file_size
    small = parse_size(small_file_limit, "small_file_limit") if small_file_limit is not None \
        else layout.small_file_limit
    return small, target


def layout_limits_text(layout: Layout, small_file_limit: Optional[Union[int, float, str]] = None,
                       target_file_size: Optional[Union[int, float, str]] = None) -> str:
    """'target 128 MB, small-file limit 100 MB' for a layout's header."""
    small, target = _limits(layout, small_file_limit, target_file_size)
    shown = [f"target {format_size(target, target) if target else 'unknown'}",
             "small-file limit " + ("off" if small == 0 else
                                    format_size(small, target) if small else "unknown")]
    return ", ".join(shown)


def by_partition(layout: Layout) -> Dict[str, List[LayoutFile]]:
    parts: Dict[str, List[LayoutFile]] = {}
    for f in layout.files:
        parts.setdefault(f.partition, []).append(f)
    return dict(sorted(parts.items()))


def layout_rows(layout: Layout, small_file_limit: Optional[Union[int, float, str]] = None,
                target_file_size: Optional[Union[int, float, str]] = None) -> List[List[Any]]:
    """One row per partition: LAYOUT_COLUMNS, sizes as bytes plus a human 'size' column."""
    small, _target = _limits(layout, small_file_limit, target_file_size)
    rows = []
    for part, files in by_partition(layout).items():
        sizes = [f.bytes for f in files]
        st = size_stats(sizes)
        rows.append([
            part or "(unpartitioned)", st["files"], sum(max(f.rows, 0) for f in files),
            sum(sizes), st["min"], int(st["median"]), st["max"],
            sum(1 for s in sizes if small is not None and s < small),
            f"{format_size(sum(sizes), _target)} in {count_of(cast(int, st['files']), 'file')} "
            f"({format_size(st['min'], _target)} .. {format_size(st['max'], _target)})",
        ])
    return rows


def layout_problems(layout: Layout, max_small_files_per_partition: Optional[int] = None,
                    max_file_size_ratio: Optional[float] = None,
                    small_file_limit: Optional[Union[int, float, str]] = None,
                    target_file_size: Optional[Union[int, float, str]] = None) -> List[List[str]]:
    """[[partition, problem]] for every partition whose files drift from their target."""
    small, target = _limits(layout, small_file_limit, target_file_size)
    problems = []
    for part, files in by_partition(layout).items():
        label = part or "(unpartitioned)"
        if max_small_files_per_partition is not None:
            if small is None:
                raise ConfigError("sized_file_layout: no small_file_limit known for this table; "
                                 "pass small_file_limit to the test")
            n_small = sum(1 for f in files if f.bytes < small)
            if n_small > int(max_small_files_per_partition):
                problems.append([label, f"{count_of(n_small, 'file')} below "
                                        f"{format_size(small, target)} "
                                        f"(allowed {max_small_files_per_partition})"])
        if max_file_size_ratio is not None:
            if target is None:
                raise ConfigError("sized_file_layout: no target_file_size known for this table; "
                                 "pass target_file_size to the test")
            biggest = max(f.bytes for f in files)
            if biggest > float(max_file_size_ratio) * target:
                problems.append([label, f"largest file {format_size(biggest, target)} is above "
                                        f"{max_file_size_ratio} x target "
                                        f"{format_size(target, target)}"])
    return problems
