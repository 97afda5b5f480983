"""Parsing Hadoop's FileStatus text, one status or a whole ArrayUtils.toString(FileStatus[]);
grouping paths by the directory a listing of which says whether they exist."""
from python_adapter.io.fs import _split_status_array, by_parent, parse_status_text


def _status(path, is_dir=False, length=7, mtime=1700000000000):
    size = "" if is_dir else f"; length={length}"
    return (f"FileStatus{{path={path}; isDirectory={str(is_dir).lower()}{size}; replication=1; "
            f"blocksize=33554432; modification_time={mtime}; access_time=0; owner=root; "
            f"group=root; permission=rw-r--r--; isSymlink=false; hasAcl=false; "
            f"isEncrypted=false; isErasureCoded=false}}")


def test_an_array_splits_into_its_statuses_even_with_separators_in_paths():
    paths = ["file:/t/a=1/part-0.parquet", "file:/t/a=x},y/part-1.parquet",
             "file:/t/a=p; isDirectory=true/f", "file:/t/b=2"]
    text = "{" + ",".join(_status(p, is_dir=p.endswith("b=2"), length=i)
                          for i, p in enumerate(paths)) + "}"
    parsed = [parse_status_text(t) for t in _split_status_array(text)]
    assert [(s.path, s.is_dir, s.size) for s in parsed] == \
        [(paths[0], False, 0), (paths[1], False, 1), (paths[2], False, 2), (paths[3], True, 0)]
    assert parsed[1].name == "part-1.parquet"


def test_text_that_is_not_an_array_gives_nothing_to_trust():
    assert _split_status_array("[FileStatus{path=x}]") == []
    assert parse_status_text("something else") is None


def test_paths_are_grouped_by_their_parent_directory_once_each():
    paths = ["file:/t/d=1/a.parquet", "file:/t/.sized/st/d=1/a.parquet", "file:/t/d=1/b.parquet",
             "hdfs://nn:8020/t/d=2/c.parquet", "file:/t/d=1/"]
    assert by_parent(paths) == {
        "file:/t/d=1": [("a.parquet", paths[0]), ("b.parquet", paths[2])],
        "file:/t/.sized/st/d=1": [("a.parquet", paths[1])],
        "hdfs://nn:8020/t/d=2": [("c.parquet", paths[3])],
        "file:/t": [("d=1", paths[4])]}
