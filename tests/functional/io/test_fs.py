"""HadoopFS on the session's local filesystem: what the writer lock relies on."""
import threading

from python_adapter.io.fs import HadoopFS


def test_an_exclusive_create_has_one_winner_however_many_race(spark, tmp_path):
    """Writers taking a free lock at the same moment: exactly one create succeeds and the
    file holds its bytes (Hadoop's local create checks, then creates: both could win)."""
    fs = HadoopFS(spark)
    for round_no in range(30):
        path = f"file:{tmp_path}/r{round_no}/lock"
        start, won = threading.Barrier(6), []

        def take(who):
            start.wait()
            try:
                fs.write_bytes(path, f"writer {who}".encode(), overwrite=False)
                won.append(who)
            except Exception:  # the file exists: someone else took it
                pass

        threads = [threading.Thread(target=take, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(won) == 1, (round_no, won)
        assert fs.read_bytes(path) == f"writer {won[0]}".encode()


def test_local_renames_move_files_into_new_directories_with_their_checksums(spark, tmp_path):
    """Publishing renames many local files by the OS: the parent directories are made, a
    file's `.crc` side file moves with it (as Hadoop's checksummed filesystem moves it), the
    filesystem sees the result, and a missing source fails naming both paths."""
    fs = HadoopFS(spark)
    (tmp_path / "staged").mkdir()
    for i in range(3):
        (tmp_path / "staged" / f"f{i}.parquet").write_bytes(b"x" * (i + 1))
    (tmp_path / "staged" / ".f0.parquet.crc").write_bytes(b"crc")
    moves = [(f"file:{tmp_path}/staged/f{i}.parquet", f"file:{tmp_path}/t/day={i % 2}/f{i}.parquet")
             for i in range(3)]
    seen = []
    fs.rename_many(moves, after_each=lambda: seen.append(len(list(tmp_path.glob("t/*/*.parquet")))))

    assert seen == [1, 2, 3]  # the callback runs after each move (fault injection relies on it)
    assert sorted(s.size for s in fs.list_files(f"file:{tmp_path}/t")) == [1, 2, 3]
    assert (tmp_path / "t" / "day=0" / ".f0.parquet.crc").read_bytes() == b"crc"
    assert list((tmp_path / "staged").iterdir()) == []
    try:
        fs.rename_many([(f"file:{tmp_path}/staged/gone.parquet", f"file:{tmp_path}/t/x.parquet")])
    except IOError as exc:
        assert "staged/gone.parquet" in str(exc) and "t/x.parquet" in str(exc)
    else:
        raise AssertionError("renaming a missing file succeeded")


def test_a_local_directory_is_listed_as_hadoop_lists_it(spark, tmp_path):
    """list_dir of a `file:` URI reads the directory by the OS; it must give what the
    session's Hadoop filesystem gives (a path without a scheme goes through Hadoop)."""
    fs = HadoopFS(spark)
    (tmp_path / "day=2025-01-01").mkdir()
    (tmp_path / "a b%2Fc=1").mkdir()
    (tmp_path / ".hidden").mkdir()
    (tmp_path / "part-0.parquet").write_bytes(b"x" * 321)
    (tmp_path / ".part-0.parquet.crc").write_bytes(b"c")  # Hadoop's side file: not listed
    (tmp_path / "_SUCCESS").write_bytes(b"")
    by_os = fs.list_dir(f"file:{tmp_path}")
    assert by_os == fs.list_dir(str(tmp_path))
    assert by_os == fs.list_dir(f"file://{tmp_path}/")
    assert [s.name for s in by_os] == [".hidden", "_SUCCESS", "a b%2Fc=1", "day=2025-01-01",
                                       "part-0.parquet"]
    assert next(s for s in by_os if s.name == "part-0.parquet").size == 321
    assert fs.list_dir(f"file:{tmp_path}/missing") == [] == fs.list_dir(f"{tmp_path}/missing")
