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
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import (Any, Collection, Dict, Iterable, Iterator, List, Mapping, Optional,
                    Sequence, Set, Tuple)

import fastavro

from python_adapter.errors import TimelineError, UnreadableInstantError

from python_adapter.io.fs import FileStatus
from python_adapter.io.interfaces import FileSystem
from python_adapter.table.extra import CLUSTER_BY, FILES_ADDED, FILES_REMOVED, TARGET_FILE_SIZE

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
_INSTANT_RECORD = {
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
}
INSTANT_SCHEMA = fastavro.parse_schema(_INSTANT_RECORD)

# The archive's checkpoint: the table's files after the archived instants, and those
# instants without their file lists (what writes ask of the past: bytes per row, the last
# write's settings, commits since a clustering). docs/design.md, "Timeline archive".
CHECKPOINT_VERSION = 1
CHECKPOINT_SCHEMA = fastavro.parse_schema({
    "type": "record", "name": "SizedCheckpoint", "namespace": "dbt_sized_spark.timeline",
    "fields": [
        {"name": "schema_version", "type": "int"},
        {"name": "sequence", "type": "long"},           # 1 for the first archival, then +1
        {"name": "last_instant", "type": "string"},     # the newest archived instant
        {"name": "created_at_ms", "type": "long"},
        {"name": "archived", "type": {"type": "array", "items": _INSTANT_RECORD}},
        {"name": "files", "type": {"type": "array", "items": "FileEntry"}},
    ],
})
# extra key of an archived instant's summary (its added / removed lists are left out, their
# counts kept: extra.FILES_ADDED, extra.FILES_REMOVED)
ARCHIVED = "archived"


# extra keys of an instant that (re)defines the table in the metastore: a first build, or a
# full refresh that changes its columns, partitioning, format or location
DEFINES_TABLE = "defines_table"
PREVIOUS_DDL = "previous_ddl"            # the CREATE statement of the definition it replaces
PREVIOUS_LOCATION = "previous_location"
PREVIOUS_TYPE = "previous_type"          # MANAGED or EXTERNAL
# extra key of an adoption, which changes no file: "deferred" = the statistics of partitions
# registered already are written by the table's next commit (for every partition)
PARTITION_STATS = "partition_stats"
DEFERRED = "deferred"


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
    return _avro(INSTANT_SCHEMA, [_record(instant)])


def encode_many(instants: Sequence[Instant]) -> bytes:
    """Several instants in one Avro file (the archive's history files)."""
    return _avro(INSTANT_SCHEMA, [_record(i) for i in instants])


def _avro(schema, records):
    buf = io.BytesIO()
    fastavro.writer(buf, schema, records)
    return buf.getvalue()


def _record(instant: Instant) -> dict:
    return {
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


class _Corrupt(TimelineError):
    """A timeline file that does not decode (truncated, overwritten); `detail` says why."""

    def __init__(self, name: str, detail: str) -> None:
        super().__init__(f"timeline file {name} is corrupt or unreadable: {detail}")
        self.detail = detail


def _records(data, name):
    try:
        return list(fastavro.reader(io.BytesIO(data)))
    except Exception as exc:  # fastavro raises several types for truncated/corrupt input
        raise _Corrupt(name, str(exc) or type(exc).__name__) from exc


def _check_version(rec, name, newest):
    if rec.get("schema_version", 0) > newest:
        raise TimelineError(
            f"timeline file {name} has schema version {rec['schema_version']}, this dbt-sized-spark "
            f"reads up to {newest}: upgrade the adapter")


def decode(data: bytes, name: str = "<instant>") -> Instant:
    records = _records(data, name)
    if len(records) != 1:
        raise TimelineError(f"timeline file {name} holds {len(records)} records, expected 1")
    return _instant(records[0], name)


def decode_many(data: bytes, name: str = "<history>") -> List[Instant]:
    return [_instant(rec, name) for rec in _records(data, name)]


def _instant(rec: dict, name: str) -> Instant:
    _check_version(rec, name, SCHEMA_VERSION)
    return Instant(
        instant=rec["instant"], action=rec["action"], state=rec["state"],
        operation=rec["operation"], created_at_ms=rec["created_at_ms"],
        partition_columns=tuple(rec["partition_columns"]),
        added=tuple(FileEntry(**f) for f in rec["added"]),
        removed=tuple(FileEntry(**f) for f in rec["removed"]),
        rows_written=rec["rows_written"], bytes_written=rec["bytes_written"],
        extra=dict(rec["extra"]),
    )


@dataclass(frozen=True)
class Checkpoint:
    """The archive's state: the table's files after `last_instant` (every archived instant
    replayed), and the archived instants as summaries (no file lists)."""
    sequence: int
    last_instant: str
    archived: Tuple[Instant, ...]
    files: Tuple[FileEntry, ...]
    created_at_ms: int = 0

    @property
    def archived_ids(self) -> set:
        return {i.instant for i in self.archived}


def summary(instant: Instant) -> Instant:
    """An archived instant as the checkpoint keeps it: its counts and settings, not its
    file lists (the history files keep those)."""
    return replace(instant, added=(), removed=(), extra={
        **instant.extra, ARCHIVED: "true", **FILES_ADDED.entry(len(instant.added)),
        **FILES_REMOVED.entry(len(instant.removed))})


def files_added(instant: Instant) -> int:
    """Files the instant added (an archived summary keeps the count, not the list)."""
    return FILES_ADDED.get(instant.extra, len(instant.added))


def files_removed(instant: Instant) -> int:
    return FILES_REMOVED.get(instant.extra, len(instant.removed))


def encode_checkpoint(cp: Checkpoint) -> bytes:
    return _avro(CHECKPOINT_SCHEMA, [{
        "schema_version": CHECKPOINT_VERSION, "sequence": cp.sequence,
        "last_instant": cp.last_instant,
        "created_at_ms": cp.created_at_ms or int(time.time() * 1000),
        "archived": [_record(i) for i in cp.archived],
        "files": [vars(f) for f in cp.files]}])


def decode_checkpoint(data: bytes, name: str = "<checkpoint>") -> Checkpoint:
    records = _records(data, name)
    if len(records) != 1:
        raise TimelineError(f"timeline file {name} holds {len(records)} records, expected 1")
    rec = records[0]
    _check_version(rec, name, CHECKPOINT_VERSION)
    return Checkpoint(sequence=rec["sequence"], last_instant=rec["last_instant"],
                      created_at_ms=rec["created_at_ms"],
                      archived=tuple(_instant(i, name) for i in rec["archived"]),
                      files=tuple(FileEntry(**f) for f in rec["files"]))


def archive_name(kind: str, sequence: int) -> str:
    """`checkpoint-00000003.avro`, `history-00000003.avro`: the files of the 3rd archival."""
    return f"{kind}-{sequence:08d}.avro"


def archive_file(name: str) -> Optional[Tuple[str, int]]:
    """(kind, sequence) of an archive file's name ('checkpoint' or 'history'), else None."""
    m = re.fullmatch(r"(checkpoint|history)-(\d+)\.avro", name)
    return (m.group(1), int(m.group(2))) if m else None


def parse_file_name(name: str) -> Optional[Tuple[str, str, str]]:
    """'<id>.<action>[.<state>]' -> (id, action, state) or None for other files."""
    parts = name.split(".")
    if len(parts) == 2 and parts[1] in ACTIONS:
        return parts[0], parts[1], "completed"
    if len(parts) == 3 and parts[1] in ACTIONS and parts[2] in ("requested", "inflight"):
        return parts[0], parts[1], parts[2]
    return None


def replay(files: Sequence[FileEntry], instants: Sequence[Instant]) -> Dict[str, FileEntry]:
    """{rel path: FileEntry} after the completed `instants` (in id order) on top of `files`:
    each one's removes, then its adds; one that defines the table, or a full refresh,
    starts over."""
    out = {f.path: f for f in files}
    for inst in sorted(instants, key=lambda i: i.instant):
        if inst.extra.get(DEFINES_TABLE) == "true" or inst.operation == "full_refresh":
            # a new definition's earlier files are another table's; a full refresh replaced
            # every file there was (files deleted behind the timeline's back too, which it
            # could not list: kept, they would make the next write refuse the table)
            out = {}
        for f in inst.removed:
            out.pop(f.path, None)
        for f in inst.added:
            out[f.path] = f
    return out


# Decoded checkpoints by (path, size, modification time): each write opens the timeline
# afresh, and a checkpoint changes only when instants are archived.
_CHECKPOINTS: Dict[Tuple[str, int, int], "Checkpoint"] = {}



def written_with(instants: Iterable[Instant]) -> Mapping[str, str]:
    """The extra of the last completed write among `instants` that recorded the sizes it
    wrote with (target_file_size, small_file_limit): {} when none did. A restore commits
    without them, and what it brings back was written with the sizes before it, so
    compaction, clustering, the layout and the report go on with those."""
    writes = [i for i in instants if i.state == "completed" and i.action == "commit"
              and TARGET_FILE_SIZE.name in i.extra]
    return max(writes, key=lambda i: i.instant).extra if writes else {}


QUARANTINE = "quarantine"   # the meta dir's folder of instant files set aside as unreadable
_STATE_ORDER = ("completed", "inflight", "requested")   # latest first
_THREAD = threading.local()


@contextmanager
def setting_aside_unreadable() -> Iterator[None]:
    """Within it, this thread's Timelines holding the writer lock set the unreadable file of
    a completed instant aside (to `<meta dir>/quarantine/`) instead of refusing the table:
    sized_repair, which then records the table as it is, and a full refresh, which replaces
    every file. The user chose either; nothing else sets a record of the table aside."""
    before = getattr(_THREAD, "set_aside", False)
    _THREAD.set_aside = True
    try:
        yield
    finally:
        _THREAD.set_aside = before


def unfinished_in_this_thread() -> List[Tuple[str, str]]:
    """(table location, instant id) of the instants this thread requested and has neither
    completed nor rolled back (scheduled plans aside): what a write that stopped on a dead
    Spark Connect server left for the next run's recovery."""
    return sorted(getattr(_THREAD, "unfinished", {}))


def forget_unfinished_in_this_thread() -> None:
    _THREAD.unfinished = {}


def _note_written(location: str, instant: "Instant") -> None:
    unfinished = getattr(_THREAD, "unfinished", None)
    if unfinished is None:
        unfinished = _THREAD.unfinished = {}
    key = (location, instant.instant)
    if instant.state == "completed":
        unfinished.pop(key, None)
    elif instant.extra.get("scheduled") != "true":
        unfinished[key] = instant.state


def _note_dropped(location: str, ident: str) -> None:
    getattr(_THREAD, "unfinished", {}).pop((location, ident), None)


class Timeline:
    """Reads and writes the instants of one table through the session's filesystem."""

    def __init__(self, fs: FileSystem, table_location: str, meta_dir: Optional[str] = None
                 ) -> None:
        self.fs = fs
        self.location = table_location.rstrip("/")
        self.meta_dir = meta_dir or meta_dir_of(self.location)
        self.dir = f"{self.meta_dir}/timeline"
        # A write reads the timeline several times (recovery, bytes per row, file index);
        # an instant file is decoded once per (name, size, modification time).
        self._decoded: Dict[Tuple[str, int, int], Instant] = {}
        # While this process holds the table's writer lock nobody else changes the timeline,
        # so its listing is kept: the instants this object writes join it, and a deletion
        # (a rollback) drops it.
        self._hold = False
        self._listing: Optional[List[FileStatus]] = None
        # file name -> Instant this object wrote while the listing was kept
        self._own: Dict[str, Instant] = {}
        self._archive_listing: Optional[List[FileStatus]] = None
        # names of later-state files of unfinished instants: garbage
        self._unreadable: Set[str] = set()
        self.set_aside: List[str] = []  # unreadable completed files moved to the quarantine

    def hold(self, held: bool) -> None:
        """held=True once the writer lock is taken (the listing may be kept), False after."""
        self._hold = held
        self.forget()

    def forget(self) -> None:
        """Drop the kept listings (after instant files were changed behind this object)."""
        self._listing = None
        self._own = {}
        self._archive_listing = None

    def write(self, instant: Instant) -> Instant:
        """Each instant's state is one file, written once, only if absent (an exclusive
        create; on an object store a conditional PUT): never rewritten, never renamed."""
        name, data = instant.file_name, encode(instant)
        self.fs.write_bytes(f"{self.dir}/{name}", data, overwrite=False)
        if self._listing is not None:  # the kept listing gains the file, as read back
            self._listing = [st for st in self._listing if st.name != name] + [
                FileStatus(path=f"{self.dir}/{name}", name=name, is_dir=False, size=-1,
                           modified_ms=-1)]
            self._own[name] = decode(data, name)
        _note_written(self.location, instant)
        return instant

    def drop_earlier_states(self, done: Instant) -> None:
        """Delete the requested and inflight files of a completed instant: its completed
        file holds all they did, and the timeline directory stays a file per instant."""
        names = {f"{done.instant}.{done.action}.{state}" for state in ("requested", "inflight")}
        for name in sorted(names):
            self.fs.delete(f"{self.dir}/{name}", recursive=False)
        if self._listing is not None:
            self._listing = [st for st in self._listing if st.name not in names]

    def delete_instant_files(self, ids: Collection[str]) -> None:
        """Delete every file of the instants `ids` (archived: the archive holds them)."""
        for st in self.fs.list_dir(self.dir):
            parsed = parse_file_name(st.name)
            if parsed is not None and parsed[0] in ids:
                self.fs.delete(st.path, recursive=False)
        self.forget()

    def delete_unfinished(self, instant: Instant) -> None:
        """Delete the inflight, then the requested file of an instant (rollback: the
        requested file goes last, so an interrupted rollback is found and repeated)."""
        self.forget()
        garbage = f"{instant.instant}.{instant.action}"  # a completed file that never was whole
        if garbage in self._unreadable:
            self.fs.delete(f"{self.dir}/{garbage}", recursive=False)
        for state in ("inflight", "requested"):
            self.fs.delete(f"{self.dir}/{instant.instant}.{instant.action}.{state}",
                           recursive=False)
        self._unreadable -= {garbage, f"{garbage}.inflight"}
        _note_dropped(self.location, instant.instant)

    def read(self, file_name: str) -> Instant:
        path = f"{self.dir}/{file_name}"
        return decode(self.fs.read_bytes(path), path)

    def active(self) -> List[Instant]:
        """The instants of the timeline directory at their latest readable state, oldest
        first; not those the archive's checkpoint holds (an archival that stopped before
        deleting their files). A state file that does not decode is what a crash while it
        was written leaves (`_latest_readable`)."""
        states: Dict[str, Dict[str, Tuple[str, FileStatus]]] = {}
        for st in self.listing():
            parsed = parse_file_name(st.name)
            if parsed is not None:
                states.setdefault(parsed[0], {})[parsed[2]] = (parsed[1], st)
        cp = self.checkpoint()
        archived = cp.archived_ids if cp is not None else set()
        found = [self._latest_readable(ident, states[ident]) for ident in sorted(states)
                 if ident not in archived]
        return [inst for inst in found if inst is not None]

    def _latest_readable(self, ident: str, states: Mapping[str, Tuple[str, FileStatus]]
                         ) -> Optional[Instant]:
        """The instant `ident` at its latest state whose file decodes. A file is written
        whole before the next step starts, so a crash while writing one leaves it unreadable
        with the earlier states beside it: a completed file with its inflight beside it
        (that inflight is the instant, unfinished: recovery rolls it back and deletes the
        garbage); an inflight with nothing set aside yet (publish had not begun: the
        instant rolls back as requested); a requested file (nothing staged is published: a
        stand-in without files rolls it back). A completed file without its inflight, or an
        inflight whose publish may have begun, is the user's to decide (`_unreadable_record`)."""
        present = [s for s in _STATE_ORDER if s in states]
        for k, state in enumerate(present):
            action, st = states[state]
            try:
                return self._read_cached(st)
            except _Corrupt as exc:
                if (state == "completed" and present[k + 1:k + 2] != ["inflight"]) or (
                        state == "inflight" and ("completed" in present
                                                 or self._set_aside_any(ident))):
                    return self._unreadable_record(states, st, exc)
                self._unreadable.add(st.name)
        action, st = states[present[-1]]  # every state unreadable: a crashed request
        return Instant(instant=ident, action=action, state=present[-1], operation="unknown")

    def _set_aside_any(self, ident: str) -> bool:
        """Whether the instant has set files aside (its publish began): `replaced/<id>/` of
        table/commit.py holds any."""
        return bool(self.fs.list_dir(f"{self.meta_dir}/replaced/{ident}"))

    @property
    def quarantine_dir(self) -> str:
        return f"{self.meta_dir}/{QUARANTINE}"

    def _unreadable_record(self, states: Mapping[str, Tuple[str, FileStatus]],
                           st: FileStatus, exc: "_Corrupt") -> Optional[Instant]:
        """An unreadable file recording what the table holds: refused, naming it and the ways
        on, unless this thread sets such files aside under the writer lock
        (setting_aside_unreadable); then the instant's files move to the quarantine, and the
        timeline reads as if that instant had never been."""
        path = f"{self.dir}/{st.name}"
        if not (self._hold and getattr(_THREAD, "set_aside", False)):
            raise UnreadableInstantError(path, exc.detail, self.quarantine_dir)
        taken = {s.name for s in self.fs.list_dir(self.quarantine_dir)}
        moved = []
        for _action, each in states.values():
            name = next(n for n in (each.name, *(f"{each.name}.{i}" for i in range(1, 1000)))
                        if n not in taken)
            self.fs.rename(each.path, f"{self.quarantine_dir}/{name}")
            moved.append(each.name)
        self.set_aside.extend(sorted(moved))
        if self._listing is not None:
            self._listing = [s for s in self._listing if s.name not in moved]
        return None

    def listing(self) -> List[FileStatus]:
        """The timeline directory's files (kept while the writer lock is held)."""
        listing = self._listing if self._listing is not None else self.fs.list_dir(self.dir)
        if self._hold:
            self._listing = listing
        return listing

    def instants(self) -> List[Instant]:
        """Every instant at its latest state, oldest first: the archived ones as summaries
        (no file lists: `history` has them), then the timeline directory's."""
        cp = self.checkpoint()
        archived = list(cp.archived) if cp is not None else []
        return sorted(archived + self.active(), key=lambda i: i.instant)

    def _read_cached(self, st):
        if st.name in self._own:
            return self._own[st.name]
        key = (st.name, st.size, st.modified_ms)
        if key not in self._decoded:
            self._decoded[key] = self.read(st.name)
        return self._decoded[key]

    def completed(self, actions: Sequence[str] = ACTIONS) -> List[Instant]:
        return [i for i in self.instants() if i.state == "completed" and i.action in actions]

    def written_with(self) -> Mapping[str, str]:
        """written_with of the table's instants."""
        return written_with(self.completed(("commit",)))

    def file_index(self) -> Dict[str, FileEntry]:
        """{rel path: FileEntry} of the files the completed commits say the table holds:
        the archive's checkpoint, then the completed instants of the timeline directory."""
        cp = self.checkpoint()
        return replay(cp.files if cp is not None else (),
                      [i for i in self.active() if i.state == "completed"])

    # -- the archive (table/archive.py writes it) ----------------------------------------
    @property
    def archive_dir(self) -> str:
        return f"{self.meta_dir}/archive"

    @property
    def history_dir(self) -> str:
        """The history files, apart from the checkpoint: a write lists the archive directory
        to find the newest checkpoint, and that listing must not grow with the history."""
        return f"{self.archive_dir}/history"

    def archive_listing(self) -> List[FileStatus]:
        if self._archive_listing is None or not self._hold:
            self._archive_listing = self.fs.list_dir(self.archive_dir)
        return self._archive_listing

    def checkpoint(self) -> Optional[Checkpoint]:
        """The newest checkpoint of the archive, None before the first archival."""
        newest = max(((parsed[1], st) for st in self.archive_listing()
                      if (parsed := archive_file(st.name)) and parsed[0] == "checkpoint"),
                     key=lambda p: p[0], default=None)
        if newest is None:
            return None
        st = newest[1]
        key = (st.path, st.size, st.modified_ms)
        if key not in _CHECKPOINTS:
            if len(_CHECKPOINTS) > 64:
                _CHECKPOINTS.clear()
            _CHECKPOINTS[key] = decode_checkpoint(self.fs.read_bytes(st.path), st.path)
        return _CHECKPOINTS[key]

    def history(self) -> List[Instant]:
        """Every instant with its file lists, oldest first: the archive's history files
        (those the checkpoint holds), then the timeline directory's. Reads every history
        file: for showing the whole past (sized_timeline, the report), not for writes."""
        cp = self.checkpoint()
        archived = cp.archived_ids if cp is not None else set()
        full = {}
        for st in self.fs.list_dir(self.history_dir) if cp is not None else ():
            parsed = archive_file(st.name)
            if parsed and parsed[0] == "history":
                for inst in decode_many(self.fs.read_bytes(st.path), st.path):
                    if inst.instant in archived:
                        full[inst.instant] = inst
        old = [full.get(i.instant, i) for i in (cp.archived if cp is not None else ())]
        return sorted(old + self.active(), key=lambda i: i.instant)

    def forget_archive(self) -> None:
        """Drop the kept archive listing (after the archive was written)."""
        self._archive_listing = None

    def pending(self) -> List[Instant]:
        return [i for i in self.instants() if i.state != "completed"]

    def unsettled(self) -> List[Instant]:
        """Completed instants whose earlier state files are still there: their settling
        (the metastore's statistics, then cleanup: table/settle.py) may not have run."""
        states: Dict[str, set] = {}
        for st in self.listing():
            parsed = parse_file_name(st.name)
            if parsed is not None:
                states.setdefault(parsed[0], set()).add(parsed[2])
        return [i for i in self.active()
                if i.state == "completed" and len(states.get(i.instant, ())) > 1]


def learned_bytes_per_row(timeline: Timeline) -> Optional[float]:
    """bytes written / rows written over completed write commits (clustering, repairs and
    restores, which write no new rows, not counted, as Hudi does), since the table's
    definition was last created (other columns write other rows); None before any."""
    rows = size = 0
    for inst in timeline.completed(actions=("commit",)):
        if inst.extra.get(DEFINES_TABLE) == "true":
            rows = size = 0
        if inst.rows_written > 0 and inst.operation not in ("repair", "restore"):
            rows += inst.rows_written
            size += inst.bytes_written
    return size / rows if rows else None


def is_clustering(instant: Instant) -> bool:
    """A clustering's replacecommit; a compaction's (strategy none) orders by no column."""
    return instant.action == "replacecommit" and bool(CLUSTER_BY.get(instant.extra))


def scheduled_plans(timeline: Timeline) -> List[Instant]:
    """The clustering plans waiting to be executed."""
    return [i for i in timeline.pending()
            if i.action == "replacecommit" and i.state == "requested"
            and i.extra.get("scheduled") == "true"]


def pending_plan_files(timeline: Timeline) -> set:
    """Rel paths of the files in a pending clustering plan (upserts pack nothing into them)."""
    return {f.path for plan in scheduled_plans(timeline) for f in plan.removed}
