"""Algorithm 1 (file counts per hPartition) and the file-id layout of `exact`. Pure."""
import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

from python_adapter.core.binpack import split_size
from python_adapter.core.config import SizedConfig

# A batch Spark estimates at no more than this (and a quarter of the target, as estimates
# of text run low) is written by one task, a file per partition (spark/write/small_batch.py): for
# a few megabytes the count, the plan and the shuffle of a planned write cost more than
# the write itself.
SMALL_BATCH_BYTES = 16 * 1000 * 1000


def files_for_rows(rows: int, bytes_per_row: float, target_file_size: int) -> int:
    """files(p) = max(1, ceil(rows * bytes_per_row / target))."""
    if rows <= 0:
        return 0
    return max(1, math.ceil(rows * bytes_per_row / target_file_size))


def is_small_batch(estimated_bytes: int, target_file_size: int) -> bool:
    """Whether rows estimated at `estimated_bytes` are a small batch: written by one task,
    one file per partition (spark/write/small_batch.py)."""
    return estimated_bytes <= min(SMALL_BATCH_BYTES, target_file_size // 4)


def writes_small_batches(cfg: SizedConfig, operation: str) -> bool:
    """Whether a write may go as a small batch. A full build or insert_overwrite: with the
    distributions that write the ideal (exact, range) and no setting that asks for more
    files than one per partition (file_count, insert_split_size). An insert, or an upsert
    (its small files written again with the batch, spark/write/upsert.py): without
    insert_split_size (rows per new file). Other operations: never."""
    if operation in ("insert", "upsert"):
        return cfg.insert_split_size is None
    if operation in ("full_refresh", "insert_overwrite"):
        return (cfg.distribution in ("exact", "range") and cfg.file_count is None
                and cfg.insert_split_size is None)
    return False


def writes_a_file_a_partition(cfg: SizedConfig, operation: str, estimated_bytes: int,
                              partitioned: bool) -> bool:
    """Whether a partitioned full build or insert_overwrite goes to one file per partition
    in one pass, without a count (spark/write/small_batch.py): settings that let it go as a small
    batch, the exact distribution, and Spark's estimate of its rows within one target file,
    so every partition fits one (the staged files are checked: an estimate may be low)."""
    return (partitioned and operation in ("full_refresh", "insert_overwrite")
            and writes_small_batches(cfg, operation) and cfg.distribution == "exact"
            and 0 <= estimated_bytes <= cfg.target_file_size)


@dataclass(frozen=True)
class PartitionPlan:
    rows: int
    files: int
    rows_per_file: int   # every file but the last gets this many; the last the remainder


def plan_partitions(rows_by_partition: Mapping[Any, int], bytes_per_row: float,
                    target_file_size: int, insert_split_size: Optional[int] = None
                    ) -> Dict[Any, PartitionPlan]:
    """{partition key: rows} -> {partition key: PartitionPlan}.

    Files are filled to the target and the last takes the remainder, as Hudi sizes new file
    groups, so a partition has at most one file below the target.
    """
    split = split_size(bytes_per_row, target_file_size, insert_split_size)
    return {key: PartitionPlan(rows, max(1, math.ceil(rows / split)), split)
            for key, rows in rows_by_partition.items() if rows > 0}


def plan_static(rows_by_partition: Mapping[Any, int], total_files: int
                ) -> Dict[Any, PartitionPlan]:
    """Plans for a static total file count (`file_count`), split by rows."""
    files = apportion_files(rows_by_partition, total_files)
    return {key: PartitionPlan(rows_by_partition[key], n, math.ceil(rows_by_partition[key] / n))
            for key, n in files.items()}


def apportion_files(rows_by_partition: Mapping[Any, int], total_files: int) -> Dict[Any, int]:
    """Split a static total file count over partitions in proportion to their rows.

    Every non-empty partition gets at least one file (a partition cannot be written with
    zero), the rest by largest remainder; the sum is max(total_files, non-empty partitions).
    """
    keys = [k for k, r in rows_by_partition.items() if r > 0]
    if not keys:
        return {}
    total_rows = sum(rows_by_partition[k] for k in keys)
    spare = max(0, total_files - len(keys))
    shares = {k: spare * rows_by_partition[k] / total_rows for k in keys}
    counts = {k: 1 + int(shares[k]) for k in keys}
    left = spare - sum(int(s) for s in shares.values())
    for k in sorted(keys, key=lambda k: (shares[k] - int(shares[k])), reverse=True)[:left]:
        counts[k] += 1
    return counts


def file_id_ranges(plans: Mapping[Any, PartitionPlan]) -> List[Tuple[Any, int, PartitionPlan]]:
    """Give each partition a run of consecutive file ids: [(key, first_id, PartitionPlan)].

    Ordered by key (None sorts first) so the same input gives the same layout.
    """
    out = []
    next_id = 0
    for key in sorted(plans, key=_sort_key):
        out.append((key, next_id, plans[key]))
        next_id += plans[key].files
    return out


def _sort_key(key):
    parts = key if isinstance(key, tuple) else (key,)
    return tuple((v is None, str(v)) for v in parts)


def ideal_file_count(bytes_by_partition: Mapping[Any, float], target_file_size: int) -> int:
    """The benchmark's ideal: sum over partitions of ceil(bytes / target)."""
    return sum(max(1, math.ceil(b / target_file_size)) for b in bytes_by_partition.values() if b > 0)


# A bound of rows' Parquet bytes from their raw size (spark/measure.raw_row_bytes): room for
# page and row-group headers, and snappy's worst case on bytes that do not compress (~1.17x)
RAW_OVERHEAD = 1.25
FILE_OVERHEAD = 64 * 1024        # the footer and its per-column metadata: 1 KB a column more


def bounded_bytes_per_row(rows_by_partition: Mapping[Any, int], raw_by_partition:
                          Mapping[Any, int], columns: int, target_file_size: int
                          ) -> Optional[float]:
    """The rows' bytes per row by their raw size's bound when every partition is one file
    by it (its bound, and its rows at the average bound, within the target); else None."""
    rows = sum(rows_by_partition.values())
    if not rows or not raw_by_partition:
        return None
    per_row = sum(raw_by_partition.values()) * RAW_OVERHEAD / rows
    file_overhead = FILE_OVERHEAD + 1024 * columns
    for key, n in rows_by_partition.items():
        bound = raw_by_partition.get(key)
        if bound is None or max(bound * RAW_OVERHEAD, n * per_row) + file_overhead \
                > target_file_size:
            return None
    return per_row
