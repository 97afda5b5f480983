"""LocalFS: the FileSystem of io/interfaces.py on local disk without a JVM, with what the
table layer relies on from HadoopFS (tests/functional/io/test_local_fs.py checks that both
give the same answers on one directory)."""
import os
import threading

import pytest

from python_adapter.io.local_fs import LocalFS, local_of


def test_paths_are_qualified_as_hadoop_qualifies_a_local_path(tmp_path, monkeypatch):
    fs = LocalFS()
    monkeypatch.chdir(tmp_path)
    assert fs.qualify("/a/b") == "file:/a/b"
    assert fs.qualify("file:///a/b/") == "file:/a/b"
    assert fs.qualify("file:/a//b/./c/../d") == "file:/a/b/d"
    assert fs.qualify("//a/b") == "file:/a/b"
    assert fs.qualify("rel/x") == f"file:{tmp_path}/rel/x"
    assert fs.qualify("file:///") == "file:/"
    assert fs.qualify(fs.qualify("/a/b")) == "file:/a/b"


@pytest.mark.parametrize("path", ["hdfs://nn:8020/t", "s3a://bucket/t", "file://host/t"])
def test_storage_that_is_not_local_disk_is_refused(path):
    with pytest.raises(ValueError, match="local disk only"):
        local_of(path)


def test_an_exclusive_create_has_one_winner_however_many_race(tmp_path):
    """What the writer lock relies on: writers taking a free lock at the same moment,
    exactly one create succeeds and the file holds its bytes."""
    fs = LocalFS()
    for round_no in range(20):
        path = f"file:{tmp_path}/r{round_no}/lock"
        start, won, lost = threading.Barrier(6), [], []

        def take(who):
            start.wait()
            try:
                fs.write_bytes(path, f"writer {who}".encode(), overwrite=False)
                won.append(who)
            except FileExistsError:
                lost.append(who)

        threads = [threading.Thread(target=take, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(won) == 1 and len(lost) == 5, (round_no, won, lost)
        assert fs.read_bytes(path) == f"writer {won[0]}".encode()


def test_an_overwrite_replaces_the_bytes_and_drops_a_stale_checksum(tmp_path):
    fs = LocalFS()
    (tmp_path / ".f.crc").write_bytes(b"crc of the old bytes")
    fs.write_bytes(str(tmp_path / "f"), b"old", overwrite=False)
    fs.write_bytes(str(tmp_path / "f"), b"new!", overwrite=True)
    assert fs.read_bytes(f"file://{tmp_path}/f") == b"new!" and fs.size(str(tmp_path / "f")) == 4
    assert not (tmp_path / ".f.crc").exists()
    fs.write_bytes(str(tmp_path / "deep" / "er" / "g"), b"x")  # parents made, as Hadoop does
    assert (tmp_path / "deep" / "er" / "g").read_bytes() == b"x"


def _tree(root):
    for rel in ["d=1/a.parquet", "d=1/.a.parquet.crc", "d=1/_SUCCESS", "d=1/b.parquet._COPYING_",
                "_p=1/c.parquet", "_tmp/x.parquet", ".sized/timeline/1.commit", "top.parquet"]:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * len(rel))


def test_listings_hide_checksums_and_list_a_table_as_spark_scans_it(tmp_path):
    fs = LocalFS()
    _tree(tmp_path)
    root = fs.qualify(str(tmp_path))
    listed = fs.list_dir(f"{tmp_path}/d=1/")
    assert [(s.name, s.path, s.size) for s in listed] == [
        ("_SUCCESS", f"{root}/d=1/_SUCCESS", len("d=1/_SUCCESS")),
        ("a.parquet", f"{root}/d=1/a.parquet", len("d=1/a.parquet")),
        ("b.parquet._COPYING_", f"{root}/d=1/b.parquet._COPYING_", len("d=1/b.parquet._COPYING_"))]
    assert [s.name for s in fs.list_dir(root) if s.is_dir] == [".sized", "_p=1", "_tmp", "d=1"]
    assert [s.path[len(root) + 1:] for s in fs.list_files(root)] == [
        "_p=1/c.parquet", "d=1/a.parquet", "top.parquet"]
    every = [s.path[len(root) + 1:] for s in fs.list_files(root, skip_hidden=False)]
    assert ".sized/timeline/1.commit" in every and "d=1/.a.parquet.crc" not in every
    assert fs.list_dir(f"{root}/missing") == [] and fs.list_files(f"{root}/missing") == []
    assert [s.name for s in fs.list_dir(f"{root}/top.parquet")] == ["top.parquet"]


def test_existing_answers_for_each_path_as_given(tmp_path):
    fs = LocalFS()
    _tree(tmp_path)
    asked = [f"file:{tmp_path}/d=1/a.parquet", f"{tmp_path}/top.parquet",
             f"file:{tmp_path}/d=1/gone.parquet", f"file:{tmp_path}/nowhere/x"]
    assert fs.existing(asked) == set(asked[:2])


def test_renames_run_in_order_each_followed_by_the_hook_and_carry_checksums(tmp_path):
    """A publish: files moved into directories made on the way, after_each after every
    move (the fault points), a `.crc` side file moved along, a missing source refused
    naming both paths."""
    fs = LocalFS()
    (tmp_path / "staged").mkdir()
    for i in range(3):
        (tmp_path / "staged" / f"f{i}").write_bytes(b"x" * (i + 1))
    (tmp_path / "staged" / ".f0.crc").write_bytes(b"crc")
    moves = [(f"file:{tmp_path}/staged/f{i}", f"file:{tmp_path}/t/day={i % 2}/f{i}")
             for i in range(3)]
    seen = []
    fs.rename_many(moves, after_each=lambda: seen.append(len(list(tmp_path.glob("t/*/f*")))))
    assert seen == [1, 2, 3]
    assert sorted(s.size for s in fs.list_files(f"file:{tmp_path}/t")) == [1, 2, 3]
    assert (tmp_path / "t" / "day=0" / ".f0.crc").read_bytes() == b"crc"
    assert list((tmp_path / "staged").iterdir()) == []
    with pytest.raises(IOError, match="rename refused: .*staged/gone -> .*t/x"):
        fs.rename_many([(f"file:{tmp_path}/staged/gone", f"file:{tmp_path}/t/x")])
    fs.rename(f"{tmp_path}/t", f"{tmp_path}/moved/t")  # a directory moves whole
    assert sorted(os.listdir(tmp_path / "moved" / "t")) == ["day=0", "day=1"]


def test_a_delete_says_whether_there_was_something_and_takes_the_checksum(tmp_path):
    fs = LocalFS()
    _tree(tmp_path)
    assert fs.delete(f"file:{tmp_path}/d=1/a.parquet", recursive=False)
    assert not (tmp_path / "d=1" / ".a.parquet.crc").exists()
    assert not fs.delete(f"file:{tmp_path}/d=1/a.parquet")
    with pytest.raises(OSError):
        fs.delete(f"file:{tmp_path}/d=1", recursive=False)  # not empty
    assert fs.delete(f"file:{tmp_path}/d=1") and not fs.exists(f"file:{tmp_path}/d=1")
    fs.mkdirs(f"file:{tmp_path}/e/f")
    assert fs.delete(f"file:{tmp_path}/e/f", recursive=False) and fs.exists(f"{tmp_path}/e")


def test_checksums_below_a_directory_are_dropped_and_counted(tmp_path):
    fs = LocalFS()
    _tree(tmp_path)
    (tmp_path / "_tmp" / ".x.parquet.crc").write_bytes(b"c")
    assert fs.drop_checksums_below(f"file:{tmp_path}") == 2
    assert fs.drop_checksums_below(f"file:{tmp_path}") == 0
    assert (tmp_path / "d=1" / "a.parquet").exists()


def test_a_lock_taken_through_it_has_no_holder_to_end_and_nothing_to_fence(tmp_path):
    from python_adapter.io.interfaces import Fence

    fs = LocalFS()
    assert fs.holder_extra() == {} and fs.end_holder({"pid": 1}) is None
    fs.hold_fence(Fence(f"file:{tmp_path}/lock", "t", (f"file:{tmp_path}",)))
    fs.drop_fence(f"file:{tmp_path}/lock")
