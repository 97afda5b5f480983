"""What a filesystem must guarantee for the commit protocol, checked once per filesystem
and process before the first commit there takes its lock (table/commit.py, docs/storage.md).

The protocol needs (1) create-if-absent: of two writers creating the same file, exactly
one succeeds (the writer lock, each timeline instant), and (2) a file published whole or
not at all, with a way to hand a lock over that no two writers both win. Local disk and
HDFS give both by exclusive create and an atomic rename. An object store has no rename
(S3A's is a copy and a delete): it gives (1) by a conditional PUT (`If-None-Match`), (2)
by objects that appear whole, and the lock's handover by compare-and-swap on the ETag
(`If-Match`); the commit protocol then runs its object-store steps (table/commit.py,
table/lock.py). A store lacking one of these is refused, naming the scheme, what is missing
and what to set, before any data file is written."""
import re
import threading
import uuid
from dataclasses import dataclass
from typing import Callable, Optional, Protocol, Set
from urllib.parse import urlsplit

from python_adapter.errors import ConfigError

# Filesystems whose rename is a copy and a delete (Hadoop's object-store connectors)
OBJECT_STORES = frozenset({"s3a", "s3", "s3n", "gs", "wasb", "wasbs", "oss", "cosn", "obs"})
CONDITIONAL_CREATE = "fs.option.create.conditional.overwrite"
CONDITIONAL_ETAG = "fs.option.create.conditional.overwrite.etag"

# A path that starts with a URI scheme is qualified already (a table's paths are)
SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_CHECKED: Set[str] = set()
_MUTEX = threading.Lock()


@dataclass(frozen=True)
class Versioned:
    """A file's bytes and the store's version of them (S3's ETag), read in one step."""
    data: bytes
    version: str


class StorageRefusedError(ConfigError):
    """The filesystem a table is on lacks a guarantee the commit protocol needs."""


def root_of(uri: str) -> str:
    """The filesystem a qualified URI is on: its scheme and authority."""
    parts = urlsplit(uri)
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else f"{parts.scheme}:"


def is_object_store(uri: str) -> bool:
    """Whether a qualified URI is on an object store (its rename a copy and a delete)."""
    return urlsplit(uri).scheme in OBJECT_STORES


def no_compare_and_swap(uri: str) -> str:
    """The refusal of an object store whose client cannot replace an object only if it is
    unchanged: the writer lock's lease could not be renewed or taken over safely."""
    scheme = urlsplit(uri).scheme
    if scheme == "s3a":
        return ("s3a: this S3 server refused or ignored a replace conditional on the "
                "object's ETag (If-Match), which the writer lock's lease needs on an "
                "object store; use a server that honours S3's conditional writes")
    return (f"{scheme} is an object store whose Hadoop connector offers no compare-and-swap "
            f"(a replace only if the object is unchanged), which the writer lock needs "
            f"where rename is a copy and a delete. Of object stores, S3 through S3A "
            f"(Hadoop 3.4.2+, conditional writes) is supported; keep the table on S3, "
            f"HDFS or local disk, see docs/storage.md")


def no_conditional_create(uri: str, hadoop: str) -> str:
    """The refusal of an object store whose client makes no conditional create."""
    scheme = urlsplit(uri).scheme
    if scheme == "s3a":
        return (f"s3a: S3A makes no conditional create here, so two writers could both take "
                f"a table's lock: set spark.hadoop.fs.s3a.create.conditional.enabled=true "
                f"(it needs Hadoop 3.4.2 or later; this Spark has Hadoop {hadoop}, and "
                f"pyspark 4.x brings 3.4.2+)")
    return (f"{scheme}: its Hadoop connector makes no conditional create (create-if-absent), "
            f"so two writers could both take a table's lock")


class Probed(Protocol):
    """The calls of a FileSystem (io/interfaces.py) the probe makes."""

    def write_bytes(self, path: str, data: bytes, overwrite: bool = False) -> None: ...
    def delete(self, path: str, recursive: bool = True) -> bool: ...
    def versioned(self, path: str) -> bool: ...
    def read_versioned(self, path: str) -> Optional[Versioned]: ...
    def replace_if(self, path: str, data: bytes, version: str) -> bool: ...


def refusal(fs: Probed, uri: str, no_conditional: Callable[[], Optional[str]]
            ) -> Optional[str]:
    """Why the commit protocol cannot run on the filesystem of `uri` (not local disk), or
    None. An object store must make conditional creates (`no_conditional`: the refusal
    when its client makes none) and replace a file only over the version read; every
    store must refuse a second create of one file. Probed with a file beside `uri`,
    deleted afterwards: what a client promises is not what every server does."""
    store = is_object_store(uri)
    why = no_conditional() if store else None
    if why is not None:
        return why
    probe = f"{uri}.probe-{uuid.uuid4().hex}"
    if not _second_create_refused(fs, probe):
        return ("it does not honour create-if-absent (a file created twice, the second "
                "time only if absent, was not refused), so two writers could both take "
                "a table's lock")
    if store and not _stale_swap_refused(fs, probe):
        return no_compare_and_swap(uri)
    return None


def _second_create_refused(fs: Probed, probe: str) -> bool:
    fs.write_bytes(probe, b"probe")
    try:
        fs.write_bytes(probe, b"probe")
        return False
    except Exception:  # the create refused (FileAlreadyExists, S3's 412), as it must be
        return True
    finally:
        fs.delete(probe, recursive=False)


def _stale_swap_refused(fs: Probed, probe: str) -> bool:
    """Whether the store replaces a file only over the version read: a swap over the
    current version succeeds, one over the version it replaced is refused."""
    if not fs.versioned(probe):
        return False
    fs.write_bytes(probe, b"v1")
    try:
        first = fs.read_versioned(probe)
        if first is None or not fs.replace_if(probe, b"v2", first.version):
            return False
        return not fs.replace_if(probe, b"v3", first.version)
    finally:
        fs.delete(probe, recursive=False)


def check_once(lock_uri: str, check: Callable[[], Optional[str]]) -> None:
    """Runs `check` (a refusal, or None) once per filesystem and process; raises
    StorageRefusedError naming the lock's path when it refuses (again on every call)."""
    root = root_of(lock_uri)
    with _MUTEX:
        if root in _CHECKED:
            return
        why = check()
        if why is None:
            _CHECKED.add(root)
            return
    raise StorageRefusedError(f"cannot commit to {root} (the table's lock {lock_uri}): {why}")


def forget_checked() -> None:
    """Tests: check every filesystem again."""
    with _MUTEX:
        _CHECKED.clear()
