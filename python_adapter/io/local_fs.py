"""The table's storage on local disk in pure Python: the FileSystem of io/interfaces.py
without a JVM, for `file:` URIs and plain paths.

The table layer (commit protocol, writer lock, recovery, archival) runs on it as it runs on
a session's HadoopFS over local disk, so its tests need no Spark (tests/unit/table). The
guarantees are HadoopFS's on local disk, by the same functions (io/fs.py's local fast
paths): an exclusive create is one O_EXCL open, a rename is the OS's (a file's `.crc` side
file moved along), a listing hides Hadoop's `.crc` side files, and every path comes back
as `file:/abs/path`, the form Hadoop's makeQualified gives a local path: the timeline
records paths in that form, so a table written through either filesystem reads the same
through the other.
"""
import os
import re
import shutil
import stat
from typing import Callable, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

# io/fs.py's local-disk functions, which HadoopFS's fast paths use: shared, not copied.
# Three of them are private there and the architecture test forbids importing a private
# name, so they are reached through the module until io/fs.py makes them public (then
# they are imported by name here).
from python_adapter.io.fs import (FileStatus, checksum_of, hidden, list_local_dir, local_path,
                                  rename_local)
from python_adapter.io.interfaces import Fence
from python_adapter.io.storage import Versioned

# A URI scheme (hdfs:, s3a:, file://host): storage this class does not reach.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def local_of(path: str) -> str:
    """The absolute local path of a `file:` URI or a plain path, normalized as Hadoop's
    Path normalizes (`.` and `..` resolved, doubled and trailing slashes dropped); a
    relative path is resolved against the working directory, as Hadoop's local filesystem
    resolves it. ValueError for another scheme, or a `file:` URI that names a host."""
    local = local_path(path)
    if local is None:
        if _SCHEME.match(path):
            raise ValueError(f"LocalFS serves local disk only, not {path!r}")
        local = path
    return "/" + os.path.abspath(local).lstrip("/")  # POSIX keeps a leading `//`: Hadoop not


class LocalFS:
    """io/interfaces.FileSystem on local disk, in this process (io/fs.HadoopFS says what
    each call guarantees). Holds nothing but its mode: every call goes to the OS.

    copying=True: local disk as an object store sees it, for the table layer's tests of
    the object-store protocol without a server: `renames_atomically` is False, so the
    commit protocol moves files by copy_many (each copy appears whole, as an object does)
    and delete_files."""

    def __init__(self, copying: bool = False) -> None:
        self.copying = copying

    def qualify(self, path: str) -> str:
        """`file:/abs/path`, what HadoopFS.qualify gives a local path."""
        return "file:" + local_of(path)

    def exists(self, path: str) -> bool:
        return os.path.exists(local_of(path))

    def existing(self, paths: Iterable[str]) -> Set[str]:
        """Those of `paths` that exist, as given. A stat each: HadoopFS lists their parent
        directories instead only because a call through py4j costs ~1 ms."""
        return {path for path in paths if self.exists(path)}

    def mkdirs(self, path: str) -> None:
        os.makedirs(local_of(path), exist_ok=True)

    def list_dir(self, path: str) -> List[FileStatus]:
        """Direct children of a directory by name, `.crc` side files hidden as Hadoop's
        checksummed filesystem hides them; [] when it does not exist; a file lists as
        itself (Hadoop's listStatus of a file)."""
        local = local_of(path)
        listed = list_local_dir(local)
        return listed if listed is not None else [_file_status(local)]

    def list_files(self, path: str, skip_hidden: bool = True) -> List[FileStatus]:
        """All files below a directory, by path; with skip_hidden, hidden entries (Spark's
        rule, io/fs.hidden) are skipped and hidden directories not entered, as a table is
        listed (its timeline is not data)."""
        return sorted(self._walk(self.qualify(path), skip_hidden), key=lambda s: s.path)

    def _walk(self, directory: str, skip_hidden: bool) -> Iterator[FileStatus]:
        for st in self.list_dir(directory):
            if skip_hidden and hidden(st.name):
                continue
            if st.is_dir:
                yield from self._walk(st.path, skip_hidden)
            else:
                yield st

    def rename_many(self, pairs: Iterable[Tuple[str, str]],
                    after_each: Optional[Callable[[], None]] = None) -> None:
        """rename() for many (src, dst) pairs, in order, as HadoopFS renames local pairs:
        each destination directory made once, a `.crc` side file moved with its file, a
        refused rename an IOError naming both paths. after_each() runs after every rename
        (the fault points of a publish and of an undo: table/commit.py)."""
        made = set()
        for src, dst in pairs:
            target = local_of(dst)
            parent = os.path.dirname(target)
            rename_local(local_of(src), target, make_parent=parent not in made)
            made.add(parent)
            if after_each is not None:
                after_each()

    def rename(self, src: str, dst: str) -> None:
        """Move src to dst (parent created); raises if the OS refuses."""
        self.rename_many([(src, dst)])

    def renames_atomically(self, path: str) -> bool:
        """The OS's rename is atomic (unless this LocalFS plays an object store)."""
        return not self.copying

    def copy_many(self, pairs: Sequence[Tuple[str, str]],
                  after_each: Optional[Callable[[], None]] = None) -> None:
        """Copy each src to dst, in order, each written under a temporary name and renamed,
        so it appears whole or not at all (as an object store's copy does)."""
        for src, dst in pairs:
            target = local_of(dst)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            partial = f"{target}.copying"
            shutil.copyfile(local_of(src), partial)
            os.rename(partial, target)
            if after_each is not None:
                after_each()

    def delete_files(self, paths: Sequence[str],
                     after_each: Optional[Callable[[], None]] = None) -> None:
        """Delete each file, in order; one already gone is skipped."""
        for path in paths:
            self.delete(path, recursive=False)
            if after_each is not None:
                after_each()

    def drop_checksums(self, paths: Iterable[str]) -> None:
        """Delete the `.<name>.crc` side files beside `paths`, which Hadoop's local
        filesystem writes (a table a Spark session wrote too): a rename would carry them
        into the table's directory, where other engines trip over them."""
        for path in paths:
            try:
                os.remove(checksum_of(local_of(path)))
            except FileNotFoundError:
                pass

    def drop_checksums_below(self, directory: str) -> int:
        """Delete every `.<name>.crc` side file below a directory; returns how many."""
        found = [os.path.join(root, name) for root, _dirs, names in os.walk(local_of(directory))
                 for name in names if name.startswith(".") and name.endswith(".crc")]
        for path in found:
            os.remove(path)
        return len(found)

    def delete(self, path: str, recursive: bool = True) -> bool:
        """Delete a file (with its `.crc` side file, as Hadoop's checksummed filesystem
        does) or a directory; False when there is nothing there. A directory that is not
        empty without `recursive` is refused (OSError), as Hadoop refuses it."""
        local = local_of(path)
        if os.path.isdir(local) and not os.path.islink(local):
            if recursive:
                shutil.rmtree(local)
            else:
                os.rmdir(local)
            return True
        if not os.path.lexists(local):
            return False
        os.remove(local)
        self.drop_checksums([local])
        return True

    def read_bytes(self, path: str) -> bytes:
        with open(local_of(path), "rb") as fh:
            return fh.read()

    def write_bytes(self, path: str, data: bytes, overwrite: bool = False) -> None:
        """Write a whole file, its parent made as Hadoop's create makes it. overwrite=False:
        one exclusive create (O_EXCL), which fails when the file exists (the writer lock
        relies on it: of writers racing to take a free lock exactly one wins).
        overwrite=True: truncated and written in place, not atomically, as Hadoop writes it
        (a reader may find the file empty meanwhile: the lock's reader allows for that).
        A `.crc` side file left beside it by Hadoop is dropped: it would no longer match."""
        local = local_of(path)
        os.makedirs(os.path.dirname(local), exist_ok=True)
        mode = os.O_TRUNC if overwrite else os.O_EXCL
        fd = os.open(local, os.O_CREAT | os.O_WRONLY | mode, 0o644)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        if overwrite:
            self.drop_checksums([local])

    def size(self, path: str) -> int:
        """A file's length; 0 for a directory, as Hadoop's FileStatus gives it."""
        st = os.stat(local_of(path))
        return 0 if stat.S_ISDIR(st.st_mode) else st.st_size

    def holder_extra(self) -> dict:
        """Nothing beyond host and pid: the holder of a lock is this process."""
        return {}

    def end_holder(self, holder: dict) -> Optional[str]:
        """Nothing to end after a stale lock was taken over: its holder's work ran in its
        own process, which is gone."""
        return None

    def versioned(self, path: str) -> bool:
        """No compare-and-swap here: local disk's lock is taken by exclusive create and
        taken over by rename (table/lock.py)."""
        return False

    def read_versioned(self, path: str) -> Optional[Versioned]:
        raise NotImplementedError("versioned(path) is False: no versioned reads")

    def replace_if(self, path: str, data: bytes, version: str) -> bool:
        raise NotImplementedError("versioned(path) is False: no conditional replace")

    def check_commit_safe(self, lock_path: str) -> None:
        """Nothing to check: local disk has an exclusive create (O_EXCL) and an atomic
        rename, the two guarantees of io/storage.py."""

    def hold_fence(self, fence: Fence) -> None:
        """Nothing to fence: this process makes the changes itself, and they end with it."""

    def drop_fence(self, lock: str) -> None:
        """Nothing held (hold_fence)."""


def _file_status(local: str) -> FileStatus:
    """The FileStatus of one file, as list_local_dir gives its entries."""
    st = os.stat(local)
    return FileStatus(path=f"file:{local}", name=os.path.basename(local), is_dir=False,
                      size=st.st_size, modified_ms=st.st_mtime_ns // 1_000_000)
