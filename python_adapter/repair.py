"""sized_repair: record a table as it really is, after files were deleted or changed
outside its commits, as a new instant that lists what was lost.

Writes refuse to go on over such a table (transaction.current_files): rows would be lost
or duplicated without anyone deciding it. The repair is that decision, taken by a user:
a file that is gone is recorded as removed; a changed file that is still readable Parquet
is recorded with its size and rows now; a changed file that cannot be read is set aside
(under the instant's replaced directory, until the next commit's cleanup) and recorded
as removed. Nothing else changes.
"""
from dataclasses import dataclass

from python_adapter.catalog import sync_partitions
from python_adapter.commit import file_entry
from python_adapter.sizes import format_count
from python_adapter.table_files import partitions_of, sync_changed_partitions
from python_adapter.transaction import current_files, damaged_files, locked_table


@dataclass
class RepairResult:
    instant: str
    files_missing: int
    files_changed: int
    files_unreadable: int
    rows_lost: int          # recorded rows no longer in the table (unknown rows count 0)

    @property
    def message(self):
        if not self.instant:
            return "nothing to repair: every file the timeline records is in place"
        return (f"repair {self.instant}: {self.files_missing} missing, {self.files_changed} "
                f"changed ({self.files_unreadable} unreadable, set aside) files recorded; "
                f"{format_count(self.rows_lost)} rows lost")


def _footer_rows(spark, path):
    """Rows of one Parquet file from its footer, None when it cannot be read."""
    try:
        return spark.read.parquet(path).count()
    except Exception:  # a truncated or foreign file: AnalysisException, SparkException, py4j
        return None


def repair_table(spark, table, log=print) -> RepairResult:
    with locked_table(spark, table, "repair", log=log) as (info, fs, proto):
        current = current_files(fs, proto.location, proto.timeline)
        missing, changed = damaged_files(proto.timeline.file_index(), current)
        if not missing and not changed:
            result = RepairResult("", 0, 0, 0, 0)
            log(result.message)
            return result
        lost = sum(max(e.rows, 0) for e in missing)
        added, unreadable = [], []
        for entry, size in changed:
            rows = _footer_rows(spark, proto.final_path(entry.path))
            if rows is None:
                unreadable.append(entry)
                lost += max(entry.rows, 0)
            else:
                added.append(file_entry(entry.partition, entry.path, rows, size))
                lost += max(entry.rows - rows, 0) if entry.rows >= 0 else 0
        removed = missing + [e for e, _ in changed]
        in_place = {e.path for e in missing} | {a.path for a in added}
        instant = proto.request("repair", info.partition_columns, extra={
            "rows_lost": lost, "files_missing": len(missing), "files_changed": len(changed),
            "files_unreadable": len(unreadable)})
        try:
            inflight = proto.mark_inflight(instant, added, removed, in_place=in_place)
            proto.publish(inflight)
            sync_changed_partitions(spark, fs, proto.location, table, partitions_of(added, removed))
            done = proto.complete(inflight)
        except Exception:
            proto.abort(instant)
            sync_partitions(spark, table, bool(info.partition_columns))
            raise
        proto.cleanup(done)
    result = RepairResult(done.instant, len(missing), len(changed), len(unreadable), lost)
    for e in missing:
        log(f"missing: {e.path} ({format_count(e.rows)} rows)" if e.rows >= 0 else f"missing: {e.path}")
    for e in unreadable:
        log(f"unreadable, set aside at {proto.aside_dir(done.instant)}/{e.path} until the next "
            f"commit: {e.path}")
    log(result.message)
    return result
