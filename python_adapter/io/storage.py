"""What a filesystem must guarantee for the commit protocol, checked once per filesystem
and process before the first commit there takes its lock (table/commit.py, docs/storage.md).

The protocol needs (1) create-if-absent: of two writers creating the same file, exactly
one succeeds (the writer lock, each timeline instant), and (2) a publish that is atomic per
file (a rename on local disk and HDFS). An object store gives (1) by a conditional PUT
where its client asks for one, and no (2): S3A's rename is a copy and a delete, which a
crash can interrupt halfway (a file left in both places: rows lost or doubled). Both are
checked here and a store that lacks one is refused, naming the scheme, what is missing and
what to set, before any data file is written."""
import re
import threading
from typing import Callable, Optional, Set
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


class StorageRefusedError(ConfigError):
    """The filesystem a table is on lacks a guarantee the commit protocol needs."""


def root_of(uri: str) -> str:
    """The filesystem a qualified URI is on: its scheme and authority."""
    parts = urlsplit(uri)
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else f"{parts.scheme}:"


def rename_refusal(uri: str) -> Optional[str]:
    """Why this version cannot commit on the filesystem of `uri` (None: it can)."""
    scheme = urlsplit(uri).scheme
    if scheme not in OBJECT_STORES:
        return None
    return (f"{scheme} is an object store: its rename is a copy and a delete, not atomic, "
            f"and this version publishes a commit by renames, which a crash there can leave "
            f"half done (rows lost or doubled); its object-store commit protocol is not "
            f"released yet. Keep the table on local disk or HDFS (location_root, or "
            f"spark.sql.warehouse.dir), see docs/storage.md")


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
