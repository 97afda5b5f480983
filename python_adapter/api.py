"""What the dbt layer calls: one function per operation, plain values in, records out.

Each takes the Spark session and a TableRef. Errors the user can act on are SizedError
(python_adapter/errors.py); a Spark read that fails on one of the table's files becomes an
UnreadableFileError naming the file and the way out. Anything else is a bug and surfaces
as such.
"""
import functools
from typing import Any, Callable, Dict, List, Optional, Sequence

from pyspark.sql import SparkSession

from python_adapter.core.config import STRATEGIES, SizedConfig, parse_config
from python_adapter.core.config_keys import unknown_key_error
from python_adapter.core.notice import Notice
from python_adapter.core.layout import (LAYOUT_COLUMNS, Layout, file_columns, file_rows,
                                        layout_limits_text, layout_problems, layout_rows)
from python_adapter.errors import UnreadableFileError
# the embedded session's local filesystem, which the connection sets up before Spark starts
from python_adapter.io.fast_local_fs import FS_CLASS, embedded_confs
from python_adapter.io.jvm_startup import class_archive_confs
from python_adapter.io.spark_logging import quiet_logging_confs
from python_adapter.report import write_report
from python_adapter.spark.catalog import TableRef, drop_cached_relation
from python_adapter.spark.clean import CleanResult, clean_table
from python_adapter.spark.cluster_exec import ClusterResult, run_clustering, run_compaction
from python_adapter.spark.describe import TIMELINE_COLUMNS, read_layout, timeline_rows
from python_adapter.spark.job import WriteResult
from python_adapter.spark.locking import unlock_table
from python_adapter.spark.repair import RepairResult, repair_table
from python_adapter.spark.restore import restore_table
from python_adapter.spark.rollback import recover_table, rollback_last_commit
from python_adapter.spark.session_conf import own_session, session_conf, wide_plan_conf
from python_adapter.spark.table_files import unreadable_file
from python_adapter.spark.writer import write_dataframe
from python_adapter.table import settle
# a dbt command's writes settle (statistics, cleanup) while its next model runs
from python_adapter.table.settle import in_background as settle_in_background
from python_adapter.table.settle import wait as wait_for_settling

__all__ = ["TableRef", "SizedConfig", "parse_config", "unknown_key_error", "Notice", "write_model", "write_dataframe",
           "layout", "layout_rows", "layout_limits_text", "file_rows", "file_columns", "layout_problems",
           "LAYOUT_COLUMNS", "timeline", "TIMELINE_COLUMNS", "rollback", "restore", "clean",
           "CleanResult", "recover", "repair", "unlock",
           "cluster", "compact", "report", "WriteResult", "ClusterResult", "RepairResult", "Layout",
           "STRATEGIES", "FS_CLASS", "embedded_confs", "quiet_logging_confs",
           "class_archive_confs", "settle_in_background", "wait_for_settling"]


def _names_unreadable_files(fn):
    """A Spark read that failed on one of the table's files is reported as that file, with
    the way out, instead of a py4j trace."""
    @functools.wraps(fn)
    def call(spark, table, *args, **kwargs):
        try:
            return fn(spark, table, *args, **kwargs)
        except Exception as exc:
            path = unreadable_file(exc)
            if path is None:
                raise
            raise UnreadableFileError(
                f"cannot read {path}: the file is damaged or is not Parquet, so nothing was "
                f"written. Put back a good copy, or record the table without it: dbt "
                f"run-operation sized_repair --args '{{relation: {table.schema}."
                f"{table.identifier}}}'") from None
    return call


@_names_unreadable_files
def write_model(spark: SparkSession, table: TableRef, sql: str, cfg: SizedConfig,
                full_refresh: bool = False, log: Callable[[str], None] = print) -> WriteResult:
    """Run a model's SQL and write its rows into `table` as its config (parse_config of
    the model's dbt config) says; clusters inline when `cluster_every_n_commits` is due."""
    with own_session(spark, table.schema, table.identifier) as session:
        df = session.sql(sql)
        with session_conf(session, wide_plan_conf(len(df.columns))):
            result = write_dataframe(session, df, table, cfg, full_refresh=full_refresh,
                                     log=log)
    if settle.backgrounded():  # a query meanwhile may cache the relation with the old figures
        settle.submit(f"relation {table.quoted}", lambda: drop_cached_relation(spark, table))
    return result


def layout(spark: SparkSession, table: TableRef,
           cluster_by: Optional[Sequence[str]] = None) -> Layout:
    """The table's files: sizes, rows, the ranges of the cluster columns."""
    return read_layout(spark, table, cluster_by)


def timeline(spark: SparkSession, table: TableRef) -> List[list]:
    """One row per instant (TIMELINE_COLUMNS), oldest first."""
    return timeline_rows(spark, table)


def rollback(spark: SparkSession, table: TableRef, log: Callable[[str], None] = print) -> str:
    """Restore the table to its state before its last completed commit; returns that
    commit's instant."""
    return rollback_last_commit(spark, table, log=log)


def restore(spark: SparkSession, table: TableRef, instant: str,
            log: Callable[[str], None] = print) -> str:
    """Bring the table back to its state right after a retained completed instant, as a
    new instant; returns that instant."""
    return restore_table(spark, table, instant, log=log)


def clean(spark: SparkSession, table: TableRef, options: Optional[Dict[str, Any]] = None,
          log: Callable[[str], None] = print) -> CleanResult:
    """Delete set-aside files past retention, archive old instants, remove leftovers.
    options: retain_commits, retain_hours (None: the table's)."""
    given = {k: v for k, v in (options or {}).items() if v is not None}
    return clean_table(spark, table, given, log=log)


def recover(spark: SparkSession, table: TableRef, log: Callable[[str], None] = print) -> list:
    """Roll back the unfinished instants of a crashed write now; returns them."""
    return recover_table(spark, table, log=log)


@_names_unreadable_files
def repair(spark: SparkSession, table: TableRef,
           log: Callable[[str], None] = print) -> RepairResult:
    """Record the table as it is after files were deleted or changed outside its commits."""
    return repair_table(spark, table, log=log)


# The operation's argument names (as dbt users write them) -> cluster_options'.
_CLUSTER_OPTIONS = {"target_file_size": "target_file_size",
                    "cluster_small_file_limit": "small_file_limit",
                    "cluster_max_bytes_per_group": "max_bytes_per_group",
                    "cluster_max_groups": "max_groups"}


@_names_unreadable_files
def cluster(spark: SparkSession, table: TableRef, cluster_by: Optional[Sequence[str]] = None,
            strategy: Optional[str] = None, schedule_only: bool = False,
            options: Optional[Dict[str, Any]] = None,
            log: Callable[[str], None] = print) -> ClusterResult:
    """Schedule a clustering plan (when cluster_by is given) and execute pending plans.
    options: target_file_size, cluster_small_file_limit, cluster_max_bytes_per_group,
    cluster_max_groups (None: the default)."""
    given = {_CLUSTER_OPTIONS.get(k, k): v for k, v in (options or {}).items() if v is not None}
    with own_session(spark, table.schema, table.identifier) as session:
        return run_clustering(session, table, cluster_by, strategy or "linear",
                              schedule_only=schedule_only, log=log, **given)


@_names_unreadable_files
def compact(spark: SparkSession, table: TableRef, options: Optional[Dict[str, Any]] = None,
            partitions: Optional[Sequence[Any]] = None, schedule_only: bool = False,
            log: Callable[[str], None] = print) -> ClusterResult:
    """Bin-pack each partition's small files into files of the target size and split
    oversized ones, rows in file order (no sort), then execute every pending plan.
    options: target_file_size, small_file_limit, max_groups, max_bytes, where (a SQL
    condition on the partition columns), partial_progress (commit every
    partial_progress_groups groups, default 10) (None: the default); partitions: values (or
    {column: value} mappings) to limit it to (with where, both must hold)."""
    given = {k: v for k, v in (options or {}).items() if v is not None}
    with own_session(spark, table.schema, table.identifier) as session:
        return run_compaction(session, table, given, partitions, schedule_only=schedule_only,
                              log=log)


def unlock(spark: SparkSession, table: TableRef, force: bool = False) -> str:
    """Who holds the table's writer lock; with force, break it."""
    return unlock_table(spark, table, force)


def report(spark: SparkSession, table: TableRef, path: str,
           log: Callable[[str], None] = print) -> str:
    """Write the table's HTML report to `path`; returns the qualified path written."""
    return write_report(spark, table, path, log=log)
