"""Spark session settings changed for the duration of one read or write."""
from contextlib import contextmanager


@contextmanager
def session_conf(spark, settings):
    """Set {key: value} on the session; restore each key's earlier value (or unset it) on exit.
    The session is shared, so this is for settings that change speed, not results."""
    before = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, str(v))
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def shuffle_partitions(spark, nbytes):
    """{spark.sql.shuffle.partitions: n} for a query over about `nbytes` (Spark's estimate):
    one partition per advisory partition size, the size AQE coalesces to, at least 1 and at
    most the session's own setting. AQE would coalesce a small batch's 200 partitions to one
    anyway, but only after every map task has written all 200: a 6,000-row key check took
    ~0.6 s that way and ~0.2 s with one."""
    current = int(spark.conf.get("spark.sql.shuffle.partitions"))
    advisory = spark.conf.get("spark.sql.adaptive.advisoryPartitionSizeInBytes", "64MB")
    per = int(spark.sparkContext._jvm.org.apache.spark.network.util.JavaUtils
              .byteStringAsBytes(advisory))
    return {"spark.sql.shuffle.partitions": max(1, min(current, -(-int(nbytes) // max(per, 1))))}
