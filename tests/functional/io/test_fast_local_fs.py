"""The embedded session's local filesystem (python_adapter/fast_local_fs.py): what it leaves
on disk is what Hadoop's own leaves, without a process per file."""
import os
import stat

import pytest

from python_adapter.io.fast_local_fs import FS_CLASS


def _jfs(spark, cls, umask):
    jvm = spark._jvm
    conf = jvm.org.apache.hadoop.conf.Configuration(spark.sparkContext._jsc.hadoopConfiguration())
    conf.set("fs.permissions.umask-mode", umask)
    fs = cls()
    fs.initialize(jvm.java.net.URI("file:///"), conf)
    return fs


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_session_uses_it(spark):
    jvm = spark._jvm
    local = jvm.org.apache.hadoop.fs.FileSystem.getLocal(
        spark.sparkContext._jsc.hadoopConfiguration())
    assert local.getClass().getName() == FS_CLASS


@pytest.mark.every_variant  # the modes come from the JVM's Hadoop, another on each Spark
@pytest.mark.parametrize("umask", ["022", "077", "002"])
def test_files_and_directories_get_the_modes_hadoop_gives_them(spark, tmp_path, umask):
    jvm = spark._jvm
    ours = _jfs(spark, jvm.sizedspark.fs.NioLocalFileSystem, umask)
    hadoops = _jfs(spark, jvm.org.apache.hadoop.fs.LocalFileSystem, umask)
    modes = {}
    for name, fs in (("ours", ours), ("hadoop", hadoops)):
        base = tmp_path / name
        fs.mkdirs(jvm.org.apache.hadoop.fs.Path(f"file://{base}/a/b"))
        fs.create(jvm.org.apache.hadoop.fs.Path(f"file://{base}/a/b/f.parquet")).close()
        modes[name] = {rel: _mode(base / rel) for rel in ("a", "a/b", "a/b/f.parquet")}
    assert modes["ours"] == modes["hadoop"]
    assert modes["ours"]["a/b/f.parquet"] == 0o666 & ~int(umask, 8)
    # no checksum side file beside data files (polars' directory scan fails on them)
    assert (tmp_path / "hadoop/a/b/.f.parquet.crc").exists()
    assert not (tmp_path / "ours/a/b/.f.parquet.crc").exists()


def test_the_sticky_bit_is_set_too(spark, tmp_path):
    jvm = spark._jvm
    ours = _jfs(spark, jvm.sizedspark.fs.NioLocalFileSystem, "022")
    (tmp_path / "shared").mkdir()
    ours.setPermission(jvm.org.apache.hadoop.fs.Path(f"file://{tmp_path}/shared"),
                       jvm.org.apache.hadoop.fs.permission.FsPermission.valueOf("drwxrwxrwt"))
    assert stat.S_IMODE(os.stat(tmp_path / "shared").st_mode) == 0o1777


def test_a_rename_never_replaces_an_existing_file(spark, tmp_path):
    jvm = spark._jvm
    ours = _jfs(spark, jvm.sizedspark.fs.NioLocalFileSystem, "022")
    (tmp_path / "src").write_text("new")
    (tmp_path / "dst").write_text("old")
    path = jvm.org.apache.hadoop.fs.Path
    assert not ours.rename(path(f"file://{tmp_path}/src"), path(f"file://{tmp_path}/dst"))
    assert (tmp_path / "dst").read_text() == "old" and (tmp_path / "src").exists()
    assert ours.rename(path(f"file://{tmp_path}/src"), path(f"file://{tmp_path}/moved"))
    assert (tmp_path / "moved").read_text() == "new"


def _last_pid():
    with open("/proc/loadavg") as fh:
        return int(fh.read().split()[-1])


def test_a_partitioned_write_starts_no_process_per_file(spark, tmp_path):
    df = spark.range(8000).selectExpr("id", "id % 200 as p").repartition(2)
    # Machine-wide pids: other processes count too, hence the loose bound and the best of
    # three writes (another process's burst only adds; Hadoop's own filesystem would start
    # a chmod per file, .crc file and directory: ~1,800 here, ~4.5 per file, every time).
    counts = []
    for attempt in range(3):
        out = tmp_path / f"t{attempt}"
        before = _last_pid()
        df.write.partitionBy("p").parquet(str(out))
        counts.append(_last_pid() - before)
        written = sum(name.endswith(".parquet") for _r, _d, names in os.walk(out)
                      for name in names)
        assert written == 400
        if counts[-1] < written / 2:
            break
    # this one starts none (19 for 600 files in benchmarks/local_fs_cost.py)
    assert min(counts) < written / 2, f"{counts} processes started for {written} files"
