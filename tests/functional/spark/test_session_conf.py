"""Settings set around one query: restored afterwards; shuffle partitions sized to the input."""
from python_adapter.spark.session_conf import (own_session, raise_on_own_session, session_conf,
                                               shuffle_conf)


def test_settings_are_restored_or_unset(spark):
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    with session_conf(spark, {"spark.sql.shuffle.partitions": 1, "spark.sized.test.key": "x"}):
        assert spark.conf.get("spark.sql.shuffle.partitions") == "1"
        assert spark.conf.get("spark.sized.test.key") == "x"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "4"
    assert spark.conf.get("spark.sized.test.key", None) is None


def test_shuffle_partitions_follow_the_input_size(spark):
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    spark.conf.set("spark.sql.adaptive.advisoryPartitionSizeInBytes", "1MB")  # Spark: MiB
    try:
        # fits one partition: one static plan
        assert shuffle_conf(spark, 500_000) == {"spark.sql.shuffle.partitions": 1,
                                                "spark.sql.adaptive.enabled": "false"}
        assert shuffle_conf(spark, 0)["spark.sql.shuffle.partitions"] == 1
        # one partition per MiB, AQE left as the session has it
        assert shuffle_conf(spark, 3 * 1024 * 1024 - 1) == {"spark.sql.shuffle.partitions": 3}
        # never more than the session's own setting (an unknown size is huge)
        assert shuffle_conf(spark, 2 ** 63 - 1) == {"spark.sql.shuffle.partitions": 4}
    finally:
        spark.conf.unset("spark.sql.adaptive.advisoryPartitionSizeInBytes")


def test_blocks_that_overlap_restore_the_value_from_before_the_first(spark):
    """dbt threads share the session: A enters, B enters, A leaves, B leaves."""
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    a = session_conf(spark, {"spark.sql.shuffle.partitions": 1})
    b = session_conf(spark, {"spark.sql.shuffle.partitions": 2})
    a.__enter__()
    b.__enter__()
    a.__exit__(None, None, None)
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"  # B still runs with its own
    b.__exit__(None, None, None)
    assert spark.conf.get("spark.sql.shuffle.partitions") == "4"  # not A's 1


def test_a_writes_own_session_keeps_its_settings_from_the_model_beside_it(spark):
    """What one model's write sets on its own session is not seen by the session dbt's other
    threads use, while temporary views, settings made before, tables and the cache are."""
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    spark.conf.set("spark.sql.adaptive.enabled", "true")
    spark.range(5).createOrReplaceTempView("sized_model_view")
    spark.table("sized_model_view").cache()
    with own_session(spark, "default", "sized_no_table") as own:
        assert own.conf.get("spark.sql.shuffle.partitions") == "4"
        with session_conf(own, {"spark.sql.shuffle.partitions": 1,
                                "spark.sql.adaptive.enabled": "false"}):
            assert spark.conf.get("spark.sql.shuffle.partitions") == "4"
            assert spark.conf.get("spark.sql.adaptive.enabled") == "true"
            assert own.conf.get("spark.sql.shuffle.partitions") == "1"
            rows = own.sql("select id % 2 as k, count(*) as n from sized_model_view group by 1")
            assert sorted(tuple(r) for r in rows.collect()) == [(0, 3), (1, 2)]
        assert own.catalog.isCached("sized_model_view")
    spark.catalog.dropTempView("sized_model_view")


def test_after_a_write_on_its_own_session_the_caller_reads_the_new_files(spark, schema):
    """dbt runs a model's test on its session right after the write: it must list the
    table's files again, not open the ones the write replaced (each session caches its
    table relations, and the write's copy refreshed only its own)."""
    spark.sql(f"CREATE TABLE {schema}.t (a INT) STORED AS PARQUET")
    spark.sql(f"INSERT INTO {schema}.t VALUES (1)")
    assert spark.table(f"{schema}.t").count() == 1  # the caller caches the relation
    with own_session(spark, schema, "t") as own:
        own.sql(f"INSERT OVERWRITE TABLE {schema}.t SELECT 2 UNION ALL SELECT 3")
    assert sorted(r.a for r in spark.table(f"{schema}.t").collect()) == [2, 3]


def test_a_setting_raised_on_a_writes_own_session_stays_there_and_nowhere_else(spark):
    """Over Spark Connect a read's file index is built at each action, so read_files raises
    the listing threshold for the rest of the write: only on the write's own session, never
    lowered, and never on a session own_session did not make (the caller's)."""
    key = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    before = spark.conf.get(key)
    assert not raise_on_own_session(spark, key, 500)
    assert spark.conf.get(key) == before
    with own_session(spark, "default", "sized_no_table") as own:
        assert raise_on_own_session(own, key, 500)
        assert raise_on_own_session(own, key, 40)  # lower: kept at 500
        assert own.conf.get(key) == "500"
        assert spark.conf.get(key) == before
    assert not raise_on_own_session(own, key, 900)  # released on exit
