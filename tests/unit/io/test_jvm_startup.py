"""The driver JVM's class archive (io/jvm_startup.py): written at the first start, mapped at
the next ones, never fighting a profile that manages class data sharing itself."""
import os
import shutil
import subprocess
import time

import pytest

from python_adapter.io.fast_local_fs import helpers_jar
from python_adapter.io.jvm_startup import (JAVA_OPTIONS, MAX_ARCHIVES, OFF, QUIET_CDS,
                                          class_archive_confs)


@pytest.fixture
def env(tmp_path):
    return {"PATH": os.environ["PATH"], "XDG_CACHE_HOME": str(tmp_path)}


def _options(env, confs=None):
    return class_archive_confs(confs or {JAVA_OPTIONS: "-Dx=1"}, env).get(JAVA_OPTIONS, "")


def test_the_first_start_writes_its_own_archive_and_later_ones_map_it(env, tmp_path):
    first = _options(env)
    assert first.startswith("-Dx=1 ") and "-XX:+IgnoreUnrecognizedVMOptions" in first
    written = first.split("-XX:ArchiveClassesAtExit=")[1].split()[0]
    assert written.endswith(f".{os.getpid()}") and written.startswith(str(tmp_path))
    with open(written, "wb") as fh:  # as the JVM leaves it at exit
        fh.write(b"archive")
    assert _options(env) == ""  # maybe still being written: start as Spark does meanwhile
    old = time.time() - 600
    os.utime(written, (old, old))
    mapped = _options(env)
    archive = written.rsplit(".", 1)[0]
    assert f"-XX:SharedArchiveFile={archive} -Xshare:auto" in mapped and QUIET_CDS in mapped
    assert os.path.exists(archive) and not os.path.exists(written)


def test_archives_other_starts_left_are_removed_once_one_is_taken(env, tmp_path):
    """Starts that found no archive while another was written each wrote their own; once one
    is taken, the rest (and the empty claims of JVMs that died) only fill the disk."""
    first = _options(env).split("-XX:ArchiveClassesAtExit=")[1].split()[0]
    archive = first.rsplit(".", 1)[0]
    old = time.time() - 600
    for name, content in [(first, b"archive"), (f"{archive}.1", b""), (f"{archive}.2", b"another")]:
        with open(name, "wb") as fh:
            fh.write(content)
        os.utime(name, (old, old))
    assert "-XX:SharedArchiveFile=" in _options(env)  # one of the two is taken
    being_written = f"{archive}.3"
    with open(being_written, "wb") as fh:
        fh.write(b"being written")
    assert "-XX:SharedArchiveFile=" in _options(env)
    assert sorted(os.listdir(os.path.dirname(archive))) == sorted(
        os.path.basename(p) for p in (archive, being_written))


def test_archives_no_start_mapped_for_two_weeks_are_removed_when_a_new_one_is_written(env):
    """Each Spark, java or venv has its own archive (~200 MB); an old one goes once unused."""
    first = _options(env).split("-XX:ArchiveClassesAtExit=")[1].split()[0]
    archive = first.rsplit(".", 1)[0]
    with open(first, "wb") as fh:
        fh.write(b"archive")
    weeks_ago = time.time() - 15 * 86400
    os.utime(first, (weeks_ago, weeks_ago))
    assert "-XX:SharedArchiveFile=" in _options(env)  # taken, and marked as used now
    folder = os.path.dirname(archive)
    unused, used = (os.path.join(folder, f"spark-classes-{k}.jsa") for k in ("old", "recent"))
    for name, when in [(unused, weeks_ago), (used, time.time() - 13 * 86400)]:
        with open(name, "wb") as fh:
            fh.write(b"another key's archive")
        os.utime(name, (when, when))
    _options(env, {JAVA_OPTIONS: "-Dx=1", "spark.driver.extraClassPath": "/other.jar"})
    assert sorted(os.path.basename(p) for p in os.listdir(folder) if p.endswith(".jsa")) == \
        sorted(os.path.basename(p) for p in (archive, used))


@pytest.mark.parametrize("theirs", ["-Xshare:off", "-XX:SharedArchiveFile=/x.jsa",
                                    "-XX:ArchiveClassesAtExit=/y.jsa"])
def test_a_profile_that_manages_class_sharing_keeps_its_own(env, theirs):
    assert class_archive_confs({JAVA_OPTIONS: theirs}, env) == {}


def test_it_can_be_turned_off(env):
    assert class_archive_confs({}, {**env, OFF: "1"}) == {}


def _archive_of(env, classpath):
    """Writes the archive of another key, as its JVM would, and takes it: its path."""
    written = _options(env, {JAVA_OPTIONS: "-Dx=1", "spark.driver.extraClassPath": classpath})
    written = written.split("-XX:ArchiveClassesAtExit=")[1].split()[0]
    with open(written, "wb") as fh:
        fh.write(b"archive")
    old = time.time() - 600
    os.utime(written, (old, old))
    return written.rsplit(".", 1)[0]


def test_the_folder_keeps_at_most_max_archives_the_least_recently_used_going_first(env):
    """One per java, Spark and classpath (~200 MB each): a new one removes the least recently
    mapped beyond the cap, whatever their age."""
    archives = []
    for n in range(MAX_ARCHIVES + 1):
        archives.append(_archive_of(env, f"/cp{n}.jar"))
        assert "-XX:SharedArchiveFile=" in _options(  # taken: the file is complete
            env, {JAVA_OPTIONS: "-Dx=1", "spark.driver.extraClassPath": f"/cp{n}.jar"})
        when = time.time() - 3600 * (10 - n)  # mapped n hours after the first
        os.utime(archives[-1], (when, when))
    folder = os.path.dirname(archives[0])
    kept = sorted(p for p in os.listdir(folder) if p.endswith(".jsa"))
    assert len(kept) == MAX_ARCHIVES
    assert os.path.basename(archives[0]) not in kept  # the least recently mapped went


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
