"""sized_clean: the cleaner run on demand (it also runs after every commit, where it only
looks at the set-aside files and locks): set-aside files past retention, locks set aside
as stale past their grace (an hour: table/lock.py), old instants into the archive, and
leftovers in the table's tree.

Leftovers are hidden entries no reader takes for data (`_temporary/`, `_SUCCESS`,
`_committed_*`, `.spark-staging-*` of another engine's crashed write) older than a grace
period. Visible
data files that no commit recorded are not deleted: every engine reads their rows as the
table's, so deleting them would lose rows; they are counted, and `sized_repair` records
them.
"""
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from pyspark.sql import SparkSession

from python_adapter.core.config import retention_values
from python_adapter.core.retention import Retention
from python_adapter.core.sizes import count_of
from python_adapter.io.fs import hidden
from python_adapter.io.interfaces import FileSystem
from python_adapter.spark.catalog.tables import TableRef
from python_adapter.spark.locking import locked_table
from python_adapter.table.archive import clean, table_retention

# Leftovers younger than this are left alone whatever the retention: another engine's
# write may still be running.
MIN_GRACE_HOURS = 1.0


@dataclass
class CleanResult:
    table: str
    set_aside_dirs: int     # instants whose set-aside files were deleted
    archived: int           # instants folded into the archive
    leftovers: int          # hidden leftovers deleted from the table's tree
    unrecorded: int         # visible files no commit records (kept)
    retention: Retention
    stale_locks: int = 0    # locks set aside as stale, past their grace, deleted

    @property
    def message(self) -> str:
        text = (f"cleaned {self.table}: set-aside files of "
                f"{count_of(self.set_aside_dirs, 'instant')} deleted, "
                f"{count_of(self.archived, 'instant')} archived, "
                f"{count_of(self.leftovers, 'leftover')} removed{self._locks} (retention: "
                f"{count_of(self.retention.commits, 'commit')}, "
                f"{self.retention.hours:g} {'hour' if self.retention.hours == 1 else 'hours'})")
        if self.unrecorded:
            text += (f"; {count_of(self.unrecorded, 'data file')} in the table's directory "
                     f"that no commit records: kept, as readers see the rows (sized_repair "
                     f"records such files)")
        return text

    @property
    def _locks(self) -> str:
        return f", {count_of(self.stale_locks, 'stale lock file')} deleted" \
            if self.stale_locks else ""


def clean_table(spark: SparkSession, table: TableRef,
                options: Optional[Mapping[str, Any]] = None,
                log: Callable[[str], None] = print) -> CleanResult:
    """Clean the table now. options: retain_commits, retain_hours (default: the table's,
    as its last write recorded them)."""
    options = options or {}
    name = table.name
    with locked_table(spark, table, "clean", log=log) as here:
        fs, proto = here.fs, here.proto
        recorded = table_retention(proto.timeline)
        retention = Retention(*retention_values(
            options.get("retain_commits", recorded.commits),
            options.get("retain_hours", recorded.hours)))
        cleaned = clean(fs, proto.timeline, proto.replaced_dir, retention, batch=1)
        grace_ms = max(retention.hours, MIN_GRACE_HOURS) * 3_600_000
        leftovers = _delete_leftovers(fs, proto.location, time.time() * 1000 - grace_ms)
        index = proto.timeline.file_index()
        unrecorded = sum(1 for f in fs.list_files(proto.location)
                         if f.path[len(proto.location):].lstrip("/") not in index)
    result = CleanResult(name, cleaned.set_aside_dirs, cleaned.archived, leftovers,
                         unrecorded, retention, cleaned.stale_locks)
    log(result.message)
    return result


def _delete_leftovers(fs: FileSystem, location: str, before_ms: float) -> int:
    """Delete the hidden entries of the table's tree last modified before `before_ms`;
    returns how many."""
    deleted, stack = 0, [location]
    while stack:
        for st in fs.list_dir(stack.pop()):
            if hidden(st.name):
                if st.modified_ms < before_ms:
                    fs.delete(st.path)
                    deleted += 1
            elif st.is_dir:
                stack.append(st.path)
    return deleted
