"""The Spark jobs the engine runs are described `<schema.model>: <phase>` in the Spark UI
(spark/job.job_phases over io/session_info.describe_jobs), and a long table service says
how far it got at dbt's default level (spark/job.ServiceProgress), on a real session.

The descriptions are read back from Spark's own status store (what the UI and its REST API
show), after the listener bus has delivered every event."""
import pytest

from python_adapter import api
from python_adapter.core.notice import Notice
from python_adapter.spark import job as job_module
from python_adapter.spark.catalog.tables import TableRef

WRITE_PHASES = {"prepare", "count", "sample", "write", "key check", "tag", "merge", "publish"}


def _jobs(spark):
    """{job id: description or None} of every job the session's status store holds."""
    jsc = spark.sparkContext._jsc.sc()
    jsc.listenerBus().waitUntilEmpty()
    jobs = jsc.statusStore().jobsList(None)
    out = {}
    for i in range(jobs.size()):
        job = jobs.apply(i)
        out[job.jobId()] = job.description().get() if job.description().isDefined() else None
    return out


def _run(spark, fn):
    """The descriptions of the jobs fn ran (it ran some)."""
    before = set(_jobs(spark))
    fn()
    ran = {k: v for k, v in _jobs(spark).items() if k not in before}
    assert ran, "no Spark job ran"
    return list(ran.values())


def _phases(descriptions, name):
    """The phase of each description, which must name the model."""
    assert all(d is not None and d.startswith(f"{name}: ") for d in descriptions), descriptions
    return [d[len(name) + 2:] for d in descriptions]


def _source(spark, batch, days=4, rows=3000):
    return (f"select cast({batch} * 100000 + id as bigint) as id, "
            f"date_add(date'2025-03-01', cast(id % {days} as int)) as day, "
            f"sha2(cast(id * {batch + 1} as string), 256) as payload "
            f"from range(1, {rows} + 1)")


def test_every_job_of_a_write_names_the_model_and_its_phase(spark, schema):
    table, name = TableRef(schema, "described"), f"{schema}.described"
    cfg = api.parse_config({"partition_by": ["day"], "unique_key": "id",
                            "incremental_strategy": "upsert", "target_file_size": "16KB"})
    spark.sparkContext.setJobDescription("the caller's own")
    built = _phases(_run(spark, lambda: api.write_model(
        spark, table, _source(spark, 0), cfg, full_refresh=True, log=lambda m: None)), name)
    # the caller's description is back for its own later jobs, on this thread
    assert spark.sparkContext.getLocalProperty("spark.job.description") == "the caller's own"
    spark.sparkContext.setJobDescription(None)
    assert set(built) <= WRITE_PHASES and {"count", "write"} <= set(built), built
    # an upsert: the key check's thread and the tagging carry the model too
    upserted = _phases(_run(spark, lambda: api.write_model(
        spark, table, _source(spark, 1, rows=2000), cfg, log=lambda m: None)), name)
    assert set(upserted) <= WRITE_PHASES and {"key check", "tag", "write"} <= set(upserted), \
        upserted
    assert spark.sparkContext.getLocalProperty("spark.job.description") is None
    after = _run(spark, lambda: spark.range(3).collect())
    assert after == [None]  # a job of the caller's after the write inherits nothing


def test_a_compaction_prints_a_line_per_batch_and_describes_its_jobs(spark, schema):
    table, name = TableRef(schema, "compacted"), f"{schema}.compacted"
    cfg = api.parse_config({"partition_by": ["day"], "incremental_strategy": "insert",
                            "target_file_size": "64KB", "small_file_limit": 0})
    for batch in range(3):  # three small files a day
        api.write_model(spark, table, _source(spark, batch, days=6, rows=600), cfg,
                        log=lambda m: None)
    logs = []
    described = _run(spark, lambda: api.compact(
        spark, table, {"partial_progress": True, "partial_progress_groups": 4},
        log=logs.append))
    phases = _phases(described, name)
    assert {"compaction groups 1-4 of 6", "compaction groups 5-6 of 6"} <= set(phases), phases
    assert all(p.startswith("compaction ") for p in phases), phases
    notices = [m.rsplit(" (", 1)[0] for m in logs if isinstance(m, Notice)]
    assert notices == [f"{name}: compaction batch 1/2, 4 groups, 12 files -> 4",
                       f"{name}: compaction batch 2/2, 2 groups, 6 files -> 2"], logs


def test_a_long_clustering_says_how_many_groups_it_has_written(spark, schema, monkeypatch):
    table, name = TableRef(schema, "clustered"), f"{schema}.clustered"
    cfg = api.parse_config({"partition_by": ["day"], "incremental_strategy": "insert",
                            "target_file_size": "32KB", "small_file_limit": 0})
    for batch in range(2):
        api.write_model(spark, table, _source(spark, batch, days=3, rows=1500), cfg,
                        log=lambda m: None)
    # every job is "a while" here: a line after each group written but the last
    monkeypatch.setattr(job_module, "PROGRESS_EVERY", 0.0)
    logs = []
    described = _run(spark, lambda: api.cluster(spark, table, ["payload"],
                                                 options={"target_file_size": "32KB"},
                                                 log=logs.append))
    assert any(p.startswith("clustering group") for p in _phases(described, name)), described
    notices = [m.rsplit(" (", 1)[0] for m in logs if isinstance(m, Notice)]
    assert notices and all(m.startswith(f"{name}: clustering ") and m.endswith(
        " of 3 groups written") for m in notices), logs
    assert len(notices) == 2, logs  # not after the last group: the summary follows


def test_the_jobs_of_every_other_operation_name_the_table_and_the_operation(spark, schema,
                                                                            tmp_path):
    """layout, timeline, report, repair, clean, restore, rollback, recover: their jobs (api's
    one decorator) are `<schema.table>: <operation>`; the caller's description is back after."""
    table, name = TableRef(schema, "operated"), f"{schema}.operated"
    cfg = api.parse_config({"partition_by": ["day"], "incremental_strategy": "insert",
                            "target_file_size": "64KB"})
    for batch in range(2):
        api.write_model(spark, table, _source(spark, batch, rows=800), cfg, log=lambda m: None)
    first = api.timeline(spark, table)[0][0]
    quiet = dict(log=lambda m: None)
    operations = [("layout", lambda: api.layout(spark, table, ["id"])),
                  ("timeline", lambda: api.timeline(spark, table)),
                  ("report", lambda: api.report(spark, table, str(tmp_path / "r.html"), **quiet)),
                  ("repair", lambda: api.repair(spark, table, **quiet)),
                  ("clean", lambda: api.clean(spark, table, {}, **quiet)),
                  ("restore", lambda: api.restore(spark, table, first, **quiet)),
                  ("rollback", lambda: api.rollback(spark, table, **quiet)),
                  ("recover", lambda: api.recover(spark, table, **quiet))]
    ran = {}
    spark.sparkContext.setJobDescription("the caller's own")
    for operation, call in operations:
        before = set(_jobs(spark))
        call()
        described = [v for k, v in _jobs(spark).items() if k not in before]
        assert set(described) <= {f"{name}: {operation}"}, (operation, described)
        ran[operation] = len(described)
        assert spark.sparkContext.getLocalProperty("spark.job.description") == \
            "the caller's own"
    # the ones that read files or rows ran Spark jobs, each described
    assert all(ran[op] for op in ("layout", "report", "repair")), ran


@pytest.fixture(autouse=True)
def _no_description_left(spark):
    yield
    spark.sparkContext.setJobDescription(None)
