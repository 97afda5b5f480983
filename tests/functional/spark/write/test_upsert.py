"""Upsert and insert with Hudi-style bin-packing on a real local Spark."""
import datetime

import pytest
from pyspark.sql import functions as F

from python_adapter.spark.catalog.tables import TableRef, describe_table
from python_adapter.errors import ConfigError, ConstraintError
from python_adapter.core.config import parse_config
from python_adapter.io.fs import HadoopFS
from python_adapter.table.timeline import Timeline
from python_adapter.table.timeline import learned_bytes_per_row
from python_adapter.spark.write import upsert
from python_adapter.api import write_dataframe
from python_adapter.spark.job import Route
from tests.functional.helpers import files_by_partition, layout, rows_of, rows_of_df

TARGET = 16_000
QUIET = dict(log=lambda m: None)


def cfg(**kw):
    base = {"partition_by": ["day"], "unique_key": "id", "target_file_size": TARGET,
            "small_file_limit": 12_000, "distribution": "exact"}
    base.update(kw)
    return parse_config(base)


def test_upsert_updates_inserts_and_keeps_files_sized(spark, schema, events):
    table = TableRef(schema, "up")
    base = events(days=6)
    write_dataframe(spark, base, table, cfg(), **QUIET)
    before = files_by_partition(spark, schema, "up")
    # updates to 30 rows of day 2 (tag v2), 800 new rows into day 6 and a new day 7
    updates = base.where("day = date'2025-01-02' and id % 20 = 0").withColumn("tag", F.lit("v2"))
    inserts = events(days=2, start="2025-01-06", id_offset=10**9, tag="new")
    batch = updates.unionByName(inserts)
    write_dataframe(spark, batch, table, cfg(), **QUIET)

    expected = {r[0]: r[1] for r in rows_of_df(base)}
    expected.update({r[0]: r[1] for r in rows_of_df(batch)})
    assert rows_of(spark, schema, "up") == sorted(expected.items())
    after = files_by_partition(spark, schema, "up")
    # untouched partitions keep exactly their files
    for day in ("2025-01-01", "2025-01-03", "2025-01-04", "2025-01-05"):
        key = f"day={day}"
        assert [(f.path, f.bytes) for f in after[key]] == [(f.path, f.bytes) for f in before[key]]
    # the updated partition: only files holding updated keys were rewritten
    assert len(after["day=2025-01-02"]) == len(before["day=2025-01-02"])
    # every touched partition: at most one small file, none far above the target
    for key in ("day=2025-01-02", "day=2025-01-06", "day=2025-01-07"):
        sizes = [f.bytes for f in after[key]]
        assert sum(1 for s in sizes if s < 12_000) <= 1, (key, sizes)
        assert max(sizes) <= 1.25 * TARGET


def test_an_upsert_whose_keys_no_file_holds_is_written_as_a_small_insert(spark, schema, events):
    """Keys above every file's recorded range (keys that grow with time) match no row: the
    upsert tops up each touched partition's small file as a small insert does, with no
    tagging; one key a file may hold sends the batch the tagged way, which updates it."""
    table = TableRef(schema, "new_keys")
    big = cfg(target_file_size=200_000, small_file_limit=150_000)  # a batch of ~100 rows is small
    base = events(days=4)
    write_dataframe(spark, base, table, big, **QUIET)
    before = files_by_partition(spark, schema, "new_keys")
    fresh = events(days=2, start="2025-01-04", id_offset=10**9, base=20, tag="new")
    logged = []
    result = write_dataframe(spark, fresh, table, big, log=logged.append)
    assert result.route == Route.NEW_KEYS, logged  # no tagging
    expected = dict(rows_of_df(base) + rows_of_df(fresh))
    assert rows_of(spark, schema, "new_keys") == sorted(expected.items())
    after = files_by_partition(spark, schema, "new_keys")
    for day in ("2025-01-01", "2025-01-02", "2025-01-03"):  # untouched: the same files
        key = f"day={day}"
        assert [(f.path, f.bytes) for f in after[key]] == [(f.path, f.bytes) for f in before[key]]
    for key in ("day=2025-01-04", "day=2025-01-05"):  # one small file at most, topped up
        assert sum(1 for f in after[key] if f.bytes < 150_000) <= 1, after[key]

    # a duplicate key still fails before anything is written, on this path too
    with pytest.raises(ConfigError, match="unique_key"):
        write_dataframe(spark, fresh.unionByName(fresh.limit(1)), table, big, **QUIET)
    assert rows_of(spark, schema, "new_keys") == sorted(expected.items())

    # an existing key among new ones: tagged, and its row replaced
    old = base.where("id % 50 = 1").limit(1).withColumn("tag", F.lit("v2"))
    mixed = old.unionByName(events(days=1, start="2025-01-06", id_offset=2 * 10**9, base=5,
                                   tag="new2"))
    logged.clear()
    result = write_dataframe(spark, mixed, table, big, log=logged.append)
    assert result.route != Route.NEW_KEYS, logged
    expected.update(dict(rows_of_df(mixed)))
    assert rows_of(spark, schema, "new_keys") == sorted(expected.items())


def test_new_keys_all_flagged_deleted_rewrite_no_file(spark, schema, events):
    """Rows flagged deleted whose keys no file holds have nothing to delete: the upsert is
    written as an insert of no row, and with not_null columns counted no file is written
    again as it was."""
    table = TableRef(schema, "new_deletes")
    c = cfg(target_file_size=200_000, small_file_limit=150_000, delete_column="gone",
            not_null_columns="tag")
    base = events(days=2).withColumn("gone", F.lit(False))
    write_dataframe(spark, base, table, c, **QUIET)
    before = files_by_partition(spark, schema, "new_deletes")
    gone = events(days=2, id_offset=10**9, base=5).withColumn("gone", F.lit(True))
    logged = []
    result = write_dataframe(spark, gone, table, c, log=logged.append)
    assert result.route == Route.NEW_KEYS, logged
    assert files_by_partition(spark, schema, "new_deletes") == before
    assert rows_of(spark, schema, "new_deletes") == sorted(rows_of_df(base))


SMALL = dict(target_file_size=400_000, small_file_limit=300_000, delete_column="gone")


@pytest.mark.parametrize("merge", [{}, {"merge_update_columns": ["tag"]},
                                   {"incremental_predicates": ["amount > 10"]},
                                   {"index_scope": "partition"}])
def test_a_small_upsert_of_small_files_is_written_again_by_one_task(spark, schema, events,
                                                                   merge):
    """A small upsert whose files are small together (a snapshot, a tiny incremental model):
    one job writes each touched partition's file again, the rows the batch does not replace
    and then its rows. Updates, deletes, a key that moves partition and new keys land as the
    tagged way lands them (a twin table, where insert_split_size sends the upsert the
    planned way), counted the same, with dbt's merge options; one file per partition."""
    base = events(days=3, base=50).withColumn("gone", F.lit(False))
    day = lambda d: f"day = date'2025-01-0{d}'"  # noqa: E731
    batch = (base.where(f"{day(1)} and id % 10 = 1").withColumn("tag", F.lit("v2"))
             .withColumn("payload", F.lit("changed"))
             .unionByName(base.where(f"{day(2)} and id % 25 = 3").withColumn("gone", F.lit(True)))
             .unionByName(base.where(f"{day(1)} and id % 10 = 2").withColumn(
                 "day", F.lit("2025-01-03").cast("date")).withColumn("tag", F.lit("moved")))
             .unionByName(events(days=2, start="2025-01-03", id_offset=10**9, base=5,
                                 tag="new").withColumn("gone", F.lit(False))))
    results = {}
    for name, extra in (("small", {}), ("planned", {"insert_split_size": 10**6})):
        table, c = TableRef(schema, f"merge_{name}"), cfg(**SMALL, **merge, **extra)
        write_dataframe(spark, base, table, c, **QUIET)
        logged = []
        result = write_dataframe(spark, batch, table, c, log=logged.append)
        assert (result.route == Route.SMALL_UPSERT) == (name == "small"), logged
        done = [m for m in logged if "done: upsert:" in m]
        results[name] = (rows_of(spark, schema, f"merge_{name}", "id, tag, payload, day, gone"),
                         done[0].split("done: upsert: ")[1].split(";")[0])
    assert results["small"] == results["planned"]
    assert "5 deleted" in results["small"][1] or merge.get("incremental_predicates")
    small = files_by_partition(spark, schema, "merge_small")
    assert sorted(small) == [f"day=2025-01-0{d}" for d in range(1, 5)]
    assert all(len(files) == 1 for files in small.values()), small


def test_a_small_upsert_refuses_nulls_and_goes_planned_when_its_files_are_big(
        spark, schema, events):
    """A null in a not_null column of the batch is refused with nothing written; files that
    are not small together send the upsert the planned way."""
    table = TableRef(schema, "merge_checks")
    c = cfg(**SMALL, not_null_columns="tag")
    base = events(days=2, base=50).withColumn("gone", F.lit(False))
    write_dataframe(spark, base, table, c, **QUIET)
    before = files_by_partition(spark, schema, "merge_checks")
    nulls = base.where("id % 10 = 1").withColumn("tag", F.when(F.col("id") % 20 == 1, None)
                                                 .otherwise(F.lit("v2")))
    with pytest.raises(ConstraintError, match="tag"):
        write_dataframe(spark, nulls, table, c, **QUIET)
    assert files_by_partition(spark, schema, "merge_checks") == before
    assert rows_of(spark, schema, "merge_checks") == rows_of_df(base)
    logged = []
    big = events(days=2).withColumn("gone", F.lit(False))  # files near the 16 KB target
    write_dataframe(spark, big, TableRef(schema, "merge_big"), cfg(delete_column="gone"), **QUIET)
    result = write_dataframe(spark, big.where("id % 10 = 1").withColumn("tag", F.lit("v2")),
                    TableRef(schema, "merge_big"), cfg(delete_column="gone"), log=logged.append)
    assert result.route == Route.BIN_PACKED, logged


@pytest.mark.parametrize("how", ["ride_along", "shuffled", "keys_broadcast", "tiny_splits"])
def test_each_planned_file_is_written_once_however_rows_reach_it(spark, schema, events, how):
    """The batch rows of a rewritten file normally ride along to the task that reads the
    file; over the broadcast threshold every row is shuffled instead (the keys broadcast
    when they alone are under it). Either way each
    planned file is one file, even when Spark's split size is far below the files' size
    and the files hold many row groups (a file split over tasks would become two)."""
    name = f"slots_{how}"
    table = TableRef(schema, name)
    settings = {"parquet.block.size": "2048"}  # ~8 row groups per file
    if how == "shuffled":
        settings["spark.sql.autoBroadcastJoinThreshold"] = "-1"
    if how == "keys_broadcast":  # ~900 keys of 16 B under it, the batch's rows over it
        settings["spark.sql.autoBroadcastJoinThreshold"] = "50000"
    if how == "tiny_splits":
        settings.update({"spark.sql.files.maxPartitionBytes": "1024",
                         "spark.sql.files.openCostInBytes": "0"})
    before = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        base = events(days=4)
        write_dataframe(spark, base, table, cfg(), **QUIET)
        updates = base.where("day = date'2025-01-02' and id % 20 = 0").withColumn("tag", F.lit("v2"))
        inserts = events(days=2, start="2025-01-04", id_offset=10**9, tag="new")
        batch = updates.unionByName(inserts)
        logs = []
        result = write_dataframe(spark, batch, table, cfg(), log=logs.append)
    finally:
        for k, v in before.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)
    expected = {r[0]: r[1] for r in rows_of_df(base)}
    expected.update({r[0]: r[1] for r in rows_of_df(batch)})
    assert rows_of(spark, schema, name) == sorted(expected.items())
    assert result.files_removed > 0 and result.files_written == result.files_planned
    shuffled_all = any("every row shuffled" in m for m in logs)
    keys_broadcast = any("the keys broadcast" in m for m in logs)
    writing = [m for m in logs if "writing" in m]
    assert shuffled_all == (how in ("shuffled", "keys_broadcast")), writing
    assert keys_broadcast == (how == "keys_broadcast"), writing


def test_inserts_into_an_empty_file_are_kept(spark, schema, events):
    """An empty model written without counting rows leaves one schema-only file, which has
    no first row for a co-located rewrite to join the new rows to: they are shuffled to it."""
    table = TableRef(schema, "from_empty")
    c = cfg(partition_by=[], unique_key=None, incremental_strategy="insert", distribution="none")
    write_dataframe(spark, events(days=1).limit(0), table, c, **QUIET)
    assert [f.rows for f in layout(spark, schema, "from_empty").files] == [0]
    rows = events(days=1)
    logs = []
    result = write_dataframe(spark, rows, table, c, log=logs.append)
    assert rows_of(spark, schema, "from_empty") == rows_of_df(rows)
    assert result.files_removed == 1
    assert any("no recorded rows" in m for m in logs), [m for m in logs if "writing" in m]


def test_inserts_fill_small_files_before_new_ones(spark, schema, events):
    table = TableRef(schema, "pack")
    small = events(days=1, base=60)      # one small file in day 1
    write_dataframe(spark, small, table, cfg(), **QUIET)
    [old] = files_by_partition(spark, schema, "pack")["day=2025-01-01"]
    assert old.bytes < 12_000
    more = events(days=1, base=60, id_offset=10**9, tag="more")
    write_dataframe(spark, more, table, cfg(), **QUIET)
    files = files_by_partition(spark, schema, "pack")["day=2025-01-01"]
    assert len(files) == 1 and files[0].path != old.path and files[0].bytes > old.bytes
    assert rows_of(spark, schema, "pack") == sorted(rows_of_df(small) + rows_of_df(more))


def test_insert_strategy_appends_without_a_key(spark, schema, events):
    table = TableRef(schema, "ins")
    c = cfg(unique_key=None, incremental_strategy="insert")
    first = events(days=3)
    write_dataframe(spark, first, table, c, **QUIET)
    write_dataframe(spark, first, table, c, **QUIET)  # the same rows again: insert keeps both
    assert rows_of(spark, schema, "ins") == sorted(rows_of_df(first) * 2)


def test_key_moving_partition_leaves_its_old_file(spark, schema, events):
    table = TableRef(schema, "move")
    base = events(days=3)
    write_dataframe(spark, base, table, cfg(), **QUIET)
    moved = base.where("id = 100001").withColumn("day", F.to_date(F.lit("2025-01-03")))
    write_dataframe(spark, moved, table, cfg(), **QUIET)
    got = spark.sql(f"select day from {schema}.move where id = 100001").collect()
    assert [str(r.day) for r in got] == ["2025-01-03"]
    assert spark.table(f"{schema}.move").count() == base.count()


def _interleaved(events):
    """Keys spread over every day, so no file's key range rules out another day's keys."""
    base = events(days=3).withColumn("id", F.col("id") % 100000)
    return base.withColumn("id", F.col("id") * 10 + F.dayofmonth("day"))


def _corrupt_keeping_size(spark, schema, name, table, partitions):
    """Overwrite every file of those partitions with garbage of the same size (a file whose
    size differs from the timeline's record is read, not trusted); returns what to restore."""
    fs = HadoopFS(spark)
    location = fs.qualify(describe_table(spark, table).location)
    layout = files_by_partition(spark, schema, name)
    saved = {}
    for part in partitions:
        for f in layout[part]:
            path = f"{location}/{f.path}"
            saved[path] = fs.read_bytes(path)
            fs.write_bytes(path, b"x" * len(saved[path]), overwrite=True)
    return saved


def _restore(spark, schema, name, saved):
    fs = HadoopFS(spark)
    for path, data in saved.items():
        fs.write_bytes(path, data, overwrite=True)
    spark.catalog.refreshTable(f"{schema}.{name}")


@pytest.mark.parametrize("way", ["planned", "small"])
def test_partition_index_scope_looks_only_in_the_batch_partitions(spark, schema, events, way):
    """Keys spread over every day (so no key range rules a file out): with index_scope
    'partition' the files of the other days are never opened -- they are corrupted here,
    size kept -- and the updates still replace their rows, by the tagging or, files small
    together, by the small upsert's merge."""
    table = TableRef(schema, "scoped")
    sizes = {} if way == "planned" else dict(target_file_size=400_000, small_file_limit=300_000)
    c = cfg(index_scope="partition", **sizes)
    base = _interleaved(events)
    write_dataframe(spark, base, table, c, **QUIET)
    saved = _corrupt_keeping_size(spark, schema, "scoped", table, ("day=2025-01-01", "day=2025-01-02"))
    batch = base.where("day = date'2025-01-03' and id % 7 = 0").withColumn("tag", F.lit("v2"))
    logs = []
    write_dataframe(spark, batch, table, c, log=logs.append)
    assert any("index scope partition" in m if way == "planned" else
               "small upsert" in m and "(1 of 3 files may hold a key" in m for m in logs), logs
    _restore(spark, schema, "scoped", saved)
    expected = {r[0]: r[1] for r in rows_of_df(base)}
    expected.update({r[0]: r[1] for r in rows_of_df(batch)})
    assert rows_of(spark, schema, "scoped") == sorted(expected.items())


@pytest.mark.parametrize("way", ["planned", "small"])
def test_partition_index_scope_matches_a_key_in_its_own_partition_only(spark, schema, way):
    """index_scope partition keys a row by key and partition (Hudi's non-global index): a
    key that moved is written twice, and a later batch with both its partitions updates its
    row in the batch's partition once, keeping the other; a key moving between two
    partitions of the batch is written twice too, whatever else the batch holds."""
    name = f"own_{way}"
    sizes = {"insert_split_size": 10**6} if way == "planned" else {}
    c = cfg(index_scope="partition", target_file_size="1MB", small_file_limit="800KB",
            **sizes)
    day = "date'2025-01-01' + cast(id % 2 as int)"
    write_dataframe(spark, spark.sql(f"select id, {day} as day, 'v1' as tag from range(10)"),
                    TableRef(schema, name), c, **QUIET)
    # key 2 moves to day 2 in a batch without day 1: its old row stays (written twice)
    write_dataframe(spark, spark.sql("select 2L as id, date'2025-01-02' as day, 'moved' as tag"),
                    TableRef(schema, name), c, **QUIET)
    logs = []
    result = write_dataframe(spark, spark.sql("""
        select 2L as id, date'2025-01-02' as day, 'again' as tag union all
        select 4L, date'2025-01-01', 'v2' union all
        select 8L, date'2025-01-02', 'moved'"""), TableRef(schema, name), c, log=logs.append)
    assert (result.route == Route.SMALL_UPSERT) == (way == "small"), logs
    done = next(m for m in logs if "done: upsert:" in m)
    assert "1 inserted" in done and "2 updated" in done, done
    expected = {(i, datetime.date(2025, 1, 1 + i % 2), "v1") for i in range(10)}
    expected -= {(4, datetime.date(2025, 1, 1), "v1")}
    expected |= {(2, datetime.date(2025, 1, 2), "again"), (4, datetime.date(2025, 1, 1), "v2"),
                 (8, datetime.date(2025, 1, 2), "moved")}
    assert rows_of(spark, schema, name, "id, day, tag") == sorted(expected)


@pytest.mark.parametrize("way", ["planned", "small"])
def test_partition_index_scope_takes_a_key_in_two_partitions_of_a_batch(spark, schema, way):
    """index_scope partition: a key is unique within its partition, so a build and a batch
    may bring it to two days (a lookback window replaying both days of a key that moved):
    each is its own row, updated in its own day. Twice in one day is refused, naming the
    day column, before anything is written."""
    name, table = f"two_{way}", TableRef(schema, f"two_{way}")
    sizes = {"insert_split_size": 10**6} if way == "planned" else {}
    c = cfg(index_scope="partition", target_file_size="1MB", small_file_limit="800KB",
            **sizes)
    write_dataframe(spark, spark.sql("""
        select id, date'2025-01-01' + cast(id % 2 as int) as day, 'v1' as tag from range(10)
        union all select 2L, date'2025-01-02', 'moved'"""), table, c, **QUIET)
    logs = []
    result = write_dataframe(spark, spark.sql("""
        select 2L as id, date'2025-01-01' as day, 'a' as tag union all
        select 2L, date'2025-01-02', 'b' union all
        select 3L, date'2025-01-01', 'new'"""), table, c, log=logs.append)
    assert (result.route == Route.SMALL_UPSERT) == (way == "small"), logs
    done = next(m for m in logs if "done: upsert:" in m)
    assert "1 inserted" in done and "2 updated" in done, done
    expected = {(i, datetime.date(2025, 1, 1 + i % 2), "v1") for i in range(10)} - \
        {(2, datetime.date(2025, 1, 1), "v1")}
    expected |= {(2, datetime.date(2025, 1, 1), "a"), (2, datetime.date(2025, 1, 2), "b"),
                 (3, datetime.date(2025, 1, 1), "new")}
    assert rows_of(spark, schema, name, "id, day, tag") == sorted(expected)
    with pytest.raises(ConfigError, match=r"same key more than once in one partition \(day\) "
                                          r"\(e.g. \(id=5, day=2025-01-02\)\)"):
        write_dataframe(spark, spark.sql("""
            select 5L as id, date'2025-01-02' as day, 'x' as tag union all
            select 5L, date'2025-01-02', 'y'"""), table, c, **QUIET)
    assert rows_of(spark, schema, name, "id, day, tag") == sorted(expected)


def test_global_index_looks_elsewhere_only_for_keys_its_partitions_lack(spark, schema, events):
    """index_scope 'global': updates found in their own day and new keys above every file's
    key range; the other days' files are never opened (corrupted here, size kept)."""
    table = TableRef(schema, "globalscope")
    base = _interleaved(events)
    write_dataframe(spark, base, table, cfg(), **QUIET)
    saved = _corrupt_keeping_size(spark, schema, "globalscope", table,
                                  ("day=2025-01-01", "day=2025-01-02"))
    updates = base.where("day = date'2025-01-03' and id % 7 = 0").withColumn("tag", F.lit("v2"))
    new = base.where("day = date'2025-01-03' and id % 5 = 0").withColumn(
        "id", F.col("id") + 10**7).withColumn("tag", F.lit("new"))
    batch = updates.unionByName(new)
    logs = []
    write_dataframe(spark, batch, table, cfg(), log=logs.append)
    assert any("not in their partitions' files: looking in 0 of the other" in m for m in logs), logs
    _restore(spark, schema, "globalscope", saved)
    expected = {r[0]: r[1] for r in rows_of_df(base)}
    expected.update({r[0]: r[1] for r in rows_of_df(batch)})
    assert rows_of(spark, schema, "globalscope") == sorted(expected.items())


def test_global_index_finds_a_key_that_moved_from_an_overlapping_partition(spark, schema, events):
    table = TableRef(schema, "globalmove")
    base = _interleaved(events)
    write_dataframe(spark, base, table, cfg(), **QUIET)
    [moving] = base.where("day = date'2025-01-01'").orderBy("id").limit(1).collect()
    moved = base.where(F.col("id") == moving.id).withColumn("day", F.to_date(F.lit("2025-01-03")))
    update = base.where("day = date'2025-01-03'").orderBy("id").limit(1).withColumn("tag", F.lit("v2"))
    logs = []
    write_dataframe(spark, moved.unionByName(update), table, cfg(), log=logs.append)
    assert any("1 key not in their partitions' files" in m for m in logs), logs
    got = spark.sql(f"select day from {schema}.globalmove where id = {moving.id}").collect()
    assert [str(r.day) for r in got] == ["2025-01-03"]
    assert spark.table(f"{schema}.globalmove").count() == base.count()


def test_late_arrivals_leave_their_partitions_files_unread(spark, schema, events):
    """New keys above every file's range, arriving late into an old day: that day's files
    cannot hold a key of its own rows, so tagging reads only the updated day's files."""
    table = TableRef(schema, "late")
    base = events(days=4)
    write_dataframe(spark, base, table, cfg(), **QUIET)
    before = files_by_partition(spark, schema, "late")
    updates = base.where("day = date'2025-01-02' and id % 20 = 0").withColumn("tag", F.lit("v2"))
    late = events(days=1, start="2025-01-03", base=30, id_offset=10**9, tag="late")
    batch = updates.unionByName(late)
    logs = []
    write_dataframe(spark, batch, table, cfg(), log=logs.append)
    files = sum(len(v) for v in before.values())
    assert any(f"tagging incoming keys against {len(before['day=2025-01-02'])} of {files} files"
               in m for m in logs), logs
    assert any("30 keys not in their partitions' files: looking in 0 of the other" in m
               for m in logs), logs
    expected = {r[0]: r[1] for r in rows_of_df(base)}
    expected.update({r[0]: r[1] for r in rows_of_df(batch)})
    assert rows_of(spark, schema, "late") == sorted(expected.items())


def test_a_key_moving_out_of_a_partition_of_late_arrivals_is_found(spark, schema, events):
    """Day 1 gets late arrivals (so its files are out of the first pass) and loses a key to
    day 3: with index_scope global the second pass finds the key in day 1's file."""
    table = TableRef(schema, "latemove")
    base = events(days=3)
    write_dataframe(spark, base, table, cfg(), **QUIET)
    [moving] = base.where("day = date'2025-01-01'").orderBy("id").limit(1).collect()
    moved = base.where(F.col("id") == moving.id).withColumn("day", F.to_date(F.lit("2025-01-03")))
    late = events(days=1, base=30, id_offset=10**9, tag="late")
    write_dataframe(spark, moved.unionByName(late), table, cfg(), **QUIET)
    got = spark.sql(f"select day from {schema}.latemove where id = {moving.id}").collect()
    assert [str(r.day) for r in got] == ["2025-01-03"]
    assert spark.table(f"{schema}.latemove").count() == base.count() + 30


def test_an_empty_upsert_batch_changes_nothing(spark, schema, events):
    table = TableRef(schema, "up_empty")
    base = events(days=2)
    write_dataframe(spark, base, table, cfg(), **QUIET)
    before = files_by_partition(spark, schema, "up_empty")
    write_dataframe(spark, base.limit(0), table, cfg(), **QUIET)
    assert files_by_partition(spark, schema, "up_empty") == before
    assert rows_of(spark, schema, "up_empty") == rows_of_df(base)


def test_deletes_remove_rows(spark, schema, events):
    table = TableRef(schema, "del")
    base = events(days=3).withColumn("gone", F.lit(False))
    c = cfg(delete_column="gone")
    write_dataframe(spark, base, table, c, **QUIET)
    doomed = base.where("id % 10 = 3").withColumn("gone", F.lit(True))
    write_dataframe(spark, doomed, table, c, **QUIET)
    assert rows_of(spark, schema, "del") == rows_of_df(base.where("id % 10 != 3"))


def test_duplicate_and_null_keys_fail_unless_precombined(spark, schema, events):
    table = TableRef(schema, "dup")
    base = events(days=2)
    write_dataframe(spark, base, table, cfg(), **QUIET)
    twice = base.where("id = 100001").unionByName(
        base.where("id = 100001").withColumn("tag", F.lit("later")))
    with pytest.raises(ConfigError, match="unique_key.*100001.*precombine_column"):
        write_dataframe(spark, twice, table, cfg(), **QUIET)
    with pytest.raises(ConfigError, match="unique_key.*null"):
        write_dataframe(spark, base.limit(3).withColumn("id", F.lit(None).cast("bigint")),
                        table, cfg(), **QUIET)
    assert rows_of(spark, schema, "dup") == rows_of_df(base)
    c = cfg(precombine_column="amount")
    latest = twice.withColumn("amount", F.when(F.col("tag") == "later", 1e9).otherwise(0.0))
    write_dataframe(spark, latest, table, c, **QUIET)
    assert spark.sql(f"select tag from {schema}.dup where id = 100001").first().tag == "later"


@pytest.mark.parametrize("sql,rules", [
    # an integer key, date partitions with a NULL one
    ("select id, if(id % 7 = 0, null, date_add(date'2025-01-01', cast(id % 3 as int))) as d "
     "from range(500)", upsert.KeyRules(["id"], None, (), ["d"])),
    # string keys unique within their partition only (index_scope partition)
    ("select concat('k', id % 200) as k, cast(id % 3 as string) as p from range(600)",
     upsert.KeyRules(["k"], None, ("p",), ("p",))),
    # a decimal and an integer as one key
    ("select cast(id / 4 as decimal(10, 2)) as a, id % 4 as b, "
     "date_add(date'2025-01-01', cast(id % 5 as int)) as d from range(400)",
     upsert.KeyRules(["a", "b"], None, (), ["d"])),
    # a date key, unpartitioned
    ("select date_add(date'2020-01-01', cast(id as int)) as day from range(300)",
     upsert.KeyRules(["day"], "day")),
], ids=["int", "string-within", "decimal-composite", "date"])
@pytest.mark.every_variant  # key types: Spark versions hash and cast them apart
def test_a_small_batchs_keys_checked_in_the_driver_agree_with_spark(spark, sql, rules):
    df = spark.sql(sql)
    found = upsert.keys_in_driver(df, rules, batch_bytes=0)
    assert found is not None
    assert found[1:] == upsert.validate_keys(df, rules)[1:]   # ranges, partitions, rows


def test_the_driver_leaves_other_batches_keys_to_spark(spark, monkeypatch):
    """Floats and timestamps compare otherwise in Python (NaN, -0.0; a local time that
    repeats); a null or repeated key goes to Spark for its error; so do large batches."""
    rules = upsert.KeyRules(["x"], None)
    for sql in ("select cast(id as double) as x from range(10)",
                "select timestamp'2025-01-01 00:00:00' + make_interval(0, 0, 0, 0, id) as x "
                "from range(10)",
                "select if(id = 3, null, id) as x from range(10)",
                "select id % 5 as x from range(10)"):
        assert upsert.keys_in_driver(spark.sql(sql), rules, batch_bytes=0) is None, sql
    ten = spark.sql("select id as x from range(10)")
    assert upsert.keys_in_driver(ten, rules, upsert.DRIVER_KEY_BYTES + 1) is None
    monkeypatch.setattr(upsert, "DRIVER_KEY_ROWS", 9)
    assert upsert.keys_in_driver(ten, rules, batch_bytes=0) is None


def test_untouched_files_are_never_read(spark, schema, events):
    """Corrupt every file of an untouched partition: the upsert must still succeed.
    The garbage keeps each file's size: a file whose size differs from what the timeline
    recorded was changed outside the table's commits, and its keys are read, not trusted."""
    table = TableRef(schema, "noread")
    base = events(days=4)
    write_dataframe(spark, base, table, cfg(), **QUIET)
    saved = _corrupt_keeping_size(spark, schema, "noread", table, ("day=2025-01-01",))
    batch = base.where("day = date'2025-01-03' and id % 50 = 0").withColumn("tag", F.lit("v2"))
    write_dataframe(spark, batch, table, cfg(), **QUIET)
    fs = HadoopFS(spark)
    for path, data in saved.items():
        assert fs.read_bytes(path) == b"x" * len(data)
    _restore(spark, schema, "noread", saved)
    expected = {r[0]: r[1] for r in rows_of_df(base)}
    expected.update({r[0]: r[1] for r in rows_of_df(batch)})
    assert rows_of(spark, schema, "noread") == sorted(expected.items())


def test_bytes_per_row_is_learned_from_earlier_commits(spark, schema, events):
    table = TableRef(schema, "learn")
    write_dataframe(spark, events(days=2), table, cfg(), **QUIET)
    logs = []
    write_dataframe(spark, events(days=1, id_offset=10**9), table, cfg(), log=logs.append)
    assert any("from earlier commits" in m for m in logs)
    assert not any("sampling" in m for m in logs)
    fs = HadoopFS(spark)
    tl = Timeline(fs, fs.qualify(describe_table(spark, table).location))
    assert 20 < learned_bytes_per_row(tl) < 200


def test_rollback_restores_the_state_before_the_last_commit(spark, schema, events):
    from python_adapter.spark.services.rollback import rollback_last_commit
    from python_adapter.spark.services.describe import timeline_rows
    from python_adapter.errors import WriteError

    table = TableRef(schema, "rb")
    base = events(days=3)
    write_dataframe(spark, base, table, cfg(), **QUIET)
    batch = base.where("id % 7 = 0").withColumn("tag", F.lit("v2")).unionByName(
        events(days=1, start="2025-01-09", id_offset=10**9, tag="new"))
    write_dataframe(spark, batch, table, cfg(), **QUIET)
    assert rows_of(spark, schema, "rb") != rows_of_df(base)
    rollback_last_commit(spark, table, **QUIET)
    assert rows_of(spark, schema, "rb") == rows_of_df(base)
    assert spark.sql(f"show partitions {schema}.rb").count() == 3
    rows = timeline_rows(spark, table)
    assert [r[2] for r in rows] == ["commit", "commit", "rollback"]
    assert all(r[3] == "completed" for r in rows)
    # rolling back again undoes the first build: the state before it is an empty table
    rollback_last_commit(spark, table, **QUIET)
    assert rows_of(spark, schema, "rb") == []
    with pytest.raises(WriteError, match="no completed commit"):
        rollback_last_commit(spark, table, **QUIET)


@pytest.mark.parametrize("mode", ["append_new_columns", "sync_all_columns"])
def test_on_schema_change_adds_and_syncs_columns(spark, schema, events, mode):
    table = TableRef(schema, f"osc_{mode[:4]}")
    base = events(days=2)
    write_dataframe(spark, base, table, cfg(on_schema_change=mode), **QUIET)
    batch = events(days=1, id_offset=10**9).drop("amount").withColumn("color", F.lit("red"))
    write_dataframe(spark, batch, table, cfg(on_schema_change=mode), **QUIET)
    cols = spark.table(f"{schema}.{table.identifier}").columns
    assert "color" in cols
    assert ("amount" in cols) == (mode == "append_new_columns")
    got = spark.sql(f"select count(*) c, count(color) cc from {schema}.{table.identifier}").first()
    assert (got.c, got.cc) == (base.count() + batch.count(), batch.count())


def test_on_schema_change_fail_and_ignore(spark, schema, events):
    table = TableRef(schema, "oscf")
    base = events(days=2)
    write_dataframe(spark, base, table, cfg(on_schema_change="fail"), **QUIET)
    batch = events(days=1, id_offset=10**9).withColumn("color", F.lit("red"))
    with pytest.raises(ConfigError, match="on_schema_change.*color"):
        write_dataframe(spark, batch, table, cfg(on_schema_change="fail"), **QUIET)
    write_dataframe(spark, batch, table, cfg(on_schema_change="ignore"), **QUIET)
    assert "color" not in spark.table(f"{schema}.oscf").columns
    assert spark.table(f"{schema}.oscf").count() == base.count() + batch.count()


def _people(spark, rows):
    return spark.createDataFrame(rows, "id bigint, name string, score int, day date")


@pytest.mark.parametrize("how", ["ride_along", "shuffled"])
def test_merge_columns_keep_the_tables_values_of_the_other_columns(spark, schema, how):
    """dbt's merge_exclude_columns / merge_update_columns: a matched row takes the batch's
    values only where allowed, keeps the table's elsewhere (a kept partition column keeps
    the row in its partition); a new row takes every value."""
    import datetime
    d1, d2 = datetime.date(2025, 1, 1), datetime.date(2025, 1, 2)
    first = [(1, "ann", 10, d1), (2, "bob", 20, d1), (3, "cy", 30, d2)]
    batch = [(1, "ANN", 11, d2), (2, "BOB", 21, d1), (4, "dee", 40, d2)]
    limit = {"spark.sql.autoBroadcastJoinThreshold": "-1"} if how == "shuffled" else {}
    for options, want in [
        ({"merge_exclude_columns": ["name"]},
         [(1, "ann", 11, d2), (2, "bob", 21, d1), (3, "cy", 30, d2), (4, "dee", 40, d2)]),
        ({"merge_update_columns": ["score"]},
         [(1, "ann", 11, d1), (2, "bob", 21, d1), (3, "cy", 30, d2), (4, "dee", 40, d2)]),
    ]:
        table = TableRef(schema, f"merge_{how}_{next(iter(options))}")
        write_dataframe(spark, _people(spark, first), table, cfg(), **QUIET)
        for k, v in limit.items():
            spark.conf.set(k, v)
        try:
            write_dataframe(spark, _people(spark, batch), table, cfg(**options), **QUIET)
        finally:
            for k in limit:
                spark.conf.unset(k)
        got = sorted(tuple(r) for r in spark.table(f"{schema}.{table.identifier}")
                     .select("id", "name", "score", "day").collect())
        assert got == want, options


def test_incremental_predicates_match_only_the_rows_they_hold(spark, schema):
    """As dbt's merge: an incoming key whose row in the table fails the predicates is not
    matched, so its old row stays and the incoming row is inserted beside it."""
    import datetime
    d1 = datetime.date(2025, 1, 1)
    table = TableRef(schema, "preds")
    write_dataframe(spark, _people(spark, [(1, "ann", 10, d1), (2, "bob", 20, d1)]), table,
                    cfg(), **QUIET)
    batch = _people(spark, [(1, "ANN", 11, d1), (2, "BOB", 21, d1), (3, "cy", 30, d1)])
    write_dataframe(spark, batch, table,
                    cfg(incremental_predicates=["DBT_INTERNAL_DEST.id != 2"]), **QUIET)
    got = sorted(tuple(r) for r in spark.table(f"{schema}.preds").select("id", "name").collect())
    assert got == [(1, "ANN"), (2, "BOB"), (2, "bob"), (3, "cy")]


def test_bad_merge_options_fail_before_anything_is_written(spark, schema):
    import datetime
    table = TableRef(schema, "badmerge")
    write_dataframe(spark, _people(spark, [(1, "ann", 10, datetime.date(2025, 1, 1))]), table,
                    cfg(), **QUIET)
    with pytest.raises(ConfigError, match="merge_exclude_columns: column.s. nope not found"):
        write_dataframe(spark, _people(spark, [(1, "x", 1, datetime.date(2025, 1, 1))]), table,
                        cfg(merge_exclude_columns=["nope"]), **QUIET)
    with pytest.raises(ConfigError, match="given together with merge_exclude_columns"):
        cfg(merge_update_columns=["name"], merge_exclude_columns=["score"])
    for bad in ["id >", "no_such_column > 1"]:
        with pytest.raises(ConfigError, match=f"incremental_predicates: '{bad}' is not a "
                                              f"condition on the model's columns"):
            write_dataframe(spark, _people(spark, [(1, "x", 1, datetime.date(2025, 1, 1))]),
                            table, cfg(incremental_predicates=[bad]), **QUIET)
    with pytest.raises(ConfigError, match="'microbatch' runs in dbt's batches"):
        write_dataframe(spark, _people(spark, [(1, "x", 1, datetime.date(2025, 1, 1))]), table,
                        cfg(incremental_strategy="microbatch", event_time="day"), **QUIET)
    with pytest.raises(ConfigError, match="'merge' needs a unique_key"):
        parse_config({"incremental_strategy": "merge"})
    assert rows_of(spark, schema, "badmerge", "id, name") == [(1, "ann")]


def _events_at(spark, rows):
    return spark.createDataFrame(rows, "id bigint, ts timestamp, v string, day date")


def test_a_microbatch_batch_replaces_exactly_the_rows_of_its_window(spark, schema):
    """Each batch is a commit that removes the table's rows of its event-time window (also
    those the new data no longer has) and inserts the batch's rows, packed into the
    partitions' small files; rows outside the window are untouched."""
    import datetime
    ts = lambda d, h: datetime.datetime(2025, 1, d, h)  # noqa: E731
    table = TableRef(schema, "mb")
    base = {"partition_by": ["day"], "target_file_size": TARGET, "small_file_limit": 12_000,
            "incremental_strategy": "microbatch", "event_time": "ts"}
    day = lambda d: datetime.date(2025, 1, d)  # noqa: E731
    first = [(1, ts(1, 1), "a", day(1)), (2, ts(1, 23), "b", day(1)), (3, ts(2, 1), "c", day(2)),
             (4, ts(2, 5), "d", day(2)), (5, ts(3, 2), "e", day(3))]
    write_dataframe(spark, _events_at(spark, first), table, parse_config(base), **QUIET)
    # day 2 again: row 4 is gone from the source, row 3 changed, row 6 is new
    again = [(3, ts(2, 1), "C", day(2)), (6, ts(2, 9), "f", day(2))]
    window = {"event_time_start": "2025-01-02 00:00:00+00:00",
              "event_time_end": "2025-01-03 00:00:00+00:00"}
    result = write_dataframe(spark, _events_at(spark, again), table,
                             parse_config({**base, **window}), **QUIET)
    got = sorted(tuple(r) for r in spark.table(f"{schema}.mb").select("id", "v").collect())
    assert got == [(1, "a"), (2, "b"), (3, "C"), (5, "e"), (6, "f")]
    assert (result.changes.inserted, result.changes.deleted) == (2, 2)
    assert [len(f) for f in files_by_partition(spark, schema, "mb").values()] == [1, 1, 1]


def test_a_rerun_of_whole_days_writes_them_as_the_first_build_did(spark, schema):
    """Issue 49: rerunning a day's microbatch batch deletes every row of its files and
    inserts the day again; it must leave the day as the first build laid it out (the same
    number of files, at most one below the small-file limit), not the old files' small one
    topped up plus new files (5 files, two small, where the first build wrote 4). So must an
    insert_overwrite of the day."""
    table = TableRef(schema, "mb_rerun")
    base = {"partition_by": ["day"], "target_file_size": "256KB",
            "incremental_strategy": "microbatch", "event_time": "ts"}
    rows = spark.range(24_000).selectExpr(
        "id", "timestamp'2025-01-01 00:00:00' + make_interval(0, 0, 0, cast(id % 2 as int), "
        "cast(id % 24 as int)) as ts", "sha2(cast(id as string), 256) as v",
        "date_add(date'2025-01-01', cast(id % 2 as int)) as day")
    write_dataframe(spark, rows, table, parse_config(base), **QUIET)
    first = {p: sorted(f.bytes for f in fs)
             for p, fs in files_by_partition(spark, schema, "mb_rerun").items()}
    window = {"event_time_start": "2025-01-01 00:00:00+00:00",
              "event_time_end": "2025-01-02 00:00:00+00:00"}
    write_dataframe(spark, rows.where("day = date'2025-01-01'"), table,
                    parse_config({**base, **window}), **QUIET)
    sizes = [f.bytes for f in files_by_partition(spark, schema, "mb_rerun")["day=2025-01-01"]]
    small = parse_config(base).small_file_limit
    assert spark.table(f"{schema}.mb_rerun").count() == 24_000
    assert len(sizes) == len(first["day=2025-01-01"]) > 1, (first, sizes)
    assert sum(b < small for b in sizes) <= 1, (sizes, small)
    overwrite = {**base, "incremental_strategy": "insert_overwrite"}
    write_dataframe(spark, rows.where("day = date'2025-01-02'"), table, parse_config(overwrite),
                    **QUIET)
    sizes = [f.bytes for f in files_by_partition(spark, schema, "mb_rerun")["day=2025-01-02"]]
    assert len(sizes) == len(first["day=2025-01-02"]) and sum(b < small for b in sizes) <= 1


# (Spark type, SQL of a value from id and version v): the wide table's columns cycle through
WIDE_TYPES = [("int", "cast(id * {i} + v as int)"), ("bigint", "id * 1000 + {i} + v"),
              ("double", "(id + v) / {i}.0"), ("string", "concat('c{i}-', id, '-v', v)"),
              ("date", "date_add(date'2024-01-01', cast(id + {i} + v as int))"),
              ("decimal(18,2)", "cast((id * {i} + v) / 7 as decimal(18,2))"),
              ("boolean", "(id + {i} + v) % 3 = 0")]


def _wide_rows(spark, ids, version, columns):
    """Rows of a wide table (ids: ranges): id, columns - 2 columns of mixed types (each value from the id
    and the version), day (one of 4, by id)."""
    exprs = [f"cast({WIDE_TYPES[i % len(WIDE_TYPES)][1].format(i=i)} as "
             f"{WIDE_TYPES[i % len(WIDE_TYPES)][0]}) as c{i}" for i in range(1, columns - 1)]
    rows = None
    for r in ids:  # ranges: a SQL plan, as a dbt model's, that Spark can size
        part = spark.range(r.start, r.stop, r.step).selectExpr("id", f"{version} as v")
        rows = part if rows is None else rows.unionByName(part)
    return rows.selectExpr("id", *exprs, "date_add(date'2025-01-01', cast(id % 4 as int)) as day")


WIDE_WAYS = {"small": {}, "planned": {"insert_split_size": 10**6},
             "small_kept": {"merge_update_columns": ["c1"]},
             "planned_kept": {"merge_update_columns": ["c1"], "insert_split_size": 10**6}}


@pytest.mark.parametrize("way", list(WIDE_WAYS))
def test_an_upsert_into_a_wide_table_gives_exactly_the_right_rows(spark, schema, way):
    """Issue 46: a table of 300 columns of mixed types. An upsert of updates (every column
    changed) and inserts, by the small upsert's merge and by the planned way, leaves each
    key's row as the batch or the table had it, every column (with merge_update_columns a
    matched row takes only those from the batch), as Spark and DuckDB read it."""
    from tests.functional.readers import duckdb_rows, local_dir

    columns = 300
    table = TableRef(schema, f"wide_{way}")
    c = cfg(target_file_size=64_000_000, small_file_limit=48_000_000, **WIDE_WAYS[way])
    base = _wide_rows(spark, [range(120)], 1, columns)
    batch = _wide_rows(spark, [range(0, 120, 7), range(500, 530)], 2, columns)
    write_dataframe(spark, base, table, c, **QUIET)
    logged = []
    result = write_dataframe(spark, batch, table, c, log=logged.append)
    assert (result.route == Route.SMALL_UPSERT) == way.startswith("small"), "\n".join(logged)
    assert (result.changes.inserted, result.changes.updated) == (30, 18)

    names = base.columns
    expected = {r["id"]: tuple(r) for r in base.collect()}
    taken = {names.index(n) for n in (c.merge_update_columns or names)}
    for r in batch.collect():
        old = expected.get(r["id"], r)
        expected[r["id"]] = tuple(r[i] if i in taken else old[i] for i in range(len(names)))
    want = sorted(expected.values())
    got = sorted(tuple(r) for r in spark.table(f"{schema}.{table.identifier}")
                 .select(*names).collect())
    assert got == want
    location = local_dir(describe_table(spark, table).location)
    day = names.index("day")  # DuckDB reads the partition value as its directory's text
    as_text = [tuple(str(x) if i == day else x for i, x in enumerate(r)) for r in want]
    assert duckdb_rows(location, names) == sorted(as_text, key=repr)


def test_a_cached_batch_is_sized_by_its_cache_once_filled(spark):
    """Spark estimates an equi-join as the product of its sides (here 6 GB for 10,000
    rows); the shuffles of the tagging are sized from the batch's size, so once the key
    check has filled the cache, the cache's measured size is taken."""
    batch = spark.range(10_000).join(spark.range(10_000), "id")
    estimate = upsert.cached_size(batch)
    assert estimate > 1 << 30
    assert upsert._measured_size(batch, estimate) == estimate  # not cached: the estimate
    cached = batch.persist()
    try:
        assert upsert._measured_size(cached, estimate) == estimate  # not filled yet
        assert cached.count() == 10_000
        assert upsert._measured_size(cached, estimate) < 1 << 20
    finally:
        cached.unpersist()
