"""dbt commands started right after each other on a fresh machine (issue 61): `dbt run`,
`dbt run`, `dbt test` as three `dbt` processes from a cold cache (a fresh XDG_CACHE_HOME:
no JVM class archive, no compiled helper jar). Each succeeds and prints no line of a Java or
Derby trace (the first command's JVM used to write the class archive for a minute or two
after dbt returned, holding the embedded Derby metastore: the next command printed
thousands of `ERROR XSDB6: Another instance of Derby` lines and wrote an archive of its own).
Once the warm-up process that writes the archive has finished, one archive is there for the
key of these commands, and nothing half written beside it.

One module and three cold commands: this is the suite's one deliberately cold start."""
import glob
import os
import re
import shutil
import subprocess
import time

from python_adapter.io.jvm_startup import JVM_EXIT_WAIT, alive
from tests.functional.dbt.test_dbt_project import DBT, REPO
from tests.functional.helpers import SHORT_JVM

COMMANDS = [["run"], ["run"], ["test"]]
# a line of a JVM stack or log: dbt's own summary says "ERROR=0", which is not one
TRACE = re.compile(r"\tat |Exception|\bERROR\b(?!=)")
WARM_UP_WAIT = 600  # s: a cold warm-up on 2 busy cores took up to ~3 min


def _tiny_project(tmp_path):
    """(tests/functional/dbt_mini's `orders` model and its data test with the integration
    profile, its Spark home)."""
    project = tmp_path / "mini"
    shutil.copytree(REPO / "tests/functional/dbt_mini", project,
                    ignore=shutil.ignore_patterns("bad_*", "threads"))
    shutil.copy(REPO / "integration_tests/profiles.yml", project / "profiles.yml")
    return project, tmp_path / "spark"


def _dbt(project, home, cache, args, out):
    """One `dbt` process, waited for as a shell waits for a command: until it exits, not
    until whatever it started closes its output (a pipe read to its end waits for the JVM
    too, which hid the bug). Returns (exit status, what it printed, the seconds from its
    last line to its exit)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIZED_SPARK_FAULT")}
    env.update({"SPARK_LOCAL_IP": "127.0.0.1", "SIZED_SPARK_HOME": str(home),
                "XDG_CACHE_HOME": cache, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", **SHORT_JVM})
    with open(out, "w") as fh:
        proc = subprocess.Popen([DBT, *args, "--profiles-dir", str(project), "--target",
                                 "embedded"], cwd=project, env=env, stdin=subprocess.DEVNULL,
                                stdout=fh, stderr=subprocess.STDOUT)
        code = proc.wait(timeout=900)
    ended = time.time()
    with open(out) as fh:
        return code, fh.read(), ended - os.path.getmtime(out)


def _traces(output):
    return [line for line in output.splitlines() if TRACE.search(line)]


def _warm_up_pids(cache):
    """The warm-up processes the commands started, from the log they write in the cache."""
    log = os.path.join(cache, "dbt-sized-spark", "class-archive.log")
    if not os.path.exists(log):
        return []
    with open(log) as fh:
        return sorted({int(p) for p in re.findall(r"warm-up process (\d+)", fh.read())})


def _wait_or_stop(pids, seconds):
    """Waits for the warm-up processes to end; those still running after `seconds` are
    stopped with their JVM (the process group each leads, by its pid: a JVM left alone
    would still write an archive as it exits) and returned."""
    deadline = time.time() + seconds
    while any(alive(p) for p in pids) and time.time() < deadline:
        time.sleep(1)
    late = [p for p in pids if alive(p)]
    for pid in late:
        try:
            os.killpg(pid, 9) if os.getpgid(pid) == pid else os.kill(pid, 9)
        except ProcessLookupError:  # ended meanwhile
            pass
    return late


def test_run_run_test_back_to_back_from_a_cold_cache(tmp_path):
    project, home = _tiny_project(tmp_path)
    cache = str(tmp_path / "cache")
    started = time.time()
    try:
        for n, args in enumerate(COMMANDS):
            code, output, waited = _dbt(project, home, cache, args, tmp_path / f"dbt{n}.out")
            assert code == 0, f"dbt {' '.join(args)}: {output[-4000:]}"
            assert not _traces(output), f"dbt {' '.join(args)}: {_traces(output)[:20]}"
            # it waits for its JVM to end (a few seconds), never for an archive being written
            assert waited < JVM_EXIT_WAIT + 10, f"dbt {' '.join(args)} exited {waited:.0f} s late"
        commands = time.time() - started
        pids = _warm_up_pids(cache)
        assert pids, "no warm-up process started"
        assert not _wait_or_stop(pids, WARM_UP_WAIT), "the warm-up did not finish"
    finally:
        _wait_or_stop(_warm_up_pids(cache), 0)
    # one debug line per command about the archive; the first found none
    log = (project / "logs" / "dbt.log").read_text()
    notes = re.findall(r"driver JVM class archive: (.*)", log)
    assert len(notes) == len(COMMANDS) and notes[0].startswith("none yet"), notes
    folder = os.path.join(cache, "dbt-sized-spark")
    archives = glob.glob(os.path.join(folder, "spark-classes-*.jsa"))
    assert len(archives) == 1, sorted(os.listdir(folder))
    assert os.path.getsize(archives[0]) > 10 * 2 ** 20
    assert not glob.glob(os.path.join(folder, "spark-classes-*.jsa.*")), sorted(os.listdir(folder))
    print(f"three commands {commands:.0f} s, then the warm-up "
          f"{time.time() - started - commands:.0f} s, {os.path.getsize(archives[0]) >> 20} MB")
