"""Which sessions get the fast local filesystem, and building its jar (a real javac)."""
import os
import zipfile

import pytest

from python_adapter.io import fast_local_fs as f


def test_the_master_comes_from_submit_args_or_confs_then_env():
    confs = {"spark.master": "local[2]"}
    assert f.effective_master(confs, {}) == "local[2]"
    assert f.effective_master({}, {}) == "local[*]"
    assert f.effective_master({}, {"MASTER": "yarn"}) == "yarn"
    assert f.effective_master(confs, {"MASTER": "yarn"}) == "local[2]"
    submit = {"PYSPARK_SUBMIT_ARGS": "--master spark://h:7077 pyspark-shell"}
    assert f.effective_master({}, submit) == "spark://h:7077"
    assert f.effective_master({}, {"PYSPARK_SUBMIT_ARGS": "--master=yarn x"}) == "yarn"
    assert f.effective_master({}, {"PYSPARK_SUBMIT_ARGS": "--conf spark.master=yarn x"}) == "yarn"
    # the two disagree: which one wins is not worth guessing
    assert f.effective_master(confs, submit) is None
    assert "not known" in f.skip_reason(confs, submit)


def test_submit_args_that_set_the_driver_classpath_keep_it_out():
    for args in ("--driver-class-path /x.jar pyspark-shell",
                 "--conf spark.driver.extraClassPath=/x.jar pyspark-shell",
                 "--properties-file /p.conf pyspark-shell"):
        reason = f.skip_reason({"spark.master": "local[2]"}, {"PYSPARK_SUBMIT_ARGS": args})
        assert reason is not None and "classpath" in reason


def test_a_spark_defaults_file_makes_an_unset_master_unknown(tmp_path):
    (tmp_path / "spark-defaults.conf").write_text("spark.master spark://h:7077\n")
    env = {"SPARK_CONF_DIR": str(tmp_path)}
    assert f.effective_master({}, env) is None
    assert f.effective_master({}, {**env, "MASTER": "local[2]"}) is None  # the file wins
    assert "not known" in f.skip_reason({}, env)
    assert f.skip_reason({"spark.master": "local[2]"}, env) is None


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "local[4,3]"])
def test_local_masters_get_it(master):
    assert f.skip_reason({"spark.master": master}, {}) is None


@pytest.mark.parametrize("master", ["spark://127.0.0.1:7077", "yarn", "local-cluster[2,1,1024]",
                                    "k8s://https://h:443"])
def test_masters_with_other_executor_processes_do_not(master):
    reason = f.skip_reason({"spark.master": master}, {})
    assert reason is not None and master in reason


def test_a_profile_that_names_its_own_file_system_keeps_it():
    confs = {"spark.master": "local[2]", f.FS_IMPL: "org.apache.hadoop.fs.LocalFileSystem"}
    assert f.FS_IMPL in f.skip_reason(confs, {})
    added, why = f.embedded_confs(confs, env={})
    assert added == {} and f.FS_IMPL in why


def test_the_jar_is_appended_to_a_driver_classpath_already_set():
    assert f.with_jar({}, "/c/fs.jar") == {f.FS_IMPL: f.FS_CLASS, f.CLASSPATH: "/c/fs.jar"}
    added = f.with_jar({f.CLASSPATH: "/x/a.jar"}, "/c/fs.jar")
    assert added[f.CLASSPATH] == f"/x/a.jar{os.pathsep}/c/fs.jar"


def test_a_jre_without_javac_is_named(tmp_path):
    (tmp_path / "bin").mkdir()
    with pytest.raises(f.Unavailable, match="install the JDK"):
        f.find_javac({"JAVA_HOME": str(tmp_path)})
    with pytest.raises(f.Unavailable, match="javac"):  # embedded_confs returns this text
        f.build_jar({"JAVA_HOME": str(tmp_path), "PATH": os.environ["PATH"]})


def test_an_unwritable_cache_leaves_the_session_as_it_was(tmp_path):
    (tmp_path / "cache").write_text("a file where the cache directory would go")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    with pytest.raises(OSError):
        f.build_jar(env)


def test_the_jar_is_built_once_and_holds_both_classes(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    jar = f.build_jar(env)
    assert jar.startswith(str(tmp_path)) and os.path.exists(jar)
    with zipfile.ZipFile(jar) as zf:
        assert {"sizedspark/fs/NioLocalFileSystem.class",
                "sizedspark/fs/NioRawLocalFileSystem.class"} <= set(zf.namelist())
    built = os.stat(jar).st_mtime_ns
    assert f.build_jar(env) == jar and os.stat(jar).st_mtime_ns == built  # cached
    assert os.listdir(os.path.dirname(jar)) == [os.path.basename(jar)]  # no temp left
