"""What a dbt user sees when a run fails on the filesystem, and when a run succeeds (issue
61, item 9), in one dbt process (tests/functional/dbt_failures): a partitioned `table`
model rebuilt prints no Hive ERROR and no Java stack; a model whose schema directory is a
3 MB tmpfs fails on the full disk, then on the directory made read-only, each time with the
engine's one error (the path, the cause, that nothing was lost), once, and no Java stack;
the rows stay those of the last completed commit, and the run after the disk is writable
again goes on.

The schema directory is a tmpfs of the dbt process's own mount namespace (`unshare -m`,
root or CAP_SYS_ADMIN), made read-only by remounting it; as root a chmod would not stop
the writer. Without `unshare -m` only the rebuild is run."""
import json
import re
import shutil

import pytest

from tests.functional.dbt.test_connect import _unshare_works
from tests.functional.dbt.test_dbt_project import REPO, _dbt_steps, _plain
from tests.functional.readers import duckdb_rows

NAMESPACE = _unshare_works()


def _big(rows, salt):
    return ["run", "--select", "fl_big", "--vars", json.dumps({"rows": rows, "salt": salt})]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{step name: _Step} of one dbt process, and its Spark home."""
    tmp = tmp_path_factory.mktemp("failures")
    project, home = tmp / "project", tmp / "spark"
    shutil.copytree(REPO / "tests/functional/dbt_failures", project)
    shutil.copy(REPO / "integration_tests/profiles.yml", project / "profiles.yml")
    schema = home / "warehouse" / "sized_it.db"
    named = [("built", ["run"]), ("rebuilt", ["run", "--select", "fl_days"])]
    wrap = ()
    if NAMESPACE:
        schema.mkdir(parents=True)
        wrap = ["unshare", "-m", "sh", "-c",
                f"mount -t tmpfs -o size=3m tmpfs '{schema}' && exec \"$@\"", "_"]
        named += [("full", _big(60_000, "b")),
                  ("copy", ["!sh", f"cp -a '{schema}/fl_big' '{tmp}/after_full'"]),
                  ("ro", ["!sh", f"mount -o remount,ro '{schema}'"]),
                  ("read_only", _big(2000, "c")),
                  ("compact_ro", ["run-operation", "sized_compact", "--args",
                                  "{relation: sized_it.fl_big}"]),
                  ("rw", ["!sh", f"mount -o remount,rw '{schema}'"]),
                  ("again", _big(2000, "c")),
                  ("copy2", ["!sh", f"cp -a '{schema}/fl_big' '{tmp}/after_again'"])]
    steps = _dbt_steps(project, home, "embedded", *[args for _, args in named], wrap=wrap)
    return dict(zip([name for name, _ in named], steps)), tmp


def _java_stack(text):
    return [line for line in text.splitlines() if line.startswith("\tat ")
            or re.match(r"\s*(Caused by|Suppressed): ", line)]


def test_a_partitioned_table_rebuilt_prints_no_error_and_no_stack(runs):
    steps, _tmp = runs
    for name in ("built", "rebuilt"):
        assert steps[name].returncode == 0, steps[name].stdout[-3000:]
        output = _plain(steps[name].stdout)
        assert "OK created sql table model sized_it.fl_days" in output
        assert " ERROR " not in output.replace("ERROR=0", "") and not _java_stack(output)
    # the process's stderr (Spark's, Hive's log4j) holds no ERROR line and no stack
    stderr = steps["built"].stderr
    assert not re.search(r"^\S+ \S+ ERROR ", stderr, re.M) and not _java_stack(stderr), \
        stderr[-3000:]


def _payload_rows(directory):
    return duckdb_rows(directory, ["id", "payload"])


def _expected(rows, salt):
    import hashlib
    return sorted(((i, hashlib.sha512(f"{i}{salt}".encode()).hexdigest()) for i in range(rows)),
                  key=repr)


@pytest.mark.skipif(not NAMESPACE, reason="needs `unshare -m` (root or CAP_SYS_ADMIN)")
def test_a_full_disk_and_a_read_only_directory_fail_once_naming_the_path(runs):
    steps, tmp = runs
    schema = tmp / "spark" / "warehouse" / "sized_it.db"
    full = _plain(steps["full"].stdout)
    assert steps["full"].returncode != 0
    said = re.findall(r"cannot write (\S+): no space is left on the device\. Nothing was lost: "
                      r"sized_it\.fl_big holds the rows of its last completed commit; run "
                      r"again once space is freed", full)
    assert len(said) == 1, full[-4000:]     # once: the summary; no second copy inline
    assert said[0].startswith(f"file:{schema}/.sized/fl_big/staging/")
    assert "Unhandled error" not in full and not _java_stack(full), full[-4000:]
    assert _payload_rows(tmp / "after_full") == _expected(1000, "a")  # the first commit's

    read_only = _plain(steps["read_only"].stdout)
    assert steps["read_only"].returncode != 0
    assert read_only.count(f"cannot write {schema}/.sized/fl_big/lock: the filesystem is "
                           f"read-only. Nothing was lost: sized_it.fl_big holds the rows of "
                           f"its last completed commit; run again once the filesystem is "
                           f"writable") == 1, read_only[-3000:]
    assert "Unhandled error" not in read_only and not _java_stack(read_only)
    compact = _plain(steps["compact_ro"].stdout)
    assert steps["compact_ro"].returncode != 0
    assert "sized_compact: cannot write " in compact and "the filesystem is read-only" in compact
    assert not _java_stack(compact)

    assert steps["again"].returncode == 0, steps["again"].stdout[-3000:]
    assert _payload_rows(tmp / "after_again") == _expected(2000, "c")
    # the task failures of the full disk logged no stack on the console either
    assert not _java_stack(steps["full"].stderr), steps["full"].stderr[-4000:]
