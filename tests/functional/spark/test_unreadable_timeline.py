"""A timeline file that does not decode (issue 61, item 9). A completed commit's file that
was truncated stops every write with its full path and the two ways on; `sized_repair`
sets it aside and records the table as readers see it (rows lost and gained listed); a full
refresh sets it aside too and starts over, and the table's next incremental run goes on.
A crash while an instant's own file was written (a truncated inflight, or a truncated
completed file beside its inflight) is recovered by the next write, as before, with no one
asked."""
import os

import pytest

from python_adapter import api
from python_adapter.core.config import parse_config
from python_adapter.errors import UnreadableInstantError
from python_adapter.io.fs import HadoopFS
from python_adapter.spark.catalog.tables import TableRef, describe_table
from python_adapter.api import write_dataframe
from python_adapter.table import faults, lock
from python_adapter.table.faults import InjectedCrash
from python_adapter.table.timeline import Timeline, parse_file_name
from tests.functional.helpers import rows_of, rows_of_df

QUIET = dict(log=lambda m: None)
UPSERT = parse_config({"partition_by": ["day"], "unique_key": "id", "target_file_size": 16_000})
COLS = "id, day, payload, amount, tag"


def _timeline_dir(spark, schema, name):
    fs = HadoopFS(spark)
    location = fs.qualify(describe_table(spark, TableRef(schema, name)).location)
    return Timeline(fs, location).dir[len("file:"):]


def _truncate(path):
    with open(path, "rb") as fh:
        data = fh.read()
    with open(path, "wb") as fh:
        fh.write(data[: len(data) // 2])


def _files(directory, state="completed"):
    return sorted(n for n in os.listdir(directory)
                  if (parsed := parse_file_name(n)) and parsed[2] == state)


def _sql(batch, days=3, where="true"):
    """An events batch as a model's SQL (conftest's events fixture, as SQL)."""
    return f"""select * from (
               select cast(d * 100000 + i as bigint) as id, date_add(date'2025-01-01', d) as day,
                      sha2(cast(d * 100000 + i as string), 256) as payload,
                      cast(i % 97 as double) as amount, '{batch}' as tag
               from (select explode(sequence(0, {days} - 1)) as d)
               lateral view explode(sequence(1, 400 + d * 60)) t as i) where {where}"""


def test_a_truncated_commit_file_is_named_with_the_ways_on_and_repair_goes_on(spark, schema):
    table, name = TableRef(schema, "tl_bad"), f"{schema}.tl_bad"
    api.write_model(spark, table, _sql("v1"), UPSERT, **QUIET)
    api.write_model(spark, table, _sql("v2", where="id % 7 = 0"), UPSERT, **QUIET)
    seen = rows_of(spark, schema, "tl_bad", COLS)      # what readers see: both commits
    directory = _timeline_dir(spark, schema, "tl_bad")
    bad = _files(directory)[-1]
    _truncate(f"{directory}/{bad}")
    listing = sorted(os.listdir(directory))

    with pytest.raises(UnreadableInstantError) as refused:
        api.write_model(spark, table, _sql("v3", where="id % 5 = 0"), UPSERT, **QUIET)
    text = str(refused.value)
    assert f"timeline file file:{directory}/{bad} is corrupt or unreadable" in text
    assert f"dbt run-operation sized_repair --args '{{relation: {name}}}'" in text
    assert "--full-refresh" in text and f"{os.path.dirname(directory)}/quarantine/" in text
    assert sorted(os.listdir(directory)) == listing        # nothing was written
    with pytest.raises(UnreadableInstantError, match="sized_repair"):
        api.timeline(spark, table)

    lines = []
    result = api.repair(spark, table, log=lines.append)
    assert result.set_aside == (bad,)
    assert os.path.exists(f"{os.path.dirname(directory)}/quarantine/{bad}")
    assert bad not in os.listdir(directory)
    # the upsert rewrote some files: without its record they are there unrecorded (gained),
    # and the files it replaced are gone (lost); readers' rows are the table's rows
    assert result.files_unrecorded >= 1 and result.files_missing >= 1
    assert result.rows_gained > 0 and result.rows_lost > 0
    assert "rows gained" in result.message and bad in result.message
    assert rows_of(spark, schema, "tl_bad", COLS) == seen
    assert any(line.startswith("unrecorded: ") for line in lines), lines
    assert api.repair(spark, table, **QUIET).instant == ""   # nothing left to repair

    batch = _sql("v3", where="id % 5 = 0")
    api.write_model(spark, table, batch, UPSERT, **QUIET)   # writes go on
    new = {r[0]: r for r in rows_of_df(spark.sql(batch), COLS.split(", "))}
    expected = sorted({**{r[0]: r for r in seen}, **new}.values())
    assert rows_of(spark, schema, "tl_bad", COLS) == expected


def test_a_full_refresh_sets_the_file_aside_and_starts_over(spark, schema):
    table = TableRef(schema, "tl_refresh")
    api.write_model(spark, table, _sql("v1"), UPSERT, **QUIET)
    api.write_model(spark, table, _sql("v2", where="id % 7 = 0"), UPSERT, **QUIET)
    directory = _timeline_dir(spark, schema, "tl_refresh")
    bad = _files(directory)[-1]
    _truncate(f"{directory}/{bad}")

    api.write_model(spark, table, _sql("v4", days=2), UPSERT, full_refresh=True, **QUIET)
    assert os.path.exists(f"{os.path.dirname(directory)}/quarantine/{bad}")
    assert rows_of(spark, schema, "tl_refresh", COLS) == \
        rows_of_df(spark.sql(_sql("v4", days=2)), COLS.split(", "))
    # the files the set-aside commit had replaced are gone from the table and from its
    # record: the next incremental run goes on (no "missing" files)
    batch = _sql("v5", days=3, where="id % 3 = 0")
    api.write_model(spark, table, batch, UPSERT, **QUIET)
    expected = {r[0]: r for r in rows_of_df(spark.sql(_sql("v4", days=2)), COLS.split(", "))}
    expected.update((r[0], r) for r in rows_of_df(spark.sql(batch), COLS.split(", ")))
    assert rows_of(spark, schema, "tl_refresh", COLS) == sorted(expected.values())


@pytest.mark.parametrize("point,truncated", [("inflight", "inflight"),
                                             ("completed", "completed")])
def test_a_crash_while_an_instant_file_was_written_is_recovered_by_the_next_write(
        spark, schema, events, monkeypatch, point, truncated):
    """The process dies at `point`; the file of that state is cut in half, as a crash while
    it was written leaves it. The next write rolls the instant back by itself: the table
    holds its last completed commit's rows, then the new batch's."""
    name = f"tl_crash_{point}"
    table = TableRef(schema, name)
    write_dataframe(spark, events(days=3), table, UPSERT, **QUIET)
    committed = rows_of(spark, schema, name, COLS)
    monkeypatch.setenv("SIZED_SPARK_FAULT", point)
    faults.reset()
    with pytest.raises(InjectedCrash):
        write_dataframe(spark, events(days=3, tag="lost").where("id % 2 = 0"), table, UPSERT,
                        **QUIET)
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    lock.forget_held_locks()  # the crashed writer is gone, as a killed process is
    faults.reset()
    directory = _timeline_dir(spark, schema, name)
    [cut] = _files(directory, truncated)[-1:]
    _truncate(f"{directory}/{cut}")

    lines = []
    batch = events(days=3, tag="next").where("id % 5 = 0")
    write_dataframe(spark, batch, table, UPSERT, log=lines.append)
    assert any("rolling back unfinished commit" in str(m) for m in lines), lines
    expected = {r[0]: r for r in committed}
    expected.update((r[0], r) for r in rows_of_df(batch, COLS.split(", ")))
    assert rows_of(spark, schema, name, COLS) == sorted(expected.values())
    assert cut not in os.listdir(directory)
    assert not os.path.exists(f"{os.path.dirname(directory)}/quarantine")
