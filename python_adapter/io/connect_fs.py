"""HadoopFS over Spark Connect: the same operations, run by the server's extension
(connect_client) in the server's Hadoop FileSystem; the dbt host never opens a file of the
table's storage.

Writes, renames and deletes under a table whose lock this process holds carry the lock's
path and token (a fence, which the lock hands to this filesystem when it is taken): the
server runs them only while the lock holds that token, so an operation of a dead client
still running on the server stops once the next writer has broken its lock. The lock's own
files are never fenced (taking, renewing and setting aside a lock is how a lock changes
hands).
"""
import base64
import os
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from python_adapter.core.sizes import count_of
from python_adapter.io.connect_client import call
from python_adapter.io.fs import FileStatus
from python_adapter.io.interfaces import Fence
from python_adapter.io.storage import (SCHEME, Versioned, check_once, is_object_store,
                                       no_conditional_create, refusal)


def _status(row) -> FileStatus:
    path, name, is_dir, size, modified_ms = row
    return FileStatus(path=path, name=name, is_dir=bool(is_dir), size=int(size),
                      modified_ms=int(modified_ms))


class ConnectFS:
    """python_adapter.io.fs.HadoopFS's interface, over `method: connect`."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self._fences: Dict[str, Fence] = {}   # by lock file, in the order taken

    def hold_fence(self, fence: Fence) -> None:
        self._fences.pop(fence.lock, None)
        self._fences[fence.lock] = fence

    def drop_fence(self, lock: str) -> None:
        self._fences.pop(lock, None)

    def versioned(self, path: str) -> bool:
        """Whether the server's store replaces a file only if unchanged (S3A's conditional
        PUT on the ETag): the writer lock is then renewed and taken over by compare-and-swap
        (table/lock.py)."""
        return bool(self._call("versioned", path=path))

    def read_versioned(self, path: str) -> Optional[Versioned]:
        found = self._call("read_versioned", path=path)
        return None if found is None else Versioned(base64.b64decode(found["data"]),
                                                    found["version"])

    def replace_if(self, path: str, data: bytes, version: str) -> bool:
        return bool(self._fenced("replace_if", path, path=path, version=version,
                                 data=base64.b64encode(data).decode()))

    def check_commit_safe(self, lock_path: str) -> None:
        """The server's filesystem, checked once per filesystem and process as HadoopFS checks
        its own (io/storage.py), the probe's files made and deleted by the server."""
        uri = lock_path if SCHEME.match(lock_path) else self.qualify(lock_path)
        if uri.startswith("file:"):
            return  # the server's local disk: an exclusive create and the OS's rename

        def no_conditional() -> Optional[str]:
            store = self._call("capabilities", path=uri)
            return None if store["conditional_create"] else no_conditional_create(
                uri, store["hadoop"])
        check_once(uri, lambda: refusal(self, uri, no_conditional))

    def renames_atomically(self, path: str) -> bool:
        """As HadoopFS says of the server's store: by its scheme."""
        uri = path if SCHEME.match(path) else self.qualify(path)
        return not is_object_store(uri)

    def copy_many(self, pairs: Sequence[Tuple[str, str]],
                  after_each: Optional[Callable[[], None]] = None) -> None:
        """Each src copied to dst by the server, fenced as a rename is (its Hadoop rename
        there, a copy and a delete on an object store: a copy's source may go, which the
        commit protocol allows); one request, or one a pair under fault injection."""
        self._batched("copy_many", pairs, after_each)

    def delete_files(self, paths: Sequence[str],
                     after_each: Optional[Callable[[], None]] = None) -> None:
        self._batched("delete_files", [[p] for p in paths], after_each)

    def _call(self, op: str, **args: Any) -> Any:
        return call(self.spark, f"fs.{op}", **args)

    def _fenced(self, op: str, target: str, **args: Any) -> Any:
        """A change of files: fenced by the held lock over `target`, or, for a lock file
        itself, run under that lock's monitor in the server (no fenced step of another
        writer between its look at the lock and its change)."""
        fence = fence_among(list(self._fences.values()), target)
        if fence:
            return self._call(op, **args, fence=fence)
        lock = lock_file_of(target)
        return self._call(op, **args, **({"guard": lock} if lock else {}))

    def holder_extra(self) -> dict:
        """What a writer lock taken through this filesystem records of its holder beyond
        host and pid: its Connect session (the server's user and session ids)."""
        if not hasattr(self, "_who"):
            self._who = call(self.spark, "session.whoami")
        return {"connect_user": self._who["user"], "connect_session": self._who["session"]}

    def end_holder(self, holder: dict) -> Optional[str]:
        """After taking over a stale lock: the former holder's Connect session ended in the
        server (its operations interrupted, its jobs cancelled and waited for), so none of
        them still writes while this writer recovers. A line to log, or None."""
        if not holder.get("connect_session"):
            return None
        got = call(self.spark, "session.end_client", user=holder.get("connect_user") or "",
                   session=holder["connect_session"])
        if not (got["interrupted"] or got["jobs"]):
            return None
        still = f"; {count_of(got['running'], 'job')} still running" if got["running"] else ""
        return (f"ended the Spark Connect session {holder['connect_session']} of the former "
                f"writer: {count_of(got['interrupted'], 'operation')} interrupted, "
                f"{count_of(got['jobs'], 'job')} cancelled{still}")

    def qualify(self, path: str) -> str:
        return self._call("qualify", path=path)

    def exists(self, path: str) -> bool:
        return bool(self._call("exists", path=path))

    def existing(self, paths: Iterable[str]) -> Set[str]:
        return set(self._call("existing", paths=list(paths)))

    def mkdirs(self, path: str) -> None:
        self._fenced("mkdirs", path, path=path)

    def list_dir(self, path: str) -> List[FileStatus]:
        return sorted((_status(r) for r in self._call("list_dir", path=path)),
                      key=lambda s: s.name)

    def list_files(self, path: str, skip_hidden: bool = True) -> List[FileStatus]:
        return sorted((_status(r) for r in self._call("list_files", path=path,
                                                      skip_hidden=skip_hidden)),
                      key=lambda s: s.path)

    def rename_many(self, pairs: Iterable[Tuple[str, str]],
                    after_each: Optional[Callable[[], None]] = None) -> None:
        """All pairs in one request, in order, each destination directory made once."""
        self._batched("rename_many", list(pairs), after_each)

    def _batched(self, op: str, items: Sequence[Sequence[str]],
                 after_each: Optional[Callable[[], None]]) -> None:
        """`op` over all items in one request. Under the crash tests' fault injection
        (SIZED_SPARK_FAULT set) one request an item, with after_each (a fault point) run
        after each, so a test can kill the client between two; otherwise after_each runs
        once per item after the request."""
        batch = [list(item) for item in items]
        if not batch:
            return
        one_by_one = after_each is not None and bool(os.environ.get("SIZED_SPARK_FAULT"))
        for part in ([[item] for item in batch] if one_by_one else [batch]):
            self._fenced(op, part[0][0], pairs=part)
            if one_by_one:
                after_each()  # type: ignore[misc]  # one_by_one implies it
        for _ in batch if after_each is not None and not one_by_one else ():
            after_each()  # type: ignore[misc]  # not None here

    def rename(self, src: str, dst: str) -> None:
        self.rename_many([(src, dst)])

    def drop_checksums(self, paths: Iterable[str]) -> None:
        """The server's filesystem writes no `.crc` side files (its file: implementation is
        the extension's NioLocalFileSystem); nothing to drop."""

    def drop_checksums_below(self, directory: str) -> int:
        return int(self._call("drop_checksums_below", path=directory))

    def delete(self, path: str, recursive: bool = True) -> bool:
        return bool(self._fenced("delete", path, path=path, recursive=recursive))

    def read_bytes(self, path: str) -> bytes:
        return base64.b64decode(self._call("read_bytes", path=path))

    def write_bytes(self, path: str, data: bytes, overwrite: bool = False) -> None:
        self._fenced("write_bytes", path, path=path, overwrite=overwrite,
                     data=base64.b64encode(data).decode())

    def size(self, path: str) -> int:
        return int(self._call("size", path=path))


def lock_file_of(path: str) -> Optional[str]:
    """The lock a path is (a lock, or one set aside as `<lock>.stale.<token>`), else None."""
    folder, _, name = path.rstrip("/").rpartition("/")
    base = name.split(".stale.")[0]
    return f"{folder}/{base}" if base in ("lock", "cluster.lock") else None


def fence_among(fences: List[Fence], path: str) -> Optional[dict]:
    """{lock, token} of the fence over `path` (a file of a directory a held lock covers),
    None for a lock file itself or a path no held lock covers. Of two locks over one path
    (a service's cluster.lock, then the writer lock for each commit) the one taken last
    fences: it is the lock the change is made under."""
    if lock_file_of(path):
        return None  # the lock itself changes hands unfenced
    for fence in reversed(fences):
        if any(path == d or path.startswith(d.rstrip("/") + "/") for d in fence.covers):
            return {"lock": fence.lock, "token": fence.token}
    return None
