"""Bytes per row from samples written to Parquet (spark/write/measure.py)."""
from python_adapter.io.fs import HadoopFS
from python_adapter.spark.write import measure


def _rows(spark, n):
    return spark.range(n).selectExpr("id", "sha2(cast(id as string), 256) as payload")


def _counting_samples(monkeypatch):
    """The sample sizes measure writes (the real writes, counted)."""
    written = []
    real = measure._write_sample

    def counted(fs, df, total_rows, rows, path, num_files=1):
        written.append(rows)
        return real(fs, df, total_rows, rows, path, num_files)

    monkeypatch.setattr(measure, "_write_sample", counted)
    return written


def test_partitions_far_below_the_target_need_no_second_sample(spark, tmp_path, monkeypatch):
    """Issue 49: a 30-day build at 128 MB spent ~4 s writing a second sample of a million
    rows, though each day's rows were one file at any plausible rate."""
    written = _counting_samples(monkeypatch)
    rate = measure.measure_bytes_per_row(HadoopFS(spark), _rows(spark, 300_000),
                                         ["id", "payload"], 300_000, 128_000_000,
                                         f"file://{tmp_path}/s", largest_rows=10_000)
    assert written == [20_000] and 60 < rate < 120


def test_partitions_near_the_target_are_measured_at_target_size_files(spark, tmp_path,
                                                                      monkeypatch):
    written = _counting_samples(monkeypatch)
    target = 2_000_000
    rate = measure.measure_bytes_per_row(HadoopFS(spark), _rows(spark, 300_000),
                                         ["id", "payload"], 300_000, target,
                                         f"file://{tmp_path}/s", largest_rows=100_000)
    assert len(written) == 2 and written[1] > 20_000  # files of about a target's rows
    whole = tmp_path / "whole"
    _rows(spark, 300_000).coalesce(1).write.parquet(f"file://{whole}")
    size = sum(p.stat().st_size for p in whole.glob("*.parquet"))
    assert abs(rate - size / 300_000) / (size / 300_000) < 0.25


def _raw_bound(spark, df, columns):
    from pyspark.sql import functions as F

    return df.agg(F.sum(measure.raw_row_bytes(df, columns))).first()[0]


def test_the_raw_size_bounds_parquet_bytes_even_for_bytes_that_do_not_compress(spark, tmp_path):
    """The bound that spares a first build its sample must never be below what Parquet
    writes: random binary (no compression, no dictionary), hex text, nulls, every fixed
    width, and a table of one row (the footer's share)."""
    from python_adapter.core.planning import FILE_OVERHEAD, RAW_OVERHEAD

    cases = {
        "random": spark.range(20_000).selectExpr(
            "unhex(sha2(cast(id as string), 512)) as b", "id"),
        "mixed": spark.range(20_000).selectExpr(
            "id", "cast(id as int) as i", "cast(id as short) as s", "cast(id as byte) as t",
            "id % 2 = 0 as f", "cast(id as double) / 7 as d", "cast(id as float) as r",
            "date_add(date'2020-01-01', cast(id % 900 as int)) as day",
            "timestamp_seconds(id * 37) as ts", "cast(id / 3 as decimal(20, 4)) as dec",
            "if(id % 3 = 0, null, sha2(cast(id as string), 256)) as text"),
        "one row": spark.range(1).selectExpr("id", "'x' as s"),
    }
    for name, df in cases.items():
        path = tmp_path / name.replace(" ", "_")
        df.coalesce(1).write.parquet(f"file://{path}")
        written = sum(p.stat().st_size for p in path.glob("*.parquet"))
        bound = _raw_bound(spark, df, df.columns) * RAW_OVERHEAD + FILE_OVERHEAD + \
            1024 * len(df.columns)
        assert written <= bound, (name, written, bound)


def test_nested_types_and_wide_rows_have_no_raw_bound(spark):
    nested = spark.range(3).selectExpr("id", "array(id) as a")
    assert measure.raw_row_bytes(nested, nested.columns) is None
    wide = spark.range(1).selectExpr(*[f"id as c{i}" for i in range(measure.BOUNDED_COLUMNS + 1)])
    assert measure.raw_row_bytes(wide, wide.columns) is None


def test_a_first_build_far_below_the_target_writes_no_sample(spark, schema, events,
                                                           monkeypatch):
    """Each day's raw size fits a 128 MB file many times over: one file a day, planned
    without writing a sample."""
    from python_adapter.core.config import parse_config
    from python_adapter.spark.catalog.tables import TableRef
    from python_adapter.api import write_dataframe

    written, logs = _counting_samples(monkeypatch), []
    result = write_dataframe(spark, events(days=4), TableRef(schema, "nb"),
                             parse_config({"partition_by": ["day"]}), log=logs.append)
    assert written == [] and any("a bound of the rows' raw size" in m for m in logs), logs
    assert (result.partitions, result.files_written) == (4, 4)
