"""dbt processes killed (like kill -9: the engine's fault points in exit mode) in the middle
of `sized_clean`, of a `dbt snapshot` and of a microbatch run, then the next process
(issue 46). After each: the table reads exactly the rows of its last completed commit, in
Spark and in DuckDB; a killed clean leaves restore and rollback working and a second clean
finishes its job; a snapshot run again holds exactly the versions uninterrupted runs hold;
a microbatch window run again holds exactly a clean run's rows.

One chain of dbt processes on one project (tests/functional/dbt_killed) and one Spark home:
each process finishes what the previous one's death left (and checks it), then dies at the
next fault point, so three deaths (a clean, a snapshot, a microbatch run) cost four JVM
starts. The test process reads the tables' directories with DuckDB and the meta dirs between
two processes; Spark's reading is the project's `kr_print_rows` run-operation inside the
processes.
"""
import json
import shutil

import pytest

from python_adapter.table.timeline import parse_file_name
from tests.functional.dbt.test_dbt_project import REPO, _dbt_steps
from tests.functional.readers import duckdb_rows, parquet_files

# extended (about 6 worker-minutes of CI, four dbt processes): a dbt process killed mid-publish
# and recovered by the next one is test_dbt_project.py's upsert scenario (and over Connect and
# on S3 too); each point of a clean, a snapshot and a microbatch write is killed in the
# functional and unit tiers (test_restore.py, test_snapshot_upsert.py, test_crash_matrix.py)
pytestmark = pytest.mark.extended

SNAP_COLUMNS = ["id", "region", "name", "updated_at", "dbt_scd_id", "dbt_valid_from",
                "dbt_updated_at", "dbt_valid_to is null"]  # closing time: the run's clock
ORDERS_COLUMNS = ["id", "p", "tag"]
MB_COLUMNS = ["event_id", "event_date", "amount", "payload", "event_month"]
PRINTED = {"kr_snap": SNAP_COLUMNS, "kr_snap_ref": SNAP_COLUMNS, "kr_orders": ORDERS_COLUMNS,
           "kr_mb": MB_COLUMNS, "kr_mb_ref": MB_COLUMNS}
# one of the points a clean passes (table/archive.py): the first, with two set-aside dirs to
# delete. Each point is a dbt process of its own (about 50 s of CI); the table layer's fast
# tier kills a clean at every one of its points (tests/unit/table/test_crash_matrix.py,
# test_archive_local.py). A list: the chain below takes more points as they are added
CLEAN_POINTS = ["cleaned:1"]
# mid publish: the i-th kills the run of the source's state i + 2 (state 1 is the first
# build). A write killed after the metastore's sync and once completed but not settled:
# tests/functional/spark/catalog/test_metastore_stats.py; a snapshot's write stopped mid
# publish and once completed: tests/functional/spark/write/test_snapshot_upsert.py; every
# point of a write: the unit tier's crash matrix
SNAPSHOT_POINTS = ["publish:3"]
WINDOW = ["--event-time-start", "2025-01-01", "--event-time-end", "2025-01-05"]
# the batches of the window: a full build (1 file), then each rewrites the month's file
# (set aside, then the new one in): the 4th rename is the middle of the third batch
MB_POINT = "publish:4"


def _operation(name, **args):
    """A run-operation of the engine on kr_orders (its arguments as YAML's JSON subset)."""
    return ["run-operation", name, "--args",
            json.dumps({"relation": "sized_it.kr_orders", **args})]


CLEAN = _operation("sized_clean", retain_commits=1, retain_hours=0)


def _print(*tables):
    return ["run-operation", "kr_print_rows", "--args",
            json.dumps({"tables": {t: PRINTED[t] for t in tables}})]


def _snapshot(label, name, state):
    """Steps: snapshot `name` of the source at `state` (KR_STATE, kr_snapshot_source)."""
    return [("env", ["!env", "KR_STATE", str(state)]), (label, ["snapshot", "--select", name])]


def _orders(batch):
    """Steps: kr_orders' batch `batch` (KR_BATCH), then its rows as Spark reads them."""
    return [("env", ["!env", "KR_BATCH", str(batch)]),
            (f"orders {batch}", ["run", "--select", "kr_orders"]),
            (f"orders rows {batch}", _print("kr_orders"))]


class _Chain:
    """Runs the dbt processes one after the other and keeps what they printed and what the
    test process saw of the tables between them."""

    def __init__(self, project, home):
        self.project, self.home = project, home
        self.warehouse = home / "warehouse" / "sized_it.db"
        self.steps = {}      # step name -> _Step
        self.seen = set()    # completed instants of kr_orders seen in its timeline
        self.between = {}    # label -> what the test process read after that process

    def run(self, label, named_steps, dies_at=None):
        """One dbt process of `named_steps` ([(name, args)]); with `dies_at` the last one
        runs with that fault point in exit mode and must kill the process."""
        steps = [args for _, args in named_steps]
        if dies_at:
            steps[-1:-1] = [["!env", "SIZED_SPARK_FAULT", dies_at],
                            ["!env", "SIZED_SPARK_FAULT_MODE", "exit"]]
        results = _dbt_steps(self.project, self.home, "embedded", *steps, dies=bool(dies_at))
        if dies_at:
            del results[-3:-1]
        self.steps.update(zip([name for name, _ in named_steps], results))
        self.between[label] = self._observe()

    def _observe(self):
        """DuckDB's rows of each table and its meta dir's listing, as this process left
        them (a table caught mid-publish may hold no file at all: no rows then)."""
        out = {}
        for name, columns in PRINTED.items():
            if (self.warehouse / name).is_dir():
                found = parquet_files(self.warehouse / name)
                out[name] = _as_text(duckdb_rows(self.warehouse / name, columns)) if found else []
                out[f"{name} meta"] = _listing(self.warehouse / ".sized" / name)
        self.seen |= set(_completed(out.get("kr_orders meta", {}).get("timeline", [])))
        return out

    def rows(self, step, table):
        """The rows `kr_print_rows` printed for `table` in that step (as Spark read them)."""
        out = self.steps[step]
        assert out.returncode == 0, out.stdout[-4000:]
        for line in out.stdout.splitlines():
            if line.startswith(f"KR_ROWS {table} "):
                return sorted(map(tuple, json.loads(line.split(" ", 2)[2])), key=repr)
        raise AssertionError(f"{step} printed no rows of {table}: {out.stdout[-3000:]}")

    def instants(self):
        return sorted(self.seen)


def _as_text(rows):
    """DuckDB's values as Spark's cast to string gives these tables' (ints, strings,
    booleans), None kept: rows comparable with kr_print_rows' output."""
    def text(v):
        return None if v is None else str(v).lower() if isinstance(v, bool) else str(v)
    return sorted((tuple(text(v) for v in r) for r in rows), key=repr)


def _listing(meta):
    """{folder: its entries} of a table's meta dir: the timeline, the set-aside files, the
    archive and its history."""
    folders = ["timeline", "replaced", "archive", "archive/history"]
    return {f: sorted(p.name for p in (meta / f).iterdir()) if (meta / f).is_dir() else []
            for f in folders}


def _completed(names):
    return [p[0] for n in names if (p := parse_file_name(n)) and p[2] == "completed"]


def _checkpoints(meta):
    """The sequence numbers of the archive's checkpoints, oldest first."""
    return sorted(int(n.split("-")[1].split(".")[0]) for n in meta["archive"]
                  if n.startswith("checkpoint-"))


# What a clean that died at the point leaves in kr_orders' meta dir (table/archive.py's
# steps): the kill landed there, after the work before it and before the work after it.
LEFT_BY = {
    # set-aside dirs past retention still there, nothing archived yet
    "cleaned:1": lambda m: len(m["replaced"]) > 1 and not m["archive/history"],
    # the history file of the next checkpoint, not the checkpoint
    "archive_history": lambda m: len(m["archive/history"]) == _checkpoints(m)[-1] + 1,
}


def _clean_check(chain, point):
    """The steps that check a clean killed at `point` and finish it: the rows, a restore to
    the instant before the last (its files are set aside by the last commit, which any
    retention keeps) and its rollback, the second clean, then a restore past retention."""
    before_last, oldest = chain.instants()[-2], chain.instants()[0]
    return [(f"after {point}", _print("kr_orders")),
            (f"restore {point}", _operation("sized_restore", instant=before_last)),
            (f"restored {point}", _print("kr_orders")),
            (f"rollback {point}", _operation("sized_rollback")),
            (f"rolled back {point}", _print("kr_orders")),
            (f"clean again {point}", CLEAN),
            (f"refused {point}", _operation("sized_restore", instant=oldest))]


def _setup_steps():
    """The first process: the references (uninterrupted runs over the same source states and
    window), the snapshot's first build, kr_orders' first four commits, each printed."""
    steps = [("mb ref", ["run", "--select", "kr_events", "kr_mb_ref", *WINDOW]),
             ("mb ref rows", _print("kr_mb_ref"))]
    for state in range(1, len(SNAPSHOT_POINTS) + 2):
        steps += [*_snapshot(f"ref {state}", "kr_snap_ref", state),
                  (f"ref rows {state}", _print("kr_snap_ref"))]
    steps += [*_snapshot("snap 1", "kr_snap", 1), ("snap rows 1", _print("kr_snap"))]
    for batch in range(1, 5):
        steps += _orders(batch)
    return steps


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    """The chain of processes: each (after the first) ends the previous death's story, then
    dies at the next point: clean, snapshot, clean, ... then the microbatch run."""
    base = tmp_path_factory.mktemp("killed")
    project = base / "project"
    shutil.copytree(REPO / "tests/functional/dbt_killed", project)
    shutil.copy(REPO / "integration_tests/profiles.yml", project / "profiles.yml")
    chain = _Chain(project, base / "spark")
    chain.run("setup", [*_setup_steps(), ("killed clean 0", CLEAN)], dies_at=CLEAN_POINTS[0])
    for i, point in enumerate(SNAPSHOT_POINTS):
        state = i + 2
        chain.run(f"clean {i}", [*_clean_check(chain, CLEAN_POINTS[i]),
                                 *_snapshot(f"killed snap {state}", "kr_snap", state)],
                  dies_at=point)
        rerun = [*_snapshot(f"snap {state}", "kr_snap", state),
                 (f"snap rows {state}", _print("kr_snap"))]
        if i + 1 < len(CLEAN_POINTS):
            rerun += [*_orders(i + 5), (f"killed clean {i + 1}", CLEAN)]
            chain.run(f"snap {i}", rerun, dies_at=CLEAN_POINTS[i + 1])
        else:
            chain.run(f"snap {i}", [*rerun, ("killed mb", ["run", "--select", "kr_mb", *WINDOW])],
                      dies_at=MB_POINT)
    chain.run("mb", [("mb", ["run", "--select", "kr_mb", *WINDOW]),
                     ("mb rows", _print("kr_mb"))])
    return chain


def _killed(chain, step):
    out = chain.steps[step]
    assert out.returncode == 137, f"{step} was not killed: {out.stdout[-4000:]}"


def test_sized_clean_killed_at_each_point_keeps_the_table_and_a_second_clean_finishes(chain):
    commits = [chain.rows(f"orders rows {b}", "kr_orders") for b in range(1, len(CLEAN_POINTS) + 4)]
    for i, point in enumerate(CLEAN_POINTS):
        last, before_last = commits[i + 3], commits[i + 2]
        _killed(chain, f"killed clean {i}")
        # the dead process's table, read by DuckDB, then by Spark in the next process
        died = chain.between["setup" if i == 0 else f"snap {i - 1}"]
        assert LEFT_BY[point](died["kr_orders meta"]), (point, died["kr_orders meta"])
        assert died["kr_orders"] == last, point
        assert chain.rows(f"after {point}", "kr_orders") == last, point
        # restore and rollback work: the last commit's set-aside files are kept
        restore = chain.steps[f"restore {point}"]
        assert restore.returncode == 0, restore.stdout[-3000:]
        assert chain.rows(f"restored {point}", "kr_orders") == before_last, point
        assert chain.rows(f"rolled back {point}", "kr_orders") == last, point
        # the second clean finishes: one instant left in the timeline, its set-aside files
        # alone kept, the rest in the archive; nothing older can be restored
        cleaned = chain.steps[f"clean again {point}"]
        assert cleaned.returncode == 0 and "cleaned sized_it.kr_orders" in cleaned.stdout, \
            cleaned.stdout[-3000:]
        after = chain.between[f"clean {i}"]
        assert after["kr_orders"] == last, point
        meta = after["kr_orders meta"]
        kept = _completed(meta["timeline"])
        assert len(kept) == 1 and meta["timeline"] == [n for n in meta["timeline"]
                                                      if n.startswith(kept[0])], (point, meta)
        assert meta.get("replaced", []) in ([], kept), (point, meta)
        newest = _checkpoints(meta)
        assert len(newest) == 1 and len(meta["archive"]) == 2, meta  # and history/
        assert meta["archive/history"] == [f"history-{n:08d}.avro"
                                           for n in range(1, newest[0] + 1)], meta
        refused = chain.steps[f"refused {point}"]
        assert refused.returncode != 0 and "deleted by the cleaner" in refused.stdout, \
            refused.stdout[-3000:]


def test_a_killed_snapshot_run_then_the_next_holds_what_uninterrupted_runs_hold(chain):
    reference = chain.rows(f"ref rows {len(SNAPSHOT_POINTS) + 1}", "kr_snap_ref")
    assert {r[-1] for r in reference} == {"true", "false"}  # current and closed versions
    assert chain.rows("snap rows 1", "kr_snap") == chain.rows("ref rows 1", "kr_snap_ref")
    for i, point in enumerate(SNAPSHOT_POINTS):
        state = i + 2
        _killed(chain, f"killed snap {state}")
        rerun = chain.steps[f"snap {state}"]
        assert rerun.returncode == 0, rerun.stdout[-4000:]
        # every version once, closed or current as the uninterrupted runs left it
        assert chain.rows(f"snap rows {state}", "kr_snap") == \
            chain.rows(f"ref rows {state}", "kr_snap_ref"), point
    final = chain.between["mb"]
    assert final["kr_snap"] == final["kr_snap_ref"]  # DuckDB: the same files' rows


def test_a_microbatch_run_killed_mid_batch_then_rerun_holds_a_clean_runs_rows(chain):
    _killed(chain, "killed mb")
    # it died in the third batch's publish: two batches committed, the third unfinished
    timeline = chain.between[f"snap {len(SNAPSHOT_POINTS) - 1}"]["kr_mb meta"]["timeline"]
    states = [parse_file_name(n)[2] for n in timeline if parse_file_name(n)]
    assert states.count("completed") == 2 and "inflight" in states, timeline
    # the same window again: exactly the rows of the uninterrupted run, in Spark and DuckDB
    assert chain.steps["mb"].returncode == 0, chain.steps["mb"].stdout[-4000:]
    assert chain.rows("mb rows", "kr_mb") == chain.rows("mb ref rows", "kr_mb_ref")
    assert chain.between["mb"]["kr_mb"] == chain.between["mb"]["kr_mb_ref"]
