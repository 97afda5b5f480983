"""Clustering plans (Hudi's size-based plan strategy). Pure.

Per partition, files below the clustering small-file limit are grouped, largest first, into
groups of at most `max_bytes_per_group`; each group is rewritten as ceil(bytes / target)
sorted files. A plan holds at most `max_groups` groups.
"""
import math
from dataclasses import dataclass
from typing import Tuple

from python_adapter.core.sizes import parse_size

STRATEGIES = ("linear", "zorder", "hilbert")


@dataclass(frozen=True)
class ClusterGroup:
    group_id: str
    partition: str
    files: Tuple[Tuple[str, int], ...]     # (rel path, bytes)
    output_files: int

    @property
    def bytes(self):
        return sum(size for _, size in self.files)


@dataclass(frozen=True)
class ClusterOptions:
    cluster_by: Tuple[str, ...]
    strategy: str = "linear"
    target_file_size: int = 128 * 1000**2
    small_file_limit: int = 300 * 1000**2      # Hudi: 300MB, above the write-time 100MB
    max_bytes_per_group: int = 2 * 1000**3    # Hudi: 2GB
    max_groups: int = 30                      # Hudi: 30


def cluster_options(cluster_by, strategy="linear", target_file_size=None, small_file_limit=None,
                    max_bytes_per_group=None, max_groups=None, write_small_file_limit=None):
    """Validated options; defaults scale from the table's target like Hudi's do from 1GB."""
    if isinstance(cluster_by, str):
        cluster_by = [cluster_by]
    if not cluster_by or not all(isinstance(c, str) and c for c in cluster_by):
        raise ValueError(f"cluster_by: name at least one column to cluster by, got {cluster_by!r}")
    if strategy not in STRATEGIES:
        raise ValueError(f"cluster_strategy: unknown value {strategy!r}; expected one of "
                         f"{', '.join(STRATEGIES)}")
    target = parse_size(target_file_size if target_file_size is not None else "128MB",
                        "target_file_size")
    if target <= 0:
        raise ValueError(f"target_file_size: must be > 0, got {target_file_size!r}")
    default_small = 3 * (write_small_file_limit or int(target * 100 / 128))
    small = parse_size(small_file_limit, "cluster_small_file_limit") \
        if small_file_limit is not None else default_small
    group = parse_size(max_bytes_per_group, "cluster_max_bytes_per_group") \
        if max_bytes_per_group is not None else 16 * target
    if group < target:
        raise ValueError(f"cluster_max_bytes_per_group: {max_bytes_per_group!r} is smaller than "
                         f"target_file_size {target_file_size!r}")
    groups = 30 if max_groups is None else int(max_groups)
    if groups <= 0:
        raise ValueError(f"cluster_max_groups: must be > 0, got {max_groups!r}")
    return ClusterOptions(tuple(cluster_by), strategy, target, small, group, groups)


def plan_groups(files_by_partition, options, excluded=()):
    """{partition: [(rel path, bytes)]} -> [ClusterGroup]; files in `excluded` (already in a
    pending plan) are left out."""
    groups = []
    for part in sorted(files_by_partition):
        small = sorted(((rel, size) for rel, size in files_by_partition[part]
                        if size < options.small_file_limit and rel not in excluded),
                       key=lambda f: (-f[1], f[0]))
        current, current_bytes = [], 0
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
