"""Small batches (spark/write/small_batch.py): rows Spark estimates at a few megabytes are written
by one task, one file per partition, without the count and the shuffle of a planned write;
whatever the estimate said, the layout rules, the checks made before anything is written and
crash safety hold as for a planned write."""
import pytest

from python_adapter.core.config import parse_config
from python_adapter.errors import ConfigError, ConstraintError
from python_adapter.io.fs import HadoopFS
from python_adapter.io.session_info import plan_stats
from python_adapter.spark.catalog.tables import TableRef, describe_table
from python_adapter.spark.services.rollback import recover_table
from python_adapter.spark.write.small_batch import (largest_partition, plan_leaves, read_sizes,
                                              width_share)
from python_adapter.api import write_dataframe
from python_adapter.spark.job import Route, WriteResult
from python_adapter.table import faults, lock
from python_adapter.table.faults import InjectedCrash
from python_adapter.table.timeline import Timeline
from tests.functional.helpers import (WRITE_POINTS, WRITE_POINTS_IN_CI, crash_points,
                                      files_by_partition, rows_of)
from tests.functional.readers import duckdb_rows, local_dir, polars_rows, pyarrow_rows


def rows_sql(n=2000, days=5, tag="v1", first=0):
    """n rows over `days` daily partitions, no generator: a plan Spark estimates well."""
    return (f"select id, date_add(date'2025-01-01', cast(id % {days} as int)) as day, "
            f"sha2(cast(id as string), 256) as payload, '{tag}' as tag "
            f"from range({first}, {first + n})")


class WriteLog(str):
    """A write's phase log, with its result (`result.route`: the way it went)."""
    result: WriteResult

    @property
    def route(self) -> Route:
        return self.result.route


def write(spark, table, sql, full_refresh=False, **config):
    """Write `sql` into table; returns the phase log, with the result."""
    cfg = parse_config({"partition_by": ["day"], "incremental_strategy": "insert_overwrite",
                        **config})
    lines = []
    result = write_dataframe(spark, spark.sql(sql), table, cfg, full_refresh=full_refresh,
                             log=lines.append)
    log = WriteLog("\n".join(lines))
    log.result = result
    return log


def expected(spark, *sqls):
    return sorted(tuple(r) for sql in sqls for r in spark.sql(sql).select("id", "tag").collect())


def test_a_small_batch_is_written_by_one_task_a_file_per_partition(spark, schema):
    table = TableRef(schema, "small")
    log = write(spark, table, rows_sql())
    assert log.route == Route.SMALL_BATCH
    log = write(spark, table, rows_sql(n=600, days=3, tag="v2", first=10_000))
    assert log.route == Route.SMALL_BATCH
    files = files_by_partition(spark, schema, "small")
    assert len(files) == 5 and all(len(f) == 1 for f in files.values())
    want = expected(spark, rows_sql(n=600, days=3, tag="v2", first=10_000)) + \
        [r for r in expected(spark, rows_sql()) if r[0] % 5 >= 3]
    assert rows_of(spark, schema, "small") == sorted(want)
    directory = local_dir(describe_table(spark, table).location)
    for read in (duckdb_rows, pyarrow_rows, polars_rows):
        assert sorted(read(directory, ["id", "tag"])) == sorted(want), read.__name__


def test_a_file_above_the_target_sends_the_batch_the_planned_way(spark, schema):
    """5 KB of random text a row, which Spark estimates at 20 bytes: the one-task files come
    out far above the target, and the batch is planned and written again to the target."""
    table = TableRef(schema, "wide")
    sql = ("select id, date_add(date'2025-01-01', cast(id % 2 as int)) as day, "
           "concat_ws('', transform(sequence(1, 80), i -> sha2(cast(id * 100 + i as string), 256)))"
           " as payload, 'w' as tag from range(600)")
    log = write(spark, table, sql, target_file_size="600KB")
    assert log.route == Route.PLANNED and "above the target" in log
    files = files_by_partition(spark, schema, "wide")
    sizes = sorted(f.bytes for part in files.values() for f in part)
    ideal = sum(-(-sum(f.bytes for f in part) // 600_000) for part in files.values())
    assert len(sizes) == ideal and max(sizes) <= 1.25 * 600_000  # the planned write's spread
    assert rows_of(spark, schema, "wide") == expected(spark, sql)


@pytest.mark.parametrize("sql, config", [
    # a generator makes more rows than Spark's estimate counts
    ("select id, date_add(date'2025-01-01', d) as day, 'g' as tag "
     "from range(100) lateral view explode(sequence(0, 3)) t as d", {}),
    (rows_sql(), {"file_count": 10}),
    (rows_sql(), {"distribution": "hash"}),
    (rows_sql(), {"insert_split_size": 100}),
    # a batch estimated above a quarter of the target
    (rows_sql(), {"target_file_size": "40KB"}),
])
def test_what_is_not_a_small_batch_is_planned(spark, schema, sql, config):
    log = write(spark, TableRef(schema, "planned"), sql, **config)
    assert log.route == Route.PLANNED, log
    assert rows_of(spark, schema, "planned") == expected(spark, sql)


def source_without_statistics(spark, schema, name="src", rows=6000):
    """A partitioned Parquet table loaded outside dbt, as a user's raw source: no statistics
    in the metastore, so Spark estimates any scan of it at 8 EB."""
    spark.sql(f"create table {schema}.{name} (id bigint, payload string, day date) "
              f"using parquet partitioned by (day)")
    spark.sql(f"insert into {schema}.{name} select id, payload, day from ({rows_sql(n=rows)})")
    return f"{schema}.{name}"


def test_a_source_without_statistics_is_sized_by_the_files_it_reads(spark, schema):
    """Spark cannot estimate a scan of the source (8 EB); the files it reads weigh about
    450 KB: a full build of it at a 1 MB target goes a file a partition in one pass, and a
    day of it (its pruned files) as a small batch, neither counted first."""
    source = source_without_statistics(spark, schema)
    assert plan_stats(spark.table(source)).size > 10 ** 18
    table = TableRef(schema, "from_source")
    sql = f"select id, day, payload, 'v1' as tag from {source}"
    log = write(spark, table, sql, full_refresh=True, target_file_size="1MB")
    assert log.route == Route.FILE_A_PARTITION, log
    files = files_by_partition(spark, schema, "from_source")
    assert len(files) == 5 and all(len(f) == 1 for f in files.values())
    day = sql + " where day = date'2025-01-02'"
    log = write(spark, table, day.replace("'v1'", "'v2'"), target_file_size="1MB")
    assert log.route == Route.SMALL_BATCH, log
    want = sorted((i, "v2" if i % 5 == 1 else "v1") for i in range(6000))
    assert rows_of(spark, schema, "from_source") == want
    directory = local_dir(describe_table(spark, table).location)
    for read in (duckdb_rows, pyarrow_rows, polars_rows):
        assert sorted(read(directory, ["id", "tag"])) == want, read.__name__


def test_a_join_is_sized_by_its_sides_files_not_their_product(spark, schema):
    """Spark estimates a join at the product of its sides; a lookup join of two small file
    tables is a small batch by the files it reads."""
    facts = source_without_statistics(spark, schema, "facts")
    spark.sql(f"create table {schema}.dims using parquet as "
              f"select id, concat('name', id) as name from range(5)")
    sql = (f"select f.id, f.day, d.name as tag from {facts} f "
           f"left join {schema}.dims d on f.id % 5 = d.id")
    assert plan_stats(spark.sql(sql)).size > 10 ** 18
    log = write(spark, TableRef(schema, "joined"), sql)
    assert log.route == Route.SMALL_BATCH, log
    assert rows_of(spark, schema, "joined") == expected(spark, sql)


def test_a_join_that_makes_more_rows_than_it_reads_is_planned_after_all(spark, schema):
    """A join of 600 rows with themselves on their day makes 72,000 rows from files of
    about 50 KB: the one-task files come out above the target, and the batch is planned,
    its files within the target."""
    facts = source_without_statistics(spark, schema, "few", rows=600)
    sql = (f"select a.id * 1000 + b.id as id, a.day, a.payload || b.payload as payload, "
           f"'x' as tag from {facts} a join {facts} b on a.day = b.day")
    log = write(spark, TableRef(schema, "fanned"), sql, target_file_size="300KB")
    assert log.route == Route.PLANNED and "above the target" in log, log
    files = files_by_partition(spark, schema, "fanned")
    assert max(f.bytes for part in files.values() for f in part) <= 1.25 * 300_000
    assert spark.table(f"{schema}.fanned").count() == 5 * 120 * 120


def test_a_model_partitioned_as_its_source_is_bounded_by_the_largest_partition(spark, schema):
    """The model's day is the source's day passed through: each day's file holds at most
    what the source's day directory holds, so a build of ~450 KB at a 200 KB target (each
    day ~90 KB) goes a file a partition without a count. A day computed from the source's
    is no partition of it: that build is counted and planned."""
    source = source_without_statistics(spark, schema)
    sql = f"select id, day, payload, 'v1' as tag from {source}"
    log = write(spark, TableRef(schema, "by_day"), sql, target_file_size="200KB")
    assert log.route == Route.FILE_A_PARTITION and "the largest partition" in log, log
    files = files_by_partition(spark, schema, "by_day")
    assert len(files) == 5 and all(len(f) == 1 for f in files.values())
    assert rows_of(spark, schema, "by_day") == expected(spark, sql)
    shifted = sql.replace("day,", "date_add(day, 1) as day,")
    assert largest_partition(spark.sql(shifted), ["day"], {"/t/day=2025-01-01": 1}) is None
    log = write(spark, TableRef(schema, "shifted"), shifted, target_file_size="200KB")
    assert log.route == Route.PLANNED, log
    assert rows_of(spark, schema, "shifted") == expected(spark, shifted)


def test_what_a_plan_reads_is_told_only_from_file_sources(spark, schema):
    """read_sizes sums the files a plan reads by directory when every leaf is a file source;
    a plan that also reads a range (or a cache, a Hive table, a V2 relation) is not sized
    from files."""
    source = source_without_statistics(spark, schema)
    fs = HadoopFS(spark)
    df = spark.sql(f"select id, day from {source} where day <= date'2025-01-02'")
    on_disk = sum(f.size for f in fs.list_files(describe_table(
        spark, TableRef(schema, "src")).location) if f.path.endswith(".parquet") and
        ("/day=2025-01-01/" in f.path or "/day=2025-01-02/" in f.path))
    sizes = read_sizes(fs, df, plan_stats(df, optimized=True).optimized)
    assert len(sizes) == 2 and sum(sizes.values()) == on_disk > 0
    mixed = spark.sql(f"select id from {source} union all select id from range(10)")
    assert read_sizes(fs, mixed, plan_stats(mixed, optimized=True).optimized) is None
    # a model keeping id and day (8 + 4 bytes by Spark's default sizes) of the source's id,
    # payload and day (8 + 20 + 4) writes about 12/32 of the files' bytes
    narrow = spark.sql(f"select id, day from {source}")
    assert width_share(spark, plan_stats(narrow, optimized=True)) == pytest.approx(12 / 32)
    assert plan_leaves("Project [a]\n+- Join Inner\n   :- Relation t[a] parquet\n"
                       "   +- Range (0, 5)\n") == ["Relation t[a] parquet", "Range (0, 5)"]


def test_a_null_in_a_not_null_column_fails_before_anything_is_written(spark, schema):
    table = TableRef(schema, "nn")
    write(spark, table, rows_sql())
    bad = rows_sql().replace("'v1' as tag", "if(id = 7, null, 'v2') as tag")
    with pytest.raises(ConstraintError, match="tag"):
        write(spark, table, bad, not_null_columns=["tag"])
    assert rows_of(spark, schema, "nn") == expected(spark, rows_sql())
    fs = HadoopFS(spark)
    assert not Timeline(fs, fs.qualify(describe_table(spark, table).location)).pending()
    # not_null on a partition column: checked on the directory names of the staged files
    with pytest.raises(ConstraintError, match="day"):
        write(spark, table, rows_sql().replace(
            "date_add(date'2025-01-01', cast(id % 5 as int)) as day",
            "if(id = 3, null, date'2025-01-01') as day"), not_null_columns=["day"])
    assert rows_of(spark, schema, "nn") == expected(spark, rows_sql())


def test_a_partition_value_that_reads_back_as_null_is_refused(spark, schema):
    table = TableRef(schema, "texts")
    sql = ("select id, if(id % 3 = 0, {bad}, concat('r', id % 3)) as region, 't' as tag "
           "from range(30)")
    cfg = {"partition_by": ["region"]}
    for bad in ("''", "'__HIVE_DEFAULT_PARTITION__'"):
        with pytest.raises(ConfigError, match="region"):
            write(spark, table, sql.format(bad=bad), **cfg)
        assert describe_table(spark, table) is None  # a first build that fails leaves none
    log = write(spark, table, sql.format(bad="null"), **cfg)  # NULL is a value: it reads back
    assert log.route == Route.SMALL_BATCH
    assert [r.region for r in spark.table(f"{schema}.texts").collect()
            if r.id % 3 == 0] == [None] * 10


def test_an_empty_small_batch_writes_no_file(spark, schema):
    table = TableRef(schema, "empty")
    write(spark, table, rows_sql())
    write(spark, table, rows_sql() + " where false")  # insert_overwrite of nothing: no change
    assert rows_of(spark, schema, "empty") == expected(spark, rows_sql())
    write(spark, table, rows_sql() + " where false", full_refresh=True)
    assert rows_of(spark, schema, "empty") == [] and not files_by_partition(spark, schema, "empty")
    unpartitioned = TableRef(schema, "empty_flat")
    cfg = parse_config({"incremental_strategy": "insert_overwrite"})
    write_dataframe(spark, spark.sql(rows_sql() + " where false"), unpartitioned, cfg,
                    log=lambda m: None)
    assert spark.table(f"{schema}.empty_flat").count() == 0
    assert not files_by_partition(spark, schema, "empty_flat")


def crash_then_recover(spark, table, monkeypatch, point, write_it):
    """write_it() crashes at fault point `point`; then the table is recovered as the next
    process would (a dead process holds no lock)."""
    monkeypatch.setenv("SIZED_SPARK_FAULT", point)
    faults.reset()
    with pytest.raises(InjectedCrash):
        write_it()
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    lock.forget_held_locks()
    faults.reset()
    recover_table(spark, table, log=lambda m: None)


@pytest.mark.parametrize("point", crash_points(WRITE_POINTS, ci=WRITE_POINTS_IN_CI))
def test_a_crash_at_any_step_of_a_small_batch_keeps_exactly_the_last_commit(
        spark, schema, monkeypatch, point):
    table = TableRef(schema, "crash")
    write(spark, table, rows_sql())
    second = rows_sql(n=900, days=3, tag="v2", first=50_000)
    before = expected(spark, rows_sql())
    after = sorted(expected(spark, second) + [r for r in before if r[0] % 5 >= 3])

    crash_then_recover(spark, table, monkeypatch, point, lambda: write(spark, table, second))
    assert rows_of(spark, schema, "crash") == (after if point in ("completed", "cleanup")
                                               else before)
    assert write(spark, table, second).route == Route.SMALL_BATCH
    assert rows_of(spark, schema, "crash") == after


# -- inserts (dbt's append): each touched partition's emptiest small file topped up -------

def insert(spark, table, sql, **config):
    """An insert of `sql` into table; returns the phase log."""
    return write(spark, table, sql, **{"incremental_strategy": "append", **config})


def test_a_small_insert_tops_up_the_small_file_of_each_partition_it_touches(spark, schema):
    table = TableRef(schema, "app")
    write(spark, table, rows_sql())                       # 5 partitions, a small file each
    before = {f.path: f for part in files_by_partition(spark, schema, "app").values()
              for f in part}
    batch = rows_sql(n=300, days=3, tag="v2", first=10_000)   # days 0-2 of 5
    log = insert(spark, table, batch)
    assert log.route == Route.SMALL_INSERT and log.result.files_removed == 3, log
    files = files_by_partition(spark, schema, "app")
    assert all(len(f) == 1 for f in files.values()) and len(files) == 5
    after = {f.path for part in files.values() for f in part}
    untouched = {p for p, f in before.items() if f.partition >= "day=2025-01-04"}
    assert untouched <= after and len(after - set(before)) == 3  # the others never rewritten
    want = sorted(expected(spark, rows_sql()) + expected(spark, batch))
    assert rows_of(spark, schema, "app") == want
    directory = local_dir(describe_table(spark, table).location)
    for read in (duckdb_rows, pyarrow_rows, polars_rows):
        assert sorted(read(directory, ["id", "tag"])) == want, read.__name__


def test_a_small_insert_writes_new_files_where_no_file_is_small(spark, schema):
    """A partition whose file is above the small-file limit, and one the table lacks, get a
    new file; the big file is not read."""
    table = TableRef(schema, "big")
    config = {"target_file_size": "400KB", "small_file_limit": "60KB"}
    write(spark, table, rows_sql(n=3000, days=2), **config)    # ~120 KB a partition
    before = {f.path for part in files_by_partition(spark, schema, "big").values() for f in part}
    batch = rows_sql(n=40, days=3, tag="v2", first=10_000)    # days 0, 1 and a new one
    log = insert(spark, table, batch, **config)
    assert log.route == Route.SMALL_INSERT and log.result.files_removed == 0, log
    files = files_by_partition(spark, schema, "big")
    assert before <= {f.path for part in files.values() for f in part}
    assert sorted(len(f) for f in files.values()) == [1, 2, 2]
    assert rows_of(spark, schema, "big") == sorted(expected(spark, rows_sql(n=3000, days=2)) +
                                                   expected(spark, batch))
    # the next insert tops up the new small files, never the big ones
    again = rows_sql(n=30, days=3, tag="v3", first=20_000)
    topped = insert(spark, table, again, **config)
    assert topped.route == Route.SMALL_INSERT and topped.result.files_removed == 3, topped
    files = files_by_partition(spark, schema, "big")
    assert before <= {f.path for part in files.values() for f in part}
    assert sorted(len(f) for f in files.values()) == [1, 2, 2]
    assert rows_of(spark, schema, "big") == sorted(expected(spark, rows_sql(n=3000, days=2)) +
                                                   expected(spark, batch) +
                                                   expected(spark, again))


def test_an_unpartitioned_small_insert_tops_up_the_tables_small_file(spark, schema):
    """Without partition columns the batch is one group: its rows top up the table's small
    file, a null in a not_null column fails first, and a batch without rows writes nothing."""
    table = TableRef(schema, "flat_app")
    flat = {"partition_by": []}
    write(spark, table, rows_sql(n=200), **flat)
    [before] = files_by_partition(spark, schema, "flat_app").values()
    with pytest.raises(ConstraintError, match="tag"):
        insert(spark, table, rows_sql(n=20, first=900).replace(
            "'v1' as tag", "if(id = 905, null, 'v2') as tag"), not_null_columns=["tag"], **flat)
    batch = rows_sql(n=50, tag="v2", first=1000)
    log = insert(spark, table, batch, not_null_columns=["tag"], **flat)
    assert log.route == Route.SMALL_INSERT and log.result.files_removed == 1, log
    [after] = files_by_partition(spark, schema, "flat_app").values()
    assert len(before) == len(after) == 1 and before[0].path != after[0].path
    insert(spark, table, batch + " where false", **flat)
    assert files_by_partition(spark, schema, "flat_app") == {"": after}
    want = sorted(expected(spark, rows_sql(n=200)) + expected(spark, batch))
    assert rows_of(spark, schema, "flat_app") == want
    directory = local_dir(describe_table(spark, table).location)
    for read in (duckdb_rows, pyarrow_rows, polars_rows):
        assert sorted(read(directory, ["id", "tag"])) == want, read.__name__


def test_a_file_in_a_pending_clustering_plan_is_not_topped_up(spark, schema):
    from python_adapter.spark.services.cluster_exec import run_clustering

    table = TableRef(schema, "planned")
    write(spark, table, rows_sql(n=400, days=2))
    run_clustering(spark, table, ["id"], schedule_only=True, log=lambda m: None)
    log = insert(spark, table, rows_sql(n=20, days=2, tag="v2", first=10_000))
    assert log.route == Route.SMALL_INSERT and log.result.files_removed == 0, log  # the plan's
    assert sorted(len(f) for f in files_by_partition(spark, schema, "planned").values()) == [2, 2]
    run_clustering(spark, table, log=lambda m: None)          # the plan still executes
    assert rows_of(spark, schema, "planned") == sorted(
        expected(spark, rows_sql(n=400, days=2)) +
        expected(spark, rows_sql(n=20, days=2, tag="v2", first=10_000)))
    # two small files a partition now: the emptiest (the insert's) is topped up
    sizes = {f.path: f.bytes for part in files_by_partition(spark, schema, "planned").values()
             for f in part}
    emptiest = {min(part, key=lambda f: f.bytes).path
                for part in files_by_partition(spark, schema, "planned").values()}
    insert(spark, table, rows_sql(n=20, days=2, tag="v3", first=20_000))
    after = {f.path for part in files_by_partition(spark, schema, "planned").values()
             for f in part}
    assert set(sizes) - after == emptiest and len(after) == 4


def test_a_small_insert_above_the_target_is_planned(spark, schema):
    """5 KB of random text a row, which Spark estimates at 20 bytes: a partition's file
    topped up by one task comes out above the target, and the insert is planned instead."""
    table = TableRef(schema, "wide_insert")
    config = {"target_file_size": "600KB"}
    wide = ("select id, date_add(date'2025-01-01', cast(id % 2 as int)) as day, "
            "concat_ws('', transform(sequence(1, 80), i -> sha2(cast(id * 100 + i as string), "
            "256))) as payload, 'w' as tag from range({first}, {last})")
    write(spark, table, wide.format(first=0, last=100), **config)
    log = insert(spark, table, wide.format(first=1000, last=1600), **config)
    assert log.route == Route.BIN_PACKED and "above the target" in log, log
    sizes = [f.bytes for part in files_by_partition(spark, schema, "wide_insert").values()
             for f in part]
    assert max(sizes) <= 1.25 * 600_000
    assert rows_of(spark, schema, "wide_insert") == sorted(
        expected(spark, wide.format(first=0, last=100)) +
        expected(spark, wide.format(first=1000, last=1600)))


def test_a_small_insert_checks_its_rows_before_anything_is_written(spark, schema):
    table = TableRef(schema, "checked")
    write(spark, table, rows_sql(n=100, days=2))
    with pytest.raises(ConstraintError, match="tag"):
        insert(spark, table, rows_sql(n=10, days=2, first=500).replace(
            "'v1' as tag", "if(id = 503, null, 'v2') as tag"), not_null_columns=["tag"])
    texts = ("select id, if(id = 7, '', 'r') as region, 't' as tag from range(10)")
    flat = TableRef(schema, "checked_texts")
    write(spark, flat, texts.replace("''", "'s'"), partition_by=["region"])
    with pytest.raises(ConfigError, match="region"):
        insert(spark, flat, texts, partition_by=["region"])
    # no file to top up (small_file_limit 0): no query before the write, checked all the same
    with pytest.raises(ConfigError, match="region"):
        insert(spark, flat, texts, partition_by=["region"], small_file_limit=0)
    assert rows_of(spark, schema, "checked_texts") == sorted(
        (r.id, "t") for r in spark.sql(texts.replace("''", "'s'")).collect())
    assert rows_of(spark, schema, "checked") == expected(spark, rows_sql(n=100, days=2))
    for t in ("checked", "checked_texts"):
        fs = HadoopFS(spark)
        location = fs.qualify(describe_table(spark, TableRef(schema, t)).location)
        assert not Timeline(fs, location).pending()


@pytest.mark.parametrize("point", crash_points(WRITE_POINTS, ci=WRITE_POINTS_IN_CI))
def test_a_crash_at_any_step_of_a_small_upsert_keeps_exactly_the_last_commit(
        spark, schema, monkeypatch, point):
    """A small upsert merged by one task (upsert._as_small_merge) rewrites every file it
    reads: a crash at any step leaves the table as before or as after, never both."""
    table = TableRef(schema, "crash_upsert")
    write(spark, table, rows_sql())
    batch = rows_sql(n=300, days=3, tag="v2").replace("range(0, 300)", "range(0, 600, 2)") \
        + " union all " + rows_sql(n=50, days=3, tag="v2", first=50_000)
    upsert = {"incremental_strategy": "upsert", "unique_key": "id"}
    before = dict(expected(spark, rows_sql()))
    after = sorted({**before, **dict(expected(spark, batch))}.items())
    crash_then_recover(spark, table, monkeypatch, point,
                       lambda: write(spark, table, batch, **upsert))
    assert rows_of(spark, schema, "crash_upsert") == (
        after if point in ("completed", "cleanup") else sorted(before.items()))
    if point not in ("completed", "cleanup"):
        assert write(spark, table, batch, **upsert).route == Route.SMALL_UPSERT
    assert rows_of(spark, schema, "crash_upsert") == after


def test_rows_flagged_deleted_and_an_empty_batch_insert_nothing(spark, schema):
    table = TableRef(schema, "flags")
    sql = rows_sql(n=100, days=2).replace("'v1' as tag", "'v1' as tag, id % 10 = 0 as gone")
    write(spark, table, sql, delete_column="gone")
    files = files_by_partition(spark, schema, "flags")
    log = insert(spark, table, sql.replace("from range(0, 100)", "from range(200, 300)"),
                 delete_column="gone")
    assert log.route == Route.SMALL_INSERT, log
    assert len(rows_of(spark, schema, "flags")) == 180
    insert(spark, table, sql + " where false", delete_column="gone")
    insert(spark, table, sql.replace("from range(0, 100)", "from range(0, 0)"),
           delete_column="gone")
    assert len(rows_of(spark, schema, "flags")) == 180
    assert len(files) == len(files_by_partition(spark, schema, "flags"))


@pytest.mark.parametrize("limit", [None, 0], ids=["top-up", "no-small-file"])
@pytest.mark.parametrize("point", crash_points(WRITE_POINTS, ci=WRITE_POINTS_IN_CI))
def test_a_crash_at_any_step_of_a_small_insert_keeps_exactly_the_last_commit(
        spark, schema, monkeypatch, point, limit):
    """Topping up small files, and (small_file_limit 0) adding files without the query that
    finds the batch's partitions."""
    table = TableRef(schema, "crash_insert")
    config = {} if limit is None else {"small_file_limit": limit}
    write(spark, table, rows_sql())
    batch = rows_sql(n=300, days=3, tag="v2", first=50_000)
    before = expected(spark, rows_sql())
    after = sorted(before + expected(spark, batch))

    crash_then_recover(spark, table, monkeypatch, point,
                       lambda: insert(spark, table, batch, **config))
    assert rows_of(spark, schema, "crash_insert") == (
        after if point in ("completed", "cleanup") else before)
    if point not in ("completed", "cleanup"):
        log = insert(spark, table, batch, **config)
        assert log.route == Route.SMALL_INSERT
        assert (log.result.files_removed == 0) == (limit == 0), log
    assert rows_of(spark, schema, "crash_insert") == after
    files = files_by_partition(spark, schema, "crash_insert")
    assert sorted(len(f) for f in files.values()) == ([1] * 5 if limit is None else [1, 1, 2, 2, 2])
