"""A rewrite's columns keep the encodings of the files it reads (spark/write/encodings.py),
on a real local Spark: a column no large file holds a dictionary for is written without
one, as compaction's files show to pyarrow; its rows are unchanged for every reader."""
import dataclasses

import pyarrow.parquet as pq
import pytest

from python_adapter.api import compact, write_dataframe
from python_adapter.core.config import parse_config
from python_adapter.io.fs import HadoopFS
from python_adapter.spark.catalog.tables import TableRef, describe_table
from python_adapter.spark.session_conf import session_conf
from python_adapter.spark.write.encodings import dictionary_options
from tests.functional.helpers import files_by_partition
from tests.functional.readers import (duckdb_rows, local_dir, parquet_files, polars_rows,
                                      pyarrow_rows)

QUIET = dict(log=lambda m: None)
# what parquet-mr would dictionary-encode (4 values), written by the loads without one
NO_DICTIONARY_AT_LOAD = {"parquet.enable.dictionary#kind": "false"}


def _loads(spark, schema, name, rows_per_load):
    """A day of three loads, each one file: id unique, kind and tag of 4 values each, kind
    written without a dictionary."""
    table = TableRef(schema, name)
    cfg = parse_config({"partition_by": ["day"], "incremental_strategy": "insert",
                        "target_file_size": "4MB", "small_file_limit": 0,
                        "distribution": "exact"})
    for k in range(3):
        df = spark.sql(f"""
            select {k} * 1000000 + i as id, concat('kind-', i % 4) as kind,
                   concat('tag-', i % 4) as tag, date'2025-03-01' as day
            from range({rows_per_load}) as r(i)""")
        with session_conf(spark, NO_DICTIONARY_AT_LOAD):
            write_dataframe(spark, df, table, cfg, full_refresh=(k == 0), **QUIET)
    return table


def _dictionaries(path):
    """{column: whether its chunks have a dictionary page} of a Parquet file."""
    rg = pq.ParquetFile(path).metadata.row_group(0)
    return {rg.column(i).path_in_schema: rg.column(i).has_dictionary_page
            for i in range(rg.num_columns)}


def test_columns_no_large_file_holds_a_dictionary_for_are_named(spark, schema):
    table = _loads(spark, schema, "enc_named", 12_000)
    location = HadoopFS(spark).qualify(describe_table(spark, table).location)
    files = [f for fs in files_by_partition(spark, schema, "enc_named").values() for f in fs]
    assert len(files) == 3 and all(_dictionaries(p) == {"id": False, "kind": False, "tag": True}
                                   for p in parquet_files(local_dir(location)))
    assert dictionary_options(spark, location, files) == {
        "parquet.enable.dictionary#id": "false", "parquet.enable.dictionary#kind": "false"}
    # files of fewer rows than half a page say nothing: parquet-mr's default stays
    small = [dataclasses.replace(f, rows=9_999) for f in files]
    assert dictionary_options(spark, location, small) == {}


def test_compaction_writes_each_column_as_the_files_it_reads_encode_it(spark, schema):
    table = _loads(spark, schema, "enc_compact", 12_000)
    directory = local_dir(HadoopFS(spark).qualify(describe_table(spark, table).location))
    before = sorted(spark.table(f"{schema}.enc_compact").collect())
    result = compact(spark, table, {"target_file_size": "4MB"}, **QUIET)
    assert result.files_replaced == 3 and result.files_written == 1
    (path,) = parquet_files(directory)
    # kind as its files had it, though parquet-mr alone would give its 4 values a dictionary
    assert _dictionaries(path) == {"id": False, "kind": False, "tag": True}
    control = f"{directory}-control"
    spark.read.parquet(path).write.parquet(control)
    assert all(_dictionaries(p)["kind"] for p in parquet_files(control))
    assert sorted(spark.table(f"{schema}.enc_compact").collect()) == before
    expected = sorted(((r.id, r.kind, r.tag) for r in before), key=repr)
    for read in (duckdb_rows, polars_rows, pyarrow_rows):
        assert read(directory, ["id", "kind", "tag"]) == expected, read.__name__
