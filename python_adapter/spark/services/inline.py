"""A model's write, then the table services its config makes due (`cluster_every_n_commits`,
`compact_every_n_commits`) on the table it wrote. Called from above the write path, which
does not import the services."""
from typing import Callable

from pyspark.sql import DataFrame, SparkSession

from python_adapter.core.config import SizedConfig
from python_adapter.core.notice import Notice
from python_adapter.core.sizes import count_of
from python_adapter.errors import LockError
from python_adapter.spark.catalog.tables import TableRef
from python_adapter.spark.job import WriteJob, WriteResult
from python_adapter.spark.services.cluster_exec import run_clustering, run_compaction
from python_adapter.spark.write.writer import write_job, write_locked
from python_adapter.table.timeline import Instant, Timeline, is_clustering


def write_dataframe(spark: SparkSession, df: DataFrame, table: TableRef, cfg: SizedConfig,
                    full_refresh: bool = False, log: Callable[[str], None] = print) -> WriteResult:
    """Write df into `table` as cfg says; then cluster or compact inline when
    `cluster_every_n_commits` or `compact_every_n_commits` is due."""
    with write_job(spark, df, table, cfg, log) as job:
        result, location = write_locked(job, full_refresh)
        services_if_due(job, location)
    return result


def commits_since(timeline: Timeline, service: Callable[[Instant], bool]) -> int:
    """Write commits since the last completed instant `service` picks."""
    n = 0
    for inst in reversed(timeline.completed()):
        if service(inst):
            break
        if inst.action == "commit":
            n += 1
    return n


def _rewritten(instant: Instant) -> bool:
    """A clustering or a compaction: either leaves the files it replaced sized."""
    return instant.action == "replacecommit"


def services_if_due(job: WriteJob, location: str) -> None:
    """Inline clustering when `cluster_every_n_commits` commits were written since the
    last clustering, else compaction when `compact_every_n_commits` were since the last
    clustering or compaction. A table that is locked (a service running) waits for the
    next write: this one is committed."""
    cfg = job.cfg
    if not (cfg.cluster_every_n_commits and cfg.cluster_by) and not cfg.compact_every_n_commits:
        return
    timeline = Timeline(job.fs, location)
    clustering = commits_since(timeline, is_clustering)
    if cfg.cluster_by and cfg.cluster_every_n_commits and \
            clustering >= cfg.cluster_every_n_commits:
        job.progress(f"inline clustering: {count_of(clustering, 'commit')} since the last "
                     f"clustering")
        _inline(job, "clustering", lambda: run_clustering(
            job.spark, job.table, cfg.cluster_by, cfg.cluster_strategy, log=job.progress,
            target_file_size=cfg.target_file_size, lock_timeout=cfg.lock_timeout,
            write_small_file_limit=cfg.small_file_limit or None))
        return
    since = commits_since(timeline, _rewritten)
    if cfg.compact_every_n_commits and since >= cfg.compact_every_n_commits:
        job.progress(f"inline compaction: {count_of(since, 'commit')} since the last compaction")
        _inline(job, "compaction", lambda: run_compaction(
            job.spark, job.table, {"target_file_size": cfg.target_file_size,
                                   "small_file_limit": cfg.small_file_limit or None,
                                   "lock_timeout": cfg.lock_timeout},
            log=job.progress))


def _inline(job, service, run) -> None:
    try:
        run()
    except LockError as exc:  # the write is committed; the service waits for the next one
        job.progress(Notice(f"inline {service} skipped: {exc}"))
