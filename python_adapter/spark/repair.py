"""sized_repair: record a table as it really is, after files were deleted or changed
outside its commits, as a new instant that lists what was lost.

Writes refuse to go on over such a table (transaction.current_files): rows would be lost
or duplicated without anyone deciding it. The repair is that decision, taken by a user:
a file that is gone is recorded as removed; a changed file that is still readable Parquet
is recorded with its size and rows now; a file that cannot be read (changed in size, or
overwritten in place) is set aside (under the instant's replaced directory, until the next
commit's cleanup) and recorded as removed. Nothing else changes.
"""
from dataclasses import dataclass
from typing import Callable
from urllib.parse import unquote

from pyspark.sql import SparkSession

from python_adapter.core.sizes import format_count
from python_adapter.spark.catalog import TableRef
from python_adapter.spark.catalog_sync import SparkCatalog
from python_adapter.spark.locking import locked_table
from python_adapter.spark.table_files import rows_per_file, unreadable_file
from python_adapter.table.files import current_files, damaged_files, file_entry
from python_adapter.table.transaction import Transaction


@dataclass
class RepairResult:
    instant: str
    files_missing: int
    files_changed: int
    files_unreadable: int
    rows_lost: int          # recorded rows no longer in the table (unknown rows count 0)

    @property
    def message(self) -> str:
        if not self.instant:
            return "nothing to repair: every file the timeline records is in place"
        return (f"repair {self.instant}: {self.files_missing} missing, {self.files_changed} "
                f"changed ({self.files_unreadable} unreadable, set aside) files recorded; "
                f"{format_count(self.rows_lost)} rows lost")


def _rows_per_file(spark, location, files):
    """({rel path: rows} from the footers, [rel paths Spark cannot read]): one job over the
    files; when it fails on a file, that file is set apart and the job runs again."""
    left, unreadable = sorted(files), []
    while left:
        try:
            return rows_per_file(spark, location, left), unreadable
        except Exception as exc:  # AnalysisException, SparkException via py4j
            bad = unreadable_file(exc)
            rel = next((r for r in left if bad and unquote(bad).endswith("/" + r)), None)
            if rel is None:
                raise
            unreadable.append(rel)
            left.remove(rel)
    return {}, unreadable


@dataclass
class _Damage:
    missing: list         # recorded FileEntry whose file is gone
    readable: list        # (recorded FileEntry, FileEntry now) of changed files still readable
    unreadable: list      # recorded FileEntry of files Spark cannot read

    @property
    def rows_lost(self) -> int:
        lost = sum(max(e.rows, 0) for e in self.missing + self.unreadable)
        return lost + sum(max(old.rows - new.rows, 0) for old, new in self.readable if old.rows >= 0)


def _find_damage(spark, proto, current):
    """What differs between the timeline's record and the files: gone, changed in size or
    rows, or unreadable (whatever their size)."""
    index = proto.timeline.file_index()
    missing, changed = damaged_files(index, current)
    size_now = {f.path: f.bytes for f in current}
    rows_now, unreadable = _rows_per_file(spark, proto.location,
                                          [p for p in size_now if p in index])
    readable = [(index[p], file_entry(index[p].partition, p, rows_now[p], size_now[p]))
                for p in sorted(rows_now)
                if size_now[p] != index[p].bytes or rows_now[p] != index[p].rows >= 0]
    return _Damage(missing, readable, [index[p] for p in sorted(unreadable)])


def repair_table(spark: SparkSession, table: TableRef,
                 log: Callable[[str], None] = print) -> RepairResult:
    with locked_table(spark, table, "repair", log=log) as (info, fs, proto):
        current = current_files(fs, proto.location, proto.timeline)
        damage = _find_damage(spark, proto, current)
        if not (damage.missing or damage.readable or damage.unreadable):
            log(RepairResult("", 0, 0, 0, 0).message)
            return RepairResult("", 0, 0, 0, 0)
        removed = damage.missing + [old for old, _ in damage.readable] + damage.unreadable
        added = [new for _, new in damage.readable]
        in_place = {e.path for e in damage.missing} | {a.path for a in added}
        catalog = SparkCatalog(spark, fs, table, proto.location, log)
        with Transaction(proto, catalog, "repair", info.partition_columns, extra={
                "rows_lost": damage.rows_lost, "files_missing": len(damage.missing),
                "files_changed": len(damage.readable) + len(damage.unreadable),
                "files_unreadable": len(damage.unreadable)}) as txn:
            txn.add(added)      # recorded where they are
            txn.remove(removed, in_place=in_place)  # unreadable files are set aside
        done = txn.done
    for e in damage.missing:
        log(f"missing: {e.path} ({format_count(e.rows)} rows)" if e.rows >= 0 else f"missing: {e.path}")
    for e in damage.unreadable:
        log(f"unreadable: {e.path}, set aside at {proto.aside_dir(done.instant)}/{e.path} until "
            f"the next commit")
    result = RepairResult(done.instant, len(damage.missing),
                          len(damage.readable) + len(damage.unreadable), len(damage.unreadable),
                          damage.rows_lost)
    log(result.message)
    return result
