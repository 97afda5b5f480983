"""Compaction beside loads, as docs/services promise (issue 61, item 9): a compaction that
finds a load holding the writer lock waits for it (its lock_timeout, default 10 minutes)
instead of failing, and a load that finds a compaction committing waits for that short step
whatever its own lock_timeout; no row is lost or doubled. The lock error of a wait that ran
out says where lock_timeout is set."""
import threading
import time

import pytest

from python_adapter import api
from python_adapter.core.config import parse_config
from python_adapter.errors import LockError
from python_adapter.spark.catalog.tables import TableRef
from python_adapter.api import write_dataframe
from python_adapter.table import faults
from tests.functional.helpers import rows_of, rows_of_df

QUIET = dict(log=lambda m: None)
COLS = "id, day, payload, amount, tag"
INSERT = parse_config({"partition_by": ["day"], "incremental_strategy": "insert",
                       "target_file_size": 64_000, "small_file_limit": 0})
UPSERT = parse_config({"partition_by": ["day"], "unique_key": "id", "target_file_size": 64_000,
                       "small_file_limit": 0})


def _until(condition, seconds=120):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def _in_thread(fn):
    """Run fn in a thread; returns (thread, outcome) where outcome gets 'result' or 'error'."""
    outcome = {}

    def run():
        try:
            outcome["result"] = fn()
        except BaseException as exc:  # noqa: B036 (the test reads it)
            outcome["error"] = exc
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def _once_at(point, action):
    """Run action the first time the code passes `point` (a fault point), then no more."""
    def hook():
        faults.run_at(point, None)
        action()
    faults.run_at(point, hook)


def _while_paused_at(point, main, other, lines, text):
    """Run main(); the first time it passes `point` (holding the writer lock), start other()
    in a thread and go on once other's log (`lines`) says `text`. Returns (main's result,
    other's outcome)."""
    started = {}

    def start_other():
        started["thread"] = _in_thread(other)
        _until(lambda: any(text in str(m) for m in lines))

    _once_at(point, start_other)
    try:
        result = main()
    finally:
        faults.run_at(point, None)
    thread, outcome = started["thread"]
    thread.join(300)
    assert "error" not in outcome, outcome
    return result, outcome["result"]


def _small_files(spark, table, events, batches):
    """Insert batches (each adds a file to each day); returns the table's rows by id."""
    for b in batches:
        write_dataframe(spark, events(days=2, base=200, id_offset=b * 10_000, tag=f"b{b}"),
                        table, INSERT, **QUIET)
    return {r[0]: r for r in rows_of(spark, table.schema, table.identifier, COLS)}


def test_compaction_waits_for_a_load_and_a_load_waits_for_compactions_commit(spark, schema,
                                                                              events):
    table, name = TableRef(schema, "beside_load"), "beside_load"
    expected = _small_files(spark, table, events, range(3))

    # 1. a load holds the lock (paused after its inflight); compactions start meanwhile
    lines = []
    update = events(days=2, base=200, tag="upd").where("id % 4 = 0")

    def compactions():
        with pytest.raises(LockError) as refused:  # a short lock_timeout runs out
            api.compact(spark, table, {"lock_timeout": "1s"}, **QUIET)
        return str(refused.value), api.compact(spark, table, {}, log=lines.append)

    _, (refused, compacted) = _while_paused_at(
        "inflight", lambda: write_dataframe(spark, update, table, UPSERT, **QUIET),
        compactions, lines, "waiting up to 10m00s for the writer lock")
    assert "let this writer wait for it: the operation's lock_timeout argument, e.g. dbt " \
           f"run-operation sized_compact --args '{{relation: {schema}.{name}, lock_timeout: " \
           "30m}'" in refused
    assert compacted.groups >= 1 and compacted.files_replaced > compacted.files_written
    expected.update((r[0], r) for r in rows_of_df(update, COLS.split(", ")))
    assert rows_of(spark, schema, name, COLS) == sorted(expected.values())

    # 2. a compaction is committing; a load with lock_timeout 0 arrives and waits for it
    expected = _small_files(spark, table, events, range(3, 5))
    lines = []
    late = events(days=2, base=200, tag="late").where("id % 5 = 0")
    result, _ = _while_paused_at(
        "synced", lambda: api.compact(spark, table, {}, **QUIET),
        lambda: write_dataframe(spark, late, table, UPSERT, log=lines.append), lines,
        "waiting up to 2m00s for the writer lock")
    assert result.groups >= 1
    expected.update((r[0], r) for r in rows_of_df(late, COLS.split(", ")))
    assert rows_of(spark, schema, name, COLS) == sorted(expected.values())


def test_a_models_lock_error_says_where_its_lock_timeout_is_set(spark, schema, events):
    table = TableRef(schema, "model_lock")
    write_dataframe(spark, events(days=1, base=50), table, UPSERT, **QUIET)
    refused = {}

    def second_writer():
        with pytest.raises(LockError) as error:
            write_dataframe(spark, events(days=1, base=50, tag="x"), table, UPSERT, **QUIET)
        refused["text"] = str(error.value)

    _once_at("inflight", second_writer)
    try:
        write_dataframe(spark, events(days=1, base=50, tag="y"), table, UPSERT, **QUIET)
    finally:
        faults.run_at("inflight", None)
    assert "the model's lock_timeout config, e.g. config(lock_timeout='10m'), or " \
           "+lock_timeout in dbt_project.yml" in refused["text"]
