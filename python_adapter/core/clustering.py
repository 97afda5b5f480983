"""Clustering plans (Hudi's size-based plan strategy). Pure.

Per partition, files below the clustering small-file limit are grouped, largest first, into
groups of at most `max_bytes_per_group`; each group is rewritten as ceil(bytes / target)
sorted files. A plan holds at most `max_groups` groups.
"""
import math
from dataclasses import dataclass
from typing import Collection, List, Mapping, Sequence, Tuple

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
