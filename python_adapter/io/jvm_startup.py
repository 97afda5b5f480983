"""A faster start of the driver JVM: class data sharing (AppCDS) for Spark's classes.

Every dbt command starts a JVM that loads Spark's, Hive's and DataNucleus's classes again
before its first model (benchmarks/README.md, "Start-up"). Java 13+ can write the classes a
run loaded to an archive at exit (`-XX:ArchiveClassesAtExit`) and map it at the next start
(`-XX:SharedArchiveFile`). The archive is kept per user, keyed by the java binary and the
jars on the classpath. A stale or foreign archive is ignored by the JVM (`-Xshare:auto`), and
an older JVM ignores the options (`IgnoreUnrecognizedVMOptions`). The JVM's CDS warnings are
turned off, and only they (QUIET_CDS): writing an archive of Spark's classes prints hundreds
("Skipping ...: Signed JAR", "Preload Warning"), and mapping one made for another classpath
one more; none says anything a dbt user acts on. Every other JVM log line (errors, GC
warnings) still shows.

Who writes it: never a dbt command's own JVM. Writing one kept that JVM 45 s to 2 min after
dbt had returned, still holding the embedded Derby metastore, so the next command found the
metastore taken (thousands of `ERROR XSDB6` lines). When a command's key has no archive, the
command, at its exit, starts a separate warm-up process (io/class_warmup.py), detached and
at low priority, which runs a small job on a JVM of its own (its own temporary warehouse and
Derby), waits for that JVM to write the archive, and only then moves it into place: an
archive under its final name is always complete. Its claim, the file its JVM writes
(`<archive>.<pid>`), names its process; a claim counts as being written while that process
lives (at most CLAIM_MINUTES, against a reused pid; a warm-up stops itself before), and
nobody else starts one then. A warm-up that wrote none (a Java before 13, a failure its log
names) leaves a marker, and commands start no other for RETRY_HOURS. Each dbt process also
waits at its exit (at most JVM_EXIT_WAIT) for its Spark JVM to end, so the next command
never finds the metastore held. Test sessions only map archives (scripts/test.sh writes
theirs); only a dbt process's exit starts a warm-up.

Where and how big: `$XDG_CACHE_HOME/dbt-sized-spark/` (else `~/.cache/dbt-sized-spark/`),
`spark-classes-<key>.jsa`, ~210 MB each (40-70 s to write on 2 cores), one per java, Spark,
driver classpath (and heap of 32 GiB or more), and the warm-up's log, `class-archive.log`.
At most MAX_ARCHIVES are kept (the least recently used go first when a new one is written),
and one no start has mapped for _UNUSED_DAYS goes too. SIZED_SPARK_NO_CLASS_ARCHIVE=1 turns
it off (the JVM starts as Spark starts it and no warm-up runs; the folder can then be
deleted).
"""
import atexit
import glob
import hashlib
import json
import os
import shutil
import site
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Mapping, NamedTuple, Optional

from python_adapter.io.fast_local_fs import CLASSPATH, FS_IMPL, cache_dir, spark_jars_dir

JAVA_OPTIONS = "spark.driver.extraJavaOptions"
OFF = "SIZED_SPARK_NO_CLASS_ARCHIVE"   # set to anything: start the JVM as Spark does
# the warm-up's log, beside the archives
LOG_NAME = "class-archive.log"
# The confs of a session that the warm-up's JVM takes over: the classpath (the archive's key,
# with java and Spark's jars, which the warm-up inherits), the filesystem class it names, and
# the heap, whose size decides compressed pointers (from 32 GiB on none, which the key tells
# apart: an archive written with them does not map without).
KEY_CONFS = (CLASSPATH, FS_IMPL, "spark.driver.memory")
# seconds a dbt process waits at exit for its Spark JVM to end (it ends in a few)
JVM_EXIT_WAIT = 30
# minutes after which a claim no longer counts as being written even if a process of its pid
# lives (a warm-up takes about a minute and stops itself at this age; a pid may be reused)
CLAIM_MINUTES = 15
# hours after a failed warm-up before a command starts another
RETRY_HOURS = 24
# days after which an archive no start has mapped is removed: one of a Spark, java or venv
# no longer used (each is ~200 MB, and a new key comes with every upgrade)
_UNUSED_DAYS = 14
# archives kept at most, the one being written included (~600 MB): a user's dbt profile and
# a second classpath or Spark (a test session, a venv on the other Spark) and one to spare
MAX_ARCHIVES = 3
# the unified-logging tag sets of the CDS warnings (-Xlog:disable would hide errors too)
QUIET_CDS = "-Xlog:cds=off,cds+dynamic=off"
_LOG_LIMIT = 1 << 20  # bytes of warm-up log kept: a warm-up runs once per key


class ArchiveUse(NamedTuple):
    """What a session about to start does with the class archive."""
    confs: Dict[str, str]          # the driver options to add to its confs ({}: none)
    note: str                      # one line for a debug log
    archive: Optional[str] = None  # the archive of its key, None when off


def archive_path(confs: Mapping[str, str], env: Mapping[str, str]) -> Optional[str]:
    """The archive's path for this java and classpath, None when there is no java. The key
    holds the size and modification time of every file the JVM checks before it maps an
    archive (its runtime image, each jar on the classpath): a reinstalled package or pyspark,
    or a JDK updated in place, gets an archive of its own, where the old one would be
    refused at every start and never written again."""
    java = shutil.which("java", path=env.get("PATH")) if not env.get("JAVA_HOME") else \
        os.path.join(env["JAVA_HOME"], "bin", "java")
    if not java or not os.path.exists(java):
        return None
    java = os.path.realpath(java)
    jars = spark_jars_dir(env)
    classpath = [p for p in str(confs.get(CLASSPATH, "")).split(os.pathsep) if p]
    files = [java, os.path.join(os.path.dirname(os.path.dirname(java)), "lib", "modules"),
             *classpath, *sorted(glob.glob(os.path.join(jars, "*.jar")))]
    key = "\0".join([jars, *map(_stamp, files)])
    if large_heap(str(confs.get("spark.driver.memory", ""))):
        # no compressed pointers: an archive written with them does not map, nor the reverse
        key += "\0large heap"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return os.path.join(cache_dir(env), f"spark-classes-{digest}.jsa")


def _stamp(path: str) -> str:
    try:
        stat = os.stat(path)
    except OSError:  # not there (a JDK without a runtime image): its absence is the key
        return path
    return f"{path}:{stat.st_size}:{stat.st_mtime_ns}"


_UNITS = {"k": 2 ** 10, "m": 2 ** 20, "g": 2 ** 30, "t": 2 ** 40, "p": 2 ** 50}


def large_heap(memory: str) -> bool:
    """Whether a driver heap of `memory` (Spark's notation: "2g", "40960m", a bare number is
    MiB) is one the JVM runs without compressed pointers (32 GiB and more)."""
    text = memory.strip().lower().rstrip("b")
    if not text:
        return False
    unit = _UNITS.get(text[-1])
    try:
        amount = float(text[:-1] if unit else text)
    except ValueError:  # Spark refuses it at the start anyway
        return False
    return amount * (unit or 2 ** 20) >= 32 * 2 ** 30


def _off(confs: Mapping[str, str], env: Mapping[str, str]) -> Optional[str]:
    """Why no archive is used or written for a session with `confs`, or None."""
    options = str(confs.get(JAVA_OPTIONS, "") or "")
    if env.get(OFF):
        return f"{OFF} is set"
    if os.name != "posix":
        return "not a POSIX system"
    if "SharedArchive" in options or "ArchiveClassesAtExit" in options or "-Xshare" in options:
        return f"{JAVA_OPTIONS} manages class data sharing"
    return None


def class_archive(confs: Mapping[str, str], env: Optional[Mapping[str, str]] = None
                  ) -> ArchiveUse:
    """Before a session's JVM starts: the driver options that map its key's archive when one
    is complete. Never options that write one (a warm-up process does: warm_up_at_exit)."""
    env = os.environ if env is None else env
    why_not = _off(confs, env)
    archive = None if why_not else archive_path(confs, env)
    if archive is None:
        return ArchiveUse({}, f"off ({why_not or 'no java found'})")
    if _take(archive):
        options = str(confs.get(JAVA_OPTIONS, "") or "")
        added = f"-XX:+IgnoreUnrecognizedVMOptions -XX:SharedArchiveFile={archive} " \
                f"-Xshare:auto {QUIET_CDS}"
        return ArchiveUse({JAVA_OPTIONS: f"{options} {added}".strip()}, f"mapped from {archive}",
                          archive)
    writer = live_claim(archive)
    if writer is not None:
        return ArchiveUse({}, f"{archive} is being written by process {writer}", archive)
    log = os.path.join(os.path.dirname(archive), LOG_NAME)
    if _failed_lately(archive):
        return ArchiveUse({}, f"none: the last warm-up wrote none (its log: {log}); another "
                              f"is tried {RETRY_HOURS} h after it", archive)
    return ArchiveUse({}, f"none yet: a separate process writes {archive} after this command "
                          f"(its log: {log})", archive)


def class_archive_confs(confs: Mapping[str, str],
                        env: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """The driver options to add to a session's confs before its JVM starts: those that map
    the archive when there is one, else {} (also when the profile manages CDS itself, off
    POSIX, or when SIZED_SPARK_NO_CLASS_ARCHIVE is set)."""
    return class_archive(confs, env).confs


def _take(archive: str) -> bool:
    """Whether the archive is there (complete: only a finished warm-up moves it there); if
    so it is marked as used (kept by remove_unused) and the claims of dead writers go."""
    if not os.path.exists(archive):
        return False
    live_claim(archive)
    try:
        os.utime(archive)
    except OSError:  # removed meanwhile by another key's cleanup
        return False
    return True


def _claims(archive: str) -> List[str]:
    return [p for p in glob.glob(f"{glob.escape(archive)}.*") if p.rsplit(".", 1)[1].isdigit()]


def live_claim(archive: str, but: Optional[int] = None) -> Optional[int]:
    """The pid of a live process (other than `but`) that writes `archive`, or None. Claims
    of dead writers are removed (a warm-up killed, or the file a JVM of an earlier version
    wrote at exit): nobody will finish them, and each may hold ~200 MB."""
    now, found = time.time(), None
    for claim in _claims(archive):
        pid = int(claim.rsplit(".", 1)[1])
        try:
            young = now - os.path.getmtime(claim) <= CLAIM_MINUTES * 60
        except OSError:  # its writer finished meanwhile
            continue
        if young and alive(pid):
            found = found if pid == but else pid
        else:
            _remove([claim])
    return found


def alive(pid: int) -> bool:
    """Whether a process of this pid runs (a zombie, dead but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):  # no /proc (macOS): kill's answer
        return True


def claim(archive: str) -> Optional[str]:
    """Claims the writing of `archive` for this process: the path its JVM is to write (its
    pid in the name), or None when the archive is there or another live process claims it.
    Each claimant creates its claim before it looks for others', and leaves when it sees
    one: of two at once at least one sees the other (maybe both: then the next command's
    exit tries again)."""
    mine = f"{archive}.{os.getpid()}"
    os.makedirs(os.path.dirname(archive), exist_ok=True)
    open(mine, "wb").close()
    if live_claim(archive, but=os.getpid()) is not None or os.path.exists(archive):
        _remove([mine])
        return None
    remove_unused(archive)
    return mine


def remove_unused(archive: str) -> None:
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


# ---------------------------------------------------------------------------------------
# At the exit of the process that opened a session
# ---------------------------------------------------------------------------------------
_at_exit: Dict[str, Dict[str, str]] = {}  # "confs": those of the first session opened
_registering = threading.Lock()


def warm_up_at_exit(confs: Mapping[str, str], env: Optional[Mapping[str, str]] = None) -> bool:
    """Before a session's JVM starts: at this process's exit, wait for that JVM to end (at
    most JVM_EXIT_WAIT s), then start the warm-up that writes the archive of its key when
    none is there and nobody writes one. Registered once per process, for its first
    session's confs (a JVM's classpath is fixed): whether this call registered it."""
    with _registering:  # dbt's threads may open their first connections at once
        if _at_exit:
            return False
        _at_exit["confs"] = {k: str(confs[k]) for k in (*KEY_CONFS, JAVA_OPTIONS) if confs.get(k)}
    atexit.register(_finish, os.environ if env is None else env)
    return True


def _finish(env: Mapping[str, str]) -> None:
    """At exit: the JVM ended first (the warm-up starts beside no metastore this process
    holds), then the warm-up, unless the archive is there, being written, or failed lately."""
    end_spark_jvm(JVM_EXIT_WAIT)
    confs = _at_exit["confs"]
    archive = None if _off(confs, env) else archive_path(confs, env)
    if archive and not os.path.exists(archive) and live_claim(archive) is None \
            and not _failed_lately(archive):
        try:
            start_warm_up(confs, env)
        except OSError:  # an unwritable cache: the next command starts as this one did
            pass


def failed_marker(archive: str) -> str:
    """The file a warm-up that wrote no archive leaves (a Java without dynamic archives, a
    job that failed: its log says why)."""
    return f"{archive}.failed"


def _failed_lately(archive: str) -> bool:
    """Whether a warm-up of `archive` failed in the last RETRY_HOURS: then commands do not
    start another each (a minute of CPU for the same failure)."""
    try:
        return time.time() - os.path.getmtime(failed_marker(archive)) < RETRY_HOURS * 3600
    except OSError:
        return False


def end_spark_jvm(seconds: float) -> None:
    """Ends this process's Spark driver JVM, if pyspark started one, within `seconds`: its
    SparkContext stopped (else pyspark's accumulator server prints an EOFError traceback as
    the JVM goes), py4j's gateway shut down (else py4j's finalizer thread may send a command
    to the JVM going away and log an ERROR with its traceback), then the JVM's stdin closed,
    on which it exits (pyspark's gateway server watches it), and waited for."""
    context = sys.modules.get("pyspark.core.context") or sys.modules.get("pyspark.context")
    spark_context = getattr(context, "SparkContext", None)
    gateway = getattr(spark_context, "_gateway", None)
    proc = getattr(gateway, "proc", None)
    if proc is None or proc.poll() is not None:
        return
    deadline = time.monotonic() + seconds
    stopping = threading.Thread(target=_stop_quietly, daemon=True, args=(
        getattr(spark_context, "_active_spark_context", None), gateway))
    stopping.start()
    stopping.join(seconds)
    try:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(max(0.0, deadline - time.monotonic()))
    except (OSError, subprocess.TimeoutExpired):  # it ends on its own; nothing to add
        pass


def _stop_quietly(spark_context: Any, gateway: Any) -> None:
    for stop in ([spark_context.stop] if spark_context is not None else []) + [gateway.shutdown]:
        try:
            stop()
        except Exception:  # a JVM already gone: closing its stdin is all that is left
            pass


def start_warm_up(confs: Mapping[str, str], env: Mapping[str, str]) -> int:
    """Starts the warm-up of the archive of `confs`' key (io/class_warmup.py), detached (its
    own session, stdin from /dev/null, its output to the log): its pid."""
    folder = cache_dir(env)
    os.makedirs(folder, exist_ok=True)
    log = os.path.join(folder, LOG_NAME)
    mode = "ab" if os.path.exists(log) and os.path.getsize(log) < _LOG_LIMIT else "wb"
    child = {k: v for k, v in env.items() if not k.startswith("PYSPARK_GATEWAY")}
    root = _package_root()
    if root is not None:  # a source checkout: this copy of the package, not an installed one
        child["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    job = {k: confs[k] for k in KEY_CONFS if confs.get(k)}
    with open(log, mode) as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "python_adapter.io.class_warmup", json.dumps(job)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=folder,
            env=child, start_new_session=True, close_fds=True)
    return proc.pid


def _package_root() -> Optional[str]:
    """The folder this copy of the package is imported from, when the interpreter would not
    find it there by itself (a source checkout); None for an installed copy (its
    site-packages in front of the PYTHONPATH would shadow the standard library)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sites = [*site.getsitepackages(), site.getusersitepackages()]
    return None if os.path.realpath(root) in {os.path.realpath(p) for p in sites} else root
