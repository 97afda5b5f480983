"""Bytes per row from samples written to Parquet (spark/measure.py)."""
from python_adapter.io.fs import HadoopFS
from python_adapter.spark import measure


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
