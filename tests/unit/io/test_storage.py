"""io/storage.py: which filesystems run the object-store protocol, what a refusal says, and
that each filesystem is checked once per process (a refusal every time). The probe itself
runs against local disk here and against a real S3 server in tests/functional/s3."""
import pytest

from python_adapter.io import storage
from python_adapter.io.local_fs import LocalFS
from python_adapter.io.storage import (StorageRefusedError, check_once, is_object_store, refusal,
                                       root_of)


@pytest.fixture(autouse=True)
def _fresh():
    storage.forget_checked()
    yield
    storage.forget_checked()


def test_the_root_is_the_scheme_and_the_authority():
    assert root_of("s3a://bucket/wh/db.db/.sized/t/lock") == "s3a://bucket"
    assert root_of("hdfs://nn:8020/wh/t/lock") == "hdfs://nn:8020"
    assert root_of("file:/tmp/wh/t/lock") == "file:"


@pytest.mark.parametrize("uri", ["s3a://b/t/lock", "s3://b/t/lock", "gs://b/t/lock",
                                 "wasbs://c@a.blob.core.windows.net/t/lock"])
def test_an_object_store_is_told_by_its_scheme(uri):
    assert is_object_store(uri)


@pytest.mark.parametrize("uri", ["file:/tmp/t/lock", "hdfs://nn:8020/t/lock",
                                 "viewfs://cluster/t/lock", "abfss://c@a.dfs.core.windows.net/t"])
def test_local_disk_hdfs_and_abfs_rename_atomically(uri):
    assert not is_object_store(uri)


def test_a_store_that_refuses_a_second_create_passes_and_leaves_no_probe(tmp_path):
    fs = LocalFS()
    lock = fs.qualify(str(tmp_path / "t" / "lock"))
    assert refusal(fs, lock, lambda: "never asked for a filesystem that is no object "
                   "store") is None
    assert list((tmp_path / "t").iterdir()) == []


def test_an_object_store_without_compare_and_swap_is_refused_naming_what_is_supported():
    why = storage.no_compare_and_swap("gs://b/t/lock")
    assert why.startswith("gs is an object store whose Hadoop connector offers no "
                          "compare-and-swap")
    assert "S3 through S3A (Hadoop 3.4.2+, conditional writes) is supported" in why
    assert "docs/storage.md" in why


def test_a_filesystem_is_checked_once_and_a_refusal_every_time():
    calls = []

    def check(answer):
        def run():
            calls.append(answer)
            return answer
        return run

    check_once("hdfs://nn/a/lock", check(None))
    check_once("hdfs://nn/b/lock", check("never asked"))
    assert calls == [None]
    for _ in range(2):
        with pytest.raises(StorageRefusedError, match=r"^cannot commit to s3a://b \(the "
                           r"table's lock s3a://b/t/lock\): no$"):
            check_once("s3a://b/t/lock", check("no"))
    assert calls == [None, "no", "no"]


def test_s3a_without_conditional_create_is_told_the_setting_and_the_hadoop_it_needs():
    why = storage.no_conditional_create("s3a://b/t/lock", "3.3.4")
    assert "set spark.hadoop.fs.s3a.create.conditional.enabled=true" in why
    assert "this Spark has Hadoop 3.3.4" in why and "pyspark 4.x" in why


class _IgnoresConditions:
    """An object store that takes every write and ignores its conditions (a server that
    drops If-None-Match and If-Match): what no server here does, so the probe's refusal of
    it is shown on this stand-in; a real server that honours them is probed in
    tests/functional/s3."""

    def __init__(self, versioned=True):
        self.files, self._versioned = {}, versioned

    def write_bytes(self, path, data, overwrite=False):
        self.files[path] = data

    def delete(self, path, recursive=True):
        return self.files.pop(path, None) is not None

    def versioned(self, path):
        return self._versioned

    def read_versioned(self, path):
        from python_adapter.io.storage import Versioned
        return Versioned(self.files[path], str(hash(self.files[path])))

    def replace_if(self, path, data, version):
        self.files[path] = data
        return True


def test_a_store_that_ignores_if_none_match_is_refused_and_keeps_no_probe():
    store = _IgnoresConditions()
    why = refusal(store, "s3a://b/t/lock", lambda: None)
    assert why.startswith("it does not honour create-if-absent (a file created twice, the "
                          "second time only if absent, was not refused)")
    assert store.files == {}


def test_a_store_that_ignores_if_match_is_refused_for_its_compare_and_swap():
    class HonoursCreates(_IgnoresConditions):
        def write_bytes(self, path, data, overwrite=False):
            if path in self.files and not overwrite:
                raise FileExistsError(path)
            self.files[path] = data

    why = refusal(HonoursCreates(), "s3a://b/t/lock", lambda: None)
    assert why.startswith("s3a: this S3 server refused or ignored a replace conditional on "
                          "the object's ETag (If-Match)")
    assert refusal(HonoursCreates(versioned=False), "gs://b/t/lock", lambda: None).startswith(
        "gs is an object store whose Hadoop connector offers no compare-and-swap")
