"""The facts `dbt debug` checks, gathered (core/checks.py judges and words them): the Java
that starts Spark, found as pyspark finds it; whether the driver's JVM has the helper jar
(io/fast_local_fs.py); whether a file can be created and removed under the warehouse
directory, through the session's filesystem; whether a Spark Connect server has this
package's extension. Each returns a core.checks.Check and raises nothing the user caused."""
import os
import shutil
import subprocess
import uuid
from typing import Any, Mapping, Optional, Tuple

from python_adapter.core.checks import (ERROR, OK, WARN, Check, java_check, metastore_check,
                                        warehouse_check)
from python_adapter.io.backend import backend
from python_adapter.io.connect_client import PLUGIN_CLASS, ExtensionMissing, call
from python_adapter.io.fast_local_fs import (SHIPPED_JAR, Unavailable, helpers_jar, jar_loaded,
                                             skip_reason)
from python_adapter.io.filesystems import filesystem
from python_adapter.io.storage import StorageRefusedError

WAREHOUSE_KEY = "spark.sql.warehouse.dir"


def java_command(env: Mapping[str, str]) -> Tuple[str, Optional[str]]:
    """(where, path) of the java pyspark starts Spark with: Spark's launcher (bin/spark-class)
    runs $JAVA_HOME/bin/java when JAVA_HOME is set, else `java` on the PATH. path is None
    when there is none; `where` says which and how it was found."""
    java: Optional[str]  # JAVA_HOME's, else the PATH's (None: none there)
    if env.get("JAVA_HOME"):
        java = os.path.join(env["JAVA_HOME"], "bin", "java")
        if os.access(java, os.X_OK):
            return f"{java} (JAVA_HOME)", java
        return f"JAVA_HOME is {env['JAVA_HOME']}, which has no bin/java", None
    java = shutil.which("java", path=env.get("PATH"))
    if java is None:
        return "JAVA_HOME is not set and there is no `java` on the PATH", None
    return f"{os.path.realpath(java)} (PATH)", java


def check_java(env: Optional[Mapping[str, str]] = None) -> Check:
    """The Java of the JVM this process runs already, else the one pyspark would start."""
    running = _running_java()
    if running is not None:
        version, home = running
        return java_check(f"{home} (the running JVM)", f'version "{version}"')
    where, java = java_command(os.environ if env is None else env)
    if java is None:
        return java_check(where, None)
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return java_check(f"{where}: {exc}", None)
    return java_check(where, done.stderr + done.stdout)


def _running_java():
    try:
        from pyspark import SparkContext
    except ImportError:  # pyspark-client: no JVM here
        return None
    if SparkContext._gateway is None:
        return None
    system = SparkContext._jvm.java.lang.System
    return str(system.getProperty("java.version")), str(system.getProperty("java.home"))


_JAR_FIX = ("Runs work without it, slower (Hadoop forks a chmod per file written). The built "
            "wheel ships it compiled; a source install compiles it on first use with the "
            "javac of the JDK whose java runs Spark: install the JDK 17 (not only the JRE), "
            "or install the wheel")


def check_helper_jar(spark: Any, confs: Mapping[str, str],
                     env: Optional[Mapping[str, str]] = None) -> Check:
    """Whether the embedded session's JVM has the helper jar (the local filesystem without a
    chmod per file, the driver-side footer and partition helpers), and if not, why."""
    env = os.environ if env is None else env
    if jar_loaded(spark.sparkContext._jvm):
        return Check("helper jar", OK, f"loaded ({_jar_origin(env)})")
    reason = skip_reason(confs, env)
    if reason is not None:
        return Check("helper jar", OK, f"not used: {reason}")
    try:
        helpers_jar(env)
    except Unavailable as exc:
        return Check("helper jar", WARN, f"not available: {exc}", _JAR_FIX)
    except (OSError, subprocess.SubprocessError) as exc:
        return Check("helper jar", WARN, f"could not be built: {exc}", _JAR_FIX)
    return Check("helper jar", WARN, "the running JVM was started without it (an earlier "
                                     "Spark session of this process)",
                 "A new dbt process starts its JVM with it")


def _jar_origin(env):
    try:
        jar = helpers_jar(env)
    except (Unavailable, OSError, subprocess.SubprocessError):
        return "the running JVM's classpath"
    return f"{jar}, {'shipped in the package' if jar == SHIPPED_JAR else 'compiled, cached'}"


def check_extension(spark: Any) -> Check:
    """Whether the Spark Connect server runs this package's extension."""
    try:
        info = call(spark, "session.info")
    except ExtensionMissing as exc:
        return Check("server extension", ERROR, f"{PLUGIN_CLASS} is not loaded", str(exc))
    return Check("server extension", OK, f"{PLUGIN_CLASS} answers (the server's catalog: "
                                         f"{info.get('external_catalog') or '?'})")


def check_metastore(spark: Any) -> Check:
    """List the catalog's databases: the metastore opens (an embedded Derby database held by
    another process, or a metastore service that is down, fails here)."""
    where, derby = _metastore(spark)
    try:
        spark.sql("SHOW DATABASES").collect()
    except Exception as exc:
        locked = any("Another instance of Derby may have already booted" in cause
                     for cause in _causes(exc))
        error = "another process has it open (Derby's XSDB6)" if locked else _short(exc)
        return metastore_check(where, error, derby)
    return metastore_check(where, None, derby)


def _causes(exc, depth=20):
    """The texts of an error and of its Java causes (pyspark keeps the Java exception of a
    captured error in `_origin`, py4j in `java_exception`): Hive reports a Derby that would
    not boot as "Unable to instantiate ...MetaStoreClient", the reason ten causes down."""
    found = [str(exc)]
    java = getattr(exc, "_origin", None) or getattr(exc, "java_exception", None)
    while java is not None and len(found) < depth:
        found.append(str(java.toString()))
        java = java.getCause()
    return found


def _metastore(spark):
    """(what the catalog is, whether it is an embedded Derby database)."""
    return backend(spark).session.catalog_description()


def check_warehouse(spark: Any) -> Check:
    """Create and remove a probe file under the session's warehouse directory, through the
    filesystem the engine writes with (local files directly, others through the session's
    Hadoop filesystem, over Connect in the server). Directories the probe needed are
    removed too: Spark creates the warehouse itself at the first schema."""
    remote = backend(spark).session.remote
    path = spark.conf.get(WAREHOUSE_KEY)
    refused = None
    try:
        fs = filesystem(spark)
        path = fs.qualify(path)
        error = _probe(fs, path)
        if error is None:
            refused = _commit_refusal(fs, path)
    except Exception as exc:  # a path the filesystem cannot even name (unknown scheme ...)
        error = _short(exc)
    return warehouse_check(path, error, remote, refused)


def _commit_refusal(fs, directory):
    """Why the commit protocol cannot run on the warehouse's filesystem (io/storage.py: the
    probe every first commit there makes), or None."""
    try:
        fs.check_commit_safe(f"{directory.rstrip('/')}/.sized-debug-lock")
    except StorageRefusedError as exc:
        return str(exc)
    return None


def _probe(fs, directory):
    made = _first_missing(fs, directory)
    probe = f"{directory.rstrip('/')}/.sized-debug-probe-{uuid.uuid4().hex}"
    try:
        fs.write_bytes(probe, b"")
    except Exception as exc:  # any refusal is the answer: OSError, py4j's, the server's
        return _short(exc)
    finally:
        _remove(fs, made or probe)
    return None


def _first_missing(fs, directory):
    """The top one of `directory` and its parents that does not exist, or None."""
    missing, path = None, directory.rstrip("/")
    while path and not path.endswith(":") and not fs.exists(path):
        missing, parent = path, path.rsplit("/", 1)[0]
        if parent == path:
            break
        path = parent
    return missing


def _remove(fs, path):
    try:
        if fs.exists(path):
            fs.delete(path, recursive=True)
    except Exception:  # nothing was made there, or it cannot be removed: the probe's answer stands
        pass


def _short(exc):
    """An error's first line: py4j's Java exception as Java prints it, without its stack."""
    java = getattr(exc, "java_exception", None)
    text = str(java.toString()) if java is not None else str(exc)
    return (text.strip().splitlines() or [type(exc).__name__])[0][:500]
