"""The embedded Spark's local filesystem, without a `chmod` process per file.

pip's pyspark has no Hadoop native library, so Hadoop's local filesystem sets the permissions
of every file, checksum file and directory it creates by forking `chmod` (measured by
`benchmarks/local_fs_cost.py`; figures in benchmarks/README.md). `java/sizedspark/fs/` subclasses it to set the same bits
through java.nio. The wheel ships the classes compiled (`setup.py`'s build step, `--release
17`, against the Spark jars of the build: they use only APIs that Spark 3.5 and 4.x share),
so first use needs only the Java that runs Spark. A source checkout has no built jar: there
the classes are compiled on first use by the `javac` of the JDK that runs Spark and cached
per user (developers and the test suite run from the checkout, and a cache keyed by the
sources is never stale after an edit).

Only a session whose driver runs the tasks itself (`local`, `local[N]`) gets it: executors of
a cluster would not have the jar, and a cluster's tables live on HDFS or S3 anyway. A profile
that sets `spark.hadoop.fs.file.impl` keeps its own; without the jar the session starts as
before and `embedded_confs` says why. The same jar holds `StagedFiles`, which reads the
footers of a write's staged files in the driver (python_adapter/footers.py), and
`PartitionRecords`, which builds the metastore's records of many partitions in one call
(python_adapter/spark/catalog/stats.py).
"""
import glob
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence

FS_CLASS = "sizedspark.fs.NioLocalFileSystem"
HELPER_CLASS = "sizedspark.fs.StagedFiles"
FS_IMPL = "spark.hadoop.fs.file.impl"
CLASSPATH = "spark.driver.extraClassPath"
_HERE = os.path.dirname(os.path.abspath(__file__))
_SOURCES = os.path.join(_HERE, "java")
JAR_NAME = "sized-spark-helpers.jar"
SHIPPED_JAR = os.path.join(_HERE, JAR_NAME)  # put there by the wheel's build (setup.py)
# The Spark Connect server's extension (python_adapter/io/connect_client.py): the helpers and
# the plugin, one jar for a server's --jars. Built against Spark 4's spark-connect jar only.
_CONNECT_SOURCES = os.path.join(_HERE, "java_connect")
CONNECT_JAR_NAME = "sized-spark-connect.jar"
SHIPPED_CONNECT_JAR = os.path.join(_HERE, CONNECT_JAR_NAME)
JAVA_RELEASE = "17"  # the Java that Spark 3.5 and 4.x both run on
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


def _sources(connect: bool = False):
    roots = [_SOURCES, _CONNECT_SOURCES] if connect else [_SOURCES]
    return sorted(path for root in roots
                  for path in glob.glob(os.path.join(root, "**", "*.java"), recursive=True))


def has_connect(spark_jars: str) -> bool:
    """Whether these Spark jars hold the Connect server (Spark 4's pyspark wheel does)."""
    return bool(glob.glob(os.path.join(spark_jars, "spark-connect_*.jar")))


def cache_dir(env: Mapping[str, str]) -> str:
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "dbt-sized-spark")


def compile_jar(javac: str, spark_jars: str, jar: str, connect: bool = False) -> None:
    """Compiles the helpers' sources with `javac` against the jars in `spark_jars` into
    `jar`, replaced atomically (a concurrent reader sees no jar or a whole one). The wheel's
    build calls it too (setup.py), so this module imports nothing outside the standard
    library at its top. With `connect`, the Connect server's extension too (its jar).
    Raises Unavailable when javac fails."""
    out_dir = os.path.dirname(os.path.abspath(jar))
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        classes = os.path.join(tmp, "classes")
        done = subprocess.run(
            [javac, "--release", JAVA_RELEASE, "-nowarn", "-d", classes,
             "-cp", os.path.join(spark_jars, "*"), *_sources(connect)],
            capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise Unavailable(f"javac failed: {done.stderr.strip()[-2000:]}")
        staged = os.path.join(tmp, "fs.jar")
        with zipfile.ZipFile(staged, "w") as zf:
            for root, _dirs, names in os.walk(classes):
                for name in sorted(names):
                    path = os.path.join(root, name)
                    zf.write(path, os.path.relpath(path, classes))
        os.replace(staged, jar)


def build_jar(env: Optional[Mapping[str, str]] = None, connect: bool = False) -> str:
    """A source checkout's jar (with `connect`, the Connect server's): compiled now unless a
    jar of these sources against these Spark jars and this javac is cached. Raises
    Unavailable."""
    env = os.environ if env is None else env
    javac = find_javac(env)
    jars = spark_jars_dir(env)
    spark_jars = sorted(os.path.basename(p) for p in glob.glob(os.path.join(jars, "*.jar")))
    if not any(name.startswith("hadoop-") for name in spark_jars):
        raise Unavailable(f"no Hadoop jars in {jars}")
    digest = hashlib.sha256()
    if connect and not has_connect(jars):
        raise Unavailable(f"no Spark Connect jar in {jars}: the server extension needs Spark 4")
    for path in _sources(connect):
        with open(path, "rb") as fh:
            digest.update(path.encode() + b"\0" + fh.read())
    # every jar compiled against (Hadoop, Parquet) and the compiler: a new pyspark rebuilds
    digest.update("\0".join([os.path.realpath(javac), JAVA_RELEASE, *spark_jars]).encode())
    stem = "sized-connect" if connect else "sized-local-fs"
    jar = os.path.join(cache_dir(env), f"{stem}-{digest.hexdigest()[:16]}.jar")
    if not os.path.exists(jar):
        compile_jar(javac, jars, jar, connect)
    return jar


def helpers_jar(env: Optional[Mapping[str, str]] = None, shipped: str = SHIPPED_JAR) -> str:
    """The jar to start the JVM with: the one the wheel ships, else (a source checkout) one
    compiled now or cached. Raises Unavailable."""
    return shipped if os.path.isfile(shipped) else build_jar(env)


def connect_jar(env: Optional[Mapping[str, str]] = None,
                shipped: str = SHIPPED_CONNECT_JAR) -> str:
    """The jar a Spark Connect server loads (`--jars`): the one the wheel ships, else one
    compiled now or cached. Raises Unavailable."""
    return shipped if os.path.isfile(shipped) else build_jar(env, connect=True)


def local_session_env(confs: Mapping[str, str], env: Mapping[str, str],
                      python: str = sys.executable) -> Dict[str, str]:
    """The environment variables to set before the JVM of a session with `confs` starts,
    of those the user has not set, for a local master only (its driver runs the tasks): it
    binds to loopback (a host name that resolves to an address not up breaks it), and its
    Python workers run this interpreter (else `python3` on the PATH, maybe another version
    or one without the model's packages). On a cluster the executors must reach the driver
    and run their own Python, so nothing is set; nor when the master is not known."""
    master = effective_master(confs, env)
    if master is None or not _LOCAL.fullmatch(master.strip()):
        return {}
    wanted = {"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": python}
    return {key: value for key, value in wanted.items() if key not in env}


class Embedded(NamedTuple):
    """What a session about to start needs when its master is local."""
    confs: Dict[str, str]           # to add to its confs: the fast filesystem's
    env: Dict[str, str]             # to set in os.environ before its JVM starts
    why_not: Optional[str] = None   # why `confs` is empty
    jar: Optional[str] = None       # the jar `confs` puts on the driver's classpath


def embedded_confs(confs: Mapping[str, str], env: Optional[Mapping[str, str]] = None
                   ) -> Embedded:
    """What a session about to start with `confs` gets: the fast filesystem (when it
    applies, else why not) and the environment of a local session."""
    env = os.environ if env is None else env
    added, why_not, jar = _fast_fs_confs(confs, env)
    return Embedded(added, local_session_env(confs, env), why_not, jar)


def _fast_fs_confs(confs, env):
    """(confs to add, why none, the jar)."""
    reason = skip_reason(confs, env)
    if reason is not None:
        return {}, reason, None
    from pyspark import SparkContext

    if SparkContext._gateway is not None:
        # A later session in the same JVM (pyspark keeps it after stop()): its classpath
        # is fixed, so only a JVM started with the jar can use the class.
        if _loadable(SparkContext._jvm, FS_CLASS):
            return {FS_IMPL: FS_CLASS}, None, None
        return {}, "the JVM was started without the jar (its classpath is fixed)", None
    try:
        jar = helpers_jar(env)
    except Unavailable as e:
        return {}, str(e), None
    except (OSError, subprocess.SubprocessError) as e:  # unwritable cache, javac hung ...
        return {}, f"the jar could not be built: {e}", None
    return with_jar(confs, jar), None, jar


_jar_in: Dict[int, bool] = {}  # id of a py4j JVM view -> whether that JVM can load HELPER_CLASS


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
    for key, value in embedded_confs({"spark.master": master}).confs.items():
        builder = builder.config(key, value)
    return builder.master(master)
