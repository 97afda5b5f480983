"""What a write's job shares: its cached batch."""
import pyspark
import pytest

from python_adapter.spark.job import cache_batch
from python_adapter.spark.session_conf import session_conf


def _joined(spark, seed):
    """A batch whose plan shuffles (a join, then an aggregation): 100 rows; each seed a
    plan of its own (Spark reuses the cache of an equal plan)."""
    left = spark.range(1000).selectExpr("id", f"(id + {seed}) % 100 AS k")
    right = spark.range(100).selectExpr("id AS k", "id * 2 AS v")
    return left.join(right, "k").groupBy("k").agg({"v": "max"})


@pytest.mark.skipif(pyspark.__version__.startswith("3."),
                    reason="Spark 3.5's AQE does not coalesce the last stage of a cached plan")
def test_a_cached_batch_that_shuffles_is_not_cut_in_the_sessions_shuffle_partitions(spark):
    """Each scan of a cache runs one task per cached partition: a batch that shuffles,
    cached with Spark's default, keeps spark.sql.shuffle.partitions partitions whatever its
    size (a snapshot's 20,000 staging rows in 202); ours lets AQE coalesce them."""
    with session_conf(spark, {"spark.sql.shuffle.partitions": 50,
                              "spark.sql.adaptive.enabled": "true"}):
        plain = _joined(spark, 0).persist()
        ours = cache_batch(spark, _joined(spark, 1))
        try:
            assert plain.count() == ours.count() == 100
            assert plain.rdd.getNumPartitions() == 50  # the default this guards against
            assert ours.rdd.getNumPartitions() < 5
            assert sorted(map(tuple, ours.collect())) == sorted(map(tuple, _joined(spark, 1).collect()))
        finally:
            plain.unpersist()
            ours.unpersist()
