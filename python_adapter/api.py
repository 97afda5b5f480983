"""What the dbt layer calls: one function per operation, plain values in, records out.

Each takes the Spark session and a TableRef. Errors the user can act on are SizedError
(python_adapter/errors.py); a Spark read that fails on one of the table's files becomes an
UnreadableFileError naming the file and the way out. Anything else is a bug and surfaces
as such.
"""
import functools
from typing import Any, Callable, Dict, List, Optional, Sequence

from pyspark.sql import DataFrame, SparkSession

from python_adapter.core.config import STRATEGIES, SizedConfig, parse_config
from python_adapter.core.config_keys import (MODEL_KEYS, OPERATIONS, operation_args,
                                             unknown_key_error)
from python_adapter.core.notice import Notice
from python_adapter.core.sizes import count_of
from python_adapter.core.layout import (LAYOUT_COLUMNS, Layout, file_columns, file_rows,
                                        layout_limits_text, layout_problems, layout_rows)
from python_adapter.errors import (ConnectionLostError, FilesystemError, SizedError,
                                   UnreadableFileError, UnreadableInstantError)
from python_adapter.io.fs import filesystem_refusal
from python_adapter.io.backend import backend
# the embedded session's local filesystem, which the connection sets up before Spark starts
from python_adapter.io.fast_local_fs import FS_CLASS, embedded_confs
# the driver JVM's class archive: mapped at the start, written by a warm-up after the exit
from python_adapter.io.jvm_startup import class_archive, warm_up_at_exit
from python_adapter.io.spark_logging import quiet_logging_confs
# `dbt debug`'s checks, and Spark Connect sessions bounded by connect_timeout / connect_retries
from python_adapter.core.checks import Check, ConnectBound
from python_adapter.io.checks import (check_extension, check_helper_jar, check_java,
                                      check_metastore, check_warehouse)
from python_adapter.io.connect_retries import (connect_session, is_closed, server_gone,
                                               unanswered_message)
from python_adapter.report import write_report
from python_adapter.spark.catalog.tables import TableRef, drop_cached_relation
from python_adapter.spark.services.clean import CleanResult, clean_table
from python_adapter.spark.services.cluster_exec import ClusterResult, run_clustering, run_compaction
from python_adapter.spark.services.describe import TIMELINE_COLUMNS, read_layout, timeline_rows
from python_adapter.spark.job import WriteResult, job_phases
from python_adapter.spark.locking import unlock_table
from python_adapter.spark.results import (LockState, RecoverResult, ReportResult, RestoreResult,
                                          RollbackResult, UnlockResult)
from python_adapter.spark.write.python_model import PythonModel, model_dataframe, worker_errors
from python_adapter.spark.services.repair import RepairResult, repair_table
from python_adapter.spark.services.restore import restore_table
from python_adapter.spark.services.rollback import recover_table, rollback_last_commit
from python_adapter.spark.session_conf import own_session, session_conf, wide_plan_conf
from python_adapter.spark.table_files import unreadable_file
from python_adapter.spark.services.inline import write_dataframe
from python_adapter.table import settle
# a dbt command's writes settle (statistics, cleanup) while its next model runs
from python_adapter.table.settle import in_background as settle_in_background
from python_adapter.table.settle import wait as wait_for_settling
from python_adapter.table.timeline import (forget_unfinished_in_this_thread,
                                           unfinished_in_this_thread)

__all__ = ["TableRef", "SizedConfig", "parse_config", "unknown_key_error", "MODEL_KEYS",
           "OPERATIONS", "operation_args", "Notice", "write_model", "write_dataframe",
           "write_python", "PythonModel",
           "layout", "layout_rows", "layout_limits_text", "file_rows", "file_columns", "layout_problems",
           "LAYOUT_COLUMNS", "timeline", "TIMELINE_COLUMNS", "rollback", "restore", "clean",
           "CleanResult", "recover", "repair", "unlock",
           "cluster", "compact", "report", "WriteResult", "ClusterResult", "RepairResult", "Layout",
           "RollbackResult", "RestoreResult", "RecoverResult", "UnlockResult", "LockState",
           "ReportResult",
           "STRATEGIES", "FS_CLASS", "embedded_confs", "quiet_logging_confs", "count_of",
           "class_archive", "warm_up_at_exit", "settle_in_background", "wait_for_settling",
           "Check", "ConnectBound", "check_extension", "check_helper_jar", "check_java",
           "check_metastore", "check_warehouse", "connect_session", "is_closed", "server_gone", "unanswered_message"]


# The phase that describes a call's Spark jobs before its own phases start (the function's
# name otherwise: rollback, repair, layout, ...)
_PHASES = {"write_model": "prepare", "write_python": "python model"}


def _names_unreadable_files(fn):
    """The one translation of what fails below into the user's error, instead of a py4j or
    Java trace (docs/runbook.md): a Spark Connect server gone (io/connect_retries.py), a
    filesystem that refused a step (read-only, full, permission: io/fs.filesystem_refusal),
    a table file Spark cannot read, an unreadable timeline file (named with the table).
    Each says what happened to the table (nothing lost; the unfinished commit this run left,
    if any, and what rolls it back) and the way on."""
    phase = _PHASES.get(fn.__name__, fn.__name__)

    @functools.wraps(fn)
    def call(spark, table, *args, **kwargs):
        forget_unfinished_in_this_thread()
        try:
            # every Spark job of the call is described `<schema.table>: <phase>` in the Spark
            # UI; a write and a service name their own phases within (spark/job.job_phases)
            with job_phases(spark, table.name, phase):
                return fn(spark, table, *args, **kwargs)
        except UnreadableInstantError as exc:
            raise exc.of(table.name) from None
        except SizedError:
            raise
        except Exception as exc:
            mine = _users_error(spark, table, exc)
            if mine is None:
                raise  # a bug: surfaces as one
            raise mine from None
    return call


def _users_error(spark: SparkSession, table: TableRef, exc: Exception) -> Optional[SizedError]:
    """_names_unreadable_files' error for `exc`; None when it is none of its kinds."""
    name = table.name
    gone = backend(spark).session.lost_server(exc)
    if gone is not None:
        return ConnectionLostError(f"{gone}. {_left_behind(name, 'once the server is back')}")
    refused = filesystem_refusal(exc)
    if refused is not None:
        where = refused.path or f"the files of {name}"
        return FilesystemError(f"cannot write {where}: {refused.cause}. "
                               f"{_left_behind(name, f'once {refused.remedy}')}")
    path = unreadable_file(exc)
    if path is not None:
        return UnreadableFileError(
            f"cannot read {path}: the file is damaged or is not Parquet, so nothing was "
            f"written. Put back a good copy, or record the table without it: dbt "
            f"run-operation sized_repair --args '{{relation: {name}}}'")
    return None


def _left_behind(name: str, when: str) -> str:
    """What a stopped run left of table `name`: nothing lost, and the unfinished commit it
    requested (if any) and what rolls it back."""
    recover = f"dbt run-operation sized_recover --args '{{relation: {name}}}'"
    unfinished = [ident for _location, ident in unfinished_in_this_thread()]
    if not unfinished:
        return (f"Nothing was lost: {name} holds the rows of its last completed commit; run "
                f"again {when}")
    return (f"Nothing was lost: {name} holds the unfinished commit {', '.join(unfinished)} of "
            f"this run, which the next run rolls back before it writes (or {recover}, "
            f"{when}), so the table holds exactly the rows of its last completed commit; "
            f"until then, readers listing its files may see that commit half published")


@_names_unreadable_files
def write_model(spark: SparkSession, table: TableRef, sql: str, cfg: SizedConfig,
                full_refresh: bool = False, log: Callable[[str], None] = print) -> WriteResult:
    """Run a model's SQL and write its rows into `table` as its config (parse_config of
    the model's dbt config) says; clusters inline when `cluster_every_n_commits` is due."""
    return _write_rows(spark, table, lambda session: session.sql(sql), cfg, full_refresh, log)


@_names_unreadable_files
def write_python(spark: SparkSession, table: TableRef, model: PythonModel, cfg: SizedConfig,
                 full_refresh: bool = False, log: Callable[[str], None] = print) -> WriteResult:
    """Run a dbt Python model's `model(dbt, session)` on the write's session and write the
    DataFrame it returns as write_model writes a SQL model's rows. The model's own failure
    is a PythonModelError with its traceback, raised before anything is written."""
    with worker_errors(model):
        return _write_rows(spark, table, lambda session: model_dataframe(session, model), cfg,
                           full_refresh, log)


def _write_rows(spark: SparkSession, table: TableRef, rows: Callable[[SparkSession], DataFrame],
                cfg: SizedConfig, full_refresh: bool, log: Callable[[str], None]) -> WriteResult:
    """The write of write_model and write_python: `rows` makes the model's DataFrame on the
    write's own session."""
    with own_session(spark, table.schema, table.identifier) as session:
        df = rows(session)
        with session_conf(session, wide_plan_conf(len(df.columns))):
            result = write_dataframe(session, df, table, cfg, full_refresh=full_refresh,
                                     log=log)
    if settle.backgrounded():  # a query meanwhile may cache the relation with the old figures
        settle.submit(f"relation {table.quoted}", lambda: drop_cached_relation(spark, table))
    return result


@_names_unreadable_files
def layout(spark: SparkSession, table: TableRef,
           cluster_by: Optional[Sequence[str]] = None) -> Layout:
    """The table's files: sizes, rows, the ranges of the cluster columns."""
    return read_layout(spark, table, cluster_by)


@_names_unreadable_files
def timeline(spark: SparkSession, table: TableRef) -> List[list]:
    """One row per instant (TIMELINE_COLUMNS), oldest first."""
    return timeline_rows(spark, table)


@_names_unreadable_files
def rollback(spark: SparkSession, table: TableRef,
             log: Callable[[str], None] = print) -> RollbackResult:
    """Restore the table to its state before its last completed commit (the record names
    that commit's instant)."""
    return RollbackResult(table.name, rollback_last_commit(spark, table, log=log))


@_names_unreadable_files
def restore(spark: SparkSession, table: TableRef, instant: str,
            log: Callable[[str], None] = print) -> RestoreResult:
    """Bring the table back to its state right after a retained completed instant, as a
    new instant (the record's `instant`)."""
    return RestoreResult(table.name, instant, restore_table(spark, table, instant, log=log))


@_names_unreadable_files
def clean(spark: SparkSession, table: TableRef, options: Optional[Dict[str, Any]] = None,
          log: Callable[[str], None] = print) -> CleanResult:
    """Delete set-aside files past retention, archive old instants, remove leftovers.
    options: retain_commits, retain_hours (None: the table's)."""
    given = operation_args("sized_clean", options)
    return clean_table(spark, table, given, log=log)


@_names_unreadable_files
def recover(spark: SparkSession, table: TableRef,
            log: Callable[[str], None] = print) -> RecoverResult:
    """Roll back the unfinished instants of a crashed write now (the record lists them)."""
    return RecoverResult(table.name, tuple(recover_table(spark, table, log=log)))


@_names_unreadable_files
def repair(spark: SparkSession, table: TableRef,
           log: Callable[[str], None] = print) -> RepairResult:
    """Record the table as it is after files were deleted or changed outside its commits."""
    return repair_table(spark, table, log=log)


@_names_unreadable_files
def cluster(spark: SparkSession, table: TableRef, cluster_by: Optional[Sequence[str]] = None,
            strategy: Optional[str] = None, schedule_only: bool = False,
            options: Optional[Dict[str, Any]] = None,
            log: Callable[[str], None] = print) -> ClusterResult:
    """Schedule a clustering plan (when cluster_by is given) and execute pending plans.
    options: sized_cluster's other arguments (config_keys.OPERATIONS: target_file_size,
    cluster_small_file_limit, cluster_max_bytes_per_group, cluster_max_groups, lock_timeout;
    None: the default)."""
    given = operation_args("sized_cluster", options)
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
    {column: value} mappings) to limit it to (with where, both must hold). Every key is one
    of sized_compact's arguments (config_keys.OPERATIONS)."""
    given = operation_args("sized_compact", options)
    with own_session(spark, table.schema, table.identifier) as session:
        return run_compaction(session, table, given, partitions, schedule_only=schedule_only,
                              log=log)


def unlock(spark: SparkSession, table: TableRef, force: bool = False) -> UnlockResult:
    """Who holds the table's writer lock; with force, break it."""
    return unlock_table(spark, table, force)


@_names_unreadable_files
def report(spark: SparkSession, table: TableRef, path: str,
           log: Callable[[str], None] = print) -> ReportResult:
    """Write the table's HTML report to `path` (the record's `path`: the qualified path
    written)."""
    return ReportResult(table.name, write_report(spark, table, path, log=log))

