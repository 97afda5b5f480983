"""A faster start of the driver JVM: class data sharing (AppCDS) for Spark's classes.

Every dbt command starts a JVM that loads Spark's, Hive's and DataNucleus's classes again
before its first model (benchmarks/README.md, "Start-up"). Java 13+ can write the classes a
run loaded to an archive at exit (`-XX:ArchiveClassesAtExit`) and map it at the next start
(`-XX:SharedArchiveFile`). The archive is kept per user, keyed by the java binary and the
jars on the classpath; each writer writes its own file, which a later start takes as the
archive once it is complete. A stale or foreign archive is ignored by the JVM
(`-Xshare:auto`), and an older JVM ignores the options (`IgnoreUnrecognizedVMOptions`). The
JVM's CDS warnings are turned off, and only they (QUIET_CDS): writing an archive of Spark's
classes prints hundreds ("Skipping ...: Signed JAR", "Preload Warning"), and mapping one made
for another classpath one more; none says anything a dbt user acts on. Every other JVM log
line (errors, GC warnings) still shows.

Where and how big: `$XDG_CACHE_HOME/dbt-sized-spark/` (else `~/.cache/dbt-sized-spark/`),
`spark-classes-<key>.jsa`, 150-230 MB each, one per java, Spark and driver classpath. At
most MAX_ARCHIVES are kept (the least recently used go first when a new one is written), and
one no start has mapped for _UNUSED_DAYS goes too. SIZED_SPARK_NO_CLASS_ARCHIVE=1 turns it
off (the JVM starts as Spark starts it; the folder can then be deleted).
"""
import glob
import hashlib
import os
import shutil
import time
from typing import Dict, List, Mapping, Optional

from python_adapter.io.fast_local_fs import CLASSPATH, cache_dir, spark_jars_dir

JAVA_OPTIONS = "spark.driver.extraJavaOptions"
OFF = "SIZED_SPARK_NO_CLASS_ARCHIVE"   # set to anything: start the JVM as Spark does
# seconds without a change after which a written archive is taken as complete (the JVM
# writes it in one go at exit, a few seconds for Spark's ~180 MB of classes)
_WRITTEN_AFTER = 15
# days after which an archive no start has mapped is removed: one of a Spark, java or venv
# no longer used (each is ~200 MB, and a new key comes with every upgrade)
_UNUSED_DAYS = 14
# archives kept at most, the one being written included (~600 MB): a user's dbt profile and
# a second classpath or Spark (a test session, a venv on the other Spark) and one to spare
MAX_ARCHIVES = 3
# the unified-logging tag sets of the CDS warnings (-Xlog:disable would hide errors too)
QUIET_CDS = "-Xlog:cds=off,cds+dynamic=off"


def _archive(confs: Mapping[str, str], env: Mapping[str, str]) -> Optional[str]:
    """The archive's path for this java and classpath, None when there is no java."""
    java = shutil.which("java", path=env.get("PATH")) if not env.get("JAVA_HOME") else \
        os.path.join(env["JAVA_HOME"], "bin", "java")
    if not java or not os.path.exists(java):
        return None
    jars = spark_jars_dir(env)
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(jars, "*.jar")))
    key = "\0".join([os.path.realpath(java), jars, str(confs.get(CLASSPATH, "")), *names])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return os.path.join(cache_dir(env), f"spark-classes-{digest}.jsa")


def _state(archive: str) -> str:
    """'ready' (after taking a finished archive another start wrote), 'writing' (another start
    writes one: start as Spark does, not write a second) or 'none'."""
    if os.path.exists(archive):
        _remove_leftovers(archive)
        os.utime(archive)  # in use: kept by _remove_unused
        return "ready"
    now = time.time()
    for written in glob.glob(f"{archive}.*"):
        if now - os.path.getmtime(written) <= _WRITTEN_AFTER:
            return "writing"
        if os.path.getsize(written) > 0:
            os.replace(written, archive)
            os.utime(archive)
            return "ready"
    return "none"


def _remove_leftovers(archive: str) -> None:
    """Removes the files other starts left beside a taken archive: each start that found no
    archive while another was being written wrote its own (about 200 MB), which nobody maps
    once one is taken, and a claim whose JVM died without writing stays empty. Files changed
    in the last seconds may still be being written and are kept. (A JVM still running whose
    claim goes writes its archive at exit all the same; a later start removes that.)"""
    _remove_older_than(glob.glob(f"{archive}.*"), _WRITTEN_AFTER)


def _remove_unused(archive: str) -> None:
    """Before `archive` is written: removes the archives of other keys that no start has
    mapped for _UNUSED_DAYS, then the least recently mapped beyond MAX_ARCHIVES - 1, so the
    folder holds at most MAX_ARCHIVES once it is written (a taken archive's modification
    time is its last use). A JVM that maps one removed keeps its mapping."""
    others = glob.glob(os.path.join(os.path.dirname(archive), "spark-classes-*.jsa"))
    others = [p for p in others if p != archive]
    _remove_older_than(others, _UNUSED_DAYS * 86400)
    survivors = []
    for path in others:
        try:
            survivors.append((os.path.getmtime(path), path))
        except OSError:  # removed meanwhile
            pass
    survivors.sort(reverse=True)
    _remove([path for _when, path in survivors[MAX_ARCHIVES - 1:]])


def _remove_older_than(paths: List[str], seconds: float) -> None:
    """Removes the paths not modified in the last `seconds`; one another start removed
    first is no error."""
    now = time.time()
    old = []
    for path in paths:
        try:
            if now - os.path.getmtime(path) > seconds:
                old.append(path)
        except OSError:
            pass
    _remove(old)


def _remove(paths: List[str]) -> None:
    """Removes the paths; one another start removed first is no error."""
    for path in paths:
        try:
            os.remove(path)
        except OSError:
            pass


def class_archive_confs(confs: Mapping[str, str],
                        env: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """The driver options to add to a session's confs before its JVM starts: map the archive
    when there is one, else write one at exit. {} when the profile manages CDS itself, off
    POSIX, or when SIZED_SPARK_NO_CLASS_ARCHIVE is set."""
    env = os.environ if env is None else env
    options = str(confs.get(JAVA_OPTIONS, "") or "")
    if os.name != "posix" or env.get(OFF) or "SharedArchive" in options \
            or "ArchiveClassesAtExit" in options or "-Xshare" in options:
        return {}
    archive = _archive(confs, env)
    if archive is None:
        return {}
    os.makedirs(os.path.dirname(archive), exist_ok=True)
    state = _state(archive)
    if state == "writing":
        return {}
    if state == "ready":
        added = f"-XX:SharedArchiveFile={archive} -Xshare:auto"
    else:
        _remove_unused(archive)
        added = f"-XX:ArchiveClassesAtExit={archive}.{os.getpid()}"
        open(added.split("=", 1)[1], "wb").close()  # claimed: other starts do not write too
    return {JAVA_OPTIONS: f"{options} -XX:+IgnoreUnrecognizedVMOptions {added} {QUIET_CDS}".strip()}
