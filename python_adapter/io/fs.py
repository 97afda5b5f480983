"""File work through the Hadoop FileSystem of the Spark session.

Everything the engine does to files goes through here, so a warehouse on HDFS, on S3
through S3A, or at a `file://` URI works the same as a local directory. What each store
gives the commit protocol (io/storage.py, checked before the first commit there): local
disk and HDFS an exclusive create and an atomic rename; S3A a conditional create, a
replace conditional on the ETag (`versioned`, `read_versioned`, `replace_if`) and
server-side copies (`copy_many`), its rename being a copy and a delete. The shortcuts:
`read_bytes` of an explicit `file:` URI (timeline instants, the lock) reads the local file
directly, and `list_dir` of one lists it directly.
"""
import errno
import os
import re
import stat
import uuid
from dataclasses import dataclass
from urllib.parse import urlsplit
from concurrent.futures import ThreadPoolExecutor
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Sequence, Set,
                    Tuple, TypeVar, cast)

if TYPE_CHECKING:  # a hint only: the table layer's tests import this module without Spark
    from pyspark.sql import SparkSession

from python_adapter.io.jvm_errors import Py4JJavaError
from python_adapter.io.fast_local_fs import decode_fields, jar_loaded
from python_adapter.io.storage import (CONDITIONAL_CREATE, CONDITIONAL_ETAG, OBJECT_STORES,
                                       SCHEME, Versioned, check_once, no_conditional_create,
                                       refusal, root_of)

# A conditional PUT or a bound read refused: the object changed (412) or went (404)
_CHANGED_OR_GONE = frozenset({"org.apache.hadoop.fs.s3a.RemoteFileChangedException",
                              "java.io.FileNotFoundException"})

# Hadoop's FileStatus.toString(): "<Class>{path=...; isDirectory=...; length=... (files only);
# ...; modification_time=...; ...}". One py4j call per entry instead of one per attribute
# makes listing a table's files several times faster; the greedy path match takes the last
# "; isDirectory=" so a path containing that text still parses.
_STATUS_TEXT = re.compile(r"^\w*\{path=(?P<path>.*); isDirectory=(?P<dir>true|false)"
                          r"(?:; length=(?P<len>\d+))?.*?; modification_time=(?P<mtime>-?\d+)",
                          re.S)


@dataclass(frozen=True)
class FileStatus:
    path: str          # fully qualified URI
    name: str
    is_dir: bool
    size: int
    modified_ms: int


class HadoopFS:
    def __init__(self, spark: "SparkSession") -> None:
        # py4j's JVM view (untyped); pyspark types it Optional, but a live session has one
        self._jvm = cast(Any, spark.sparkContext._jvm)
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()
        # Resolving a class through py4j's package lookup costs several calls: do it once.
        self._path_class = self._jvm.org.apache.hadoop.fs.Path

    def _path(self, path):
        return self._path_class(path)

    def _fs(self, jpath):
        return jpath.getFileSystem(self._conf)

    def qualify(self, path: str) -> str:
        """The absolute URI of a path (adds scheme, resolves relative paths)."""
        jpath = self._path(path)
        return str(self._fs(jpath).makeQualified(jpath).toString())

    def exists(self, path: str) -> bool:
        jpath = self._path(path)
        return bool(self._fs(jpath).exists(jpath))

    def existing(self, paths: Iterable[str]) -> Set[str]:
        """Those of `paths` that exist, from one listing of each of their parent directories
        instead of a call per path (a rollback decides its moves from two paths a file:
        through py4j that was ~1 ms each, seconds for a few hundred files)."""
        found: Set[str] = set()
        for parent, named in by_parent(paths).items():
            listed = {st.name for st in self.list_dir(parent)}
            found.update(path for name, path in named if name in listed)
        return found

    def mkdirs(self, path: str) -> None:
        jpath = self._path(path)
        self._fs(jpath).mkdirs(jpath)

    def _status(self, st):
        parsed = parse_status_text(str(st.toString()))
        return parsed if parsed is not None else self._status_by_calls(st)

    @staticmethod
    def _status_by_calls(st):
        return FileStatus(
            path=str(st.getPath().toString()),
            name=str(st.getPath().getName()),
            is_dir=bool(st.isDirectory()),
            size=int(st.getLen()),
            modified_ms=int(st.getModificationTime()),
        )

    def _statuses(self, jstatuses):
        """FileStatus of each element of a Java FileStatus[]: one py4j call for the whole array
        (commons-lang3's ArrayUtils.toString, which py4j can call with a FileStatus[]), one per
        element only when that text does not split cleanly."""
        if jstatuses is None:
            return []
        n = len(jstatuses)
        if n == 0:
            return []
        text = str(self._jvm.org.apache.commons.lang3.ArrayUtils.toString(jstatuses))
        parsed = [parse_status_text(t) for t in _split_status_array(text)]
        if len(parsed) == n and all(p is not None for p in parsed):
            return parsed
        return [self._status(st) for st in jstatuses]

    def list_dir(self, path: str) -> List[FileStatus]:
        """Direct children of a directory; [] when it does not exist."""
        local = local_path(path)
        if local is not None:
            listed = list_local_dir(local)
            if listed is not None:
                return listed
        jpath = self._path(path)
        fs = self._fs(jpath)
        try:
            statuses = fs.listStatus(jpath)
        except Exception as exc:  # py4j wraps java.io.FileNotFoundException
            if "FileNotFoundException" in str(exc):
                return []
            raise
        return sorted(self._statuses(statuses), key=lambda s: s.name)

    def list_files(self, path: str, skip_hidden: bool = True) -> List[FileStatus]:
        """All files below a directory, recursively; hidden entries skipped as Spark does."""
        if skip_hidden and local_path(self.qualify(path)) is not None and jar_loaded(self._jvm):
            try:
                return self._list_visible(path)
            except Py4JJavaError as exc:
                if "FileNotFoundException" in str(exc) or "IOException" in str(exc):
                    raise
                # the helper itself failed (a jar that does not fit this Spark): list as below
        if skip_hidden and not _GLOB_CHARS.search(path):
            found = self._list_files_by_level(path)
            if found is not None:
                return found
        out = []
        stack = [path]
        while stack:
            for st in self.list_dir(stack.pop()):
                if skip_hidden and hidden(st.name):
                    continue
                if st.is_dir:
                    stack.append(st.path)
                else:
                    out.append(st)
        return sorted(out, key=lambda s: s.path)

    def _list_visible(self, path):
        """list_files of a local directory in one call to the embedded JVM's VisibleFiles,
        which does not enter hidden directories (a table's timeline)."""
        text = str(self._jvm.sizedspark.fs.VisibleFiles.list(self._conf, self.qualify(path)))
        out = [FileStatus(path=uri, name=uri.rstrip("/").rsplit("/", 1)[-1], is_dir=False,
                          size=int(size), modified_ms=int(mtime))
               for uri, size, mtime in decode_fields(text, 3)]
        return sorted(out, key=lambda s: s.path)

    def _list_files_by_level(self, path):
        """list_files with one glob per directory level (`path/*`, `path/*/*`, ...) instead of
        one listing per directory: a table of 3650 partitions is listed in a few calls. None
        when the filesystem spells the paths it returns differently from `path`."""
        base = self.qualify(path).rstrip("/")
        jbase = self._path(base)
        fs = self._fs(jbase)
        if not fs.exists(jbase):
            return []
        out = []
        depth = 1
        while True:
            more = False
            for st in self._statuses(fs.globStatus(self._path(base + "/*" * depth))):
                if not st.path.startswith(base + "/"):
                    return None
                rel = st.path[len(base) + 1:]
                if any(hidden(part) for part in rel.split("/")):
                    continue  # hidden, or below a hidden directory
                if st.is_dir:
                    more = True
                else:
                    out.append(st)
            if not more:
                return sorted(out, key=lambda s: s.path)
            depth += 1

    def rename_many(self, pairs: Iterable[Tuple[str, str]],
                    after_each: Optional[Callable[[], None]] = None) -> None:
        """rename() for many (src, dst) pairs on one filesystem, in order: each destination
        directory is made once, not once per file. after_each() runs after every rename.
        Pairs of local `file:` paths are renamed by the OS directly: through py4j each costs
        three calls (two Paths and the rename), ~2 s for a compaction's 3,000 files."""
        fs = None
        made = set()
        for src, dst in pairs:
            parent = dst.rstrip("/").rsplit("/", 1)[0]
            local = (local_path(src), local_path(dst))
            if None not in local:
                rename_local(*cast(Tuple[str, str], local), make_parent=parent not in made)
            else:
                jsrc, jdst = self._path(src), self._path(dst)
                if fs is None:
                    fs = self._fs(jsrc)
                if parent not in made:
                    fs.mkdirs(jdst.getParent())
                if not fs.rename(jsrc, jdst):
                    raise IOError(f"rename refused: {src} -> {dst}")
            made.add(parent)
            if after_each is not None:
                after_each()

    def drop_checksums(self, paths: Iterable[str]) -> None:
        """Delete the `.<name>.crc` side files Hadoop's local filesystem writes beside files
        (when the session's `file:` filesystem writes them), so a rename does not carry them
        into a table's directory, where other engines trip over them. Other schemes: none."""
        for path in paths:
            local = local_path(path)
            if local is None:
                continue
            try:
                os.remove(checksum_of(local))
            except FileNotFoundError:
                pass

    def drop_checksums_below(self, directory: str) -> int:
        """Delete every `.<name>.crc` side file below a local directory (a table written
        before checksums were turned off); returns how many. Other schemes: none."""
        local = local_path(directory)
        if local is None:
            return 0
        dropped = 0
        for root, _dirs, files in os.walk(local):
            for name in files:
                if name.startswith(".") and name.endswith(".crc"):
                    os.remove(os.path.join(root, name))
                    dropped += 1
        return dropped

    def rename(self, src: str, dst: str) -> None:
        """Move src to dst (parent created); raises if the filesystem refuses."""
        self.rename_many([(src, dst)])

    def renames_atomically(self, path: str) -> bool:
        """Local disk and HDFS rename atomically; an object store's rename is a copy and a
        delete (the commit protocol then moves files by copy_many and delete_files)."""
        uri = path if SCHEME.match(path) else self.qualify(path)
        return urlsplit(uri).scheme not in OBJECT_STORES

    def copy_many(self, pairs: Sequence[Tuple[str, str]],
                  after_each: Optional[Callable[[], None]] = None) -> None:
        """Copy each src to dst (one filesystem), each appearing whole or not at all. On S3A
        a server-side CopyObject through S3A's own client and request factory (its
        encryption and other settings), several at once; a file above S3's 5 GiB copy limit
        is moved by S3A's rename instead (a multipart copy, then its delete: the commit
        protocol allows a copy's source to go). Under the crash tests' fault injection
        (SIZED_SPARK_FAULT) one at a time, after_each after each; otherwise after_each runs
        once per pair at the end."""
        if not pairs:
            return
        fs = self._fs(self._path(pairs[0][0]))
        copy = self._s3_copy(fs) if _is_s3a(fs) else self._stream_copy(fs)
        if after_each is not None and os.environ.get("SIZED_SPARK_FAULT"):
            for src, dst in pairs:
                copy(src, dst)
                after_each()
            return
        in_parallel(lambda pair: copy(*pair), pairs)
        for _ in pairs if after_each is not None else ():
            after_each()  # type: ignore[misc]  # not None here

    def _s3_copy(self, fs: Any) -> Callable[[str, str], None]:
        internals = fs.getS3AInternals()
        client = internals.getAmazonS3Client("sized-spark publish")
        factory = fs.getRequestFactory()
        # counted in S3A's own statistics as its rename counts its copies
        counters = internals.getStore().getStatisticsContext()
        statistic = self._jvm.org.apache.hadoop.fs.s3a.Statistic

        def copy(src: str, dst: str) -> None:
            jsrc, jdst = self._path(src), self._path(dst)
            head = fs.getObjectMetadata(jsrc)  # the source's metadata, carried to the copy
            size = int(head.contentLength())
            if size > S3_COPY_LIMIT:
                if not fs.rename(jsrc, jdst):
                    raise IOError(f"rename refused: {src} -> {dst}")
                return
            client.copyObject(factory.newCopyObjectRequestBuilder(
                fs.pathToKey(jsrc), fs.pathToKey(jdst), head).build())
            counters.incrementCounter(statistic.OBJECT_COPY_REQUESTS, 1)
            counters.incrementCounter(statistic.FILES_COPIED, 1)
            counters.incrementCounter(statistic.FILES_COPIED_BYTES, size)
        return copy

    def _stream_copy(self, fs: Any) -> Callable[[str, str], None]:
        # another filesystem whose rename copies: through this process, not server-side
        util = self._jvm.org.apache.hadoop.fs.FileUtil

        def copy(src: str, dst: str) -> None:
            if not util.copy(fs, self._path(src), fs, self._path(dst), False, True, self._conf):
                raise IOError(f"copy refused: {src} -> {dst}")
        return copy

    def delete_files(self, paths: Sequence[str],
                     after_each: Optional[Callable[[], None]] = None) -> None:
        """Delete each file (one already gone is skipped): on S3A in pages of its bulk
        delete (one request for up to a page of keys), otherwise one by one; under fault
        injection one by one, after_each after each."""
        if not paths:
            return
        fs = self._fs(self._path(paths[0]))
        one_by_one = after_each is not None and bool(os.environ.get("SIZED_SPARK_FAULT"))
        if _is_s3a(fs) and not one_by_one:
            self._bulk_delete(fs, paths)
        else:
            for path in paths:
                self._fs(self._path(path)).delete(self._path(path), False)
                if one_by_one:
                    after_each()  # type: ignore[misc]  # one_by_one implies it
        for _ in paths if after_each is not None and not one_by_one else ():
            after_each()  # type: ignore[misc]  # not None here

    def _bulk_delete(self, fs: Any, paths: Sequence[str]) -> None:
        root = self._path(root_of(paths[0]) + "/")
        bulk = fs.createBulkDelete(root)
        try:
            page = max(1, int(bulk.pageSize()))
            for start in range(0, len(paths), page):
                batch = self._jvm.java.util.ArrayList()
                for path in paths[start:start + page]:
                    batch.add(self._path(path))
                failed = bulk.bulkDelete(batch)
                if not failed.isEmpty():
                    first = failed.get(0)
                    raise IOError(f"{failed.size()} of {batch.size()} deletes refused, the "
                                  f"first {first.getKey()}: {first.getValue()}")
        finally:
            bulk.close()

    def delete(self, path: str, recursive: bool = True) -> bool:
        jpath = self._path(path)
        return bool(self._fs(jpath).delete(jpath, recursive))

    def read_bytes(self, path: str) -> bytes:
        local = local_path(path)
        if local is not None:  # a byte[] through py4j is slow per MB; a local file is not
            try:
                with open(local, "rb") as fh:
                    return fh.read()
            except OSError:
                pass  # let Hadoop read it, and raise as it does
        jpath = self._path(path)
        stream = self._fs(jpath).open(jpath)
        try:
            return bytes(self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()

    def write_bytes(self, path: str, data: bytes, overwrite: bool = False) -> None:
        """Write a whole file; with overwrite=False an existing file makes it fail (used for
        locks). On local disk that is one exclusive create (O_EXCL): Hadoop's local
        filesystem checks for the file and then creates it, so two processes taking a
        lock at once could both succeed (HDFS's create is atomic in the namenode)."""
        local = None if overwrite else local_path(self.qualify(path))
        if local is not None:
            os.makedirs(os.path.dirname(local), exist_ok=True)  # as Hadoop's create does
            fd = os.open(local, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            return
        jpath = self._path(path)
        fs = self._fs(jpath)
        if not overwrite and fs.hasPathCapability(jpath, CONDITIONAL_CREATE):
            # an object store's create-if-absent: the PUT is conditional (If-None-Match), so
            # of two creators exactly one succeeds; the other's close() is refused
            stream = fs.createFile(jpath).must(CONDITIONAL_CREATE, True).build()
        else:
            stream = fs.create(jpath, overwrite)
        try:
            stream.write(bytearray(data))
            stream.hflush()
        finally:
            stream.close()

    def check_commit_safe(self, lock_path: str) -> None:
        """Refuses (StorageRefusedError) a filesystem lacking a guarantee the commit protocol
        needs (io/storage.py), checked once per filesystem and process, before a commit
        takes the lock at `lock_path`."""
        uri = lock_path if SCHEME.match(lock_path) else self.qualify(lock_path)
        check_once(uri, lambda: self._refusal(uri))

    def _refusal(self, uri: str) -> Optional[str]:
        if local_path(uri) is not None:
            return None  # an exclusive create (O_EXCL) and the OS's atomic rename
        jpath = self._path(uri)
        return refusal(self, uri, lambda: None if self._fs(jpath).hasPathCapability(
            jpath, CONDITIONAL_CREATE) else no_conditional_create(uri, self._hadoop_version()))

    def _hadoop_version(self) -> str:
        return str(self._jvm.org.apache.hadoop.util.VersionInfo.getVersion())

    def versioned(self, path: str) -> bool:
        """Whether the store replaces a file only if unchanged (S3A's conditional PUT on the
        ETag, `If-Match`): the writer lock is then renewed and taken over by compare-and-swap
        (table/lock.py). Local disk and HDFS: no (their lock uses exclusive create and
        rename)."""
        if local_path(path) is not None:
            return False
        jpath = self._path(path)
        return bool(self._fs(jpath).hasPathCapability(jpath, CONDITIONAL_ETAG))

    def read_versioned(self, path: str) -> Optional[Versioned]:
        """The file's bytes with their ETag, or None when there is no file. The read is
        bound to the ETag of the status it starts from (S3A's change detection), so bytes
        and version belong together; a file replaced in between is read again."""
        jpath = self._path(path)
        fs = self._fs(jpath)
        for _ in range(5):
            try:
                status = fs.getFileStatus(jpath)
            except Py4JJavaError as exc:
                if _java_class(exc) == "java.io.FileNotFoundException":
                    return None
                raise
            try:
                stream = fs.openFile(jpath).withFileStatus(status).build().get()
                try:
                    data = bytes(self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
                finally:
                    stream.close()
            except Py4JJavaError as exc:
                if _java_classes(exc) & _CHANGED_OR_GONE:
                    continue  # replaced or deleted since its status was read: look again
                raise
            return Versioned(data, str(status.getEtag()))
        raise IOError(f"{path} kept changing while it was read")

    def replace_if(self, path: str, data: bytes, version: str) -> bool:
        """Replace the file only if its version is still `version` (a conditional PUT,
        `If-Match`); False when it changed or went meanwhile."""
        jpath = self._path(path)
        stream = self._fs(jpath).createFile(jpath).must(CONDITIONAL_ETAG, version).build()
        try:
            stream.write(bytearray(data))
        except Py4JJavaError:
            stream.close()
            raise
        try:
            stream.close()
        except Py4JJavaError as exc:
            if _java_classes(exc) & _CHANGED_OR_GONE:
                return False
            raise
        return True

    def holder_extra(self) -> dict:
        """What a writer lock records of its holder beyond host and pid: nothing here (the
        holder is this process; ConnectFS adds its Connect session)."""
        return {}

    def end_holder(self, holder: dict) -> Optional[str]:
        """After a stale lock was taken over: nothing to end (its holder's work ran in its
        own process); ConnectFS ends the holder's Connect session."""
        return None

    def size(self, path: str) -> int:
        jpath = self._path(path)
        return int(self._fs(jpath).getFileStatus(jpath).getLen())

    def hold_fence(self, fence: Any) -> None:
        """Nothing to fence: this process's own JVM makes the changes, and they end with it
        (ConnectFS sends its changes with the fence)."""

    def drop_fence(self, lock: str) -> None:
        """Nothing held (hold_fence)."""


# S3's CopyObject copies up to 5 GiB; a larger object needs a multipart copy
S3_COPY_LIMIT = 5 * 1024 ** 3
# Copies made at once: each is one request the server carries out (bytes do not pass here)
COPY_THREADS = 16
_T = TypeVar("_T")


def in_parallel(work: Callable[[_T], None], items: Sequence[_T]) -> None:
    """work(item) for every item on a few threads (py4j gives each its own connection);
    the first failure is raised once all have ended."""
    if len(items) == 1:
        work(items[0])
        return
    with ThreadPoolExecutor(min(COPY_THREADS, len(items)),
                            thread_name_prefix="sized-copy") as pool:
        for future in [pool.submit(work, item) for item in items]:
            future.result()


def _is_s3a(fs: Any) -> bool:
    return str(fs.getScheme()) == "s3a"


def _java_class(exc: Py4JJavaError) -> str:
    return str(exc.java_exception.getClass().getName())


def _java_classes(exc: Py4JJavaError) -> Set[str]:
    """The classes of the Java error and of its causes (S3A's RemoteFileChangedException
    holds the SDK's S3Exception; a stream's IOException may hold S3A's)."""
    found: Set[str] = set()
    java = exc.java_exception
    while java is not None and len(found) < 20:
        found.add(str(java.getClass().getName()))
        java = java.getCause()
    return found


@dataclass(frozen=True)
class Refusal:
    """Why the filesystem refused a step: its cause in words, the path when the error
    names one, and what lets the next run go on."""
    cause: str
    path: Optional[str]
    remedy: str


# errno (Python's OSError), the text the OS gives it (Java's IOException carries that text),
# the cause and the remedy in words
_REFUSALS = (
    (errno.ENOSPC, ("No space left on device",), "no space is left on the device",
     "space is freed"),
    (errno.EDQUOT, ("Disk quota exceeded", "QuotaExceededException"),
     "the disk quota is exceeded", "the quota allows it"),
    (errno.EROFS, ("Read-only file system", "ReadOnlyFileSystemException"),
     "the filesystem is read-only", "the filesystem is writable"),
    (errno.EACCES, ("Permission denied", "AccessDeniedException", "AccessControlException"),
     "permission denied", "this user may write there"),
    (errno.EPERM, ("Operation not permitted",), "the operation is not permitted",
     "this user may write there"),
)
# Where a refused path shows in an error's text: Java's file streams ("/p (Read-only file
# system)"), NIO ("AccessDeniedException: /p", "FileSystemException: /p: ..."), HDFS
# ("inode=\"/p\""), Spark's failed task ("writing rows to file:/p."), our renames.
_REFUSED_PATH = re.compile(
    r"(?:file:)?(/[^\s():]+) \((?:No space|Disk quota|Read-only|Permission|Operation)"
    r"|(?:AccessDeniedException|FileSystemException): (\S+?):?(?:\s|$)"
    r"|inode=\"([^\"]+)\""
    r"|writing rows to (\S+?)\.?(?:\s|$)"
    r"|rename refused: (\S+) ->")


def filesystem_refusal(exc: Optional[BaseException]) -> Optional[Refusal]:
    """The filesystem's refusal behind an error (an OSError, or a Java IOException through
    py4j, Spark or a Connect server: read-only, full, over quota, permission denied), or
    None when it is no such error. The chain of causes is searched, and the text of each."""
    chain, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    for err in chain:
        if isinstance(err, OSError) and err.errno is not None:
            for code, _marks, cause, remedy in _REFUSALS:
                if err.errno == code:
                    return Refusal(cause, err.filename and str(err.filename), remedy)
    text = "\n".join(str(err) for err in chain)
    for _code, marks, cause, remedy in _REFUSALS:
        if any(mark in text for mark in marks):
            found = _REFUSED_PATH.search(text)
            path = next((g for g in found.groups() if g), None) if found else None
            return Refusal(cause, path, remedy)
    return None


def local_path(path: str) -> Optional[str]:
    """The local path of an explicit `file:` URI, else None (a path without a scheme is on
    the default filesystem, which may be HDFS)."""
    if path.startswith("file:///"):
        return path[len("file://"):]
    if path.startswith("file:/") and not path.startswith("file://"):
        return path[len("file:"):]
    return None


def by_parent(paths: Iterable[str]) -> Dict[str, List[Tuple[str, str]]]:
    """{parent directory: [(name, path)]} of paths, each path split at its last `/`."""
    out: Dict[str, List[Tuple[str, str]]] = {}
    for path in paths:
        parent, _, name = path.rstrip("/").rpartition("/")
        out.setdefault(parent, []).append((name, path))
    return out


def list_local_dir(local: str) -> Optional[List[FileStatus]]:
    """list_dir of a local directory by the OS, as Hadoop's local filesystem lists it
    (`file:` paths, sizes, modification times in ms; no `.<name>.crc` side files, which
    its checksummed filesystem hides): through py4j a listing costs ~5 ms, and ~25 ms for
    a directory that is not there (the Java exception is fetched). None when it is no
    directory (Hadoop says what it is)."""
    try:
        entries = list(os.scandir(local))
    except FileNotFoundError:
        return []
    except NotADirectoryError:
        return None
    base = "file:" + os.path.normpath(local).rstrip("/")  # Hadoop's Path normalizes too
    out = []
    for entry in entries:
        if entry.name.startswith(".") and entry.name.endswith(".crc"):
            continue
        try:
            st = entry.stat()
        except FileNotFoundError:  # deleted since the directory was read
            continue
        is_dir = stat.S_ISDIR(st.st_mode)
        out.append(FileStatus(path=f"{base}/{entry.name}", name=entry.name, is_dir=is_dir,
                              size=0 if is_dir else st.st_size,
                              modified_ms=st.st_mtime_ns // 1_000_000))
    return sorted(out, key=lambda s: s.name)


def rename_local(src: str, dst: str, make_parent: bool) -> None:
    """Hadoop's local rename, by the OS: the parent made as Hadoop's mkdirs makes it, the
    file moved, and its `.<name>.crc` side file with it when there is one (Hadoop's
    checksummed local filesystem moves both)."""
    if make_parent:
        os.makedirs(os.path.dirname(dst.rstrip("/")), exist_ok=True)
    try:
        os.rename(src, dst)
    except OSError as exc:
        raise IOError(f"rename refused: {src} -> {dst} ({exc.strerror})") from exc
    crc = checksum_of(src)
    if os.path.exists(crc):
        os.rename(crc, checksum_of(dst))


def checksum_of(path: str) -> str:
    head, _, name = path.rstrip("/").rpartition("/")
    return f"{head}/.{name}.crc"


def hidden(name: str) -> bool:
    """Spark's rule for names a table scan ignores: `.x`, `_x` unless it is a partition
    directory (`_x=1`), and files still being copied (`x._COPYING_`)."""
    return (name.startswith(".") or (name.startswith("_") and "=" not in name)
            or name.endswith("._COPYING_"))


# Characters Hadoop's glob gives a meaning to: a path holding one is listed directory by directory.
_GLOB_CHARS = re.compile(r"[*?\[\]{}\\]")
# ArrayUtils.toString(FileStatus[]): "{A{path=...},B{path=...}}"; elements split where one
# ends and the next status begins.
_STATUS_SPLIT = re.compile(r"\},(?=\w*\{path=)")


def _split_status_array(text):
    if not (text.startswith("{") and text.endswith("}")):
        return []
    return _STATUS_SPLIT.split(text[1:-1])


def parse_status_text(text: str) -> Optional[FileStatus]:
    """FileStatus from Hadoop's FileStatus.toString(), or None when it is not in that form."""
    m = _STATUS_TEXT.match(text)
    if m is None:
        return None
    path = m.group("path")
    is_dir = m.group("dir") == "true"
    return FileStatus(path=path, name=path.rstrip("/").rsplit("/", 1)[-1], is_dir=is_dir,
                      size=0 if is_dir else int(m.group("len") or 0),
                      modified_ms=int(m.group("mtime")))

