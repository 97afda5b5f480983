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
