"""Every partition value Spark can hold round-trips through every strategy: generated
batches over awkward values (NULL, path and escape characters, unicode, names that look
hidden or like paths), each write compared with a model of the table kept in Python, and
with what DuckDB, polars and pyarrow read from the table's directory. Values Hive's layout
cannot keep apart from NULL fail the write before anything is written."""
import random

import pytest

from python_adapter.spark.catalog.tables import TableRef, describe_table
from python_adapter.errors import ConfigError
from python_adapter.core.config import parse_config
from python_adapter.io.fs import HadoopFS
from python_adapter.table.timeline import Timeline
from python_adapter.api import write_dataframe
from tests.functional.readers import (DirectoryReader, duckdb_rows, local_dir, polars_rows,
                                      pyarrow_rows)

QUIET = dict(log=lambda m: None)
VALUES = [None, "a", "a/b", "x=y", "50%", "c:d", "with space", "ünï", "日本", ".hidden",
          "_under", "..", "../up", "/abs", "q'uote", "#h?*", "back\\slash", "{[]^}", "tab\tx"]
SCHEMA = "id bigint, s string, v string"


def _config(strategy):
    raw = {"partition_by": ["s"], "target_file_size": 1500, "distribution": "exact"}
    if strategy == "upsert":
        raw.update(unique_key="id")
    else:
        raw.update(incremental_strategy=strategy if strategy != "full" else "insert_overwrite")
    return parse_config(raw)


def _batch(rng, strategy, round_no, size=60):
    if strategy == "upsert":
        ids = rng.sample(range(150), size)
    else:
        ids = [rng.randrange(150) for _ in range(size)]
    return [(i, rng.choice(VALUES), f"r{round_no}") for i in ids]


def _apply(model, strategy, batch):
    if strategy == "full":
        return list(batch)
    if strategy == "insert":
        return model + list(batch)
    if strategy == "insert_overwrite":
        touched = {s for _, s, _ in batch}
        return [r for r in model if r[1] not in touched] + list(batch)
    keys = {i for i, _, _ in batch}
    return [r for r in model if r[0] not in keys] + list(batch)


def _sorted(rows):
    return sorted(rows, key=repr)


@pytest.mark.parametrize("strategy", ["full", "insert_overwrite", "insert", "upsert"])
def test_awkward_partition_values_round_trip(spark, schema, strategy):
    rng = random.Random(f"partition-values-{strategy}")
    table = TableRef(schema, f"pv_{strategy}")
    cfg = _config(strategy)
    model = []
    table_dir = None
    reader = None
    for round_no in range(4):
        batch = _batch(rng, strategy, round_no)
        full = strategy == "full" or round_no == 0
        if table_dir is not None and reader is None:
            reader = DirectoryReader(table_dir).__enter__()
        write_dataframe(spark, spark.createDataFrame(batch, SCHEMA), table, cfg,
                        full_refresh=full, **QUIET)
        model = _apply(model, "full" if full else strategy, batch)
        got = [tuple(r) for r in spark.sql(f"select id, s, v from {schema}.pv_{strategy}").collect()]
        assert _sorted(got) == _sorted(model), f"round {round_no}"
        if table_dir is None:
            fs = HadoopFS(spark)
            table_dir = local_dir(fs.qualify(describe_table(spark, table).location))
    reader.__exit__(None, None, None)
    assert reader.listings > 0 and not reader.bad, sorted(reader.bad)[:5]
    columns = ["id", "s", "v"]
    for read in (duckdb_rows, polars_rows, pyarrow_rows):
        assert read(table_dir, columns) == _sorted(model), read.__name__


@pytest.mark.parametrize("strategy", ["full", "insert_overwrite", "insert", "upsert"])
@pytest.mark.parametrize("value", ["", "__HIVE_DEFAULT_PARTITION__"])
def test_values_hive_cannot_tell_from_null_fail_before_anything_is_written(
        spark, schema, strategy, value):
    table = TableRef(schema, "nul")
    cfg = _config(strategy)
    first = [(i, [None, "a"][i % 2], "r0") for i in range(20)]
    write_dataframe(spark, spark.createDataFrame(first, SCHEMA), table, cfg, **QUIET)
    fs = HadoopFS(spark)
    timeline = Timeline(fs, fs.qualify(describe_table(spark, table).location))
    before = [i.instant for i in timeline.instants()]
    bad = [(100, value, "r1"), (101, None, "r1"), (1, "b", "r1")]
    with pytest.raises(ConfigError, match=f"column s holds the value '{value}'.*like NULL.*nullif"):
        write_dataframe(spark, spark.createDataFrame(bad, SCHEMA), table, cfg,
                        full_refresh=strategy == "full", **QUIET)
    got = [tuple(r) for r in spark.sql(f"select id, s, v from {schema}.nul").collect()]
    assert _sorted(got) == _sorted(first)
    assert [i.instant for i in Timeline(fs, timeline.location).instants()] == before


def test_every_partition_type_of_a_first_build_is_accepted_later(spark, schema):
    """Timestamps, doubles and dates as partition columns: the first build writes them, and
    insert, upsert and insert_overwrite runs after it put rows where Spark reads them."""
    table = TableRef(schema, "typed")
    cols = "id, ts, x, d, v"

    def rows(ids, version, shift=0):
        return spark.sql(f"""
            select cast(id as bigint) as id,
                   timestamp'2025-03-30 01:30:00' + make_interval(0, 0, 0, 0, (id + {shift}) % 3, 17, 0.25) as ts,
                   cast((id % 2) / 3.0 as double) as x,
                   date_add(date'2025-01-01', cast(id % 2 as int)) as d,
                   '{version}' as v
            from (select explode(array({', '.join(map(str, ids))})) as id)""")

    def table_rows():
        return sorted(tuple(r) for r in spark.sql(f"select {cols} from {schema}.typed").collect())

    def frame_rows(df):
        return sorted(tuple(r) for r in df.select(*cols.split(", ")).collect())

    base = {"partition_by": ["ts", "x", "d"], "target_file_size": 4000}
    first = rows(range(30), "v0")
    write_dataframe(spark, first, table, parse_config({**base, "unique_key": "id"}), **QUIET)
    expected = frame_rows(first)
    assert table_rows() == expected

    upsert = rows(range(20, 40), "v1", shift=1)  # updates move rows to other partitions
    write_dataframe(spark, upsert, table, parse_config({**base, "unique_key": "id"}), **QUIET)
    expected = sorted([r for r in expected if r[0] < 20] + frame_rows(upsert))
    assert table_rows() == expected

    insert = rows(range(40, 45), "v2")
    write_dataframe(spark, insert, table, parse_config({**base, "incremental_strategy": "insert"}),
                    **QUIET)
    expected = sorted(expected + frame_rows(insert))
    assert table_rows() == expected

    overwrite = rows([0, 3], "v3")  # replaces the partitions those two rows fall in
    write_dataframe(spark, overwrite, table,
                    parse_config({**base, "incremental_strategy": "insert_overwrite"}), **QUIET)
    touched = {r[1:4] for r in frame_rows(overwrite)}
    expected = sorted([r for r in expected if r[1:4] not in touched] + frame_rows(overwrite))
    assert table_rows() == expected
