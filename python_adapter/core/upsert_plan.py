"""What an upsert or insert writes where (Hudi copy-on-write file sizing). Pure.

Input: the tag statistics of the batch (per group of rows: their partition, the file that
holds their key if any, whether they stay in that file's partition, whether they are
deletes, how many) and the table's files. Per partition, `binpack.plan_partition_write`
decides which files are rewritten (they hold updated or deleted keys, or are small enough
to take inserts) and how many new files take the rest. Each output file is a slot, written
by exactly one Spark task (spark/write/slot_write.py); each slot that takes inserts gets a range
of [0, 1) of a hash of the key, so the executing side routes a row by its hash alone.
"""
import os
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, cast

from python_adapter.core.binpack import PartitionWritePlan, Sizing, plan_partition_write, summarize
from python_adapter.core.partitions import check_partition_texts, partition_path

Texts = Tuple[Optional[str], ...]  # partition values as the texts Spark names directories by


@dataclass(frozen=True)
class TagGroup:
    """Rows of the batch that go the same way."""
    values: Texts              # the rows' partition values
    old_values: Texts          # those of the file holding their keys (when found)
    file: Optional[str]        # rel path of that file; None for keys the table does not hold
    stays: bool                # the rows stay in that file's partition
    deleted: bool              # delete rows (delete_column)
    rows: int


@dataclass(frozen=True)
class Slot:
    """One output file: a rewrite of an existing file, or a new file."""
    slot: int
    partition: str             # partition path
    values: Texts
    file: Optional[str]        # rel path of the file rewritten, None for a new file
    inserts: int
    updates: int = 0


@dataclass(frozen=True)
class InsertRange:
    """The inserts of a partition whose key hash falls in [lo, hi) go to `slot`."""
    values: Texts
    lo: float
    hi: float
    slot: int
    rewrites_file: bool        # the slot rewrites an existing file (its rows ride along)


@dataclass(frozen=True)
class UpsertPlan:
    slots: Tuple[Slot, ...]
    ranges: Tuple[InsertRange, ...]
    weights: Dict[int, Tuple[str, float]]   # slot -> (partition, estimated bytes)
    summary: Dict[str, int]
    rows: Dict[str, int]                    # rows inserted, updated, deleted (by key)

    @property
    def rewrites(self) -> Tuple[Slot, ...]:
        return tuple(s for s in self.slots if s.file)


def _counts(groups: Iterable[TagGroup], pcols):
    """(partition texts by path, rows updated or deleted per file, inserts per partition)."""
    values_of: Dict[str, Texts] = {}
    updates_by_file: Dict[str, int] = {}
    inserts_by_part: Dict[str, int] = {}
    for g in groups:
        if g.file is not None:
            updates_by_file[g.file] = updates_by_file.get(g.file, 0) + g.rows
            values_of.setdefault(os.path.dirname(g.file), g.old_values)
            if g.stays or g.deleted:
                continue
        if g.deleted:
            continue
        part = partition_path(pcols, g.values)
        values_of.setdefault(part, g.values)
        inserts_by_part[part] = inserts_by_part.get(part, 0) + g.rows
    return values_of, updates_by_file, inserts_by_part


def plan_upsert(groups: Iterable[TagGroup], file_bytes: Mapping[str, int],
                pcols: Sequence[str], sizing: Sizing, excluded: Iterable[str] = (),
                file_rows: Optional[Mapping[str, int]] = None) -> UpsertPlan:
    """The slots, insert ranges and task weights of an upsert. file_bytes: {rel path: bytes}
    of every file of the table; excluded: files never packed (in a pending clustering
    plan); file_rows: {rel path: rows} where known, so a file losing rows packs as the
    smaller file it becomes (bytes_left). Fails, before anything is written, on partition
    values Hive reads back as NULL."""
    groups = list(groups)
    check_partition_texts(pcols, (g.values for g in groups))
    file_bytes = bytes_left(file_bytes, file_rows or {}, groups)
    values_of, updates_by_file, inserts_by_part = _counts(groups, pcols)
    files_of: Dict[str, List[Tuple[str, int]]] = {}
    for rel, size in file_bytes.items():
        files_of.setdefault(os.path.dirname(rel), []).append((rel, size))
    plans: Dict[str, PartitionWritePlan] = {}
    for part in sorted(set(inserts_by_part) | {os.path.dirname(f) for f in updates_by_file}):
        upd = {f: c for f, c in updates_by_file.items() if os.path.dirname(f) == part}
        plans[part] = plan_partition_write(sorted(files_of.get(part, [])), upd,
                                           inserts_by_part.get(part, 0), sizing, excluded=excluded)
    slots: List[Slot] = []
    for part, plan in plans.items():
        for rw in plan.rewrites:
            # file ids here are the rel paths of files_of
            file = cast(str, rw.file_id)
            slots.append(Slot(len(slots), part, values_of[part], file, rw.inserts, rw.updates))
        for count in plan.new_files:
            slots.append(Slot(len(slots), part, values_of[part], None, count))
    weights = {s.slot: (s.partition, (file_bytes[s.file] if s.file else 0)
                        + (s.inserts + s.updates) * sizing.bytes_per_row) for s in slots}
    return UpsertPlan(tuple(slots), _insert_ranges(slots, inserts_by_part), weights,
                      summarize(plans), row_changes(groups))


def bytes_left(file_bytes: Mapping[str, int], file_rows: Mapping[str, int],
               groups: Sequence[TagGroup]) -> Dict[str, int]:
    """{rel path: bytes} with each file's bytes scaled to the rows it keeps: rows deleted, or
    moving to another partition, leave it. A microbatch rerun deletes every row of its
    window's files; counted at their old size those files took few inserts and the rest
    went to new files (a rerun day of 4 files came back as 5, two small), counted empty they
    are refilled as a fresh build fills files. Rows that stay in the file (updates) are
    counted back, at most up to the file's rows: an update in place leaves the size as it
    is, and one whose old row a microbatch window deleted brings a row back."""
    leaving: Dict[str, int] = {}
    staying: Dict[str, int] = {}
    for g in groups:
        if g.file is None:
            continue
        into = leaving if g.deleted or not g.stays else staying
        into[g.file] = into.get(g.file, 0) + g.rows
    out = dict(file_bytes)
    for rel, gone in leaving.items():
        rows = file_rows.get(rel, 0)
        if rows > 0 and rel in out:
            kept = min(rows, max(0, rows - gone) + staying.get(rel, 0))
            out[rel] = int(out[rel] * kept / rows)
    return out


def row_changes(groups: Iterable[TagGroup]) -> Dict[str, int]:
    """Rows the batch inserts, updates and deletes, by key: a row whose key the table holds
    updates it (also when it changes partition) or deletes it; a delete of a key the table
    does not hold changes nothing."""
    out = {"inserted": 0, "updated": 0, "deleted": 0}
    for g in groups:
        if g.file is not None:
            out["deleted" if g.deleted else "updated"] += g.rows
        elif not g.deleted:
            out["inserted"] += g.rows
    return out


def _insert_ranges(slots, inserts_by_part):
    """Per partition, consecutive ranges of [0, 1) in proportion to each slot's inserts."""
    ranges, done = [], {}
    for s in slots:
        if not s.inserts:
            continue
        total = inserts_by_part[s.partition]
        lo = done.get(s.partition, 0)
        ranges.append(InsertRange(s.values, lo / total, (lo + s.inserts) / total, s.slot,
                                  s.file is not None))
        done[s.partition] = lo + s.inserts
    return tuple(ranges)
