"""Compaction plans: the table's own sizes restored without a sort. Pure.

Per partition, the files below the compaction limit are bin-packed, largest first, into
groups of at most `max_bytes_per_group`, each rewritten as ceil(bytes / target) files with
its rows in file order; a file above SPLIT_RATIO x target is split into ceil(bytes /
target) files (Iceberg's rewrite rule). A group that would not reduce its files (one small
file alone in its partition, or files that fill their outputs already) is left out: it
would rewrite bytes for nothing. Groups share clustering's record (ClusterGroup) and plan
instant, so executing and committing them is clustering's code.
"""
import math
from typing import (Any, Callable, Collection, Dict, List, Mapping, Optional, Sequence, Set,
                    Tuple)

from python_adapter.core.clustering import ClusterGroup
from python_adapter.core.config import CompactOptions
from python_adapter.core.partitions import parse_partition_path
from python_adapter.errors import ConfigError

SPLIT_RATIO = 1.8


def plan_compaction(files_by_partition: Mapping[str, Sequence[Tuple[str, int]]],
                    options: CompactOptions, excluded: Collection[str] = ()
                    ) -> List[ClusterGroup]:
    """{partition: [(rel path, bytes)]} -> [ClusterGroup], at most options.max_groups
    groups and options.max_bytes bytes (the first groups, in partition order); files in
    `excluded` (already in a pending plan) are left out."""
    candidates = []
    for part in sorted(files_by_partition):
        files = [(rel, size) for rel, size in files_by_partition[part] if rel not in excluded]
        candidates += _partition_groups(part, files, options)
    groups: List[ClusterGroup] = []
    total = 0
    for g in candidates:
        if len(groups) == options.max_groups:
            break
        if options.max_bytes is not None and groups and total + g.bytes > options.max_bytes:
            break
        groups.append(ClusterGroup(f"g{len(groups)}", g.partition, g.files, g.output_files))
        total += g.bytes
    return groups


def _partition_groups(part, files, options):
    target = options.target_file_size
    big = [f for f in files if f[1] > SPLIT_RATIO * target]
    small = sorted((f for f in files if f[1] < options.small_file_limit and f not in big),
                   key=lambda f: (-f[1], f[0]))
    groups = [ClusterGroup("", part, (f,), math.ceil(f[1] / target)) for f in big]
    current = []
    for f in small:
        if current and sum(s for _, s in current) + f[1] > options.max_bytes_per_group:
            groups.append(_packed(part, current, target))
            current = []
        current.append(f)
    if current:
        groups.append(_packed(part, current, target))
    return [g for g in groups if g.output_files != len(g.files)]


def _packed(part, files, target):
    total = sum(size for _, size in files)
    return ClusterGroup("", part, tuple(files), max(1, math.ceil(total / target)))


def pack_outputs(groups: Sequence[Tuple[str, str, int]], parallelism: int
                 ) -> Tuple[int, Dict[str, int]]:
    """Compaction's output files spread over the tasks of its one Spark job. groups: (group
    id, partition, output files). Spark's writer gives a task one file per partition it
    holds, so a task may write the files of many groups of other partitions, but no two of
    one partition: with the output files ordered by partition, file i goes to task
    i mod tasks, and there are at least as many tasks as the most files of a partition.
    Otherwise there are `parallelism` tasks (fewer when there are fewer files): a task per
    file made compaction of many small partitions pay a task's fixed cost hundreds of
    times. Returns (tasks, {group id: the task of its first file}); file k of group g goes
    to task (first[g] + k) mod tasks."""
    ordered = sorted(groups, key=lambda g: (g[1], g[0]))
    per_partition: Dict[str, int] = {}
    for _gid, part, files in ordered:
        per_partition[part] = per_partition.get(part, 0) + files
    total = sum(per_partition.values())
    tasks = max(1, max(per_partition.values(), default=1), min(total, parallelism))
    first, i = {}, 0
    for gid, _part, files in ordered:
        first[gid] = i % tasks
        i += files
    return tasks, first


def pack_groups(groups: Sequence[Tuple[str, str, int]], parallelism: int) -> List[List[str]]:
    """Compaction groups each given whole to one task of a Spark job, which reads their
    files and writes their output files (no shuffle). groups: (group id, partition, bytes).
    Spark names a task's files after the task, so a task holds at most one group of a
    partition (a staged file's group is its task's group in its partition): there are at
    least as many tasks as the most groups of a partition, otherwise `parallelism` (fewer
    when there are fewer groups). The largest group first, each onto the task with the
    fewest bytes among those holding none of its partition. Returns each task's group ids."""
    per_partition: Dict[str, int] = {}
    for _gid, part, _bytes in groups:
        per_partition[part] = per_partition.get(part, 0) + 1
    count = max(max(per_partition.values(), default=1), min(len(groups), parallelism), 1)
    tasks: List[List[str]] = [[] for _ in range(count)]
    load = [0] * count
    parts: List[Set[str]] = [set() for _ in range(count)]
    for gid, part, size in sorted(groups, key=lambda g: (-g[2], g[1], g[0])):
        k = min((t for t in range(count) if part not in parts[t]), key=lambda t: (load[t], t))
        tasks[k].append(gid)
        load[k] += size
        parts[k].add(part)
    return tasks


# How far a run of whole files may stray from its share of a group's bytes and still be
# written as one output file (a file of 0.75-1.25 x its share, inside the size band).
RUN_TOLERANCE = 0.25


def file_runs(sizes: Sequence[int], outputs: int) -> Optional[List[int]]:
    """A group's files (their bytes, in the group's order) cut into `outputs` runs of whole
    consecutive files, each within RUN_TOLERANCE of an equal share of the bytes: the number
    of files in each run, or None when no such cut exists (too few files, or one too large
    for its share). A run is then one task's files and one output file: compaction writes
    it without a shuffle, keeping rows in file order as the cut by rows does."""
    share = sum(sizes) / outputs
    if len(sizes) < outputs or share <= 0:
        return None
    counts, start, done = [], 0, 0
    for k in range(1, outputs):
        goal, end, upto = k * share, start + 1, done + sizes[start]
        # the boundary nearest to k shares, leaving a file for each run still to come
        while end < len(sizes) - (outputs - k) and abs(upto + sizes[end] - goal) < abs(upto - goal):
            upto += sizes[end]
            end += 1
        counts.append(end - start)
        start, done = end, upto
    counts.append(len(sizes) - start)
    first = [sum(counts[:k]) for k in range(outputs)]
    if any(abs(sum(sizes[i:i + n]) - share) > RUN_TOLERANCE * share
           for i, n in zip(first, counts)):
        return None
    return counts


def partition_filter(partition_columns: Sequence[str],
                     wanted: Optional[Sequence[Any]]) -> Callable[[str], bool]:
    """Whether a partition directory ('day=2025-01-01') is one of `wanted`: values of a table
    with one partition column, or {column: value} mappings (any subset of the columns).
    None: every partition. ConfigError naming the key and the value for an unknown column,
    an unpartitioned table or a value that is neither."""
    if wanted is None:
        return lambda rel: True
    if isinstance(wanted, (str, bytes)) or not isinstance(wanted, (list, tuple)):
        wanted = [wanted]
    if not partition_columns:
        raise ConfigError(f"partitions: {list(wanted)!r} given, but the table is not "
                          f"partitioned")
    specs = [_spec(partition_columns, w) for w in wanted]

    def matches(rel: str) -> bool:
        values = dict(parse_partition_path(rel))
        return any(all(values.get(c) == v for c, v in spec.items()) for spec in specs)
    return matches


def _spec(pcols, entry):
    if isinstance(entry, Mapping):
        known = {c.lower(): c for c in pcols}
        unknown = [k for k in entry if str(k).lower() not in known]
        if unknown:
            raise ConfigError(f"partitions: {dict(entry)!r} names {', '.join(map(str, unknown))}, "
                              f"not a partition column of the table ({', '.join(pcols)})")
        return {known[str(k).lower()]: _text(v) for k, v in entry.items()}
    if len(pcols) > 1:
        raise ConfigError(f"partitions: {entry!r} is one value, but the table is partitioned "
                          f"by {', '.join(pcols)}; give {{column: value}} mappings")
    return {pcols[0]: _text(entry)}


def _text(value):
    """A value as its partition directory writes it (dates from YAML are date objects)."""
    return None if value is None else str(value)
