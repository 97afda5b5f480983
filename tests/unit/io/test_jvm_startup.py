"""The driver JVM's class archive (io/jvm_startup.py): mapped once a warm-up process has
written it, never written by a session's own JVM, claimed by one live writer at a time,
never fighting a profile that manages class data sharing itself."""
import os
import shutil
import subprocess
import sys
import time

import pytest

from python_adapter.io.fast_local_fs import helpers_jar
from python_adapter.io.jvm_startup import (CLAIM_MINUTES, JAVA_OPTIONS, MAX_ARCHIVES, OFF,
                                          QUIET_CDS, alive, archive_path, claim, class_archive,
                                          class_archive_confs, failed_marker)


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))


@pytest.fixture
def env(tmp_path):
    return {"PATH": os.environ["PATH"], "XDG_CACHE_HOME": str(tmp_path)}


CONFS = {JAVA_OPTIONS: "-Dx=1"}


def _options(env, confs=None):
    return class_archive_confs(confs or CONFS, env).get(JAVA_OPTIONS, "")


def _write(path, content=b"archive", age=0):
    with open(path, "wb") as fh:
        fh.write(content)
    when = time.time() - age
    os.utime(path, (when, when))


@pytest.fixture
def process():
    """A live process other than this one (a writer's), stopped afterwards by its pid."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    yield proc.pid
    proc.kill()
    proc.wait()


def _dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_start_never_writes_an_archive_and_maps_the_one_a_warm_up_moved_in(env, tmp_path,
                                                                             process):
    """The session's own JVM holds the embedded metastore while it writes an archive (a
    minute or two after dbt returns): it must never be told to write one."""
    archive = archive_path(CONFS, env)
    assert archive.startswith(str(tmp_path))
    first = class_archive(CONFS, env)
    assert first.confs == {} and "a separate process writes" in first.note
    assert not os.path.exists(os.path.dirname(archive))  # nothing written
    # a warm-up claims it and its JVM writes into the claim: not mapped, not written twice
    os.makedirs(os.path.dirname(archive))
    _write(f"{archive}.{process}")
    writing = class_archive(CONFS, env)
    assert writing.confs == {} and f"being written by process {process}" in writing.note
    assert claim(archive) is None  # a second warm-up leaves
    os.replace(f"{archive}.{process}", archive)  # as the warm-up does once its JVM exited
    mapped = _options(env)
    assert mapped.startswith("-Dx=1 ") and "-XX:+IgnoreUnrecognizedVMOptions" in mapped
    assert f"-XX:SharedArchiveFile={archive} -Xshare:auto" in mapped and QUIET_CDS in mapped
    assert "ArchiveClassesAtExit" not in mapped


def test_a_claim_counts_while_its_writer_lives_and_not_longer_than_the_cap(env, process):
    """The claim names its writer: it counts while that process runs however long its JVM
    takes (no 15 s guess), goes when the process died, and stops counting after
    CLAIM_MINUTES even if a process of that pid runs (a reused pid)."""
    archive = archive_path(CONFS, env)
    os.makedirs(os.path.dirname(archive))
    live, dead = f"{archive}.{process}", f"{archive}.{_dead_pid()}"
    _write(live, b"", age=600)
    _write(dead, b"half written")
    assert "being written" in class_archive(CONFS, env).note
    assert os.path.exists(live) and not os.path.exists(dead)
    _write(live, b"", age=CLAIM_MINUTES * 60 + 5)
    assert "a separate process writes" in class_archive(CONFS, env).note
    assert not os.path.exists(live)


def test_claims_are_exclusive_and_leftovers_go_once_the_archive_is_taken(env, process):
    archive = archive_path(CONFS, env)
    os.makedirs(os.path.dirname(archive))
    mine = claim(archive)
    assert mine == f"{archive}.{os.getpid()}" and os.path.getsize(mine) == 0
    _write(mine)
    os.replace(mine, archive)
    assert claim(archive) is None  # there already
    # what a killed warm-up's JVM or an earlier version's JVM left, and a live writer's
    dead = [f"{archive}.{_dead_pid()}", f"{archive}.{_dead_pid()}"]
    for path in dead:
        _write(path)
    _write(f"{archive}.{process}")
    assert "-XX:SharedArchiveFile=" in _options(env)
    assert sorted(os.listdir(os.path.dirname(archive))) == sorted(
        os.path.basename(p) for p in (archive, f"{archive}.{process}"))


def test_after_a_failed_warm_up_commands_say_so_and_start_none_for_a_day(env):
    """A Java without dynamic archives, or a job that failed: a minute of CPU at every
    command's exit would buy nothing."""
    archive = archive_path(CONFS, env)
    os.makedirs(os.path.dirname(archive))
    _write(failed_marker(archive))
    assert "the last warm-up wrote none" in class_archive(CONFS, env).note
    _write(failed_marker(archive), age=25 * 3600)
    assert "a separate process writes" in class_archive(CONFS, env).note


def test_a_zombie_is_not_alive():
    """A writer that exited but was not reaped yet (its parent, a dbt process, is gone and
    the machine's init may be slow to reap) no longer writes."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.time() + 30
    while alive(proc.pid) and time.time() < deadline:
        time.sleep(0.05)
    assert not alive(proc.pid)
    with open(f"/proc/{proc.pid}/stat") as fh:  # exited, not reaped: still listed
        assert fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    proc.wait()
    assert alive(os.getpid())


def _taken(env, classpath, age=0):
    """The archive of another key, written and moved in as a warm-up does: its path."""
    confs = {**CONFS, "spark.driver.extraClassPath": classpath}
    archive = archive_path(confs, env)
    written = claim(archive)
    _write(written)
    os.replace(written, archive)
    assert "-XX:SharedArchiveFile=" in _options(env, confs)
    when = time.time() - age
    os.utime(archive, (when, when))
    return archive


def test_archives_no_start_mapped_for_two_weeks_are_removed_when_a_new_one_is_written(env):
    """Each Spark, java or venv has its own archive (~200 MB); an old one goes once unused."""
    unused = _taken(env, "/old.jar", age=15 * 86400)
    used = _taken(env, "/recent.jar", age=13 * 86400)
    claim(archive_path(CONFS, env))
    assert os.path.exists(used) and not os.path.exists(unused)


def test_the_folder_keeps_at_most_max_archives_the_least_recently_used_going_first(env):
    """One per java, Spark and classpath (~200 MB each): a new one removes the least recently
    mapped beyond the cap, whatever their age."""
    archives = [_taken(env, f"/cp{n}.jar", age=3600 * (10 - n)) for n in range(MAX_ARCHIVES + 1)]
    folder = os.path.dirname(archives[0])
    kept = sorted(p for p in os.listdir(folder) if p.endswith(".jsa"))
    assert len(kept) == MAX_ARCHIVES
    assert os.path.basename(archives[0]) not in kept  # the least recently mapped went


@pytest.mark.parametrize("theirs", ["-Xshare:off", "-XX:SharedArchiveFile=/x.jsa",
                                    "-XX:ArchiveClassesAtExit=/y.jsa"])
def test_a_profile_that_manages_class_sharing_keeps_its_own(env, theirs):
    use = class_archive({JAVA_OPTIONS: theirs}, env)
    assert use.confs == {} and use.archive is None
    assert use.note == f"off ({JAVA_OPTIONS} manages class data sharing)"


def test_it_can_be_turned_off(env, tmp_path):
    use = class_archive({}, {**env, OFF: "1"})
    assert use.confs == {} and use.note == f"off ({OFF} is set)"
    assert not os.listdir(tmp_path)  # not even the folder


def _java(*options):
    """What a real JVM prints: it loads a class of the helpers' jar, which has no main."""
    done = subprocess.run([shutil.which("java"), *options, "sizedspark.fs.Fields"],
                          capture_output=True, text=True, timeout=60)
    return done.stdout + done.stderr


def test_only_the_jvms_cds_warnings_are_quieted(tmp_path):
    """An archive written for another classpath prints a CDS warning when mapped, which the
    options quiet; any other JVM log line (here a warning about large pages) still shows,
    as would an error (-Xlog:disable hid them all)."""
    jar = helpers_jar()
    for name in ("a.jar", "b.jar"):
        shutil.copy(jar, tmp_path / name)
    archive = tmp_path / "a.jsa"
    _java(f"-XX:ArchiveClassesAtExit={archive}", "-cp", str(tmp_path / "a.jar"))
    mapped = [f"-XX:SharedArchiveFile={archive}", "-Xshare:auto", "-cp", str(tmp_path / "b.jar")]
    assert "[warning][cds" in _java(*mapped)
    assert "[warning][cds" not in _java(*mapped, *QUIET_CDS.split())
    assert "[warning][pagesize]" in _java("-XX:+UseLargePages", *QUIET_CDS.split())


@pytest.mark.parametrize("memory, large", [("", False), ("2g", False), ("31g", False),
                                           ("32g", True), ("40960m", True), ("40960", True),
                                           ("1t", True), ("512MB", False)])
def test_a_heap_without_compressed_pointers_has_an_archive_of_its_own(env, memory, large):
    """From 32 GiB on the JVM runs without compressed pointers, and an archive written with
    them does not map (checked on Java 17): a 40g profile beside a 2g one would never map
    the archive the other wrote."""
    small = archive_path({**CONFS, "spark.driver.memory": "2g"}, env)
    assert (archive_path({**CONFS, "spark.driver.memory": memory}, env) != small) == large


def _fake_java(tmp_path):
    """A JAVA_HOME whose java fails at once: a warm-up's JVM that cannot start."""
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\necho 'no JVM here' >&2\nexit 1\n")
    java.chmod(0o755)
    return str(tmp_path / "jdk")


def test_a_process_that_exits_with_an_error_still_starts_the_warm_up(env, tmp_path):
    """dbt's exit status is kept; the warm-up starts detached after it; one that wrote no
    archive leaves no claim, names why in its log, and marks the key (no other for a day)."""
    env = {**{k: v for k, v in os.environ.items() if k != OFF}, **env,
           "JAVA_HOME": _fake_java(tmp_path), "PYTHONPATH": REPO}
    code = ("import sys; from python_adapter.io.jvm_startup import warm_up_at_exit; "
            "assert warm_up_at_exit({}); assert not warm_up_at_exit({}); sys.exit(2)")
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    archive = archive_path({}, env)
    log = os.path.join(os.path.dirname(archive), "class-archive.log")
    deadline = time.time() + 120
    while not os.path.exists(failed_marker(archive)) and time.time() < deadline:
        time.sleep(0.2)
    text = open(log).read()
    assert os.path.exists(failed_marker(archive)), text
    assert f"writing {archive}" in text
    pid = int(text.split("warm-up process ", 1)[1].split(":", 1)[0])
    while alive(pid) and time.time() < deadline:
        time.sleep(0.2)
    assert not alive(pid)
    assert sorted(os.listdir(os.path.dirname(archive))) == sorted(
        os.path.basename(p) for p in (log, failed_marker(archive)))
    assert "the last warm-up wrote none" in class_archive({}, env).note


def test_a_jar_replaced_in_place_gets_an_archive_of_its_own(env, tmp_path):
    """The JVM maps no archive once a jar of its classpath changed (size or time: a
    reinstalled package, `pip install` again), and says so only in a quieted warning: the
    old archive would be taken, refused, and never written again."""
    jar = tmp_path / "helpers.jar"
    jar.write_bytes(b"one")
    confs = {**CONFS, "spark.driver.extraClassPath": str(jar)}
    before = archive_path(confs, env)
    assert archive_path(confs, env) == before
    jar.write_bytes(b"two!")
    assert archive_path(confs, env) != before
