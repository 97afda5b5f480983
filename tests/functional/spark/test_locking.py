"""Tables this adapter did not write: a Parquet table of dbt-spark, Spark or Hive is adopted
(its files recorded as a first `adopt` instant) by the first incremental run or table
service, which then goes on; a table of another format is refused before anything is
written, naming its format and the way out; a crash while adopting loses nothing."""
import os

import pytest

from python_adapter.core.config import parse_config
from python_adapter.errors import WriteError
from python_adapter.io.fs import HadoopFS
from python_adapter.spark.catalog.tables import TableRef, describe_table
from python_adapter.spark.services.cluster_exec import run_compaction
from python_adapter.spark.session_conf import session_conf
from python_adapter.api import write_dataframe
from python_adapter.table import faults, lock
from python_adapter.table.timeline import Timeline
from tests.functional.helpers import files_by_partition
from tests.functional.readers import duckdb_rows, local_dir

QUIET = dict(log=lambda m: None)


def _rows(spark, start, n, tag):
    return spark.sql(f"""select cast(id as bigint) as id, concat('v', id % 7) as payload,
                                '{tag}' as tag, date'2025-03-01' + cast(id % 3 as int) as day
                         from range({start}, {start + n})""")


def _foreign_table(spark, schema, name, ddl, loads=4):
    """A table of small files written by plain Spark INSERTs, one file a day per load."""
    spark.sql(f"CREATE TABLE {schema}.{name} (id bigint, payload string, tag string, day date) "
              f"{ddl} PARTITIONED BY (day)" if "USING" in ddl else
              f"CREATE TABLE {schema}.{name} (id bigint, payload string, tag string) "
              f"PARTITIONED BY (day date) {ddl}")
    with session_conf(spark, {"hive.exec.dynamic.partition.mode": "nonstrict"}):
        for k in range(loads):
            _rows(spark, k * 300, 300, "old").repartition(1, "day") \
                .write.insertInto(f"{schema}.{name}")
    return TableRef(schema, name)


def _table_rows(spark, schema, name):
    return sorted(tuple(r) for r in spark.sql(
        f"select id, payload, tag, cast(day as string) from {schema}.{name}").collect())


def _timeline(spark, table):
    fs = HadoopFS(spark)
    location = fs.qualify(describe_table(spark, table).location)
    return Timeline(fs, location), location


@pytest.mark.parametrize("ddl", ["USING parquet", "STORED AS PARQUET"])
def test_a_foreign_parquet_table_is_adopted_and_compacted_in_place(spark, schema, ddl):
    table = _foreign_table(spark, schema, "plain", ddl)
    before = _table_rows(spark, schema, "plain")
    assert all(len(f) == 4 for f in files_by_partition(spark, schema, "plain").values())
    logs = []
    result = run_compaction(spark, table, {"target_file_size": "64KB"}, log=logs.append)
    assert any("adopting" in m and "12 files" in m for m in logs), logs
    assert result.files_replaced == 12 and result.files_written == 3
    assert _table_rows(spark, schema, "plain") == before
    timeline, location = _timeline(spark, table)
    adopt, compact = timeline.completed()
    assert (adopt.operation, compact.operation) == ("adopt", "compact")
    assert sum(f.rows for f in adopt.added) == 1200 and len(adopt.added) == 12
    assert not any(f.key_min or f.key_max for f in adopt.added)  # a service knows no key
    assert duckdb_rows(local_dir(location), ["id", "tag"]) == \
        sorted(((r[0], r[2]) for r in before), key=repr)


def _file_stats(location):
    """{rel path: (rows, 'n:<min id>', 'n:<max id>')} of the table's files, read by pyarrow."""
    import pyarrow.parquet as pq
    directory = local_dir(location)
    out = {}
    for root, _dirs, names in os.walk(directory):
        for n in names:
            if not n.startswith((".", "_")):
                ids = pq.read_table(os.path.join(root, n), columns=["id"]).column("id")
                out[os.path.relpath(os.path.join(root, n), directory)] = (
                    len(ids), f"n:{min(ids.to_pylist())}", f"n:{max(ids.to_pylist())}")
    return out


def _hive_names(location):
    """Name the files as Hive does (000000_0, no .parquet): the footer helper lists *.parquet
    only, so these are read by the Spark job."""
    for root, _dirs, names in os.walk(local_dir(location)):
        for k, n in enumerate(sorted(x for x in names if x.endswith(".parquet"))):
            os.rename(os.path.join(root, n), os.path.join(root, f"{k:06d}_0"))


@pytest.mark.parametrize("hive_names", [False, True])
def test_an_incremental_run_adopts_a_dbt_spark_table_and_goes_on(spark, schema, hive_names):
    """A model's profile changed to sized_spark, its table kept: the first upsert records
    the table's files with their rows and key ranges (from the footers; files not named
    *.parquet by one Spark job), reads only the files whose range may hold the batch's keys
    (and the small files its inserts top up), and then updates and inserts as on any sized
    table."""
    table = _foreign_table(spark, schema, "from_dbt", "USING parquet")
    location = _timeline(spark, table)[1]
    if hive_names:
        _hive_names(location)
    stats = _file_stats(location)
    assert len(stats) == 12 and all(p.endswith(".parquet") != hive_names for p in stats)
    cfg = parse_config({"partition_by": ["day"], "unique_key": "ID", "target_file_size": 64_000})
    batch = _rows(spark, 1100, 200, "new")          # ids 1100-1199 exist: updated
    logs = []
    write_dataframe(spark, batch, table, cfg, log=logs.append)
    assert any("adopting" in m and "(1,200 rows, the id range of 12)" in m for m in logs), logs
    # ids 1100-1299: only the last load's three files (ids 900-1199) may hold them
    assert any("3 of 12 files may hold a key" in m for m in logs), logs  # a small upsert
    timeline, _location = _timeline(spark, table)
    adopt = timeline.completed()[0]
    assert {f.path: (f.rows, f.key_min, f.key_max) for f in adopt.added} == stats
    expected = {i: (i, f"v{i % 7}", "old", f"2025-03-0{1 + i % 3}") for i in range(1200)}
    expected.update({i: (i, f"v{i % 7}", "new", f"2025-03-0{1 + i % 3}") for i in range(1100, 1300)})
    assert _table_rows(spark, schema, "from_dbt") == sorted(expected.values())
    timeline, _location = _timeline(spark, table)
    assert [i.operation for i in timeline.completed()] == ["adopt", "upsert"]


@pytest.mark.every_variant  # formats: Spark versions name them apart
@pytest.mark.parametrize("ddl,fmt", [("USING orc", "orc"), ("STORED AS TEXTFILE", "text")])
def test_a_table_of_another_format_is_refused_before_anything_is_written(spark, schema, ddl,
                                                                         fmt):
    table = _foreign_table(spark, schema, "other", ddl, loads=1)
    cfg = parse_config({"partition_by": ["day"], "unique_key": "id", "target_file_size": 64_000})
    for attempt in (lambda: write_dataframe(spark, _rows(spark, 0, 10, "x"), table, cfg, **QUIET),
                    lambda: run_compaction(spark, table, {}, **QUIET)):
        with pytest.raises(WriteError, match=f"is a {fmt} table, not Parquet.*--full-refresh"):
            attempt()
    fs = HadoopFS(spark)
    location = fs.qualify(describe_table(spark, table).location)
    assert not fs.exists(Timeline(fs, location).meta_dir)  # not even a lock was taken
    # the way out: a full refresh rebuilds it as sized Parquet
    write_dataframe(spark, _rows(spark, 0, 10, "x"), table, cfg, full_refresh=True, **QUIET)
    assert describe_table(spark, table).file_format == "parquet"
    assert spark.table(f"{schema}.other").count() == 10


@pytest.mark.parametrize("point", ["requested", "inflight", "completed"])
def test_a_crash_while_adopting_loses_nothing(spark, schema, point, monkeypatch):
    table = _foreign_table(spark, schema, "crash_adopt", "USING parquet", loads=2)
    before = _table_rows(spark, schema, "crash_adopt")
    monkeypatch.setenv("SIZED_SPARK_FAULT", point)
    faults.reset()
    with pytest.raises(faults.InjectedCrash):
        run_compaction(spark, table, {"target_file_size": "64KB"}, **QUIET)
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    lock.forget_held_locks()
    faults.reset()
    assert _table_rows(spark, schema, "crash_adopt") == before
    run_compaction(spark, table, {"target_file_size": "64KB"}, **QUIET)
    assert _table_rows(spark, schema, "crash_adopt") == before
    timeline, location = _timeline(spark, table)
    assert [i.operation for i in timeline.completed()] == ["adopt", "compact"]
    assert duckdb_rows(local_dir(location), ["id"]) == sorted(((r[0],) for r in before), key=repr)
    assert all(len(f) == 1 for f in files_by_partition(spark, schema, "crash_adopt").values())


def test_adoption_registers_partitions_its_writer_left_out_of_the_metastore(spark, schema):
    """A Spark job wrote a day's files into the table's directory without registering the
    partition: adoption records its files and registers it, so Spark reads its rows too."""
    table = _foreign_table(spark, schema, "unregistered", "USING parquet", loads=1)
    location = _timeline(spark, table)[1]
    _rows(spark, 5000, 40, "late").where("day = date'2025-03-01'").drop("day") \
        .coalesce(1).write.parquet(f"{location}/day=2025-03-09")
    assert spark.table(f"{schema}.unregistered").count() == 300   # not registered yet
    logs = []
    run_compaction(spark, table, {"target_file_size": "64KB"}, log=logs.append)
    assert any("adopting" in m and "4 files" in m for m in logs), logs
    parts = {r[0] for r in spark.sql(f"SHOW PARTITIONS {schema}.unregistered").collect()}
    assert "day=2025-03-09" in parts and len(parts) == 4
    assert spark.table(f"{schema}.unregistered").where("day = date'2025-03-09'").count() == \
        len([i for i in range(5000, 5040) if i % 3 == 0])
