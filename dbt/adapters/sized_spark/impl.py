"""SizedSparkAdapter: dbt-spark plus the `@available` methods the sized macros call.

Thin by design: each method turns dbt objects into plain values, hands them to
`python_adapter.api`, and returns plain values or agate tables to Jinja. The engine's
errors (`python_adapter.errors.SizedError`) become DbtRuntimeError so the model fails with
the engine's message; anything else is a bug and is raised as it is.
"""
import contextlib
import dataclasses
import functools
from typing import Any, Dict, List, Optional, Type, cast

import agate
from dbt.adapters.base import available
from dbt.adapters.contracts.connection import AdapterResponse
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.impl import SparkAdapter, SparkConfig
from dbt_common.contracts.constraints import ConstraintType
from dbt_common.exceptions import CompilationError, DbtRuntimeError

from dbt.adapters.sized_spark.connections import SizedSparkConnectionManager, settled
from python_adapter import api
from python_adapter.errors import SchemaChangeError, SizedError

logger = AdapterLogger("SizedSpark")
_TEXT, _NUMBER = agate.Text(), agate.Number()


def _table(rows, names, numbers):
    """An agate table with the given columns as numbers and the rest as text: agate would
    otherwise guess (instant ids as numbers, counts of 0 and 1 as booleans)."""
    return agate.Table(rows, column_names=names,
                       column_types=[_NUMBER if n in numbers else _TEXT for n in names])


def _engine_call(what, fn, *args, **kwargs):
    """Call the engine; the errors it raises for the user fail the model (or operation)
    with their message. Anything else is a bug and is raised as it is."""
    try:
        return fn(*args, **kwargs)
    except SchemaChangeError as exc:
        # dbt reports an on_schema_change='fail' stop as a compilation error on every adapter
        raise CompilationError(f"{what}: {exc}") from exc
    except SizedError as exc:
        raise DbtRuntimeError(f"{what}: {exc}") from exc


def _engine_log(message: str) -> None:
    """The engine's notices at dbt's default level, its phase lines at debug (`dbt --debug`,
    logs/dbt.log)."""
    (logger.info if isinstance(message, api.Notice) else logger.debug)(message)


@dataclasses.dataclass
class SizedAdapterResponse(AdapterResponse):
    """A sized write's figures, as fields of run_results.json's `adapter_response` (as
    dbt-bigquery's carry bytes processed); its message is dbt's short status."""
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    files_written: int = 0
    files_replaced: int = 0
    files_in_table: int = 0
    bytes_written: int = 0
    partitions: int = 0
    instant: str = ""
    route: str = ""     # the way the write went (python_adapter.spark.job.Route)


# dbt prints the status inside its result line, which wraps past ~80 characters
_STATUS_WIDTH = 60


def _plural(n: int, word: str) -> str:
    return api.count_of(n, word)


def _status(result: Dict[str, Any]) -> str:
    """`12,345 rows, 38 files in 4 partitions`; `1,000 new, 1,000 updated, 13 files`: the
    rows a write changed and the files it wrote, short enough for dbt's result line."""
    changes = result["changes"]
    if changes["updated"] or changes["deleted"]:
        rows = ", ".join(f"{n:,} {what}" for n, what in
                         ((changes["inserted"], "new"), (changes["updated"], "updated"),
                          (changes["deleted"], "deleted")) if n)
    else:
        rows = _plural(changes["inserted"], "row")
    text = f"{rows}, {_plural(result['files_written'], 'file')}"
    # an unpartitioned table's files are all in its one directory: no "in 1 partition"
    where = f" in {_plural(result['partitions'], 'partition')}" \
        if result.get("partitioned") and result["partitions"] else ""
    # the longest of these that fits; the rows alone (under 60 up to billions of each) last
    return next((s for s in (text + where, text) if len(s) <= _STATUS_WIDTH), rows)


def _response(result: Dict[str, Any]) -> SizedAdapterResponse:
    changes = result["changes"]
    return SizedAdapterResponse(
        _message=_status(result), code="OK", rows_affected=result["rows_changed"],
        rows_inserted=changes["inserted"], rows_updated=changes["updated"],
        rows_deleted=changes["deleted"], files_written=result["files_written"],
        files_replaced=result["files_removed"],
        files_in_table=result["files_before"] - result["files_removed"] + result["files_written"],
        bytes_written=result["bytes"], partitions=result["partitions"],
        instant=result["instant"], route=result["route"])


def _adapter_config_class() -> Type[SparkConfig]:
    """dbt-spark's SparkConfig with the engine's own model keys (api.MODEL_KEYS, those
    neither dbt's nor dbt-spark's nor set by our macros), declared to dbt as the adapter's
    config as dbt-spark declares SparkConfig: each takes the value the innermost config
    gives it (dbt's default merge), as before; the keys are declared once, in MODEL_KEYS."""
    taken = {f.name for f in dataclasses.fields(SparkConfig)}
    ours = [k.name for k in api.MODEL_KEYS if not (k.dbt or k.internal or k.name in taken)]
    return cast(Type[SparkConfig], dataclasses.make_dataclass(
        "SizedSparkConfig", [(name, Optional[Any], dataclasses.field(default=None))
                             for name in ours], bases=(SparkConfig,)))


SizedSparkConfig = _adapter_config_class()


@functools.lru_cache(maxsize=1)
def _dbt_config_keys() -> frozenset:
    """The config keys dbt (models and snapshots) and dbt-spark declare, with their
    aliases (`pre-hook`): a model's key among them is never taken for a typo of ours."""
    from dbt.artifacts.resources import ModelConfig, SnapshotConfig

    keys = set()
    for config_class in (ModelConfig, SnapshotConfig, SparkConfig):
        for f in dataclasses.fields(config_class):
            keys.update({f.name, f.metadata.get("alias") or f.name})
    return frozenset(keys)


class SizedSparkAdapter(SparkAdapter):
    ConnectionManager = SizedSparkConnectionManager
    # BaseAdapter.__init__ makes it from ConnectionManager (a hint only: no value here)
    connections: SizedSparkConnectionManager
    AdapterSpecificConfigs = SizedSparkConfig

    @classmethod
    def type(cls) -> str:
        return "sized_spark"

    @classmethod
    def get_adapter_run_info(cls, config):
        # dbt derives the module from the class name ("sizedspark"); ours is sized_spark.
        from dbt.adapters.__about__ import version as base_version
        from dbt.adapters.base.impl import AdapterTrackingRelationInfo
        from dbt.adapters.sized_spark.__version__ import version

        return AdapterTrackingRelationInfo(
            adapter_name="sized_spark", base_adapter_version=base_version,
            adapter_version=version,
            model_adapter_details=cls._get_adapter_specific_run_info(config))

    def _build_spark_relation_list(self, row_list, relation_info_func):
        # SHOW TABLE(S) [EXTENDED] IN <schema> also lists the session's temporary views
        # (namespace '', isTemporary = true); they belong to no schema, and in the embedded
        # session they outlive a dbt run (dbt-spark's incremental leaves its __dbt_tmp view).
        rows = [row for row in row_list if not row[2]]
        return super()._build_spark_relation_list(rows, relation_info_func)

    def _table_ref(self, relation, model_config: Optional[Dict[str, Any]] = None) -> api.TableRef:
        location_root = (model_config or {}).get("location_root")
        return api.TableRef(schema=relation.schema, identifier=relation.identifier,
                        location_root=location_root)

    def cleanup_connections(self) -> None:
        # the end of a command: every sized commit settled before dbt reports and exits
        settled(logger)
        super().cleanup_connections()

    def debug_query(self) -> None:
        """`dbt debug`'s connection test. On session and connect, the checks of
        dbt/adapters/sized_spark/debug.py (Java, the Spark session, the helper jar, the
        warehouse; the Connect server and its extension), each printed, a failure raised
        naming its fix; dbt-spark's `select 1` on the other methods."""
        if not self.config.credentials.is_session:
            return super().debug_query()
        from dbt.adapters.sized_spark.debug import run_checks

        run_checks(self.connections)

    @available
    def sized_require_session(self, what: str) -> str:
        """Fail unless the profile uses `method: session`; the materialization calls it first,
        so with thrift / http / odbc nothing runs (no hook, no SQL) before the error."""
        self.connections.require_session(what)
        return ""

    @available
    def sized_session_method(self) -> bool:
        """Whether the profile's method is session (the sized engine can write)."""
        return bool(self.config.credentials.is_session)

    @available
    def sized_count_of(self, n: int, word: str) -> str:
        """'1 instant', '3 instants': the engine's count and noun, for the macros' lines."""
        return _plural(int(n), word)

    @available
    def sized_check_config(self, model_config: Dict[str, Any], what: str,
                           values: bool = True) -> str:
        """Fail on a key that looks like a typo of one of ours (naming the closest) and,
        with `values`, on a bad value, before the model's hooks or the engine write
        anything. A snapshot checks its keys only: the engine gets the snapshot's own
        config (sized_snapshot_config), checked when it writes."""
        error = api.unknown_key_error(model_config.keys(), _dbt_config_keys())
        if error:
            raise DbtRuntimeError(f"{what}: {error}")
        if values:
            _engine_call(what, api.parse_config, dict(model_config))
        return ""

    @available
    def sized_takes(self, model_config: Dict[str, Any], language: str) -> bool:
        """Whether dbt's `incremental` / `table` (or `snapshot`) of a model goes to the
        sized engine: a SQL or Python model of Parquet (file_format unset, dbt-spark's
        default, or parquet), not opted out with `sized: false`, on a profile whose method
        is session or connect (sized_takes_model in the macros asks here)."""
        file_format = model_config.get("file_format")
        return (language in ("sql", "python")
                and model_config.get("sized", True) not in (False, "false", "False")
                and (file_format is None or str(file_format).lower() == "parquet")
                and self.sized_session_method())

    def set_macro_resolver(self, macro_resolver) -> None:
        # dbt hands the adapter the parsed manifest before a command (compile, run, build,
        # ...) opens a connection: a sized model's config typo or bad value is told there,
        # as a warning naming the model, instead of only after the Spark start. A warning,
        # not an error: the manifest holds every model, and dbt runs the selected ones and
        # fails each bad one on its own (the materialization's check, before anything is
        # written), never a whole command for one model it did not select.
        super().set_macro_resolver(macro_resolver)
        for node in getattr(macro_resolver, "nodes", {}).values():
            problem = self._parsed_config_problem(node)
            if problem:
                logger.warning(f"{problem} (the model fails when it runs: fix its config)")

    def _parsed_config_problem(self, node) -> Optional[str]:
        """What sized_check_config says of a parsed model or snapshot the engine writes."""
        if node.resource_type not in ("model", "snapshot"):
            return None
        config = node.config.to_dict(omit_none=True)  # the materialization's model.config
        materialized, snapshot = config.get("materialized"), node.resource_type == "snapshot"
        if materialized != "sized_incremental" and not (
                (snapshot or materialized in ("incremental", "table"))
                and self.sized_takes(config, node.language)):
            return None
        kind = "snapshot" if snapshot else f"{materialized} model"
        try:
            self.sized_check_config(config, f"{kind} {node.schema}.{node.alias}",
                                    values=not snapshot)
        except DbtRuntimeError as exc:
            return str(exc.msg)
        return None

    @available
    def sized_write(self, relation, compiled_code: str, model_config: Dict[str, Any],
                    full_refresh: bool, kind: str = "sized_incremental model") -> Dict[str, Any]:
        """Run the model's SQL and write it as a sized table; returns a summary for the log.
        kind: what errors call the node (a model, a snapshot)."""
        return self._sized_write(f"{kind} {relation.schema}.{relation.identifier}", relation,
                                 api.write_model, compiled_code, model_config, full_refresh)

    @available
    def sized_write_python(self, relation, compiled_code: str, model_config: Dict[str, Any],
                           full_refresh: bool, path: str) -> Dict[str, Any]:
        """Run a Python model's function here, on the profile's session (session or
        connect), and write the DataFrame it returns as sized_write writes SQL rows. path:
        the model's file, which its traceback names."""
        return self._sized_write(f"python model {relation.schema}.{relation.identifier}",
                                 relation, api.write_python, api.PythonModel(compiled_code, path),
                                 model_config, full_refresh)

    def _sized_write(self, name: str, relation, write, code, model_config: Dict[str, Any],
                     full_refresh: bool) -> Dict[str, Any]:
        """write: api.write_model (code: SQL) or api.write_python (code: a PythonModel)."""
        cfg = _engine_call(name, api.parse_config, dict(model_config))
        spark = self.connections.spark_session()
        # over session, the commit's statistics and cleanup run while dbt goes on (its next
        # model); over Connect the write settles them before it returns (docs/design.md,
        # "Where the two differ": settling)
        background = api.settle_in_background() if not self.config.credentials.is_connect \
            else contextlib.nullcontext()
        with background:
            result = _engine_call(name, write, spark, self._table_ref(relation, model_config),
                                  code, cfg, full_refresh=full_refresh, log=_engine_log)
        # Our writes bypass dbt's SQL path: forget cached relation metadata for this table.
        self.cache_added(relation.incorporate(type="table"))
        return {**result.as_dict(), "response": _response(result.as_dict())}

    @available
    def sized_not_null_columns(self, model_columns: Dict[str, Dict[str, Any]],
                               model_constraints: List[Dict[str, Any]],
                               configured: Any = None) -> List[str]:
        """The columns the engine checks for nulls in the new rows of a model whose contract
        is enforced: the configured `not_null_columns`, then the contract's not_null
        constraints (on a column, or on a model's `columns`). Every other constraint gets
        the warning dbt-spark gives for it (dbt's, from CONSTRAINT_SUPPORT: not enforced),
        since a Parquet table enforces none."""
        names = list(_engine_call("not_null_columns", api.parse_config,
                                  {"not_null_columns": configured}).not_null_columns)
        for column in (model_columns or {}).values():
            for raw in column.get("constraints") or []:
                constraint = self._parse_column_constraint(raw)
                if constraint.type == ConstraintType.not_null:
                    names.append(column["name"])
                else:
                    self.process_parsed_constraint(constraint, self.render_column_constraint)
        for raw in model_constraints or []:
            constraint = self._parse_model_constraint(raw)
            if constraint.type == ConstraintType.not_null:
                names.extend(constraint.columns)
            else:
                self.process_parsed_constraint(constraint, self.render_model_constraint)
        return list(dict.fromkeys(names))

    @available
    def sized_layout(self, relation, small_file_limit=None, target_file_size=None,
                     cluster_by=None) -> Dict[str, Any]:
        """{'partitions': per-partition statistics, 'files': per-file min / max of the
        cluster columns (None when the table has none)} as agate tables."""
        spark = self.connections.spark_session("sized_layout")
        layout = _engine_call("sized_layout", api.layout, spark, self._table_ref(relation),
                              cluster_by)
        rows = api.layout_rows(layout, small_file_limit=small_file_limit,
                               target_file_size=target_file_size)
        counts = {"files", "rows", "bytes", "min_file", "median_file", "max_file", "small_files"}
        files = _table(api.file_rows(layout), api.file_columns(layout), {"rows", "bytes"}) \
            if layout.cluster_by else None
        return {"partitions": _table(rows, api.LAYOUT_COLUMNS, counts), "files": files,
                "limits": api.layout_limits_text(layout, small_file_limit, target_file_size)}

    @available
    def sized_cluster(self, relation, args: Optional[Dict[str, Any]] = None) -> str:
        """Schedule a clustering plan (when args hold cluster_by) and execute pending plans.
        args: sized_cluster's (api.OPERATIONS), checked before Spark starts."""
        given = _engine_call("sized_cluster", api.operation_args, "sized_cluster", args)
        cluster_by, strategy = given.pop("cluster_by", None), given.pop("strategy", None)
        schedule_only = bool(given.pop("schedule_only", False))
        spark = self.connections.spark_session("sized_cluster")
        result = _engine_call("sized_cluster", api.cluster, spark, self._table_ref(relation),
                              cluster_by, strategy, schedule_only, given, log=_engine_log)
        return result.message

    @available
    def sized_compact(self, relation, args: Optional[Dict[str, Any]] = None) -> str:
        """Bin-pack small files and split oversized ones, rows in file order; returns what
        it did (groups, files before -> after, bytes, time). args: sized_compact's
        (api.OPERATIONS: scope by `partitions` / `where`, bounds, partial progress), checked
        before Spark starts."""
        given = _engine_call("sized_compact", api.operation_args, "sized_compact", args)
        partitions = given.pop("partitions", None)
        schedule_only = bool(given.pop("schedule_only", False))
        spark = self.connections.spark_session("sized_compact")
        result = _engine_call("sized_compact", api.compact, spark, self._table_ref(relation),
                              given, partitions, schedule_only, log=_engine_log)
        return result.message

    @available
    def sized_layout_problems(self, relation, max_small_files_per_partition=None,
                              max_file_size_ratio=None, small_file_limit=None,
                              target_file_size=None) -> List[List[str]]:
        """[[partition, problem]] for the sized_file_layout test; empty when the layout is fine."""
        spark = self.connections.spark_session("sized_file_layout")
        layout = _engine_call("sized_file_layout", api.layout, spark, self._table_ref(relation))
        return api.layout_problems(layout, max_small_files_per_partition=max_small_files_per_partition,
                               max_file_size_ratio=max_file_size_ratio,
                               small_file_limit=small_file_limit,
                               target_file_size=target_file_size)

    @available
    def sized_timeline(self, relation) -> agate.Table:
        """The table's instants (time, action, state, files added / removed, rows, bytes)."""
        spark = self.connections.spark_session("sized_timeline")
        rows = _engine_call("sized_timeline", api.timeline, spark, self._table_ref(relation))
        return _table(rows, api.TIMELINE_COLUMNS, {"files_added", "files_removed", "rows", "bytes"})

    @available
    def sized_rollback(self, relation) -> api.RollbackResult:
        """Restore the table to its state before its last completed commit."""
        spark = self.connections.spark_session("sized_rollback")
        ref = self._table_ref(relation)
        return _engine_call("sized_rollback", api.rollback, spark, ref, log=_engine_log)

    @available
    def sized_restore(self, relation, instant: str) -> api.RestoreResult:
        """Bring the table back to its state right after `instant` (the record holds the
        restore's own instant)."""
        spark = self.connections.spark_session("sized_restore")
        return _engine_call("sized_restore", api.restore, spark, self._table_ref(relation),
                            str(instant), log=_engine_log)

    @available
    def sized_clean(self, relation, args: Optional[Dict[str, Any]] = None) -> str:
        """Delete set-aside files past retention, archive old instants, remove leftovers;
        returns what it did. args: sized_clean's (api.OPERATIONS), checked before Spark
        starts."""
        given = _engine_call("sized_clean", api.operation_args, "sized_clean", args)
        spark = self.connections.spark_session("sized_clean")
        return _engine_call("sized_clean", api.clean, spark, self._table_ref(relation),
                            given, log=_engine_log).message

    @available
    def sized_recover(self, relation) -> api.RecoverResult:
        """Roll back unfinished instants of a crashed write now (the record lists them)."""
        spark = self.connections.spark_session("sized_recover")
        return _engine_call("sized_recover", api.recover, spark, self._table_ref(relation),
                            log=_engine_log)

    @available
    def sized_repair(self, relation) -> str:
        """Record the table as it is after files were deleted or changed outside its
        commits (a new instant listing the rows lost); returns what it did."""
        spark = self.connections.spark_session("sized_repair")
        return _engine_call("sized_repair", api.repair, spark, self._table_ref(relation),
                            log=_engine_log).message

    @available
    def sized_unlock(self, relation, force: bool = False) -> api.UnlockResult:
        """Who holds the table's writer lock and its lease; with force, break the lock."""
        spark = self.connections.spark_session("sized_unlock")
        return _engine_call("sized_unlock", api.unlock, spark, self._table_ref(relation),
                            bool(force))

    @available
    def sized_report(self, relation, path: str) -> api.ReportResult:
        """Write a self-contained HTML report of the table to `path` (the record holds the
        qualified path)."""
        spark = self.connections.spark_session("sized_report")
        return _engine_call("sized_report", api.report, spark, self._table_ref(relation), path,
                            log=_engine_log)
