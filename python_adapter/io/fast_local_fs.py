"""The embedded Spark's local filesystem, without a `chmod` process per file.

pip's pyspark has no Hadoop native library, so Hadoop's local filesystem sets the permissions
of every file, checksum file and directory it creates by forking `chmod` (measured by
`benchmarks/local_fs_cost.py`; figures in benchmarks/README.md). `java/sizedspark/fs/` subclasses it to set the same bits
through java.nio. The jar is compiled here on first use, by the `javac` of the JDK that runs
Spark, and cached per user.

Only a session whose driver runs the tasks itself (`local`, `local[N]`) gets it: executors of
a cluster would not have the jar, and a cluster's tables live on HDFS or S3 anyway. A profile
that sets `spark.hadoop.fs.file.impl` keeps its own; without a JDK the session starts as
before and `embedded_confs` says why. The same jar holds `StagedFiles`, which reads the
footers of a write's staged files in the driver (python_adapter/footers.py), and
`PartitionRecords`, which builds the metastore's records of many partitions in one call
(python_adapter/spark/metastore_stats.py).
"""
import glob
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import zipfile
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

FS_CLASS = "sizedspark.fs.NioLocalFileSystem"
HELPER_CLASS = "sizedspark.fs.StagedFiles"
FS_IMPL = "spark.hadoop.fs.file.impl"
CLASSPATH = "spark.driver.extraClassPath"
_SOURCES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "java")
_LOCAL = re.compile(r"local(\[(\d+|\*)(,\d+)?\])?")


class Unavailable(Exception):
    """The jar cannot be built here (no JDK, no Spark jars, compile error)."""


# ---------------------------------------------------------------------------------------
# Deciding (pure)
# ---------------------------------------------------------------------------------------
def effective_master(confs: Mapping[str, str], env: Mapping[str, str]) -> Optional[str]:
    """The master a session started now with `confs` gets, or None when it is not knowable
    from here: the builder's spark.master and spark-submit's `--master` (pyspark passes
    PYSPARK_SUBMIT_ARGS to it) disagree, or a spark-defaults.conf may set it."""
    args = shlex.split(env.get("PYSPARK_SUBMIT_ARGS", ""))
    submitted = None
    for i, arg in enumerate(args):
        if arg == "--master" and i + 1 < len(args):
            submitted = args[i + 1]
        elif arg.startswith("--master="):
            submitted = arg.split("=", 1)[1]
        elif arg.startswith("spark.master=") and i > 0 and args[i - 1] == "--conf":
            submitted = arg.split("=", 1)[1]
    conf = confs.get("spark.master")
    if submitted and conf and submitted != conf:
        return None
    if submitted or conf:
        return submitted or conf
    if _defaults_file(env):  # spark-submit reads it before $MASTER
        return None
    return env.get("MASTER") or "local[*]"  # pyspark's default


def _defaults_file(env):
    conf_dir = env.get("SPARK_CONF_DIR") or (
        os.path.join(env["SPARK_HOME"], "conf") if env.get("SPARK_HOME") else None)
    return conf_dir is not None and os.path.exists(os.path.join(conf_dir, "spark-defaults.conf"))


# Submit arguments that set the driver's classpath after the builder's --conf (and would
# drop the jar while fs.file.impl still names its class).
_CLASSPATH_ARGS = ("--driver-class-path", "spark.driver.extraClassPath", "--properties-file")


def skip_reason(confs: Mapping[str, str], env: Mapping[str, str]) -> Optional[str]:
    """Why a session started with `confs` does not get the fast filesystem, or None."""
    if os.name != "posix":
        return "java.nio sets POSIX permissions only"
    if FS_IMPL in confs:
        return f"{FS_IMPL} is set already"
    submit = env.get("PYSPARK_SUBMIT_ARGS", "")
    if any(arg in submit for arg in _CLASSPATH_ARGS):
        return "PYSPARK_SUBMIT_ARGS sets the driver's classpath"
    master = effective_master(confs, env)
    if master is None:
        return "spark.master is not known before the session starts"
    if not _LOCAL.fullmatch(master.strip()):
        return f"spark.master is {master}: executors would not have the jar"
    return None


def with_jar(confs: Mapping[str, str], jar: str) -> Dict[str, str]:
    """The confs to add so that `file:` paths use the fast filesystem from `jar`."""
    classpath = confs.get(CLASSPATH)
    return {FS_IMPL: FS_CLASS,
            CLASSPATH: f"{classpath}{os.pathsep}{jar}" if classpath else jar}


# ---------------------------------------------------------------------------------------
# Building (javac, cache)
# ---------------------------------------------------------------------------------------
def spark_jars_dir(env: Mapping[str, str]) -> str:
    """Where the Spark that pyspark launches keeps its jars (what `spark-submit` uses)."""
    if env.get("SPARK_HOME"):
        return os.path.join(env["SPARK_HOME"], "jars")
    import pyspark

    return os.path.join(os.path.dirname(pyspark.__file__), "jars")


def find_javac(env: Mapping[str, str]) -> str:
    """The javac of the JDK whose `java` pyspark will start ($JAVA_HOME, else `java` on the
    PATH): a javac newer than that java would build classes it cannot load."""
    if env.get("JAVA_HOME"):
        candidate = os.path.join(env["JAVA_HOME"], "bin", "javac")
    else:
        java = shutil.which("java", path=env.get("PATH"))
        if java is None:
            raise Unavailable("no `java` on the PATH")
        candidate = os.path.join(os.path.dirname(os.path.realpath(java)), "javac")
    if not os.access(candidate, os.X_OK):
        raise Unavailable(f"no javac next to the Java that runs Spark ({candidate}): "
                          "install the JDK, not only the JRE")
    return candidate


def _sources():
    return sorted(glob.glob(os.path.join(_SOURCES, "**", "*.java"), recursive=True))


def cache_dir(env: Mapping[str, str]) -> str:
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "dbt-sized-spark")


def build_jar(env: Optional[Mapping[str, str]] = None) -> str:
    """The jar's path, compiled now unless a jar of these sources against these Hadoop jars
    and this javac is cached. Raises Unavailable."""
    env = os.environ if env is None else env
    javac = find_javac(env)
    jars = spark_jars_dir(env)
    spark_jars = sorted(os.path.basename(p) for p in glob.glob(os.path.join(jars, "*.jar")))
    if not any(name.startswith("hadoop-") for name in spark_jars):
        raise Unavailable(f"no Hadoop jars in {jars}")
    digest = hashlib.sha256()
    for path in _sources():
        with open(path, "rb") as fh:
            digest.update(path.encode() + b"\0" + fh.read())
    # every jar compiled against (Hadoop, Parquet) and the compiler: a new pyspark rebuilds
    digest.update("\0".join([os.path.realpath(javac), *spark_jars]).encode())
    out_dir = cache_dir(env)
    jar = os.path.join(out_dir, f"sized-local-fs-{digest.hexdigest()[:16]}.jar")
    if os.path.exists(jar):
        return jar
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        classes = os.path.join(tmp, "classes")
        done = subprocess.run(
            [javac, "-nowarn", "-d", classes, "-cp", os.path.join(jars, "*"), *_sources()],
            capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise Unavailable(f"javac failed: {done.stderr.strip()[-2000:]}")
        staged = os.path.join(tmp, "fs.jar")
        with zipfile.ZipFile(staged, "w") as zf:
            for root, _dirs, names in os.walk(classes):
                for name in sorted(names):
                    path = os.path.join(root, name)
                    zf.write(path, os.path.relpath(path, classes))
        os.replace(staged, jar)  # atomic: a concurrent process sees no jar or a whole one
    return jar


def embedded_confs(confs: Mapping[str, str], env: Optional[Mapping[str, str]] = None
                   ) -> Tuple[Dict[str, str], Optional[str]]:
    """(confs to add to a session about to start with `confs`, why none when empty)."""
    env = os.environ if env is None else env
    reason = skip_reason(confs, env)
    if reason is not None:
        return {}, reason
    from pyspark import SparkContext

    if SparkContext._gateway is not None:
        # A later session in the same JVM (pyspark keeps it after stop()): its classpath
        # is fixed, so only a JVM started with the jar can use the class.
        if _loadable(SparkContext._jvm, FS_CLASS):
            return {FS_IMPL: FS_CLASS}, None
        return {}, "the JVM was started without the jar (its classpath is fixed)"
    try:
        return with_jar(confs, build_jar(env)), None
    except Unavailable as e:
        return {}, str(e)
    except (OSError, subprocess.SubprocessError) as e:  # unwritable cache, javac hung ...
        return {}, f"the jar could not be built: {e}"


_jar_in = {}  # id of a py4j JVM view -> whether that JVM can load HELPER_CLASS


def jar_loaded(jvm: Any) -> bool:
    """Whether the JVM behind a py4j view was started with the jar (fixed per JVM): then the
    driver-side helpers (VisibleFiles, StagedFiles) can be called."""
    if id(jvm) not in _jar_in:
        _jar_in[id(jvm)] = _loadable(jvm, HELPER_CLASS)
    return _jar_in[id(jvm)]


def encode_fields(fields: Sequence[str]) -> str:
    """Text fields for a helper, each "<length in code points>:<text>" (Fields.parse)."""
    return "".join(f"{len(text)}:{text}" for text in fields)


def decode_fields(text: str, per_record: int) -> List[List[str]]:
    """The records of a helper's "<length in code points>:<text>" fields, `per_record` each."""
    fields, pos = [], 0
    while pos < len(text):
        colon = text.index(":", pos)
        end = colon + 1 + int(text[pos:colon])
        fields.append(text[colon + 1:end])
        pos = end
    if len(fields) % per_record:
        raise ValueError(f"{len(fields)} fields from a helper is not {per_record} per record")
    return [fields[i:i + per_record] for i in range(0, len(fields), per_record)]


def _loadable(jvm, name):
    try:
        jvm.java.lang.Class.forName(name, False, jvm.java.lang.Thread.currentThread()
                                    .getContextClassLoader())
        return True
    except Exception:  # py4j wraps ClassNotFoundException
        return False


def configure(builder: Any, master: str) -> Any:
    """A SparkSession builder for `master` with the fast filesystem when it applies (tests,
    benchmarks: the same local filesystem a dbt profile's embedded session gets)."""
    added, _why_not = embedded_confs({"spark.master": master})
    for key, value in added.items():
        builder = builder.config(key, value)
    return builder.master(master)
