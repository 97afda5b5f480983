"""Which sessions get the fast local filesystem, and building its jar (a real javac)."""
import os
import sys
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
    embedded = f.embedded_confs(confs, env={})
    assert embedded.confs == {} and f.FS_IMPL in embedded.why_not


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
        # class file version 61: Java 17, the oldest Java that Spark 3.5 and 4.x run on
        header = zf.read("sizedspark/fs/NioLocalFileSystem.class")[:8]
        assert int.from_bytes(header[6:8], "big") == 61
    built = os.stat(jar).st_mtime_ns
    assert f.build_jar(env) == jar and os.stat(jar).st_mtime_ns == built  # cached
    assert os.listdir(os.path.dirname(jar)) == [os.path.basename(jar)]  # no temp left


def test_a_shipped_jar_is_used_without_a_jdk(tmp_path):
    """An installed wheel carries the jar: no javac is looked for, nothing is compiled."""
    shipped = tmp_path / f.JAR_NAME
    shipped.write_bytes(b"PK")
    jre_only = {"JAVA_HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    assert f.helpers_jar(jre_only, shipped=str(shipped)) == str(shipped)
    assert not (tmp_path / "cache").exists()
    with pytest.raises(f.Unavailable, match="install the JDK"):  # a checkout compiles
        f.helpers_jar(jre_only, shipped=str(tmp_path / "absent.jar"))


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]"])
def test_a_local_session_binds_to_loopback_and_runs_this_python(master):
    assert f.local_session_env({"spark.master": master}, {}, python="/venv/bin/python") == {
        "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": "/venv/bin/python"}


def test_what_the_user_set_is_kept():
    env = {"SPARK_LOCAL_IP": "10.0.0.5", "PYSPARK_PYTHON": "/opt/py/bin/python"}
    assert f.local_session_env({"spark.master": "local[2]"}, env) == {}
    assert f.local_session_env({}, {"SPARK_LOCAL_IP": "10.0.0.5"}) == {
        "PYSPARK_PYTHON": sys.executable}  # pyspark's default master is local[*]


@pytest.mark.parametrize("confs,env", [
    ({"spark.master": "yarn"}, {}),
    ({"spark.master": "spark://10.0.0.1:7077"}, {}),
    ({"spark.master": "k8s://https://h:443"}, {}),
    ({}, {"PYSPARK_SUBMIT_ARGS": "--master yarn pyspark-shell"}),
    ({"spark.master": "local[2]"}, {"PYSPARK_SUBMIT_ARGS": "--master yarn pyspark-shell"}),
])
def test_a_cluster_or_unknown_master_gets_nothing(confs, env):
    """Executors must reach the driver (not on loopback) and run their own Python."""
    assert f.local_session_env(confs, env) == {}
    assert f.embedded_confs(confs, env).env == {}
