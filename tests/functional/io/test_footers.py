"""Staged files' rows and key ranges from their footers (python_adapter/footers.py) agree
with what a Spark job reading the files finds; which columns files hold no dictionary for."""
import os

import pytest

from python_adapter.io.fast_local_fs import decode_fields
from python_adapter.io.footers import plain_columns, staged_footers
from python_adapter.io.fs import HadoopFS
from python_adapter.spark.table_files import read_files
from python_adapter.spark.table_files import file_stats


def _spark_job_stats(spark, staging, key_col):
    """What the Spark job finds, over the files os.walk finds (not the helper's listing)."""
    local = staging[len("file:"):]
    rels = sorted(os.path.relpath(os.path.join(root, n), local)
                  for root, _dirs, names in os.walk(local) for n in names
                  if n.endswith(".parquet") and not n.startswith((".", "_")))
    stats = file_stats(read_files(spark, staging, None, rels), key_col)
    return {f"{staging}/{rel}": stats.get(f"{staging}/{rel}", (0, "", "")) for rel in rels}


def _row_groups(spark, uri):
    jvm = spark._jvm
    footer = jvm.org.apache.parquet.hadoop.ParquetFileReader.readFooter(
        jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(
            jvm.org.apache.hadoop.fs.Path(uri), spark.sparkContext._jsc.hadoopConfiguration()),
        jvm.org.apache.parquet.format.converter.ParquetMetadataConverter.NO_FILTER)
    return footer.getBlocks().size()


KEYS = {
    "id": "cast(i * 7 - 300 as bigint)",
    "n": "cast(i as int)",
    "s": "concat('k\\t', cast(i as string), '\\u00e9\\U0001F600')",
    "d": "date_add(date'2024-01-01', i)",
    "amount": "cast(i / 3 as decimal(10, 2))",
}


@pytest.mark.every_variant  # column types: Spark versions write and read them apart
@pytest.mark.parametrize("key_col", [*KEYS, None])
def test_footers_agree_with_a_spark_job(spark, tmp_path, key_col):
    staging = HadoopFS(spark).qualify(str(tmp_path / "staging"))
    cols = ", ".join(f"{expr} as {name}" for name, expr in KEYS.items())
    df = spark.sql(f"select {cols}, cast(i % 3 as int) as p, sha2(cast(i as string), 256) as pad "
                   f"from (select explode(sequence(1, 3000)) as i)")
    # several row groups per file: the range spans them all
    spark.sparkContext._jsc.hadoopConfiguration().set("parquet.block.size", "16384")
    try:
        df.repartition(2).write.partitionBy("p").parquet(staging)
    finally:
        spark.sparkContext._jsc.hadoopConfiguration().unset("parquet.block.size")
    df.limit(0).write.mode("append").parquet(staging + "/p=9")  # a file without rows
    footers = staged_footers(spark, staging, key_col)
    assert footers is not None  # local staging, jar on the classpath
    job = _spark_job_stats(spark, staging, key_col)
    assert sorted(f[0] for f in footers) == sorted(job)
    for path, size, rows, kmin, kmax in footers:
        assert size == os.path.getsize(path[len("file:"):])
        job_rows, job_min, job_max = job[path]
        assert rows == job_rows
        if key_col in ("id", "n", "s", "d"):  # the types footers encode
            assert (kmin, kmax) == (job_min, job_max)
        else:
            assert (kmin, kmax) == ("", "")  # unknown: pruning treats the file as holding any key
    assert sum(f[2] for f in footers) == 3000
    assert any(f[2] == 0 for f in footers)
    assert max(_row_groups(spark, f[0]) for f in footers) > 1  # ranges span row groups


def test_a_key_column_named_in_another_case_is_found(spark, tmp_path):
    staging = HadoopFS(spark).qualify(str(tmp_path / "staging"))
    spark.sql("select cast(i as bigint) as Event_ID from (select explode(sequence(5, 9)) as i)") \
        .coalesce(1).write.parquet(staging)
    [(_uri, _size, rows, kmin, kmax)] = staged_footers(spark, staging, "event_id")
    assert (rows, kmin, kmax) == (5, "n:5", "n:9")


def test_other_filesystems_are_left_to_a_spark_job(spark):
    assert staged_footers(spark, "hdfs://nn:8020/warehouse/t/.sized/staging/1", "id") is None


def test_columns_no_file_holds_a_dictionary_for_are_named(spark, tmp_path):
    """A column is named only when no row group of any file has a dictionary page for it:
    kind has one in the first file, none in the second (written without)."""
    rows = "select id, concat('k-', id % 4) as kind, sha2(cast(id as string), 256) as pad " \
           "from range(6000)"
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    conf.set("parquet.block.size", "65536")  # several row groups per file
    try:
        spark.sql(rows).coalesce(1).write.parquet(str(tmp_path / "a"))
        conf.set("parquet.enable.dictionary#kind", "false")
        spark.sql(rows).coalesce(1).write.parquet(str(tmp_path / "b"))
    finally:
        conf.unset("parquet.block.size")
        conf.unset("parquet.enable.dictionary#kind")
    fs = HadoopFS(spark)
    a, b = ([fs.qualify(str(p)) for p in (tmp_path / d).glob("*.parquet")] for d in "ab")
    assert max(_row_groups(spark, u) for u in a + b) > 1
    assert plain_columns(spark, a + b) == ["id", "pad"]
    assert plain_columns(spark, b) == ["id", "kind", "pad"]
    assert plain_columns(spark, a + [fs.qualify(str(tmp_path / "gone.parquet"))]) is None


def test_fields_are_length_prefixed_in_code_points():
    assert decode_fields("3:a:b0:5:\t\n😀x:1:70:", 5) == [["a:b", "", "\t\n😀x:", "7", ""]]
    assert decode_fields("", 3) == []
    with pytest.raises(ValueError, match="not 5 per record"):
        decode_fields("1:a", 5)
