"""The bloom index (index_type: bloom) on a real local Spark: files carry Parquet Bloom
filters of the key that other engines read, and tagging reads only the files that may hold
an incoming key."""
import glob
import os
import re

import duckdb
import pytest
from pyspark.sql import functions as F

from python_adapter.api import compact
from python_adapter.core.config import parse_config
from python_adapter.errors import ConfigError
from python_adapter.spark.catalog.tables import TableRef, describe_table
from python_adapter.api import write_dataframe
from tests.functional.helpers import files_by_partition, rows_of, rows_of_df
from tests.functional.readers import duckdb_rows, polars_rows, pyarrow_rows

TARGET = 16_000


def cfg(**kw):
    base = {"partition_by": ["day"], "unique_key": "id", "target_file_size": TARGET,
            "small_file_limit": 12_000, "distribution": "exact", "index_type": "bloom"}
    base.update(kw)
    return parse_config(base)


@pytest.fixture
def uuid_events(spark):
    """Events keyed by a hash (no order in time): every file's key range is the whole domain."""
    def make(days=6, per_day=1500, first=0, tag="v1"):
        return spark.sql(f"""
            select substr(sha2(cast({first} + d * 100000 + i as string), 256), 1, 32) as id,
                   date_add(date'2025-01-01', d) as day,
                   sha2(cast(i as string), 224) as payload, '{tag}' as tag
            from (select explode(sequence(0, {days} - 1)) as d)
            lateral view explode(sequence(1, {per_day})) t as i""")
    return make


class Log(list):
    def __call__(self, message):
        self.append(message)

    def tagged_files(self):
        """Files the tagging read: the first pass's and the second pass's."""
        first = [int(m.group(1)) for line in self for m in
                 [re.search(r"tagging incoming keys against (\d+) of", line)] if m]
        second = [int(m.group(1)) for line in self for m in
                  [re.search(r"looking in (\d+) of the other", line)] if m]
        return sum(first) + sum(second)


def holders(spark, schema, name, keys):
    """The files of the table that hold one of these keys (asked of the table's rows)."""
    return (spark.table(f"{schema}.{name}").select("id", F.input_file_name().alias("f"))
            .join(keys.select("id"), "id").select("f").distinct().count())


@pytest.mark.parametrize("scope", ["global", "partition"])
def test_tagging_reads_only_the_files_holding_incoming_keys(spark, schema, uuid_events, scope):
    name = f"bl_{scope}"
    base = uuid_events()
    write_dataframe(spark, base, TableRef(schema, name), cfg(index_scope=scope),
                    log=lambda m: None)
    files = sum(len(v) for v in files_by_partition(spark, schema, name).values())
    # 12 updates in 2 days, and new keys in every day
    updates = base.where("day in (date'2025-01-02', date'2025-01-05')") \
        .orderBy("id").limit(12).withColumn("tag", F.lit("v2"))
    inserts = uuid_events(per_day=40, first=10**7, tag="new")
    batch = updates.unionByName(inserts)
    holding = holders(spark, schema, name, updates)
    expected = {**dict(rows_of(spark, schema, name)), **dict(rows_of_df(batch))}
    log = Log()
    write_dataframe(spark, batch, TableRef(schema, name), cfg(index_scope=scope), log=log)

    assert rows_of(spark, schema, name) == sorted(expected.items())
    assert holding < files / 4  # the test means something: most files hold no key
    assert log.tagged_files() == holding, log


def test_range_index_reads_every_file_of_the_touched_partitions(spark, schema, uuid_events):
    """The baseline the bloom index is for: min/max cannot rule a hashed key out."""
    base = uuid_events()
    write_dataframe(spark, base, TableRef(schema, "rng"), cfg(index_type="range"),
                    log=lambda m: None)
    files = sum(len(v) for v in files_by_partition(spark, schema, "rng").values())
    batch = uuid_events(per_day=40, first=10**7, tag="new")
    log = Log()
    write_dataframe(spark, batch, TableRef(schema, "rng"), cfg(index_type="range"), log=log)
    assert log.tagged_files() == files


def test_a_key_that_moves_partition_leaves_its_old_file(spark, schema, uuid_events):
    """The moved key's old file holds no key of its own partition's rows; with the global
    scope it is probed with every key of the batch, so the key is found there."""
    base = uuid_events(days=3, per_day=600)
    write_dataframe(spark, base, TableRef(schema, "mv"), cfg(), log=lambda m: None)
    moved = base.where("day = date'2025-01-01'").orderBy("id").limit(1) \
        .withColumn("day", F.lit("2025-01-03").cast("date")).withColumn("tag", F.lit("moved"))
    key = moved.first()["id"]
    write_dataframe(spark, moved, TableRef(schema, "mv"), cfg(), log=lambda m: None)
    rows = spark.table(f"{schema}.mv").where(F.col("id") == key).collect()
    assert [(str(r["day"]), r["tag"]) for r in rows] == [("2025-01-03", "moved")]
    assert spark.table(f"{schema}.mv").count() == 1800


def test_files_carry_a_bloom_filter_other_engines_read(spark, schema, uuid_events):
    """Written by a build, an upsert and a compaction alike; DuckDB probes the filter."""
    base = uuid_events(days=2, per_day=900)
    table = TableRef(schema, "ddb")
    write_dataframe(spark, base, table, cfg(), log=lambda m: None)
    write_dataframe(spark, uuid_events(days=2, per_day=30, first=10**7, tag="new"), table,
                    cfg(), log=lambda m: None)
    done = compact(spark, table, {"target_file_size": "256KB", "small_file_limit": "200KB"},
                   log=lambda m: None)
    assert done.files_written > 0
    location = describe_table(spark, table).location.replace("file:", "")
    paths = sorted(glob.glob(os.path.join(location, "day=*", "*.parquet")))
    present = base.orderBy("id").first()["id"]

    def may_hold(key):
        """{file: whether DuckDB's probe of its Bloom filters leaves the key possible}"""
        rows = duckdb.sql(f"select file_name, bool_and(bloom_filter_excludes) from "
                          f"parquet_bloom_probe({paths!r}, 'id', '{key}') group by 1").fetchall()
        return {f: not excluded for f, excluded in rows}

    assert len(may_hold(present)) == len(paths) >= 2
    assert sum(may_hold(present).values()) == 1  # one file holds it, the rest say no
    assert not any(may_hold("no such key").values())
    # the filters change nothing a reader of <table>/**/*.parquet sees
    expected = sorted(spark.table(f"{schema}.ddb").select("id", "day", "tag").collect(),
                      key=repr)
    expected = sorted(((r["id"], str(r["day"]), r["tag"]) for r in expected), key=repr)
    for read in (duckdb_rows, pyarrow_rows, polars_rows):
        got = sorted(((i, str(d), t) for i, d, t in read(location, ["id", "day", "tag"])),
                     key=repr)
        assert got == expected, read.__name__


def test_files_without_a_filter_are_read(spark, schema, uuid_events):
    """A table written before index_type bloom: its files cannot be ruled out, so every
    candidate is read and every key found."""
    base = uuid_events(days=2, per_day=600)
    table = TableRef(schema, "old")
    write_dataframe(spark, base, table, cfg(index_type="range"), log=lambda m: None)
    batch = base.orderBy("id").limit(5).withColumn("tag", F.lit("v2"))
    log = Log()
    write_dataframe(spark, batch, table, cfg(), log=log)
    assert spark.table(f"{schema}.old").count() == 1200
    assert spark.table(f"{schema}.old").where("tag = 'v2'").count() == 5
    assert any("Bloom filters ruled out 0" in line for line in log), log


@pytest.mark.parametrize("key_type", ["bigint", "int"])
def test_numeric_keys_are_probed(spark, schema, key_type):
    """Integer keys are hashed as Parquet stores them (INT64, INT32): files are ruled out
    and every update finds its row."""
    name = f"num_{key_type}"
    rows = lambda first, n, tag: spark.sql(  # noqa: E731
        f"select cast(pmod(xxhash64(i), 1000000007) as {key_type}) as id, "
        f"date_add(date'2025-01-01', cast(i % 3 as int)) as day, "
        f"sha2(cast(i as string), 224) as payload, '{tag}' as tag "
        f"from (select id as i from range({first}, {first + n}))")
    base = rows(0, 3000, "v1")
    write_dataframe(spark, base, TableRef(schema, name), cfg(), log=lambda m: None)
    batch = base.orderBy("id").limit(3).withColumn("tag", F.lit("v2"))
    holding = holders(spark, schema, name, batch)
    log = Log()
    write_dataframe(spark, batch, TableRef(schema, name), cfg(), log=log)
    assert spark.table(f"{schema}.{name}").count() == 3000
    assert spark.table(f"{schema}.{name}").where("tag = 'v2'").count() == 3
    assert log.tagged_files() == holding, log


def test_bloom_needs_a_unique_key():
    with pytest.raises(ConfigError, match="index_type: 'bloom'"):
        parse_config({"index_type": "bloom"})
    with pytest.raises(ConfigError, match="index_type: unknown value 'hash'"):
        parse_config({"unique_key": "id", "index_type": "hash"})
