"""A real local SparkSession with Hive support (Derby metastore, warehouse in a temp dir)."""
import os
import uuid

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


# few shuffle partitions for small test tables; ANSI off, as the tests' expressions assume
TEST_CONF = (("spark.sql.shuffle.partitions", "4"), ("spark.sql.ansi.enabled", "false"))


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """One session per pytest worker (tests/functional/s3 start theirs with the S3A jars)."""
    from benchmarks.lib.session import LocalSpark, start

    home = tmp_path_factory.mktemp("spark_home")
    session = start(LocalSpark(home, app_name="sized-tests", class_archive=True, conf=TEST_CONF))
    yield session
    session.stop()


@pytest.fixture
def schema(spark):
    name = f"t_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {name}")
    yield name
    spark.sql(f"DROP DATABASE IF EXISTS {name} CASCADE")


@pytest.fixture
def events(spark):
    return events_of(spark)


def events_of(spark):
    """Synthetic events: 12 days whose volume grows day by day, ~60 bytes a row."""
    def make(days=12, base=400, start="2025-01-01", id_offset=0, tag="v1"):
        return spark.sql(f"""
            select cast({id_offset} + d * 100000 + i as bigint) as id,
                   date_add(date'{start}', d) as day,
                   sha2(cast(d * 100000 + i as string), 256) as payload,
                   cast(i % 97 as double) as amount,
                   '{tag}' as tag
            from (select explode(sequence(0, {days} - 1)) as d)
            lateral view explode(sequence(1, {base} + d * 60)) t as i""")
    return make
