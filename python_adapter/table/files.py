"""The table's files as its timeline records them, against what the filesystem holds.

A file is known by its path relative to the table; the timeline's completed instants say
which files the table holds (`Timeline.file_index`). Hidden paths are never data.
"""
import os
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from python_adapter.core.sizes import count_of
from python_adapter.errors import DamagedTableError
from python_adapter.io.interfaces import FileSystem
from python_adapter.table.timeline import FileEntry, Timeline


def file_entry(partition: str, rel_path: str, rows: int, size: int, staged_path: str = "",
               key_range: Tuple[str, str] = ("", "")) -> FileEntry:
    """A FileEntry of a data file; its file group is its name."""
    return FileEntry(partition=partition, path=rel_path, rows=rows, bytes=size,
                     file_group=os.path.basename(rel_path), moved_path=staged_path,
                     key_min=key_range[0], key_max=key_range[1])


def partitions_of(*entry_lists: Iterable[FileEntry]) -> set:
    """The partition directories of some FileEntry lists (adds and removes of a commit)."""
    return {e.partition for entries in entry_lists for e in entries}


@dataclass(frozen=True)
class FileStats:
    """What the metastore's statistics say of a partition or a table (numFiles, totalSize,
    numRows), from the files the timeline records: rows None when a file's are unknown."""
    files: int
    bytes: int
    rows: Optional[int]


def file_stats(entries: Iterable[FileEntry]) -> FileStats:
    entries = list(entries)
    rows = None if any(e.rows < 0 for e in entries) else sum(e.rows for e in entries)
    return FileStats(len(entries), sum(e.bytes for e in entries), rows)


def partition_stats(index: Mapping[str, FileEntry], partitions: Iterable[str]
                    ) -> Dict[str, FileStats]:
    """FileStats of each of `partitions` that holds files in `index` ({rel path:
    FileEntry}, a table's files); a partition without files has none."""
    wanted = set(partitions)
    grouped: Dict[str, List[FileEntry]] = {}
    for entry in index.values():
        if entry.partition in wanted:
            grouped.setdefault(entry.partition, []).append(entry)
    return {part: file_stats(entries) for part, entries in grouped.items()}


def current_files(fs: FileSystem, location: str, timeline: Optional[Timeline] = None,
                  check: Optional[str] = None) -> List[FileEntry]:
    """FileEntry of every data file of the table now (hidden paths are not data), with the
    rows and key statistics the timeline recorded when it has them. check: the table's
    name; when given, every file the timeline records as current must be there with its
    recorded size, or DamagedTableError names the files and the way out."""
    index = timeline.file_index() if timeline is not None else {}
    out = []
    for f in fs.list_files(location):
        rel = f.path[len(location):].lstrip("/")
        known = index.get(rel)
        out.append(known if known is not None and known.bytes == f.size
                   else file_entry(os.path.dirname(rel), rel, -1, f.size))
    if check is not None:
        missing, changed = damaged_files(index, out)
        if missing or changed:
            raise DamagedTableError(damage_message(check, missing, changed))
    return out


def damaged_files(index: Mapping[str, FileEntry], current: Iterable[FileEntry]
                  ) -> Tuple[List[FileEntry], List[Tuple[FileEntry, int]]]:
    """(recorded entries whose file is gone, (recorded entry, size now) of files whose size
    changed) between the timeline's file index and the table's files now."""
    size_now = {f.path: f.bytes for f in current}
    missing = [e for p, e in sorted(index.items()) if p not in size_now]
    changed = [(e, size_now[p]) for p, e in sorted(index.items())
               if p in size_now and size_now[p] != e.bytes]
    return missing, changed


def _rows(entry):
    return count_of(entry.rows, "row") if entry.rows >= 0 else "rows unknown"


def damage_message(name: str, missing: Sequence[FileEntry],
                   changed: Sequence[Tuple[FileEntry, int]], shown: int = 5) -> str:
    parts = []
    if missing:
        listed = ", ".join(f"{e.path} ({_rows(e)})" for e in missing[:shown])
        more = f" and {len(missing) - shown} more" if len(missing) > shown else ""
        parts.append(f"{len(missing)} missing: {listed}{more}")
    if changed:
        listed = ", ".join(f"{e.path} ({e.bytes} -> {size} bytes)" for e, size in changed[:shown])
        more = f" and {len(changed) - shown} more" if len(changed) > shown else ""
        parts.append(f"{len(changed)} changed: {listed}{more}")
    return (f"files of {name} that its commits recorded were deleted or changed outside them "
            f"({'; '.join(parts)}). Nothing was written: going on would build on rows that are "
            f"gone. Put the files back, or record the table as it is now (the rows of those "
            f"files are then lost) with: dbt run-operation sized_repair --args "
            f"'{{relation: {name}}}', or rebuild it with --full-refresh")
