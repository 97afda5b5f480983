"""sized_repair: record a table as it really is, after files were deleted or changed
outside its commits, or after a timeline file became unreadable, as a new instant that
lists what was lost and gained.

Writes refuse to go on over such a table (transaction.current_files, timeline.py's
UnreadableInstantError): rows would be lost or duplicated without anyone deciding it. The
repair is that decision, taken by a user: the unreadable file of a completed instant is set
aside (`<meta dir>/quarantine/`), so the timeline reads as if that instant had never been;
then a file that is gone is recorded as removed; a changed file that is still readable
Parquet is recorded with its size and rows now; a data file no commit recorded (another
engine's, or one the set-aside instant wrote) is recorded where it is with its rows, which
readers see already; a file that cannot be read (changed in size, overwritten in place, not
Parquet) is set aside (under the instant's replaced directory, kept for the table's
retention) and recorded as removed. Nothing else changes.
"""
from dataclasses import dataclass
from typing import Callable, Tuple, cast
from urllib.parse import unquote

from pyspark.sql import SparkSession

from python_adapter.core.sizes import count_of
from python_adapter.spark.catalog.tables import TableRef
from python_adapter.spark.locking import locked_table
from python_adapter.spark.table_files import rows_per_file, unreadable_file
from python_adapter.table.files import current_files, damaged_files, file_entry
from python_adapter.table.timeline import Instant, setting_aside_unreadable
from python_adapter.table.transaction import TxnOptions


@dataclass
class RepairResult:
    instant: str
    files_missing: int
    files_changed: int
    files_unreadable: int
    rows_lost: int          # recorded rows no longer in the table (unknown rows count 0)
    files_unrecorded: int = 0   # data files no commit recorded, now recorded
    rows_gained: int = 0        # their rows, and rows changed files gained
    set_aside: Tuple[str, ...] = ()   # unreadable timeline files moved to the quarantine

    @property
    def message(self) -> str:
        aside = (f"; unreadable timeline {'file' if len(self.set_aside) == 1 else 'files'} "
                 f"{', '.join(self.set_aside)} set aside" if self.set_aside else "")
        if not self.instant:
            return f"nothing to repair: every file the timeline records is in place{aside}"
        return (f"repair {self.instant}: {self.files_missing} missing, {self.files_changed} "
                f"changed ({self.files_unreadable} unreadable, set aside), "
                f"{count_of(self.files_unrecorded, 'unrecorded file')} recorded; "
                f"{count_of(self.rows_lost, 'row')} lost, {count_of(self.rows_gained, 'row')} "
                f"gained{aside}")


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
    unreadable: list      # FileEntry of files Spark cannot read (recorded or not)
    unrecorded: list      # FileEntry (rows now) of readable data files no commit recorded

    def __bool__(self) -> bool:
        return bool(self.missing or self.readable or self.unreadable or self.unrecorded)

    @property
    def rows_lost(self) -> int:
        lost = sum(max(e.rows, 0) for e in self.missing + self.unreadable)
        return lost + sum(max(old.rows - new.rows, 0) for old, new in self.readable if old.rows >= 0)

    @property
    def rows_gained(self) -> int:
        grown = sum(max(new.rows - max(old.rows, 0), 0) for old, new in self.readable)
        return grown + sum(e.rows for e in self.unrecorded)


def _find_damage(spark, proto, current):
    """What differs between the timeline's record and the files: gone, changed in size or
    rows, unreadable (whatever their size), or there without a record."""
    index = proto.timeline.file_index()
    missing, _changed = damaged_files(index, current)
    now = {f.path: f for f in current}
    rows_now, unreadable = _rows_per_file(spark, proto.location, list(now))
    readable = [(index[p], file_entry(index[p].partition, p, rows_now[p], now[p].bytes))
                for p in sorted(rows_now) if p in index
                if now[p].bytes != index[p].bytes or rows_now[p] != index[p].rows >= 0]
    unrecorded = [file_entry(now[p].partition, p, rows_now[p], now[p].bytes)
                  for p in sorted(rows_now) if p not in index]
    return _Damage(missing, readable, [index.get(p, now[p]) for p in sorted(unreadable)],
                   unrecorded)


def repair_table(spark: SparkSession, table: TableRef,
                 log: Callable[[str], None] = print) -> RepairResult:
    with setting_aside_unreadable(), \
            locked_table(spark, table, "repair", log=log) as here:
        fs, proto = here.fs, here.proto
        set_aside = tuple(proto.timeline.set_aside)
        current = current_files(fs, proto.location, proto.timeline)
        damage = _find_damage(spark, proto, current)
        if not damage:
            result = RepairResult("", 0, 0, 0, 0, set_aside=set_aside)
            log(result.message)
            return result
        removed = damage.missing + [old for old, _ in damage.readable] + damage.unreadable
        added = [new for _, new in damage.readable] + damage.unrecorded
        in_place = {e.path for e in damage.missing} | {a.path for a in added}
        # registered stays empty: a repaired partition may be one the metastore lost
        with here.transaction("repair", TxnOptions(extra={
                "rows_lost": damage.rows_lost, "rows_gained": damage.rows_gained,
                "files_missing": len(damage.missing),
                "files_changed": len(damage.readable) + len(damage.unreadable),
                "files_unreadable": len(damage.unreadable),
                "files_unrecorded": len(damage.unrecorded),
                "set_aside": ",".join(set_aside)})) as txn:
            txn.add(added)      # recorded where they are
            txn.remove(removed, in_place=in_place)  # unreadable files are set aside
        done = cast(Instant, txn.done)  # the transaction completed
    _log_damage(log, damage, proto, done.instant)
    result = RepairResult(done.instant, len(damage.missing),
                          len(damage.readable) + len(damage.unreadable), len(damage.unreadable),
                          damage.rows_lost, len(damage.unrecorded), damage.rows_gained,
                          set_aside)
    log(result.message)
    return result


def _log_damage(log, damage: _Damage, proto, instant: str) -> None:
    aside = proto.aside_dir(instant)
    for name in proto.timeline.set_aside:
        log(f"unreadable timeline file {name}: set aside at {proto.timeline.quarantine_dir}/")
    for e in damage.missing:
        log(f"missing: {e.path} ({count_of(e.rows, 'row')})" if e.rows >= 0 else f"missing: {e.path}")
    for e in damage.unrecorded:
        log(f"unrecorded: {e.path} ({count_of(e.rows, 'row')}), recorded where it is")
    for e in damage.unreadable:
        log(f"unreadable: {e.path}, set aside at {aside}/{e.path}")
