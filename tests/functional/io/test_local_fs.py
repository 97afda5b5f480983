"""LocalFS (pure Python, tests/unit/table's filesystem) gives the answers HadoopFS gives on
the same local directory: the fast tier tests the table layer on what the engine runs."""
import pytest

from python_adapter.io.fs import HadoopFS
from python_adapter.io.local_fs import LocalFS
from python_adapter.table.timeline import Timeline
from tests.unit.table.local_table import LocalTable, files_of

TREE = ["d=1/a.parquet", "d=1/.a.parquet.crc", "d=1/_SUCCESS", "d=1/b._COPYING_", "_p=1/c.parquet",
        "_tmp/x.parquet", ".sized/timeline/1.commit", "top.parquet", "e=2/f=3/g.parquet"]


@pytest.fixture
def tree(tmp_path):
    for rel in TREE:
        path = tmp_path / "t" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * len(rel))
    return tmp_path / "t"


def _both(spark):
    return HadoopFS(spark), LocalFS()


def test_paths_are_qualified_alike(spark, tree, monkeypatch):
    hadoop, local = _both(spark)
    for path in [str(tree), f"{tree}/", f"file://{tree}", f"file:{tree}/d=1/../top.parquet",
                 f"{tree}//d=1", "/", f"{tree}/missing/x"]:
        assert local.qualify(path) == hadoop.qualify(path), path


def _statuses(listed):
    return [(s.path, s.name, s.is_dir, 0 if s.is_dir else s.size) for s in listed]


def test_listings_are_alike(spark, tree):
    hadoop, local = _both(spark)
    for path in [f"file:{tree}", str(tree), f"file:{tree}/d=1", f"file:{tree}/missing"]:
        assert _statuses(local.list_dir(path)) == _statuses(hadoop.list_dir(path)), path
        for skip in (True, False):
            assert _statuses(local.list_files(path, skip)) == \
                _statuses(hadoop.list_files(path, skip)), (path, skip)


def test_existence_sizes_and_an_exclusive_create_are_alike(spark, tree):
    hadoop, local = _both(spark)
    asked = [f"file:{tree}/d=1/a.parquet", f"file:{tree}/d=1/gone", f"file:{tree}/nowhere/x",
             f"file:{tree}/e=2"]
    assert local.existing(asked) == hadoop.existing(asked)
    assert [local.exists(p) for p in asked] == [hadoop.exists(p) for p in asked]
    assert local.size(asked[0]) == hadoop.size(asked[0])
    for fs in (hadoop, local):
        with pytest.raises(Exception):
            fs.write_bytes(f"file:{tree}/top.parquet", b"taken", overwrite=False)
    assert local.read_bytes(f"file:{tree}/top.parquet") == hadoop.read_bytes(
        f"file:{tree}/top.parquet")


def test_a_table_committed_through_one_reads_the_same_through_the_other(spark, tmp_path):
    table = LocalTable(tmp_path)
    table.write(files_of("w1", days=[1, 2], per_day=2))
    table.write(files_of("w2", days=[2, 3], per_day=1), replacing=["day=2"])
    hadoop = HadoopFS(spark)
    location = hadoop.qualify(str(tmp_path / "warehouse" / "events"))
    assert location == table.location
    assert Timeline(hadoop, location).file_index() == table.timeline.file_index()
    assert _statuses(hadoop.list_files(location)) == _statuses(table.fs.list_files(location))
