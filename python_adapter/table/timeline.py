"""The table's timeline: one Avro file (fastavro) per instant and state under
`<meta dir>/timeline/`, the meta dir being `<parent>/.sized/<table dir name>` beside the table
(`meta_dir_of`): the table's own directory holds nothing but its live data files, so an
engine that reads `<table>/**/*.parquet` or scans the directory gets exactly the table.

File names follow Hudi: `<instant>.<action>.requested`, `<instant>.<action>.inflight`, and
`<instant>.<action>` once completed. An instant is a UTC timestamp to the millisecond
(`20261122103000123`). Schema changes bump SCHEMA_VERSION; readers refuse newer versions.
"""
import io
import re
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, Sequence, Tuple

import fastavro

from python_adapter.errors import TimelineError

from python_adapter.io.fs import FileStatus, HadoopFS

SCHEMA_VERSION = 1
STATES = ("requested", "inflight", "completed")
ACTIONS = ("commit", "replacecommit", "rollback")

_FILE_SCHEMA = {
    "type": "record", "name": "FileEntry", "fields": [
        {"name": "partition", "type": "string"},        # 'a=1/b=x', '' when unpartitioned
        {"name": "path", "type": "string"},             # relative to the table location
        {"name": "rows", "type": "long"},               # -1 when unknown
        {"name": "bytes", "type": "long"},
        {"name": "file_group", "type": "string"},
        {"name": "moved_path", "type": "string"},       # staged (adds) / set aside (removes)
        {"name": "key_min", "type": "string"},          # unique_key stats for tagging ('' unknown)
        {"name": "key_max", "type": "string"},
    ],
}
INSTANT_SCHEMA = fastavro.parse_schema({
    "type": "record", "name": "SizedInstant", "namespace": "dbt_sized_spark.timeline",
    "fields": [
        {"name": "schema_version", "type": "int"},
        {"name": "instant", "type": "string"},
        {"name": "action", "type": "string"},
        {"name": "state", "type": "string"},
        {"name": "operation", "type": "string"},
        {"name": "created_at_ms", "type": "long"},
        {"name": "partition_columns", "type": {"type": "array", "items": "string"}},
        {"name": "added", "type": {"type": "array", "items": _FILE_SCHEMA}},
        {"name": "removed", "type": {"type": "array", "items": "FileEntry"}},
        {"name": "rows_written", "type": "long"},
        {"name": "bytes_written", "type": "long"},
        {"name": "extra", "type": {"type": "map", "values": "string"}},
    ],
})


# extra keys of an instant that (re)defines the table in the metastore: a first build, or a
# full refresh that changes its columns, partitioning, format or location
DEFINES_TABLE = "defines_table"
PREVIOUS_DDL = "previous_ddl"            # the CREATE statement of the definition it replaces
PREVIOUS_LOCATION = "previous_location"
PREVIOUS_TYPE = "previous_type"          # MANAGED or EXTERNAL


META_DIR = ".sized"


def meta_dir_of(location: str) -> str:
    """The directory of a table's metadata (timeline, lock, staging, set-aside files):
    `<parent>/.sized/<name>` for a table at `<parent>/<name>`. Beside the table, not inside
    it: readers such as DuckDB and polars descend into hidden directories, and a DROP of a
    managed table deletes its directory. Renames between the two stay on one filesystem."""
    loc = location.rstrip("/")
    parent, _, name = loc.rpartition("/")
    if not name or not parent or re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*:/*", parent):
        raise TimelineError(f"table location {location!r} has no parent directory to keep "
                            f"the table's metadata beside it")
    return f"{parent}/{META_DIR}/{name}"


def legacy_meta_dir_of(location: str) -> str:
    """Where tables written by earlier versions kept their metadata: inside the table."""
    return f"{location.rstrip('/')}/{META_DIR}"


@dataclass(frozen=True)
class FileEntry:
    partition: str
    path: str
    rows: int
    bytes: int
    file_group: str = ""
    moved_path: str = ""
    key_min: str = ""
    key_max: str = ""


@dataclass(frozen=True)
class Instant:
    instant: str
    action: str
    state: str
    operation: str
    created_at_ms: int = 0
    partition_columns: Tuple[str, ...] = ()
    added: Tuple[FileEntry, ...] = ()
    removed: Tuple[FileEntry, ...] = ()
    rows_written: int = 0
    bytes_written: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def file_name(self) -> str:
        base = f"{self.instant}.{self.action}"
        return base if self.state == "completed" else f"{base}.{self.state}"

    def with_state(self, state: str, **changes: Any) -> "Instant":
        return replace(self, state=state, **changes)


def new_instant_id(now: Optional[datetime] = None) -> str:
    now = now or datetime.now(timezone.utc)
    return now.strftime("%Y%m%d%H%M%S") + f"{now.microsecond // 1000:03d}"


def encode(instant: Instant) -> bytes:
    record = {
        "schema_version": SCHEMA_VERSION,
        "instant": instant.instant, "action": instant.action, "state": instant.state,
        "operation": instant.operation,
        "created_at_ms": instant.created_at_ms or int(time.time() * 1000),
        "partition_columns": list(instant.partition_columns),
        "added": [vars(f) for f in instant.added],
        "removed": [vars(f) for f in instant.removed],
        "rows_written": instant.rows_written, "bytes_written": instant.bytes_written,
        "extra": {str(k): str(v) for k, v in instant.extra.items()},
    }
    buf = io.BytesIO()
    fastavro.writer(buf, INSTANT_SCHEMA, [record])
    return buf.getvalue()


def decode(data: bytes, name: str = "<instant>") -> Instant:
    try:
        records = list(fastavro.reader(io.BytesIO(data)))
    except Exception as exc:  # fastavro raises several types for truncated/corrupt input
        raise TimelineError(f"timeline file {name} is corrupt or unreadable: {exc}") from exc
    if len(records) != 1:
        raise TimelineError(f"timeline file {name} holds {len(records)} records, expected 1")
    rec = records[0]
    if rec.get("schema_version", 0) > SCHEMA_VERSION:
        raise TimelineError(
            f"timeline file {name} has schema version {rec['schema_version']}, this dbt-sized-spark "
            f"reads up to {SCHEMA_VERSION}: upgrade the adapter")
    return Instant(
        instant=rec["instant"], action=rec["action"], state=rec["state"],
        operation=rec["operation"], created_at_ms=rec["created_at_ms"],
        partition_columns=tuple(rec["partition_columns"]),
        added=tuple(FileEntry(**f) for f in rec["added"]),
        removed=tuple(FileEntry(**f) for f in rec["removed"]),
        rows_written=rec["rows_written"], bytes_written=rec["bytes_written"],
        extra=dict(rec["extra"]),
    )


def parse_file_name(name: str) -> Optional[Tuple[str, str, str]]:
    """'<id>.<action>[.<state>]' -> (id, action, state) or None for other files."""
    parts = name.split(".")
    if len(parts) == 2 and parts[1] in ACTIONS:
        return parts[0], parts[1], "completed"
    if len(parts) == 3 and parts[1] in ACTIONS and parts[2] in ("requested", "inflight"):
        return parts[0], parts[1], parts[2]
    return None


class Timeline:
    """Reads and writes the instants of one table through a HadoopFS."""

    def __init__(self, fs: HadoopFS, table_location: str, meta_dir: Optional[str] = None
                 ) -> None:
        self.fs = fs
        self.location = table_location.rstrip("/")
        self.meta_dir = meta_dir or meta_dir_of(self.location)
        self.dir = f"{self.meta_dir}/timeline"
        # A write reads the timeline several times (recovery, bytes per row, file index);
        # an instant file is decoded once per (name, size, modification time).
        self._decoded = {}
        # While this process holds the table's writer lock nobody else changes the timeline,
        # so its listing is kept: the instants this object writes join it, and a deletion
        # (a rollback) drops it.
        self._hold = False
        self._listing = None
        self._own = {}  # file name -> Instant this object wrote while the listing was kept

    def hold(self, held: bool) -> None:
        """held=True once the writer lock is taken (the listing may be kept), False after."""
        self._hold = held
        self.forget()

    def forget(self) -> None:
        """Drop the kept listing (after instant files were changed behind this object)."""
        self._listing = None
        self._own = {}

    def write(self, instant: Instant) -> Instant:
        name, data = instant.file_name, encode(instant)
        self.fs.write_bytes(f"{self.dir}/{name}", data, overwrite=True)
        if self._listing is not None:  # the kept listing gains the file, as read back
            self._listing = [st for st in self._listing if st.name != name] + [
                FileStatus(path=f"{self.dir}/{name}", name=name, is_dir=False, size=-1,
                           modified_ms=-1)]
            self._own[name] = decode(data, name)
        return instant

    def delete_unfinished(self, instant: Instant) -> None:
        """Delete the inflight, then the requested file of an instant (rollback: the
        requested file goes last, so an interrupted rollback is found and repeated)."""
        self.forget()
        for state in ("inflight", "requested"):
            self.fs.delete(f"{self.dir}/{instant.instant}.{instant.action}.{state}",
                           recursive=False)

    def read(self, file_name: str) -> Instant:
        return decode(self.fs.read_bytes(f"{self.dir}/{file_name}"), file_name)

    def instants(self) -> List[Instant]:
        """Every instant at its latest state, oldest first: [Instant]."""
        latest = {}
        order = {"requested": 0, "inflight": 1, "completed": 2}
        listing = self._listing if self._listing is not None else self.fs.list_dir(self.dir)
        if self._hold:
            self._listing = listing
        for st in listing:
            parsed = parse_file_name(st.name)
            if parsed is None:
                continue
            ident, action, state = parsed
            seen = latest.get(ident)
            if seen is None or order[state] > order[seen[1]]:
                latest[ident] = (st, state)
        return [self._read_cached(st) for ident, (st, _) in sorted(latest.items())]

    def _read_cached(self, st):
        if st.name in self._own:
            return self._own[st.name]
        key = (st.name, st.size, st.modified_ms)
        if key not in self._decoded:
            self._decoded[key] = self.read(st.name)
        return self._decoded[key]

    def completed(self, actions: Sequence[str] = ACTIONS) -> List[Instant]:
        return [i for i in self.instants() if i.state == "completed" and i.action in actions]

    def file_index(self) -> Dict[str, FileEntry]:
        """{rel path: FileEntry} of the files the completed commits say the table holds."""
        files = {}
        for inst in self.completed():
            if inst.extra.get(DEFINES_TABLE) == "true":
                files = {}  # a new definition starts over (earlier files: another table's)
            for f in inst.removed:
                files.pop(f.path, None)
            for f in inst.added:
                files[f.path] = f
        return files

    def pending(self) -> List[Instant]:
        return [i for i in self.instants() if i.state != "completed"]


def learned_bytes_per_row(timeline: Timeline) -> Optional[float]:
    """bytes written / rows written over completed write commits (clustering and repairs not
    counted, as Hudi does), since the table's definition was last created (other columns
    write other rows); None before any."""
    rows = size = 0
    for inst in timeline.completed(actions=("commit",)):
        if inst.extra.get(DEFINES_TABLE) == "true":
            rows = size = 0
        if inst.rows_written > 0 and inst.operation != "repair":
            rows += inst.rows_written
            size += inst.bytes_written
    return size / rows if rows else None


def is_clustering(instant: Instant) -> bool:
    """A clustering's replacecommit; a compaction's (strategy none) orders by no column."""
    return instant.action == "replacecommit" and bool(instant.extra.get("cluster_by"))


def scheduled_plans(timeline: Timeline) -> List[Instant]:
    """The clustering plans waiting to be executed."""
    return [i for i in timeline.pending()
            if i.action == "replacecommit" and i.state == "requested"
            and i.extra.get("scheduled") == "true"]


def pending_plan_files(timeline: Timeline) -> set:
    """Rel paths of the files in a pending clustering plan (upserts pack nothing into them)."""
    return {f.path for plan in scheduled_plans(timeline) for f in plan.removed}
