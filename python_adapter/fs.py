"""File work through the Hadoop FileSystem of the Spark session.

Everything the engine does to files goes through here, never through local-path shortcuts,
so a warehouse on HDFS, S3A or a `file://` URI works the same as a local directory.
"""
from dataclasses import dataclass


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

    def _path(self, path):
        return self._jvm.org.apache.hadoop.fs.Path(path)

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
        if not fs.exists(jpath):
            return []
        return sorted((self._status(st) for st in fs.listStatus(jpath)), key=lambda s: s.name)

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
