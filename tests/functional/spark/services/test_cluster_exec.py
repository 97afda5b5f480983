"""Clustering on a real local Spark: plans in the timeline, linear / Z-order / Hilbert, rows
unchanged, async plans, and upserts while a plan is pending."""
import datetime
import os

import pytest
from pyspark.sql import functions as F

from python_adapter.core import curves
from python_adapter.core.notice import Notice
from python_adapter.errors import ConfigError
from python_adapter.spark.catalog.tables import TableRef, describe_table
from python_adapter.core.clustering import cell_of, cell_table, grid_cells
from python_adapter.spark.services.curve_keys import cell_column, with_curve_key
from python_adapter.spark.services.cluster_exec import run_clustering, run_compaction
from python_adapter.table.timeline import scheduled_plans
from python_adapter.core.config import parse_config
from python_adapter.io.fs import HadoopFS
from python_adapter.table.timeline import Timeline
from python_adapter.spark.services.describe import read_layout
from python_adapter.spark.session_conf import session_conf
from python_adapter.spark.services.rollback import recover_table, rollback_last_commit
from python_adapter.api import write_dataframe
from python_adapter.table import faults, lock
from tests.functional.helpers import crash_points, files_by_partition
from tests.functional.readers import (duckdb_rows, local_dir, parquet_files, polars_rows,
                                      pyarrow_rows)

QUIET = dict(log=lambda m: None)
COLS = "id, day, user_id, session, city, amount, tag"


def arrivals(spark, batch, rows=1500, days=2):
    """One arrival batch: sessions and users spread over everything, strings, nulls."""
    return spark.sql(f"""
        select cast({batch} * 100000 + i as bigint) as id,
               date'2025-02-01' + cast(i % {days} as int) as day,
               cast(pmod(hash(i, {batch}, 1), 500) as int) as user_id,
               cast(pmod(hash(i, {batch}, 2), 100000) as bigint) as session,
               case when i % 13 = 0 then null
                    else element_at(array('oslo', 'lima', 'pune', 'kyiv'), 1 + i % 4) end as city,
               cast(i % 97 as double) as amount, 'b{batch}' as tag
        from (select explode(sequence(1, {rows})) as i)""")


def all_rows(spark, schema, name):
    return sorted(tuple(r) for r in spark.sql(f"select {COLS} from {schema}.{name}").collect())


def all_rows_of(spark, df):
    return [tuple(r) for r in df.select(*COLS.split(", ")).collect()]


@pytest.fixture
def small_files_table(spark, schema):
    table = TableRef(schema, "arr")
    cfg = parse_config({"partition_by": ["day"], "incremental_strategy": "insert",
                        "target_file_size": 64_000, "small_file_limit": 0,
                        "distribution": "exact"})
    for b in range(4):  # packing off: every batch adds files, like a stream
        write_dataframe(spark, arrivals(spark, b), table, cfg, **QUIET)
    return table


@pytest.mark.parametrize("strategy,cols", [("linear", ["session"]),
                                           ("zorder", ["session", "user_id"]),
                                           ("hilbert", ["session", "city"])])
def test_clustering_keeps_rows_and_sorts_files(spark, schema, small_files_table, strategy, cols):
    before = all_rows(spark, schema, "arr")
    files_before = sum(len(v) for v in files_by_partition(spark, schema, "arr").values())
    result = run_clustering(spark, small_files_table, cols, strategy,
                            target_file_size=40_000, **QUIET)
    assert all_rows(spark, schema, "arr") == before          # the same multiset of rows
    assert result.executed_plans == 1 and result.files_replaced == files_before
    layout = read_layout(spark, small_files_table)
    assert layout.cluster_by == tuple(cols)
    # files of a partition cover disjoint ranges of the first column when sorted linearly
    if strategy == "linear":
        for part, files in files_by_partition(spark, schema, "arr").items():
            ranges = sorted((f.ranges[0][1], f.ranges[0][2]) for f in
                            read_layout(spark, small_files_table).files if f.partition == part)
            assert all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:]))
    fs = HadoopFS(spark)
    tl = Timeline(fs, fs.qualify(describe_table(spark, small_files_table).location))
    done = tl.completed(("replacecommit",))
    assert len(done) == 1 and done[0].extra["strategy"] == strategy


def test_curve_clustering_prunes_both_columns_better_than_linear(spark, schema, small_files_table):
    def files_hit(column, value):
        return sum(1 for f in read_layout(spark, small_files_table, [column]).files
                   if f.ranges[0][1] <= value <= f.ranges[0][2])

    # about 8 files per partition: enough for a curve to split both columns' ranges
    run_clustering(spark, small_files_table, ["session"], "linear", target_file_size=6_000, **QUIET)
    linear_user = sum(files_hit("user_id", v) for v in (17, 250, 480))
    run_clustering(spark, small_files_table, ["session", "user_id"], "zorder",
                   target_file_size=6_000, cluster_small_file_limit=10**9, **QUIET)
    zorder_user = sum(files_hit("user_id", v) for v in (17, 250, 480))
    assert zorder_user < linear_user


@pytest.mark.parametrize("strategy,cols", [("zorder", ["a", "b"]), ("hilbert", ["a", "b", "c"])])
def test_curve_clustering_cuts_files_like_a_grid(spark, schema, strategy, cols):
    """Uniform independent columns clustered into N files: a point query on any one of k
    columns meets (by the files' min/max) at most 1.5 x the N^(1-1/k) files of a balanced
    grid, and every file but one is between 0.5 and 1.25 x the target."""
    table = TableRef(schema, f"grid_{strategy}")
    cfg = parse_config({"incremental_strategy": "insert", "target_file_size": 400_000,
                        "small_file_limit": 0})
    for b in range(3):
        write_dataframe(spark, spark.sql(f"""
            select cast(pmod(hash(i, {b}, 1), 100000) as bigint) as a,
                   cast(pmod(hash(i, {b}, 2), 100000) as bigint) as b,
                   cast(pmod(hash(i, {b}, 3), 100000) as bigint) as c
            from (select explode(sequence(1, 40000)) as i)"""), table, cfg, **QUIET)
    before = sorted(tuple(r) for r in spark.table(f"{schema}.grid_{strategy}").collect())
    target = 24_000
    run_clustering(spark, table, cols, strategy, target_file_size=target,
                   cluster_small_file_limit=10**9, cluster_max_bytes_per_group=10**9, **QUIET)
    assert sorted(tuple(r) for r in spark.table(f"{schema}.grid_{strategy}").collect()) == before
    files = read_layout(spark, table, cols).files
    n = len(files)
    assert n >= 16
    sizes = sorted(f.bytes for f in files)
    assert sum(1 for b in sizes if not 0.5 * target <= b <= 1.25 * target) <= 1, (n, sizes)
    limit = n ** (1 - 1 / len(cols))
    for d, col in enumerate(cols):
        met = [sum(1 for f in files if f.ranges[d][1] <= v <= f.ranges[d][2])
               for v in range(0, 100000, 997)]
        assert sum(met) / len(met) <= 1.5 * limit, (col, sum(met) / len(met), limit, n)


@pytest.mark.parametrize("strategy,path", [("zorder", "a group per task"),
                                           ("hilbert", "a group per task"),
                                           ("zorder", "scan refused"),
                                           ("hilbert", "groups over a task")])
def test_many_partitions_are_clustered_in_one_job_each_cut_like_a_grid(spark, schema, strategy,
                                                                       path, monkeypatch):
    """Three days' groups of several files each go through one Spark job (one log line for
    the three), and still each day's files are its own grid: rows kept per day, sizes in
    0.5-1.25 x target but one a day, a point query on either column meeting at most 1.5 x
    a balanced grid's files within the day. Groups within a task's bytes are each read and
    cut by one task; when Spark would not plan a group's scan as one task, or a group is
    over spark.sql.files.maxPartitionBytes, the job cuts them after a shuffle instead."""
    from python_adapter.spark.services import cluster_exec
    if path == "scan refused":  # a split bound below the files' sizes: each is split
        monkeypatch.setattr(cluster_exec, "_ONE_TASK_SCAN",
                            {**cluster_exec._ONE_TASK_SCAN,
                             "spark.sql.files.maxPartitionBytes": "16k"})
    name = f"days_{strategy}_{path.split()[0]}"
    table = TableRef(schema, name)
    cfg = parse_config({"partition_by": ["day"], "incremental_strategy": "insert",
                        "target_file_size": 200_000, "small_file_limit": 0})
    for b in range(3):
        write_dataframe(spark, spark.sql(f"""
            select cast(pmod(hash(i, {b}, 1), 100000) as bigint) as a,
                   cast(pmod(hash(i, {b}, 2), 100000) as bigint) as b,
                   date'2025-03-01' + cast(i % 3 as int) as day
            from (select explode(sequence(1, 30000)) as i)"""), table, cfg, **QUIET)
    name = f"{schema}.{name}"
    before = sorted(tuple(r) for r in spark.table(name).collect())
    said, target = [], 12_000
    per_task = "64k" if path == "groups over a task" else "128MB"
    with session_conf(spark, {"spark.sql.files.maxPartitionBytes": per_task}):
        run_clustering(spark, table, ["a", "b"], strategy, target_file_size=target,
                       cluster_small_file_limit=10**9, log=said.append)
    assert sorted(tuple(r) for r in spark.table(name).collect()) == before
    job = [m for m in said if m.startswith("clustering groups 1-3 of 3")]
    location = local_dir(HadoopFS(spark).qualify(describe_table(spark, table).location))
    for read in (duckdb_rows, polars_rows, pyarrow_rows):   # plain Parquet, nothing else
        assert read(location, ["a", "b"]) == sorted(((r[0], r[1]) for r in before), key=repr)
    one_task = path != "groups over a task"
    assert len(job) == 1 and job[0].endswith(", a group per task") == one_task, said
    fell_back = [m for m in said if "rewriting with a shuffle instead" in m]
    assert len(fell_back) == (path == "scan refused"), said
    by_day = {}
    for f in read_layout(spark, table, ["a", "b"]).files:
        by_day.setdefault(f.partition, []).append(f)
    assert len(by_day) == 3
    for day, files in by_day.items():
        n = len(files)
        assert n >= 8, (day, n)
        off = [f.bytes for f in files if not 0.5 * target <= f.bytes <= 1.25 * target]
        assert len(off) <= 1, (day, sorted(f.bytes for f in files))
        for d in range(2):
            met = [sum(1 for f in files if f.ranges[d][1] <= v <= f.ranges[d][2])
                   for v in range(0, 100000, 997)]
            assert sum(met) / len(met) <= 1.5 * n ** 0.5, (day, d, sum(met) / len(met), n)


def test_schedule_only_then_execute_later(spark, schema, small_files_table):
    before = all_rows(spark, schema, "arr")
    res = run_clustering(spark, small_files_table, ["session"], schedule_only=True, **QUIET)
    assert res.scheduled > 0 and res.executed_plans == 0
    fs = HadoopFS(spark)
    tl = Timeline(fs, fs.qualify(describe_table(spark, small_files_table).location))
    [plan] = scheduled_plans(tl)
    assert plan.action == "replacecommit" and plan.state == "requested"
    assert {f.file_group for f in plan.removed} and plan.extra["cluster_by"] == "session"
    # a write in between must not roll the waiting plan back
    write_dataframe(spark, arrivals(spark, 9, rows=10), small_files_table,
                    parse_config({"partition_by": ["day"], "incremental_strategy": "insert",
                                  "target_file_size": 64_000}), **QUIET)
    assert len(scheduled_plans(tl)) == 1
    res = run_clustering(spark, small_files_table, **QUIET)  # no cluster_by: run pending plans
    assert res.executed_plans == 1 and not scheduled_plans(tl)
    assert all_rows(spark, schema, "arr") == sorted(before + [tuple(r) for r in arrivals(spark, 9, rows=10).select(*COLS.split(", ")).collect()])


def test_upsert_while_plan_pending_loses_no_update(spark, schema):
    table = TableRef(schema, "pend")
    cfg = parse_config({"partition_by": ["day"], "unique_key": "id", "target_file_size": 64_000,
                        "distribution": "exact"})
    for b in range(3):
        write_dataframe(spark, arrivals(spark, b, rows=800), table, cfg, **QUIET)
    run_clustering(spark, table, ["session"], schedule_only=True, **QUIET)
    fs = HadoopFS(spark)
    tl = Timeline(fs, fs.qualify(describe_table(spark, table).location))
    planned = {f.path for f in scheduled_plans(tl)[0].removed}
    # an update to rows in planned files, and new rows that must not be packed into them
    upd = arrivals(spark, 1, rows=800).where("id % 100 = 7").withColumn("tag", F.lit("updated"))
    write_dataframe(spark, upd.unionByName(arrivals(spark, 7, rows=50)), table, cfg, **QUIET)
    after_upsert = all_rows(spark, schema, "pend")
    res = run_clustering(spark, table, **QUIET)
    assert res.executed_plans == 1
    assert all_rows(spark, schema, "pend") == after_upsert
    tags = {r.tag for r in spark.sql(f"select tag from {schema}.pend where id % 100 = 7 "
                                     f"and id between 100000 and 199999").collect()}
    assert tags == {"updated"}
    assert planned  # the plan really had files


def test_inline_clustering_every_n_commits(spark, schema):
    table = TableRef(schema, "inline")
    cfg = parse_config({"partition_by": ["day"], "incremental_strategy": "insert",
                        "target_file_size": 64_000, "small_file_limit": 0,
                        "cluster_by": ["session"], "cluster_every_n_commits": 2})
    logs = []
    write_dataframe(spark, arrivals(spark, 0, rows=300), table, cfg, log=logs.append)
    assert not any("inline clustering" in m for m in logs)
    write_dataframe(spark, arrivals(spark, 1, rows=300), table, cfg, log=logs.append)
    assert any("inline clustering" in m for m in logs)
    fs = HadoopFS(spark)
    tl = Timeline(fs, fs.qualify(describe_table(spark, table).location))
    assert [i.action for i in tl.completed()] == ["commit", "commit", "replacecommit"]
    assert spark.table(f"{schema}.inline").count() == 600


def test_inline_compaction_every_n_commits_after_clustering_or_compaction(spark, schema):
    """compact_every_n_commits: after N writes since the last clustering or compaction the
    write compacts its table; a clustering resets the count, as it sizes files too."""
    table = TableRef(schema, "inline_cp")
    cfg = parse_config({"partition_by": ["day"], "incremental_strategy": "insert",
                        "target_file_size": 64_000, "small_file_limit": 0,
                        "compact_every_n_commits": 3})
    logs = []
    for b in range(3):
        write_dataframe(spark, arrivals(spark, b, rows=300), table, cfg, log=logs.append)
        assert any("inline compaction: 3 commits" in m for m in logs) == (b == 2), logs
    assert all(len(f) == 1 for f in files_by_partition(spark, schema, "inline_cp").values())
    run_clustering(spark, table, ["session"], **QUIET)
    logs.clear()
    for b in range(3, 5):
        write_dataframe(spark, arrivals(spark, b, rows=300), table, cfg, log=logs.append)
    assert not any("inline compaction" in m for m in logs)
    assert spark.table(f"{schema}.inline_cp").count() == 1500


def _pending_table(spark, schema, name):
    """An upsert table of small files with a clustering plan scheduled over them."""
    table = TableRef(schema, name)
    cfg = parse_config({"partition_by": ["day"], "unique_key": "id", "target_file_size": 64_000,
                        "small_file_limit": 0, "distribution": "exact"})
    for b in range(3):
        write_dataframe(spark, arrivals(spark, b, rows=800), table, cfg, **QUIET)
    run_clustering(spark, table, ["session"], schedule_only=True, **QUIET)
    return table, cfg


def test_a_load_commits_while_clustering_rewrites_and_no_update_is_lost(spark, schema):
    """Clustering holds no writer lock while it rewrites: an upsert commits in the middle of
    it, and the groups whose files that upsert changed are dropped at clustering's commit."""
    table, cfg = _pending_table(spark, schema, "beside")
    # updates to rows of one day only (even ids), and new rows; then a second batch
    updates = arrivals(spark, 1, rows=800).where("id % 100 = 8").withColumn("tag", F.lit("upd"))
    loads = [updates.unionByName(arrivals(spark, 7, rows=50)), arrivals(spark, 8, rows=50)]
    committed = []

    def load_now():  # runs while clustering's groups are staged, before it takes the lock
        for batch in loads:
            committed.append(write_dataframe(spark, batch, table, cfg, **QUIET))
        faults.run_at("clustering_staged", None)

    faults.run_at("clustering_staged", load_now)
    try:
        res = run_clustering(spark, table, **QUIET)
    finally:
        faults.run_at("clustering_staged", None)
    assert len(committed) == 2
    assert res.executed_plans == 1 and res.groups_dropped >= 1 and res.groups >= 1
    assert "dropped (a writer changed their files meanwhile" in res.message
    expected = {r[0]: r for r in all_rows_of(spark, arrivals(spark, 0, rows=800))}
    for b in (1, 2):
        expected.update((r[0], r) for r in all_rows_of(spark, arrivals(spark, b, rows=800)))
    expected.update((r[0], r) for r in all_rows_of(spark, loads[0]))
    expected.update((r[0], r) for r in all_rows_of(spark, loads[1]))
    assert all_rows(spark, schema, "beside") == sorted(expected.values())
    fs = HadoopFS(spark)
    tl = Timeline(fs, fs.qualify(describe_table(spark, table).location))
    # the plan's instant id is from before the loads: it sorts first, completed last
    assert [i.action for i in tl.completed()][-3:] == ["replacecommit", "commit", "commit"]
    assert not scheduled_plans(tl)


def test_a_crash_while_clustering_rewrites_loses_nothing_and_the_plan_runs_later(spark, schema,
                                                                                monkeypatch):
    table, _cfg = _pending_table(spark, schema, "crashcl")
    before = all_rows(spark, schema, "crashcl")
    monkeypatch.setenv("SIZED_SPARK_FAULT", "clustering_staged")
    faults.reset()
    with pytest.raises(faults.InjectedCrash):
        run_clustering(spark, table, **QUIET)
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    lock.forget_held_locks()  # as a dead process: its locks are held by no one
    faults.reset()
    fs = HadoopFS(spark)
    location = fs.qualify(describe_table(spark, table).location)
    assert all_rows(spark, schema, "crashcl") == before
    assert duckdb_rows(local_dir(location), ["id", "session", "tag"]) == \
        sorted(((r[0], r[3], r[6]) for r in before), key=repr)  # nothing staged is visible
    assert len(scheduled_plans(Timeline(fs, location))) == 1  # still waiting
    logs = []
    res = run_clustering(spark, table, log=logs.append)
    assert any("recovering stale writer lock" in m for m in logs), logs  # cluster.lock
    assert res.executed_plans == 1 and res.groups >= 1 and res.groups_dropped == 0
    assert all_rows(spark, schema, "crashcl") == before
    assert not fs.list_dir(f"{Timeline(fs, location).meta_dir}/staging")


@pytest.mark.parametrize("strategy,cols", [
    ("zorder", ["n", "s"]), ("zorder", ["n", "s", "d"]),
    ("hilbert", ["n", "s"]), ("hilbert", ["n", "s", "d"]),      # 5 and 3 levels a lookup
    ("hilbert", ["n", "s", "d", "a"]),                             # 2 levels a lookup
    ("hilbert", ["n", "s", "d", "a", "b", "c", "e"]),             # no tables: 9 bits, arithmetic
    ("zorder", ["t", "s"])])
def test_curve_keys_in_spark_match_the_pure_curves(spark, strategy, cols):
    """Ranks from quantile cut points and the curve, both as Spark expressions, give each row
    the key the pure functions give it (all rows are the sample below 20,480 rows)."""
    df = spark.sql("""
        select cast(pmod(hash(i, 1), 5000) - 2500 as bigint) as n,
               case when i % 17 = 0 then null
                    else concat('k', if(i % 5 = 0, char(31), ''), pmod(hash(i, 2), 3000)) end as s,
               date'2024-01-01' + cast(pmod(hash(i, 3), 900) as int) as d,
               pmod(hash(i, 4), 700) / 7.0 as a, pmod(hash(i, 5), 2000) as b,
               cast(pmod(hash(i, 6), 1500) as double) as c, i % 3 = 0 as e,
               timestamp'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, i % 997) as t
        from (select explode(sequence(1, 4000)) as i)""")
    curve = with_curve_key(df, cols, strategy, 10)
    rows = curve.df.select(*cols, curve.key).collect()
    # the driver's ranks of the sample (here every row) are the ranks Spark gives them
    assert sorted(curve.sample) == sorted(tuple(r) for r in curve.df.select(*curve.ranks).collect())
    bits = curves.key_bits(len(cols), 10)      # 63 // 7 = 9 bits past 6 columns
    levels = {}
    for i, c in enumerate(cols):
        values = sorted(r[i] for r in rows if r[i] is not None)
        levels[c] = curves.search_levels(curves.quantile_boundaries(values, 1 << bits), bits)
    index_of = curves.z_value if strategy == "zorder" else curves.hilbert_index
    for r in rows:
        ranks = [0 if r[i] is None else curves.rank_of(r[i], levels[c]) for i, c in enumerate(cols)]
        assert r[len(cols)] == index_of(ranks, bits), (r, ranks)
    assert len({r[len(cols)] for r in rows}) > 3000    # keys spread, not collapsed


@pytest.mark.parametrize("cols,files,by_table", [(["a", "b"], 50, True),
                                               (["a", "b", "c"], 400, False)])
def test_each_row_lands_in_the_file_its_grid_cell_names(spark, cols, files, by_table):
    """The file number Spark computes per row (by lookup tables where they fit, else a CASE
    per split) is core/clustering.cell_of of the row's ranks."""
    df = spark.sql("""
        select pmod(hash(i, 1), 3000) as a, concat('s', pmod(hash(i, 2), 2000)) as b,
               pmod(hash(i, 3), 900) / 9.0 as c
        from (select explode(sequence(1, 4000)) as i)""")
    curve = with_curve_key(df, cols, "zorder", 10)
    cells = grid_cells(curve.sample, files)
    assert (cell_table(cells, len(cols), curve.bits) is not None) == by_table
    rows = curve.df.select(*curve.ranks, cell_column(cells, curve).alias("file")).collect()
    assert all(r["file"] == cell_of(tuple(r)[:-1], cells) for r in rows)
    assert len({r["file"] for r in rows}) == files


@pytest.mark.parametrize("cols,outputs,stacked", [(["a", "b"], [50, 7, 1, 12], True),
                                                 (["a", "b", "c"], [400, 3], False)])
def test_each_row_of_many_groups_lands_in_the_file_its_groups_cells_name(spark, cols, outputs,
                                                                        stacked):
    """Several groups cut in one expression: each row's file is core/clustering.cell_of of
    its ranks in its own group's cells (numbered after the groups before it), by one stacked
    lookup table for all the groups where every group's cells fit one, else by a CASE of a
    branch per group."""
    from python_adapter.spark.services.cluster_exec import CurveGroups, _group_cells
    from python_adapter.spark.services.curve_keys import group_cell_column
    df = spark.sql(f"""
        select pmod(hash(i, 1), 3000) as a, concat('s', pmod(hash(i, 2), 2000)) as b,
               pmod(hash(i, 3), 900) / 9.0 as c,
               cast(i % {len(outputs)} as bigint) as __sized_group
        from (select explode(sequence(1, 12000)) as i)""")
    ids = [f"g{i}" for i in range(len(outputs))]
    groups = CurveGroups({g: [g] for g in ids}, dict(zip(ids, outputs)), (), None)
    curve, cell = _group_cells(df, groups, (cols, "zorder"))
    points = {}
    for p, (group,) in zip(curve.sample, curve.carried):
        points.setdefault(group, []).append(p)
    cells = [grid_cells(points[i], n, sum(outputs[:i])) for i, n in enumerate(outputs)]
    assert (group_cell_column(cells, curve, "__sized_group") is not None) == stacked
    rows = curve.df.select("__sized_group", *curve.ranks, cell.alias("file")).collect()
    assert all(r["file"] == cell_of(tuple(r)[1:-1], cells[r["__sized_group"]]) for r in rows)
    assert len({r["file"] for r in rows}) == sum(outputs)


def test_cluster_by_a_column_curves_cannot_rank_is_refused(spark):
    df = spark.sql("select array(1, 2) as a, 1 as b")
    with pytest.raises(ConfigError, match="cluster_by: column 'a' is array<int>"):
        with_curve_key(df, ["a", "b"], "hilbert", 10)


def _rows_by_file(directory):
    """{file path: [id in file order]} of every live Parquet file below a table directory."""
    import pyarrow.parquet as pq
    return {p: pq.read_table(p, columns=["id"]).column("id").to_pylist()
            for p in parquet_files(directory)}


def _kept_in_file_order(old_files, new_files):
    """Whether every old file's rows sit in the new files in their old order: consecutive
    rows of a file are consecutive in one new file, or the first of the next one."""
    where = {i: (path, pos) for path, ids in new_files.items() for pos, i in enumerate(ids)}
    for ids in old_files.values():
        for a, b in zip(ids, ids[1:]):
            (fa, pa), (fb, pb) = where[a], where[b]
            if not ((fa == fb and pb == pa + 1) or (fa != fb and pb == 0
                                                    and pa == len(new_files[fa]) - 1)):
                return False
    return True


@pytest.mark.parametrize("target", [64_000, 32_000])   # the table's: a file a day; two a day
def test_compaction_bin_packs_small_files_keeping_rows_in_file_order(spark, schema,
                                                                     small_files_table, target):
    fs = HadoopFS(spark)
    directory = local_dir(fs.qualify(describe_table(spark, small_files_table).location))
    before, old_files = all_rows(spark, schema, "arr"), _rows_by_file(directory)
    bytes_by_part = {p: sum(f.bytes for f in files)
                     for p, files in files_by_partition(spark, schema, "arr").items()}
    lines = []
    options = {} if target == 64_000 else {"target_file_size": target}
    result = run_compaction(spark, small_files_table, options, log=lines.append)
    assert result.service == "compaction" and result.executed_plans == 1
    assert result.files_replaced == len(old_files) and result.groups == 2
    # each group's small files cut into runs, a run a task and a file: no shuffle
    jobs = [m for m in lines if m.startswith("compacting ")]
    assert len(jobs) == 1 and jobs[0].endswith("whole files per task"), lines
    assert all_rows(spark, schema, "arr") == before
    assert duckdb_rows(directory, ["id", "tag"]) == sorted(((r[0], r[6]) for r in before), key=repr)
    after = files_by_partition(spark, schema, "arr")
    assert any(len(files) > 1 for files in after.values()) == (target < 64_000)
    for part, files in after.items():  # at the ideal, at most one file below the target/2
        assert len(files) == -(-bytes_by_part[part] // target), (part, len(files))
        assert sum(f.bytes < target / 2 for f in files) <= 1
    assert _kept_in_file_order(old_files, _rows_by_file(directory))
    tl = Timeline(fs, fs.qualify(describe_table(spark, small_files_table).location))
    done = tl.completed(("replacecommit",))[-1]
    assert done.operation == "compact" and done.extra["strategy"] == "none"
    again = run_compaction(spark, small_files_table, options, **QUIET)
    assert again.executed_plans == 0 and again.scheduled == 0   # nothing left to do


def test_compaction_splits_oversized_files_and_keeps_to_the_partitions_asked(spark, schema):
    table = TableRef(schema, "big")
    cfg = parse_config({"partition_by": ["day"], "incremental_strategy": "insert",
                        "target_file_size": 400_000, "distribution": "exact"})
    write_dataframe(spark, arrivals(spark, 0, rows=30000), table, cfg, **QUIET)
    fs = HadoopFS(spark)
    directory = local_dir(fs.qualify(describe_table(spark, table).location))
    before, old_files = all_rows(spark, schema, "big"), _rows_by_file(directory)
    untouched = {p for p in old_files if "day=2025-02-02" in p}
    size = {p: os.path.getsize(p) for p in old_files}
    assert len(old_files) == 2 and all(s > 1.8 * 64_000 for s in size.values())
    result = run_compaction(spark, table, {"target_file_size": "64KB"},
                            partitions=[datetime.date(2025, 2, 1)], **QUIET)
    assert result.groups == 1 and result.files_replaced == 1
    new_files = _rows_by_file(directory)
    assert untouched < set(new_files)  # the other day's file is where it was
    split = [p for p in new_files if "day=2025-02-01" in p]
    assert len(split) == -(-size[next(iter(set(old_files) - untouched))] // 64_000)
    assert all(os.path.getsize(p) < 1.25 * 64_000 for p in split)
    assert all_rows(spark, schema, "big") == before
    assert _kept_in_file_order(old_files, new_files)


def _big_files_two_in_a_day(spark, schema, name):
    """Three days of one big file each (~120 kB), and a second big file in the first day."""
    table = TableRef(schema, name)
    cfg = parse_config({"partition_by": ["day"], "incremental_strategy": "insert",
                        "target_file_size": "1MB", "small_file_limit": 0,
                        "distribution": "exact"})
    write_dataframe(spark, arrivals(spark, 0, rows=36000, days=3), table, cfg, **QUIET)
    write_dataframe(spark, arrivals(spark, 1, rows=12000, days=1), table, cfg, **QUIET)
    return table


@pytest.mark.parametrize("point", crash_points(
    ["clustering_staged", "publish:2", "published", "completed"],
    ci=["clustering_staged", "publish:2", "completed"]))
def test_a_crash_in_a_compaction_cutting_groups_by_rows_in_their_tasks_loses_nothing(
        spark, schema, point, monkeypatch):
    """A compaction whose groups are each read and cut by one task (no shuffle), killed
    after its files are staged or while they are published: recovery leaves exactly the
    rows, and the next run splits every file into its planned files."""
    table = _big_files_two_in_a_day(spark, schema, "crashcut")
    fs = HadoopFS(spark)
    location = fs.qualify(describe_table(spark, table).location)
    before = all_rows(spark, schema, "crashcut")
    planned = sum(-(-os.path.getsize(p) // 32_000) for p in parquet_files(local_dir(location)))
    expected = sorted(((r[0], r[6]) for r in before), key=repr)
    monkeypatch.setenv("SIZED_SPARK_FAULT", point)
    faults.reset()
    lines = []
    with pytest.raises(faults.InjectedCrash):
        run_compaction(spark, table, {"target_file_size": "32KB"}, log=lines.append)
    assert any(m.endswith("in file order, a group per task") for m in lines), lines
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    lock.forget_held_locks()  # as a dead process: its locks are held by no one
    faults.reset()
    recover_table(spark, table, **QUIET)
    assert duckdb_rows(local_dir(location), ["id", "tag"]) == expected
    run_compaction(spark, table, {"target_file_size": "32KB"}, **QUIET)
    assert all_rows(spark, schema, "crashcut") == before
    for read in (duckdb_rows, polars_rows, pyarrow_rows):   # any engine, the path's files
        assert read(local_dir(location), ["id", "tag"]) == expected, read.__name__
    files = files_by_partition(spark, schema, "crashcut")
    assert sum(len(f) for f in files.values()) == planned > 4   # each file split as planned
    assert all(f.bytes < 1.25 * 32_000 for day in files.values() for f in day)
    assert not scheduled_plans(Timeline(fs, location))


def test_compaction_cuts_groups_packed_into_tasks_by_rows_each_file_from_one_task(
        spark, schema, monkeypatch):
    """Groups cut by rows (here each a big file split apart) are read whole by one task
    each, several groups a task, never two of one day in a task (Spark names a task's files
    after it): four groups, two of them in one day, in two tasks, no shuffle. Every row
    stays, in its file's order, and each file is split into its planned files."""
    from python_adapter.spark.services import cluster_exec
    monkeypatch.setattr(cluster_exec, "TASKS_PER_CORE", 1)   # 2 cores: two tasks
    table = _big_files_two_in_a_day(spark, schema, "split4")
    fs = HadoopFS(spark)
    directory = local_dir(fs.qualify(describe_table(spark, table).location))
    before, old_files = all_rows(spark, schema, "split4"), _rows_by_file(directory)
    size = {p: os.path.getsize(p) for p in old_files}
    assert len(old_files) == 4 and all(s > 1.8 * 32_000 for s in size.values()), size
    lines = []
    result = run_compaction(spark, table, {"target_file_size": "32KB"}, log=lines.append)
    assert result.groups == 4 and result.files_replaced == 4
    jobs = [m for m in lines if m.startswith("compacting ")]
    assert len(jobs) == 1 and jobs[0].endswith("in file order, a group per task"), lines
    assert all_rows(spark, schema, "split4") == before
    assert sorted(duckdb_rows(directory, ["id"])) == sorted((r[0],) for r in before)
    new_files = _rows_by_file(directory)
    assert _kept_in_file_order(old_files, new_files)
    for old, ids in old_files.items():   # each file split into its own planned files
        holding = {p for p, new in new_files.items() if ids[0] in new or ids[-1] in new}
        pieces = [p for p, new in new_files.items() if set(new) <= set(ids)]
        assert holding <= set(pieces) and len(pieces) == -(-size[old] // 32_000), old
        rows = [len(new_files[p]) for p in pieces]
        assert max(rows) - min(rows) <= 1, rows   # equal runs of rows
    # two tasks wrote them all (part-<task>-...), each day's files from one task per group
    tasks = {os.path.basename(p).split("-")[1] for p in new_files}
    assert len(tasks) == 2, sorted(new_files)


def _days_of_small_files_and_one_big(spark, schema):
    """Five days of four small files each, and a sixth day holding one large file."""
    table = TableRef(schema, "mixed")
    cfg = parse_config({"partition_by": ["day"], "incremental_strategy": "insert",
                        "target_file_size": "10MB", "small_file_limit": 0,
                        "distribution": "exact"})
    for b in range(4):
        write_dataframe(spark, arrivals(spark, b, days=5), table, cfg, **QUIET)
    big = arrivals(spark, 9, rows=30000).withColumn("day", F.lit(datetime.date(2025, 2, 6)))
    write_dataframe(spark, big, table, cfg, **QUIET)
    return table


@pytest.mark.parametrize("one_task_scan", ["planned", "refused"])
def test_compaction_reads_each_packed_group_in_one_task_and_splits_big_files_apart(
        spark, schema, monkeypatch, one_task_scan):
    """Groups that become one file are written by tasks that read their files themselves
    (no shuffle), and so is the big file's split, by rows, in a job of its own; when Spark
    would not plan such a scan as one task, both jobs are rewritten through the shuffle
    instead. Either way every row stays, in its file's order, and each day gets its
    planned files."""
    from python_adapter.spark.services import cluster_exec
    if one_task_scan == "refused":  # a split bound Spark cannot pack a file list under
        monkeypatch.setattr(cluster_exec, "_ONE_TASK_SCAN",
                            {**cluster_exec._ONE_TASK_SCAN,
                             "spark.sql.files.maxPartitionBytes": "1"})
    table = _days_of_small_files_and_one_big(spark, schema)
    fs = HadoopFS(spark)
    directory = local_dir(fs.qualify(describe_table(spark, table).location))
    before, old_files = all_rows(spark, schema, "mixed"), _rows_by_file(directory)
    big_size = max(os.path.getsize(p) for p in old_files if "day=2025-02-06" in p)
    assert big_size > 1.8 * 100_000
    lines = []
    result = run_compaction(spark, table, {"target_file_size": "100KB"}, log=lines.append)
    assert result.groups == 6 and result.files_replaced == len(old_files)
    assert all_rows(spark, schema, "mixed") == before
    assert sorted(duckdb_rows(directory, ["id"])) == sorted((r[0],) for r in before)
    new_files = _rows_by_file(directory)
    per_day = {}
    for p in new_files:
        per_day.setdefault(p.split("day=")[1][:10], []).append(p)
    assert {d: len(v) for d, v in per_day.items() if d != "2025-02-06"} == \
        {f"2025-02-0{d}": 1 for d in range(1, 6)}
    assert len(per_day["2025-02-06"]) == -(-big_size // 100_000)
    assert _kept_in_file_order(old_files, new_files)
    fell_back = [m for m in lines if "rewriting with a shuffle instead" in m]
    assert len(fell_back) == (2 if one_task_scan == "refused" else 0), lines
    jobs = [m for m in lines if m.startswith("compacting ")]
    assert [j.rsplit(", ", 1)[1] for j in jobs] == \
        ["whole files per task", "a group per task"], lines


def test_compaction_with_a_partition_the_table_does_not_have_changes_nothing(spark, schema,
                                                                             small_files_table):
    fs = HadoopFS(spark)
    location = fs.qualify(describe_table(spark, small_files_table).location)
    instants = len(Timeline(fs, location).instants())
    with pytest.raises(ConfigError, match="partitions: .*'region'.*not a partition column"):
        run_compaction(spark, small_files_table, {}, partitions=[{"region": "eu"}], **QUIET)
    with pytest.raises(ConfigError, match="max_bytes: must be > 0, got '0KB'"):
        run_compaction(spark, small_files_table, {"max_bytes": "0KB"}, **QUIET)
    assert len(Timeline(fs, location).instants()) == instants


def _killed_compaction(spark, table, monkeypatch, point):
    """Two loads of small files, then a compaction killed at `point` (its locks left as a
    dead process leaves them); returns the rows before, the filesystem and the location."""
    cfg = parse_config({"partition_by": ["day"], "incremental_strategy": "insert",
                        "target_file_size": 64_000, "small_file_limit": 0})
    for b in range(2):
        write_dataframe(spark, arrivals(spark, b, rows=400), table, cfg, **QUIET)
    before = all_rows(spark, table.schema, table.identifier)
    fs = HadoopFS(spark)
    location = fs.qualify(describe_table(spark, table).location)
    monkeypatch.setenv("SIZED_SPARK_FAULT", point)
    faults.reset()
    with pytest.raises(faults.InjectedCrash):
        run_compaction(spark, table, {}, **QUIET)
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    lock.forget_held_locks()  # as a dead process: its locks are held by no one
    faults.reset()
    return before, fs, location


@pytest.mark.parametrize("point", crash_points(
    ["clustering_staged", "requested", "inflight", "publish:2", "published", "completed",
     "cleanup"], ci=["clustering_staged", "inflight", "publish:2", "completed"]))
def test_a_crash_at_any_step_of_compaction_loses_and_duplicates_nothing(spark, schema, point,
                                                                       monkeypatch):
    table = TableRef(schema, "crashcp")
    before, fs, location = _killed_compaction(spark, table, monkeypatch, point)
    # the next writer's recovery (here sized_recover's) finishes or undoes what the crash
    # left: a publish cut short is rolled back; the plan itself waits for the next run
    recover_table(spark, table, **QUIET)
    expected = sorted(((r[0], r[6]) for r in before), key=repr)
    assert duckdb_rows(local_dir(location), ["id", "tag"]) == expected
    run_compaction(spark, table, {}, **QUIET)  # compacts (or finds it done)
    assert all_rows(spark, schema, "crashcp") == before
    assert duckdb_rows(local_dir(location), ["id", "tag"]) == expected
    assert all(len(files) == 1 for files in files_by_partition(spark, schema, "crashcp").values())
    assert not scheduled_plans(Timeline(fs, location))


def test_a_rerun_after_a_killed_compaction_says_it_resumes_the_pending_plan(spark, schema,
                                                                          monkeypatch):
    """The killed run's plan holds the small files, so the rerun plans nothing new: it
    says it resumes that plan (not "nothing to compact") and compacts the table."""
    table = TableRef(schema, "resumed")
    before, fs, location = _killed_compaction(spark, table, monkeypatch, "clustering_staged")
    [plan] = scheduled_plans(Timeline(fs, location))
    logs = []
    result = run_compaction(spark, table, {}, log=logs.append)
    assert any(f"resuming the pending plan of {plan.instant}" in m for m in logs), logs
    assert not any("nothing to compact" in m for m in logs), logs
    assert result.executed_plans == 1 and result.scheduled == 0
    assert all_rows(spark, schema, "resumed") == before
    assert all(len(files) == 1 for files in files_by_partition(spark, schema, "resumed").values())
    assert not scheduled_plans(Timeline(fs, location))


def _days_table(spark, schema, name):
    """Six days of two small files each: compaction plans one group a day."""
    table = TableRef(schema, name)
    cfg = parse_config({"partition_by": ["day"], "incremental_strategy": "insert",
                        "target_file_size": 64_000, "small_file_limit": 0})
    for b in range(2):
        write_dataframe(spark, arrivals(spark, b, rows=600, days=6), table, cfg, **QUIET)
    fs = HadoopFS(spark)
    return table, fs.qualify(describe_table(spark, table).location)


def _id_tags(rows):
    return sorted(((r[0], r[6]) for r in rows), key=repr)


def test_compaction_where_keeps_to_the_partitions_whose_values_it_selects(spark, schema):
    table, location = _days_table(spark, schema, "scoped")
    before = all_rows(spark, schema, "scoped")
    logs = []
    # with partitions, both must hold: of 02-01, 02-05 and 02-06 only the two from 02-04 on
    result = run_compaction(spark, table, {"where": "day >= date'2025-02-04'"},
                            partitions=["2025-02-01", "2025-02-05", "2025-02-06"],
                            log=logs.append)
    compacted = {p for p, f in files_by_partition(spark, schema, "scoped").items() if len(f) == 1}
    assert compacted == {"day=2025-02-05", "day=2025-02-06"} and result.groups == 2
    assert any("2 groups in 2 partitions (of 2 of the 6 partitions in scope)" in m for m in logs)
    # dates compare as dates, not as directory text
    run_compaction(spark, table, {"where": "day < '2025-02-03' or dayofmonth(day) = 4"}, **QUIET)
    compacted = {p for p, f in files_by_partition(spark, schema, "scoped").items() if len(f) == 1}
    assert compacted == {f"day=2025-02-0{d}" for d in (1, 2, 4, 5, 6)}
    assert all_rows(spark, schema, "scoped") == before
    assert duckdb_rows(local_dir(location), ["id", "tag"]) == _id_tags(before)


def test_a_bad_where_writes_nothing_not_even_an_adoption(spark, schema):
    spark.sql(f"CREATE TABLE {schema}.foreign (id bigint, tag string, day date) USING parquet "
              f"PARTITIONED BY (day)")
    arrivals(spark, 0, rows=50).select("id", "tag", "day").write.insertInto(f"{schema}.foreign")
    table = TableRef(schema, "foreign")
    fs = HadoopFS(spark)
    location = fs.qualify(describe_table(spark, table).location)
    for where, message in [("tag = 'b0'", "where: \"tag = 'b0'\" names `tag`, which is not a "
                                          "partition column"),
                           ("day >", "where: 'day >' is not a SQL condition Spark can parse")]:
        with pytest.raises(ConfigError, match=message):
            run_compaction(spark, table, {"where": where}, **QUIET)
    with pytest.raises(ConfigError, match="partial_progress: expected true or false, got 'on'"):
        run_compaction(spark, table, {"partial_progress": "on"}, **QUIET)
    assert not fs.exists(Timeline(fs, location).meta_dir)  # no lock, no adoption


def test_partial_progress_commits_batch_by_batch_and_readers_see_every_row(spark, schema):
    table, location = _days_table(spark, schema, "batched")
    before = all_rows(spark, schema, "batched")
    # scheduled with partial progress: the plan keeps its batch size for whoever runs it
    run_compaction(spark, table, {"partial_progress": True, "partial_progress_groups": 4},
                   schedule_only=True, **QUIET)
    logs = []
    result = run_compaction(spark, table, {}, log=logs.append)
    assert (result.groups, result.commits, result.files_replaced, result.files_written) == \
        (6, 2, 12, 6)
    assert "1 plan, 6 groups in 2 commits, files 12 -> 6, " in result.message
    # a line per batch at dbt's default level (a Notice), naming the table
    lines = [m for m in logs if isinstance(m, Notice) and "compaction batch" in m]
    assert [m.rsplit(" (", 1)[0] for m in lines] == [
        f"{schema}.batched: compaction batch 1/2, 4 groups, 8 files -> 4",
        f"{schema}.batched: compaction batch 2/2, 2 groups, 4 files -> 2"]
    fs = HadoopFS(spark)
    timeline = Timeline(fs, location)
    batches = timeline.completed(("replacecommit",))
    assert [(i.operation, i.extra["strategy"]) for i in batches] == [("compact", "none")] * 2
    assert batches[0].extra["plan"] == batches[1].extra["plan"] < batches[0].instant
    assert [len(i.extra["plan_groups"].split(",")) for i in batches] == [4, 2]
    assert not scheduled_plans(timeline) and not fs.list_dir(f"{timeline.meta_dir}/staging")
    assert all(len(f) == 1 for f in files_by_partition(spark, schema, "batched").values())
    assert all_rows(spark, schema, "batched") == before
    directory = local_dir(location)
    for read in (duckdb_rows, polars_rows, pyarrow_rows):
        assert read(directory, ["id", "tag"]) == _id_tags(before), read.__name__
    # sized_rollback undoes the last batch: its two days have their two files again
    assert rollback_last_commit(spark, table, **QUIET) == batches[1].instant
    files = files_by_partition(spark, schema, "batched")
    assert sorted(len(f) for f in files.values()) == [1, 1, 1, 1, 2, 2]
    assert all_rows(spark, schema, "batched") == before


def _rel_files(directory):
    return {os.path.relpath(p, directory) for p in parquet_files(directory)}


# Three batches of two groups. "requested" is reached by the plan first, then by each batch;
# batch 1 publishes 6 files (4 set aside, 2 moved in), so publish:8 is within batch 2.
@pytest.mark.parametrize("point,batches_kept", crash_points(
    [("clustering_staged:2", 1), ("requested:3", 1), ("inflight:2", 1), ("publish:8", 1),
     ("published:2", 1), ("completed:2", 2), ("cleanup:3", 3)],
    ci=[("inflight:2", 1), ("publish:8", 1), ("completed:2", 2)]))
def test_a_crash_in_a_compaction_with_partial_progress_keeps_its_finished_batches(
        spark, schema, point, batches_kept, monkeypatch):
    table, location = _days_table(spark, schema, "crashpp")
    before = all_rows(spark, schema, "crashpp")
    directory = local_dir(location)
    monkeypatch.setenv("SIZED_SPARK_FAULT", point)
    faults.reset()
    with pytest.raises(faults.InjectedCrash):
        run_compaction(spark, table, {"partial_progress": True, "partial_progress_groups": 2},
                       **QUIET)
    monkeypatch.delenv("SIZED_SPARK_FAULT")
    lock.forget_held_locks()  # as a dead process: its locks are held by no one
    faults.reset()
    recover_table(spark, table, **QUIET)
    fs = HadoopFS(spark)
    timeline = Timeline(fs, location)
    # exactly the files of the last completed commit: the batches finished before the crash
    assert _rel_files(directory) == set(timeline.file_index())
    assert len(timeline.completed(("replacecommit",))) == batches_kept
    assert duckdb_rows(directory, ["id", "tag"]) == _id_tags(before)
    assert all_rows(spark, schema, "crashpp") == before
    logs = []
    run_compaction(spark, table, {}, log=logs.append)  # the rest of the plan, in its batches
    assert batches_kept == 3 or any("were committed by an earlier run" in m for m in logs)
    timeline = Timeline(fs, location)
    groups = [g for i in timeline.completed(("replacecommit",))
              for g in i.extra["plan_groups"].split(",")]
    assert len(groups) == len(set(groups)) == 6   # every group committed once
    assert not scheduled_plans(timeline)
    assert all(len(f) == 1 for f in files_by_partition(spark, schema, "crashpp").values())
    assert all_rows(spark, schema, "crashpp") == before
    assert duckdb_rows(directory, ["id", "tag"]) == _id_tags(before)
    assert _rel_files(directory) == set(timeline.file_index())
