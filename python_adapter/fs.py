"""File work through the Hadoop FileSystem of the Spark session.

Everything the engine does to files goes through here, never through local-path shortcuts,
so a warehouse on HDFS, S3A or a `file://` URI works the same as a local directory.
"""
import re
from dataclasses import dataclass

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
    def __init__(self, spark):
        self._jvm = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()
        # Resolving a class through py4j's package lookup costs several calls: do it once.
        self._path_class = self._jvm.org.apache.hadoop.fs.Path

    def _path(self, path):
        return self._path_class(path)

    def _fs(self, jpath):
        return jpath.getFileSystem(self._conf)

    def qualify(self, path):
        """The absolute URI of a path (adds scheme, resolves relative paths)."""
        jpath = self._path(path)
        return str(self._fs(jpath).makeQualified(jpath).toString())

    def exists(self, path):
        jpath = self._path(path)
        return bool(self._fs(jpath).exists(jpath))

    def mkdirs(self, path):
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

    def list_dir(self, path):
        """Direct children of a directory; [] when it does not exist."""
        jpath = self._path(path)
        fs = self._fs(jpath)
        try:
            statuses = fs.listStatus(jpath)
        except Exception as exc:  # py4j wraps java.io.FileNotFoundException
            if "FileNotFoundException" in str(exc):
                return []
            raise
        return sorted((self._status(st) for st in statuses), key=lambda s: s.name)

    def list_files(self, path, skip_hidden=True):
        """All files below a directory, recursively; hidden (`.`/`_`) entries skipped as Spark does."""
        out = []
        stack = [path]
        while stack:
            for st in self.list_dir(stack.pop()):
                if skip_hidden and st.name[:1] in (".", "_"):
                    continue
                if st.is_dir:
                    stack.append(st.path)
                else:
                    out.append(st)
        return sorted(out, key=lambda s: s.path)

    def rename(self, src, dst):
        """Move src to dst (parent created); raises if the filesystem refuses."""
        jsrc, jdst = self._path(src), self._path(dst)
        fs = self._fs(jsrc)
        fs.mkdirs(jdst.getParent())
        if not fs.rename(jsrc, jdst):
            raise IOError(f"rename refused: {src} -> {dst}")

    def delete(self, path, recursive=True):
        jpath = self._path(path)
        return bool(self._fs(jpath).delete(jpath, recursive))

    def read_bytes(self, path):
        jpath = self._path(path)
        stream = self._fs(jpath).open(jpath)
        try:
            return bytes(self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()

    def write_bytes(self, path, data, overwrite=False):
        """Write a whole file; with overwrite=False an existing file makes it fail (used for locks)."""
        jpath = self._path(path)
        stream = self._fs(jpath).create(jpath, overwrite)
        try:
            stream.write(bytearray(data))
            stream.hflush()
        finally:
            stream.close()

    def size(self, path):
        jpath = self._path(path)
        return int(self._fs(jpath).getFileStatus(jpath).getLen())


def parse_status_text(text):
    """FileStatus from Hadoop's FileStatus.toString(), or None when it is not in that form."""
    m = _STATUS_TEXT.match(text)
    if m is None:
        return None
    path = m.group("path")
    is_dir = m.group("dir") == "true"
    return FileStatus(path=path, name=path.rstrip("/").rsplit("/", 1)[-1], is_dir=is_dir,
                      size=0 if is_dir else int(m.group("len") or 0),
                      modified_ms=int(m.group("mtime")))
