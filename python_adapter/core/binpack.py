"""Algorithm 3: Hudi copy-on-write insert bin-packing for one partition of an upsert. Pure.

Hudi keeps files near the target size at write time instead of compacting afterwards:
inserts first top up the partition's small files (size < small_file_limit) to the target,
and only the rest go to new files of `insert_split_size` rows. Updates rewrite the file that
holds the key; a file that gets neither updates nor inserts is never read or rewritten.
See docs/design.md, Algorithms 3.
"""
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Dict, Hashable, Iterable, List, Optional, Tuple, Union


def _check_int(name, value, minimum):
    # bool is an int subclass; a True/False count is a caller bug, not a count of 1/0.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")


def _check_positive(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")


def _check_files(files):
    seen = set()
    for entry in files:
        try:
            file_id, size = entry
        except (TypeError, ValueError):
            raise ValueError(f"files entries must be (file_id, size_bytes), got {entry!r}") from None
        if file_id is None:
            raise ValueError("files: file_id must not be None (None means a new file)")
        if file_id in seen:
            raise ValueError(f"files: duplicate file_id {file_id!r}")
        seen.add(file_id)
        if isinstance(size, bool) or not isinstance(size, (int, float)) or size < 0:
            raise ValueError(f"files: size_bytes of {file_id!r} must be >= 0, got {size!r}")


def split_size(bytes_per_row: float, target_file_size: int,
               insert_split_size: Optional[int] = None) -> int:
    """Rows per new file: insert_split_size, else as many rows as fit in the target (>= 1)."""
    if insert_split_size is not None:
        return insert_split_size
    return max(1, int(target_file_size // bytes_per_row))


def _room(size, bytes_per_row, target_file_size):
    """Whole rows that fit before the file reaches the target (floor, so never above it)."""
    return max(0, int((target_file_size - size) // bytes_per_row))


def plan_inserts(files: Iterable[Tuple[Hashable, float]], num_inserts: int,
                 bytes_per_row: float, target_file_size: int, small_file_limit: int,
                 insert_split_size: Optional[int] = None
                 ) -> List[Tuple[Optional[Hashable], int]]:
    """Assign `num_inserts` new rows of one partition to files.

    `files` is a list of (file_id, size_bytes). Returns [(file_id or None, rows), ...] in
    assignment order; None means a new file. Small files (size < small_file_limit; a limit of
    0 turns packing off) are filled first, in ascending (size, file_id) order -- Hudi uses its
    listing order, we pick one that is deterministic and tops up the emptiest files first.
    Each gets floor((target - size) / bytes_per_row) rows at most, so none passes the target.
    The rest go to new files of `insert_split_size` rows (default target / bytes_per_row);
    the last new file takes the remainder, so at most one new file is below the split size.
    """
    files = list(files)
    _check_files(files)
    _check_int("num_inserts", num_inserts, 0)
    _check_positive("bytes_per_row", bytes_per_row)
    _check_positive("target_file_size", target_file_size)
    if isinstance(small_file_limit, bool) or not isinstance(small_file_limit, (int, float)) \
            or small_file_limit < 0:
        raise ValueError(f"small_file_limit must be >= 0, got {small_file_limit!r}")
    if small_file_limit > target_file_size:
        raise ValueError(f"small_file_limit ({small_file_limit}) must not exceed "
                         f"target_file_size ({target_file_size})")
    if insert_split_size is not None:
        _check_int("insert_split_size", insert_split_size, 1)

    if num_inserts == 0:
        return []
    small = small_files(files, small_file_limit)
    plan, left = [], num_inserts
    for size, file_id in small:
        if left == 0:
            break
        take = min(left, _room(size, bytes_per_row, target_file_size))
        if take > 0:  # a small file with no whole row of room is skipped
            plan.append((file_id, take))
            left -= take
    split = split_size(bytes_per_row, target_file_size, insert_split_size)
    while left > 0:
        take = min(split, left)
        plan.append((None, take))
        left -= take
    return plan


def small_files(files: Iterable[Tuple[Hashable, float]], small_file_limit: float
                ) -> List[Tuple[float, Hashable]]:
    """[(size, file_id)] of the files below the small-file limit, in the order inserts top
    them up: emptiest first, ties by file_id."""
    return sorted(((size, file_id) for file_id, size in files if size < small_file_limit),
                  key=lambda t: (t[0], _sort_key(t[1])))


def _sort_key(file_id):
    # Ties on size are broken by file_id; fall back to (type name, str) so mixed id types
    # still sort deterministically instead of raising TypeError.
    return (type(file_id).__name__, file_id) if isinstance(file_id, (str, int)) \
        else (type(file_id).__name__, str(file_id))


@dataclass(frozen=True)
class FileRewrite:
    """An existing file rewritten with its updated/deleted rows plus any packed inserts."""
    file_id: object
    updates: int
    inserts: int


@dataclass
class PartitionWritePlan:
    rewrites: List[FileRewrite] = field(default_factory=list)   # in `files` order
    new_files: List[int] = field(default_factory=list)  # insert counts, one per new file

    @property
    def inserts_into_existing(self) -> int:
        return sum(r.inserts for r in self.rewrites)

    @property
    def inserts_into_new(self) -> int:
        return sum(self.new_files)


@dataclass(frozen=True)
class Sizing:
    """The sizes a write plans with (docs/design.md, Algorithms 1 and 3)."""
    bytes_per_row: float
    target_file_size: int
    small_file_limit: int
    insert_split_size: Optional[int] = None


def plan_partition_write(files: Iterable[Tuple[Hashable, float]],
                         updates_by_file: Mapping[Any, int], num_inserts: int,
                         sizing: Sizing, excluded: Iterable[Hashable] = ()
                         ) -> PartitionWritePlan:
    """Plan one partition of an upsert (copy-on-write).

    `updates_by_file` maps file_id -> rows updated or deleted in that file (the file holding
    the key must be rewritten whatever its size). Inserts are packed by `plan_inserts`, never
    into `excluded` files. A file that has updates and is small can also take inserts: it is
    rewritten once with both. Files with neither are left out (never read or rewritten).
    Updates are assumed not to change a file's size, as Hudi assumes.
    """
    files = list(files)
    _check_files(files)
    known = {file_id for file_id, _ in files}
    for file_id, count in dict(updates_by_file).items():
        if file_id not in known:
            raise ValueError(f"updates_by_file: file_id {file_id!r} is not in files")
        _check_int(f"updates_by_file[{file_id!r}]", count, 0)

    # Excluded files (e.g. in a pending clustering plan) are simply not offered for packing.
    excluded = set(excluded)
    candidates = [(file_id, size) for file_id, size in files if file_id not in excluded]
    assigned = plan_inserts(candidates, num_inserts, sizing.bytes_per_row, sizing.target_file_size,
                            sizing.small_file_limit, sizing.insert_split_size)
    packed = {file_id: n for file_id, n in assigned if file_id is not None}
    plan = PartitionWritePlan(new_files=[n for file_id, n in assigned if file_id is None])
    for file_id, _ in files:
        updates, inserts = updates_by_file.get(file_id, 0), packed.get(file_id, 0)
        if updates or inserts:
            plan.rewrites.append(FileRewrite(file_id, updates, inserts))
    return plan


def summarize(plans: Union[Iterable[PartitionWritePlan], Mapping[Any, PartitionWritePlan]]
              ) -> Dict[str, int]:
    """Counts for logging over PartitionWritePlans (an iterable, or a mapping of them)."""
    if isinstance(plans, Mapping):
        plans = plans.values()
    out = {"files_rewritten": 0, "new_files": 0, "updates": 0,
           "inserts_into_existing": 0, "inserts_into_new": 0}
    for p in plans:
        out["files_rewritten"] += len(p.rewrites)
        out["new_files"] += len(p.new_files)
        out["updates"] += sum(r.updates for r in p.rewrites)
        out["inserts_into_existing"] += p.inserts_into_existing
        out["inserts_into_new"] += p.inserts_into_new
    return out
