"""Table services on Spark, clustering and compaction: schedule a plan into the timeline,
execute pending plans, and replace the old files with one `replacecommit` through the
commit protocol. A compaction plan is a clustering plan whose strategy is `none`: its groups
are rewritten with their rows in file order, not sorted.

A scheduled plan is a `replacecommit.requested` instant whose `removed` entries list the
files of each group (`file_group` = group id) and whose `extra` holds the strategy, the
columns and each group's output file count. Recovery leaves scheduled plans alone.

Clustering holds the writer lock only to schedule and to commit (optimistic concurrency):
it rewrites the groups into the plan's staging directory without it, so loads go on
meanwhile. Table services take a lock of their own (`cluster.lock`), so two clustering runs
never execute one plan at once. Upserts that arrive while a plan is pending put no inserts
into its files; an update to one of its files rewrites that file at once, and the plan's
group holding it is dropped at commit and planned again next time: clustering only ever
replaces files that are still exactly as planned, so no update is lost.

Partial progress (compaction's `partial_progress`): a plan is executed in batches of
groups, each committed as a replacecommit of its own whose extra names the plan (`plan`)
and the groups it did (`plan_groups`); the plan's requested instant stays until its last
batch is committed, so an interrupted run keeps its finished batches and the next run
executes the groups left.
"""
import re
import time
from dataclasses import dataclass, field
from typing import (Any, Callable, Collection, Dict, List, Mapping, Optional, Sequence, Set,
                    Tuple, Union, cast)

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from python_adapter.io.session_info import conf_bytes, default_parallelism, num_partitions
from python_adapter.core.notice import Notice
from python_adapter.core.clustering import grid_cells, plan_groups
from python_adapter.core.compaction import (SPLIT_RATIO, file_runs, pack_groups, pack_outputs,
                                            partition_filter, plan_compaction)
from python_adapter.core.config import (ClusterOptions, CompactOptions, cluster_options,
                                        compact_options)
from python_adapter.core.config_keys import operation_default
from python_adapter.core.routing import routing_keys
from python_adapter.core.sizes import count_of, format_duration, format_size, parse_duration
from python_adapter.errors import ConfigError, WriteError
from python_adapter.spark.write.bloom import recorded_key, write_options
from python_adapter.spark.write.encodings import dictionary_options
from python_adapter.spark.catalog.tables import TableRef
from python_adapter.spark.services.curve_keys import (CurveKey, Sampling, cell_column,
                                                     group_cell_column, with_curve_key)
from python_adapter.spark.job import ServiceProgress, service_progress
from python_adapter.spark.local_table import local_table
from python_adapter.spark.handle import TableHandle, open_table, partitions_holding
from python_adapter.spark.locking import locked as lock_table
from python_adapter.spark.services.partition_where import partition_where
from python_adapter.spark.session_conf import session_conf
from python_adapter.spark.write.slot_write import SLOT
from python_adapter.spark.write.staging import staged_entries
from python_adapter.spark.table_files import read_files, rows_per_file, with_file_values
from python_adapter.table.faults import fault_point
from python_adapter.table.files import current_files
from python_adapter.table.lock import LockOptions, WriterLock
from python_adapter.table.plans import (batch_extra, changed_groups, close_plan,
                                        committed_groups, group_count, planned_groups,
                                        schedule_plan)
from python_adapter.table.timeline import FileEntry, pending_plan_files, scheduled_plans
from python_adapter.table.transaction import TxnOptions
from python_adapter.table.extra import (CLUSTER_BY, PARTIAL_PROGRESS_GROUPS, SMALL_FILE_LIMIT,
                                        STRATEGY, TARGET_FILE_SIZE, output_files)

RANK_BITS = 10   # ranks in [0, 1024) per column: Z / Hilbert values fit a bigint up to 6 columns
# What opening a file costs, in bytes, when Spark packs the files a table service reads into
# tasks: its default (4 MB) put ~30 small files in a task, so compacting thousands of them ran
# a hundred short read tasks (2,920 files: 92 tasks, 7 at this cost, ~15% less time for the
# job). Spark still splits by cores: a split is at most the bytes per core.
_OPEN_COST = "spark.sql.files.openCostInBytes"
SMALL_FILE_OPEN_COST = 256 * 1024
# Compaction's tasks per core: enough to even out files of unequal size, few enough that a
# task's fixed cost (its shuffle read, sort and writer) is paid a few times, not per file.
TASKS_PER_CORE = 2
# Curve clustering: groups written by one Spark job (each adds its cells' tables to the job's
# lookups, curve_keys.group_cell_column), and sampled rows per file a group is cut into
CURVE_GROUPS_PER_JOB = 64
SAMPLE_PER_FILE = 200
# A curve's ranks on many columns can make a stage's generated method longer than the 8,000
# bytes of bytecode HotSpot compiles (DontCompileHugeMethods): it then runs interpreted, 3x
# slower than without whole-stage codegen. Spark falls back to that above this limit (its
# default, 65,535, is the JVM's own limit; Spark's docs suggest 8,000 on HotSpot).
_JIT_SIZED_CODEGEN = {"spark.sql.codegen.hugeMethodLimit": "8000"}
# A scan planned as exactly one task: no byte bound on a split, no open cost per file, no
# minimum number of splits (Spark packs a scan's files into splits of at most
# min(maxPartitionBytes, max(openCost, bytes / minPartitionNum))).
_ONE_TASK_SCAN = {"spark.sql.files.maxPartitionBytes": str(1 << 62), _OPEN_COST: "0",
                  "spark.sql.files.minPartitionNum": "1"}
# the strategy a compaction plan records: its groups are packed in file order, no curve
COMPACTION = "none"


@dataclass
class ClusterResult:
    scheduled: int          # groups planned by this call
    executed_plans: int
    groups: int
    files_replaced: int
    files_written: int
    bytes: int
    seconds: float
    target_file_size: int = 0   # the unit family sizes are shown in
    groups_dropped: int = 0     # groups whose files a writer changed while they were rewritten
    service: str = "clustering"
    commits: int = 0            # replacecommits made (partial progress: one per batch)

    @property
    def message(self) -> str:
        dropped = (f"; {count_of(self.groups_dropped, 'group')} dropped (a writer changed "
                   f"their files meanwhile; planned again next time)"
                   if self.groups_dropped else "")
        commits = f" in {count_of(self.commits, 'commit')}" \
            if self.commits > self.executed_plans else ""
        return (f"{self.service}: {count_of(self.executed_plans, 'plan')}, "
                f"{count_of(self.groups, 'group')}{commits}, "
                f"files {self.files_replaced} -> {self.files_written}, "
                f"{format_size(self.bytes, self.target_file_size)} written in "
                f"{format_duration(self.seconds)}{dropped}")


def run_clustering(spark: SparkSession, table: TableRef,
                   cluster_by: Optional[Union[str, Sequence[str]]] = None,
                   strategy: str = "linear", schedule_only: bool = False,
                   log: Callable[[str], None] = print, **option_overrides: Any) -> ClusterResult:
    """Schedule a plan (when cluster_by is given) and, unless schedule_only, execute every
    pending plan. The writer lock is held to schedule and to commit each plan, not while
    its groups are rewritten (option_overrides' lock_timeout: how long it waits for a load's
    lock, service_lock)."""
    run = _Run(lock=service_lock(option_overrides.pop("lock_timeout", None), "sized_cluster",
                                 table.name))

    def schedule(locked):
        return _schedule(locked, cluster_by, strategy, option_overrides)
    with service_progress(spark, table, "clustering", log) as progress:
        return _run_service(open_table(spark, table, progress), "clustering",
                            schedule if cluster_by else None, schedule_only, run)


def run_compaction(spark: SparkSession, table: TableRef, options: Mapping[str, Any],
                   partitions: Optional[Sequence[Any]] = None, schedule_only: bool = False,
                   log: Callable[[str], None] = print) -> ClusterResult:
    """Schedule a compaction plan of the table's small and oversized files (core/compaction)
    and, unless schedule_only, execute every pending plan, as clustering does.
    options: target_file_size, small_file_limit, max_groups, max_bytes, where (a condition
    on the partition columns), partial_progress, partial_progress_groups (None: default).
    Every option is checked before the table is locked (or adopted): bad input writes
    nothing."""
    options = dict(options)
    lock = service_lock(options.pop("lock_timeout", None), "sized_compact",
                        table.name)
    with service_progress(spark, table, "compaction", log) as progress:
        handle = open_table(spark, table, progress)
        checked = _compact_options(options, {})
        scope = _scope(spark, handle.info, table, partitions, options.get("where"))

        def schedule(locked):
            return _schedule_compaction(locked, options, scope)
        return _run_service(handle, "compaction", schedule, schedule_only,
                            _Run(checked.partial_progress_groups, lock))


# How long a table service waits for the writer lock a load holds, to plan and to commit,
# unless the operation's lock_timeout says otherwise: services run beside loads.
SERVICE_LOCK_TIMEOUT = parse_duration(operation_default("sized_compact", "lock_timeout"))


def service_lock(lock_timeout: Any = None, operation: str = "sized_compact",
                 relation: str = "<schema.table>") -> LockOptions:
    """The writer lock's options of a table service: it waits for a load's lock up to
    `lock_timeout` (the operation's argument, default SERVICE_LOCK_TIMEOUT), and holds it
    for its short steps only, so a load finding it held waits for it (lock.BRIEF_WAIT).
    The lock error names where to set it: `operation`'s argument on `relation`."""
    try:
        timeout = SERVICE_LOCK_TIMEOUT if lock_timeout is None else \
            parse_duration(lock_timeout, "lock_timeout")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return LockOptions(timeout=timeout, brief=True, timeout_set=(
        f"the operation's lock_timeout argument, e.g. dbt run-operation {operation} --args "
        f"'{{relation: {relation}, lock_timeout: 30m}}' (a post-hook's: the model's "
        f"lock_timeout config)"))


@dataclass(frozen=True)
class _Run:
    """How a service's run commits: groups per commit (partial progress; None: one commit
    per plan) and the writer lock's options."""
    batch: Optional[int] = None
    lock: LockOptions = field(default_factory=service_lock)


def _compact_options(overrides, last) -> CompactOptions:
    """The call's options over the table's own target and limit (`last`: the extra of its
    last write), unless the call gives a target (the limit then follows it, as at write
    time)."""
    if overrides.get("target_file_size"):
        last = {}
    return compact_options(
        overrides.get("target_file_size") or TARGET_FILE_SIZE.get(last) or None,
        overrides.get("small_file_limit"), overrides.get("max_groups"),
        overrides.get("max_bytes"), SMALL_FILE_LIMIT.get(last) or None,
        overrides.get("partial_progress"), overrides.get("partial_progress_groups"))


def _scope(spark, info, table, partitions, where) -> Callable[[Collection[str]], Set[str]]:
    """The partitions (directories) a compaction may touch: those `partitions` names and
    `where` selects, both when both are given."""
    named = partition_filter(info.partition_columns, partitions)
    selected = partition_where(spark, info, table.name, where)

    def scope(dirs: Collection[str]) -> Set[str]:
        dirs = {d for d in dirs if named(d)}
        return selected(dirs) if selected is not None else dirs
    return scope


def _run_service(table: TableHandle, service: str, schedule, schedule_only: bool,
                 run: _Run = _Run()) -> ClusterResult:
    """A table service's run: schedule (when given) under the writer lock, then execute the
    pending plans under the service lock, each committed under the writer lock (run.batch:
    groups per commit, partial progress; None: one commit per plan)."""
    log = cast(ServiceProgress, table.log)  # both callers open the table with one
    start = log.start  # the run's, as its progress lines count it
    batch = run.batch
    with lock_table(table, service, run.lock) as here:
        proto, fs = here.proto, here.fs
        earlier = {p.instant for p in scheduled_plans(proto.timeline)}
        scheduled = schedule(here) if schedule else 0
        plans = [] if schedule_only else scheduled_plans(proto.timeline)
    result = ClusterResult(scheduled, 0, 0, 0, 0, 0, 0.0, service=service)
    if plans:
        service_lock = WriterLock(fs, f"{proto.meta}/cluster.lock", log=log,
                                  covers=proto.covers)
        service_lock.acquire(service)
        try:
            for plan in plans:
                if plan.instant in earlier:  # scheduled by an earlier run, killed or not
                    log(Notice(f"{here.name}: {service} resuming the pending plan of "
                               f"{plan.instant} ({plan.operation}, "
                               f"{count_of(group_count(plan), 'group')})"))
                _execute(here, plan, result, batch)
        except Exception:  # not a crash: a crashed run keeps its lock, as a dead process does
            service_lock.release()
            raise
        service_lock.release()
    result.seconds = time.monotonic() - start
    log(result.message)
    return result


def _options(locked, cluster_by, strategy, overrides) -> ClusterOptions:
    """The plan's options: the call's, else sized from the table's last write."""
    names = [cluster_by] if isinstance(cluster_by, str) else list(cluster_by)
    columns = locked.info.column_names
    missing = [c for c in names if c.lower() not in {n.lower() for n in columns}]
    if missing:
        raise ConfigError(f"cluster_by: column(s) {', '.join(missing)} not found in "
                          f"{locked.table.ref.quoted}; its columns are {', '.join(columns)}")
    last = locked.proto.timeline.written_with()
    if TARGET_FILE_SIZE.get(last) is not None:
        overrides.setdefault("target_file_size", TARGET_FILE_SIZE.get(last))
        overrides.setdefault("write_small_file_limit", SMALL_FILE_LIMIT.get(last) or None)
    return cluster_options(names, strategy, **overrides)


def _schedule(locked, cluster_by, strategy, overrides) -> int:
    """Store a plan of the table's small files as a requested replacecommit; returns its
    number of groups."""
    options = _options(locked, cluster_by, strategy, overrides)
    current = current_files(locked.fs, locked.proto.location, locked.proto.timeline,
                            check=locked.name)
    groups = plan_groups(_files_by_partition(current), options,
                         excluded=pending_plan_files(locked.proto.timeline))
    if not groups:
        _log_no_groups(locked, "clustering", "no file below the clustering small-file limit")
        return 0
    extra = {**STRATEGY.entry(options.strategy), **CLUSTER_BY.entry(list(options.cluster_by)),
             **TARGET_FILE_SIZE.entry(options.target_file_size)}
    schedule_plan(locked.proto, "cluster", locked.info.partition_columns, groups, current,
                  extra)
    locked.log(f"clustering plan: {count_of(len(groups), 'group')} of "
               f"{count_of(sum(len(g.files) for g in groups), 'file')} "
               f"({format_size(sum(g.bytes for g in groups))}), strategy "
               f"{options.strategy} on {', '.join(options.cluster_by)}")
    return len(groups)


def _schedule_compaction(locked, overrides, scope) -> int:
    """Store a compaction plan (small files bin-packed, oversized files split) of the
    partitions in scope as a requested replacecommit; returns its number of groups."""
    options = _compact_options(overrides, locked.proto.timeline.written_with())
    current = current_files(locked.fs, locked.proto.location, locked.proto.timeline,
                            check=locked.name)
    every = _files_by_partition(current)
    chosen = scope(set(every))
    by_part = {p: files for p, files in every.items() if p in chosen}
    in_scope = "" if len(chosen) == len(every) else \
        f" (of {len(chosen)} of the {count_of(len(every), 'partition')} in scope)"
    groups = plan_compaction(by_part, options, excluded=pending_plan_files(locked.proto.timeline))
    if not groups:
        _log_no_groups(locked, "compaction", (
            f"nothing to compact{in_scope} (no partition holds two files below "
            f"{format_size(options.small_file_limit, options.target_file_size)} or a file "
            f"above {SPLIT_RATIO} x target)"))
        return 0
    extra = {**STRATEGY.entry(COMPACTION), **CLUSTER_BY.entry([]),
             **TARGET_FILE_SIZE.entry(options.target_file_size)}
    if options.partial_progress_groups:  # the plan keeps it, whoever executes it
        extra.update(PARTIAL_PROGRESS_GROUPS.entry(options.partial_progress_groups))
    schedule_plan(locked.proto, "compact", locked.info.partition_columns, groups, current,
                  extra)
    files = sum(len(g.files) for g in groups)
    locked.log(f"compaction plan: {count_of(len(groups), 'group')} in "
               f"{count_of(len({g.partition for g in groups}), 'partition')}{in_scope}, "
               f"{count_of(files, 'file')} "
               f"({format_size(sum(g.bytes for g in groups), options.target_file_size)}) -> "
               f"{count_of(sum(g.output_files for g in groups), 'file')}")
    return len(groups)


def _log_no_groups(locked, service, why) -> None:
    """A scheduler found no group: `why`, unless plans of earlier runs are pending. Their
    files are left out of new plans, and the run goes on to execute them (saying so), so
    "nothing to do" would be false."""
    waiting = [p.instant for p in scheduled_plans(locked.proto.timeline)]
    if waiting:
        locked.log(f"{service} plan: no new groups beside the pending plan of "
                   f"{', '.join(waiting)}")
    else:
        locked.log(f"{service} plan: {why}")


def _files_by_partition(current) -> Dict[str, list]:
    by_part: Dict[str, list] = {}
    for f in current:
        by_part.setdefault(f.partition, []).append((f.path, f.bytes))
    return by_part


def _still_as_planned(plan, groups, current, log):
    """{group id: [FileEntry]} of `groups` (of the plan) whose files are all still as
    planned; a group a writer rewrote since is dropped (planned again next time)."""
    dropped = changed_groups(groups, current)
    if dropped:
        log(f"clustering plan {plan.instant}: {count_of(len(dropped), 'group')} changed since "
            f"planned (a writer rewrote their files); dropped, planned again next time")
    return {g: files for g, files in groups.items() if g not in dropped}


@dataclass
class _Batch:
    """Groups of a plan rewritten together and committed as one replacecommit: the whole
    plan as its own instant, or (partial progress) a batch as an instant of its own."""
    groups: Dict[str, list]       # group id -> the plan's FileEntry of its files
    number: int = 0               # 1-based; 0: the whole plan
    of: int = 0
    last: bool = True             # the plan's instant is closed after it (partial progress)


def _execute(locked, plan, result: ClusterResult, batch: Optional[int] = None) -> None:
    """Rewrite the plan's groups into its staging directory without the writer lock, then,
    under it, commit the groups whose files are all still as planned as its replacecommit.
    With partial progress (batch: groups per commit, the run's or the plan's own), the
    groups go a batch at a time, each committed as a replacecommit of its own as soon as it
    is written, so an interrupted run keeps the batches it finished and the next run
    executes the rest of the plan; the plan's instant is closed after the last batch."""
    staging = locked.proto.staging_dir(plan.instant) + "/data"
    locked.fs.delete(staging)  # what an execution that crashed had written
    planned = planned_groups(plan)
    batch = batch or PARTIAL_PROGRESS_GROUPS.get(plan.extra) or None
    if batch is None:
        _run_batch(locked, plan, _Batch(planned), staging, result)
        result.executed_plans += 1
        return
    done = committed_groups(locked.proto.timeline, plan)
    todo = [g for g in planned if g not in done]
    if done:
        locked.log(f"{result.service} plan {plan.instant}: {len(done)} of its "
                   f"{count_of(len(planned), 'group')} were committed by an earlier run; executing "
                   f"the other {len(todo)}")
    cuts = [todo[i:i + batch] for i in range(0, len(todo), batch)] or [[]]
    for k, ids in enumerate(cuts):
        part = _Batch({g: planned[g] for g in ids}, k + 1, len(cuts), k == len(cuts) - 1)
        _run_batch(locked, plan, part, f"{staging}/batch-{k}", result)
    result.executed_plans += 1


def _run_batch(locked, plan, part: _Batch, staging: str, result: ClusterResult) -> None:
    """Write a batch's groups into staging, commit them, count them in result."""
    order = list(planned_groups(plan))
    first = order.index(next(iter(part.groups))) if part.groups else 0
    staged = _write_groups(locked, plan, part.groups, staging, first)
    fault_point("clustering_staged")
    kept, added, removed = _commit_batch(locked, plan, part, staged)
    if kept or not part.number:
        result.commits += 1
    result.groups += len(kept)
    result.groups_dropped += len(part.groups) - len(kept)
    result.files_replaced += len(removed)
    result.files_written += len(added)
    result.bytes += sum(a.bytes for a in added)
    result.target_file_size = TARGET_FILE_SIZE.get(plan.extra, 0)
    if part.number:
        locked.log.batch_committed(f"{part.number}/{part.of}", len(kept),
                                   (len(removed), len(added)))


def _commit_batch(locked, plan, part: _Batch, staged):
    """Under the writer lock, commit the batch's groups whose files are all still as
    planned: as the plan's own instant (the whole plan), or as a replacecommit of its own
    that names the plan and its groups (a batch), closing the plan after its last batch.
    Returns (the groups kept, the files added, the files removed)."""
    spark, instant = locked.spark, plan.instant
    locked.log.phase("commit")
    with lock_table(locked.table, "clustering", locked.lock) as now:
        fs, proto = now.fs, now.proto
        plan = next((p for p in scheduled_plans(proto.timeline) if p.instant == instant), None)
        if plan is None:  # rolled back meanwhile (sized_rollback of the table)
            fs.delete(proto.staging_dir(instant))
            return set(), [], []
        current = {f.path: f for f in current_files(fs, proto.location, proto.timeline,
                                                    check=locked.name)}
        valid = _still_as_planned(plan, part.groups, current, locked.log)
        kept = {g for tasks, _out in staged for task in tasks for g in task.values()
                if g in valid}
        written = _written_by_group(spark, fs, staged)
        _check_rows(plan, kept, written, valid)
        added = [e for g in sorted(kept) for e in written.get(g, [])]
        removed = [current[f.path] for g in sorted(kept) for f in valid[g]]
        if kept or not part.number:
            # files were there, so were their partitions: the catalog is asked about none
            # of them (hundreds, when a compaction covers a year of days)
            with now.transaction(plan.operation, TxnOptions(
                    action=plan.action, extra=batch_extra(plan, kept),
                    planned=None if part.number else plan,
                    registered=partitions_holding(current.values()))) as txn:
                txn.add(added)
                txn.remove(removed)
        if part.number and part.last:
            close_plan(proto, plan)
    return kept, added, removed


def _written_by_group(spark, fs, staged) -> Dict[Optional[str], List[FileEntry]]:
    """The staged files of each group (None: of no group the job planned)."""
    out: Dict[Optional[str], List[FileEntry]] = {}
    for tasks, directory in staged:
        for e in staged_entries(spark, fs, directory):
            out.setdefault(_group_of(tasks, e), []).append(e)
    return out


def _check_rows(plan, kept, written, valid) -> None:
    """A group is committed only with exactly the rows of the files it replaces: a file
    mapped to no group, or to another, stops the commit before anything is published."""
    for g in sorted(kept):
        planned, staged = [f.rows for f in valid[g]], [e.rows for e in written.get(g, [])]
        known = min(planned + staged, default=0) >= 0   # -1: a count no footer gave
        if known and sum(staged) != sum(planned):
            raise WriteError(f"{plan.operation} plan {plan.instant}, group {g}: "
                             f"{count_of(sum(staged), 'row')} written for the "
                             f"{sum(planned)} of its files; nothing was committed (a bug: "
                             f"please report it)")


@dataclass
class _Job:
    """One Spark job of a plan's execution: its groups, their output files, and the group
    each task writes in each partition it holds (staged files map back to their group by
    it: Spark names a task's files part-<task id>). runs: compaction groups cut into runs of
    whole files, one per output file (core/compaction.file_runs), every task reading its
    runs' files itself (no shuffle); None: rows are cut after a shuffle. whole_groups:
    groups each read and cut into its files by one task (no shuffle). Compaction's are
    packed, `tasks` holding each task's groups; curve groups are a task each, `tasks` being
    the shuffle's layout should Spark not plan a group's scan as one task."""
    groups: Dict[str, list]           # group id -> the plan's FileEntry of its files
    outputs: Dict[str, int]           # group id -> output files
    tasks: List[Dict[str, str]]       # per task: {partition: group id}
    first: Dict[str, int] = field(default_factory=dict)  # compaction: task of a group's 1st file
    runs: Optional[Dict[str, List[list]]] = None
    whole_groups: bool = False


def _group_of(tasks: Sequence[Mapping[str, str]], entry: FileEntry) -> Optional[str]:
    """The group a staged file belongs to: a job's only group, or the group its task wrote
    in its partition (None: a partition the task was given none in)."""
    only = {g for task in tasks for g in task.values()}
    if len(only) == 1:
        return next(iter(only))
    # Spark names each file a task writes part-<task id>-...
    named = cast("re.Match[str]", re.match(r"part-(\d+)", entry.path.rsplit("/", 1)[-1]))
    task = tasks[int(named.group(1))]
    return task.get(entry.partition) if len(task) > 1 else next(iter(task.values()))


def _jobs(spark, plan, groups) -> List[_Job]:
    """How the groups are written. Compaction: groups whose files cut into runs of whole
    files, one per output file, in one job whose tasks read their runs' files themselves;
    the others (a file to split, runs too uneven) in one job that cuts their rows into
    files after a shuffle; both pack their output files into tasks
    (core/compaction.pack_outputs). Clustering: groups that become one file in one job,
    group i (of the sorted ids) written whole by task i; larger groups cut within the group
    only, so a file never straddles two groups and each group gives exactly its files:
    linear, one job each (range-partitioned); curves, up to CURVE_GROUPS_PER_JOB a job
    (order_groups)."""
    outputs = {g: output_files(g).get(plan.extra, 1) for g in groups}
    part = {g: files[0].partition for g, files in groups.items()}
    per_task = conf_bytes(spark, "spark.sql.files.maxPartitionBytes", "128MB")
    if STRATEGY.get(plan.extra, COMPACTION) == COMPACTION:
        runs = {g: _runs(files, outputs[g]) for g, files in groups.items()}
        whole = {g: files for g, files in groups.items() if runs[g]}
        jobs = [_packed_job(spark, whole, outputs, {g: runs[g] for g in whole})] \
            if whole else []
        # the others cut by rows: groups within a task's bytes each by one task, packed
        # (_write_grouped_runs), the bigger after a shuffle (in_file_order)
        for one_task in (True, False):
            cut = {g: files for g, files in groups.items() if not runs[g]
                   and (sum(f.bytes for f in files) <= per_task) == one_task}
            if cut:
                jobs.append(_grouped_job(spark, cut, outputs) if one_task
                            else _packed_job(spark, cut, outputs))
        return jobs
    single = sorted(g for g in groups if outputs[g] == 1)
    jobs = [_Job({g: groups[g] for g in single}, outputs, [{part[g]: g} for g in single])] \
        if single else []
    many = sorted(g for g in groups if outputs[g] > 1)
    if STRATEGY.get(plan.extra) == "linear":   # a range partitioning per group
        return jobs + [_Job({g: groups[g]}, outputs, [{part[g]: g}] * outputs[g]) for g in many]
    # curves: up to CURVE_GROUPS_PER_JOB groups a job. A group within a task's bytes is read
    # and cut by one task (cells_per_group); the layout below is order_groups': group after
    # group in sorted order, each its files in a row, so task i writes file i of the job
    for one_task in (True, False):
        chosen = [g for g in many if (sum(f.bytes for f in groups[g]) <= per_task) == one_task]
        jobs += [_Job({g: groups[g] for g in cut}, outputs,
                      [{part[g]: g} for g in cut for _ in range(outputs[g])],
                      whole_groups=one_task)
                 for cut in (chosen[i:i + CURVE_GROUPS_PER_JOB]
                             for i in range(0, len(chosen), CURVE_GROUPS_PER_JOB))]
    return jobs


def _runs(files, outputs: int) -> Optional[List[list]]:
    """The group's files cut into `outputs` runs of whole files, or None."""
    counts = file_runs([f.bytes for f in files], outputs)
    if counts is None:
        return None
    starts = [sum(counts[:k]) for k in range(len(counts))]
    return [list(files[i:i + n]) for i, n in zip(starts, counts)]


def _packed_job(spark, groups, outputs, runs=None) -> _Job:
    """A compaction job: the groups' output files packed into tasks."""
    part = {g: files[0].partition for g, files in groups.items()}
    count, first = pack_outputs([(g, part[g], outputs[g]) for g in groups],
                                TASKS_PER_CORE * default_parallelism(spark))
    tasks: List[Dict[str, str]] = [{} for _ in range(count)]
    for g in groups:
        for k in range(outputs[g]):
            tasks[(first[g] + k) % count][part[g]] = g
    return _Job(groups, outputs, tasks, first, runs)


def _grouped_job(spark, groups, outputs) -> _Job:
    """A compaction job of groups each read and cut by one task, packed into tasks
    (core/compaction.pack_groups)."""
    packed = pack_groups([(g, files[0].partition, sum(f.bytes for f in files))
                          for g, files in sorted(groups.items())],
                         TASKS_PER_CORE * default_parallelism(spark))
    tasks = [{groups[g][0].partition: g for g in ids} for ids in packed]
    return _Job(groups, outputs, tasks, whole_groups=True)


def _write_groups(locked, plan, groups, staging, done=0):
    """Each group's rows, ordered, written as its planned number of files, one directory per
    Spark job under staging; returns [(the job's tasks, its directory)]. A job whose files a
    writer moved meanwhile (the read fails) is left out: its groups are dropped. done: the
    plan's groups before these (for the log)."""
    if not groups:  # a plan a crash cut short before its files were recorded
        return []
    staged = []
    for k, job in enumerate(_jobs(locked.spark, plan, groups)):
        first, done = done + 1, done + len(job.groups)
        which = f"group {first}" if len(job.groups) == 1 else f"groups {first}-{done}"
        out = f"{staging}/job-{k}"
        locked.log.phase(f"{which} of {group_count(plan)}")  # the Spark UI's description
        try:
            tasks = _write_job(locked, plan, job, (which, out))
        except Exception:
            if _all_in_place(locked, [f for files in job.groups.values() for f in files]):
                raise
            locked.log(f"{which}: a writer replaced some of its files meanwhile; dropped")
            locked.fs.delete(out)
            continue
        staged.append((tasks, out))
        if done < group_count(plan):
            locked.log.groups_written(done, group_count(plan))
    return staged


def _write_job(locked, plan, job: _Job, where) -> List[Dict[str, str]]:
    """One Spark job writing its groups (their planned files each) into the directory out;
    returns its tasks' groups, {partition: group id} per task."""
    which, out = where
    spark, pcols, groups = locked.spark, locked.info.partition_columns, job.groups
    cluster_by, strategy = CLUSTER_BY.get(plan.extra, []), STRATEGY.get(plan.extra, COMPACTION)
    rel_paths = [f.path for g in groups for f in groups[g]]
    how = f"{strategy} on {', '.join(cluster_by)}" + (", a group per task" if job.whole_groups
                                                      else "") if strategy != "none" else \
        "in file order" + (", whole files per task" if job.runs else
                           ", a group per task" if job.whole_groups else "")
    total = sum(job.outputs[g] for g in groups)
    locked.log(f"{'compacting' if strategy == 'none' else 'clustering'} {which} of "
               f"{group_count(plan)}: {count_of(len(rel_paths), 'file')} -> {total}, {how}")
    # the schema as Spark reads the table, from its description (no lookup per job)
    schema = locked.info.read_schema or spark.table(locked.name).schema
    options = {**_bloom_options(locked, plan, rel_paths),
               **dictionary_options(spark, locked.proto.location,
                                    [f for g in groups for f in groups[g]])}
    if job.runs and _write_aligned(locked, job, schema, (out, options)):
        return job.tasks
    if job.whole_groups and strategy == COMPACTION:
        if _write_grouped_runs(locked, job, schema, (out, options)):
            return job.tasks
        job = _packed_job(spark, groups, job.outputs)   # in_file_order's layout
    elif job.whole_groups:
        tasks = _write_whole_groups(locked, job, (cluster_by, strategy), (out, options, schema))
        if tasks is not None:
            return tasks
    df = read_files(spark, locked.proto.location, schema, rel_paths)
    if strategy == "none":
        rows = in_file_order(spark, df, groups, job.outputs, pcols, locked.proto.location,
                             (len(job.tasks), job.first))
    elif len(groups) == 1:
        rows = order_rows(df, cluster_by, strategy, job.outputs[next(iter(groups))],
                          _recorded_rows(groups))
    elif all(job.outputs[g] == 1 for g in groups):
        rows = one_file_per_group(spark, df, {g: [f.path for f in files]
                                              for g, files in groups.items()},
                                  cluster_by, strategy, pcols)
    else:
        rows = order_groups(spark, df, CurveGroups(
            {g: [f.path for f in files] for g, files in groups.items()}, job.outputs, pcols,
            _recorded_rows(groups)), (cluster_by, strategy))
    settings = {_OPEN_COST: str(SMALL_FILE_OPEN_COST), **_JIT_SIZED_CODEGEN}
    with session_conf(spark, settings):  # splits and generated code are made here
        rows.write.partitionBy(*pcols).options(**options).mode("append").parquet(out)
    return job.tasks


def _recorded_rows(groups: Mapping[str, Sequence[FileEntry]]) -> Optional[int]:
    """The groups' rows as the timeline recorded their files' (None: a file without a count)."""
    counts = [f.rows for files in groups.values() for f in files]
    return sum(counts) if all(n >= 0 for n in counts) else None


def _bloom_options(locked, plan, rel_paths) -> Dict[str, str]:
    """The Parquet options that give the new files the Bloom filter the table's writes give
    theirs (bloom.recorded_key), sized by the rewritten files' bytes per row."""
    key = recorded_key(locked.proto.timeline.completed())
    if key is None:
        return {}
    chosen = set(rel_paths)
    files = [f for f in plan.removed if f.path in chosen and f.rows > 0]
    bpr = sum(f.bytes for f in files) / sum(f.rows for f in files) if files else None
    return write_options(key, TARGET_FILE_SIZE.get(plan.extra) or 1, bpr)


def _write_aligned(locked, job: _Job, schema, where) -> bool:
    """Write a job of groups cut into runs of whole files by tasks that each read their
    runs' files, run k of group g in task first[g] + k (no shuffle, no join); False, with
    nothing written, when Spark would not plan a scan as one task (the job then goes
    through in_file_order)."""
    spark, pcols = locked.spark, locked.info.partition_columns
    out, options = where
    by_task: List[List[str]] = [[] for _ in job.tasks]
    # only a job with runs is written aligned (the caller's `job.runs and ...`)
    for g, runs in sorted(cast(Dict[str, List[list]], job.runs).items()):
        for k, run in enumerate(runs):
            by_task[(job.first[g] + k) % len(by_task)] += [f.path for f in run]
    rows = read_per_task(spark, locked.proto.location, schema, by_task, pcols)
    with session_conf(spark, _ONE_TASK_SCAN):  # the scans are planned here
        if not _one_task_each(locked, rows, len(by_task)):
            return False
        rows.write.partitionBy(*pcols).options(**options).mode("append").parquet(out)
    return True


def _one_task_each(locked, rows: DataFrame, lists: int) -> bool:
    """Whether Spark plans rows (a union of one scan per file list) as one task per list,
    saying so when it does not (the caller then writes through a shuffle)."""
    planned = num_partitions(rows)
    if planned != lists:
        locked.log(f"Spark planned {count_of(planned, 'task')} for "
                   f"{count_of(lists, 'file list')}; rewriting with a shuffle instead")
    return planned == lists


def _write_grouped_runs(locked, job: _Job, schema, where) -> bool:
    """Write a job of compaction groups each read and cut into its runs by one task
    (runs_per_group; job.tasks: each task's group in each partition), no shuffle; False,
    with nothing written, when Spark would not plan a task's scan as one task (the job then
    goes through in_file_order)."""
    spark, pcols, location = locked.spark, locked.info.partition_columns, locked.proto.location
    out, options = where
    by_task = [[f.path for g in task.values() for f in job.groups[g]] for task in job.tasks]
    union = scan_per_task(spark, location, schema, by_task, _FILE_AND_ROW)
    rows = runs_per_group(spark, union, job.groups, job.outputs, (pcols, location))
    with session_conf(spark, _ONE_TASK_SCAN):  # the scans are planned here
        if not _one_task_each(locked, rows, len(by_task)):
            return False
        rows.write.partitionBy(*pcols, SLOT).options(**options).mode("append").parquet(out)
    return True


def _write_whole_groups(locked, job: _Job, curve_of, where) -> Optional[List[Dict[str, str]]]:
    """Write a job of curve groups, each read and cut into its files by one task
    (cells_per_group), no shuffle; returns the tasks' groups, or None, with nothing written,
    when Spark would not plan a group's scan as one task (the job then goes through
    order_groups)."""
    spark, pcols, location = locked.spark, locked.info.partition_columns, locked.proto.location
    out, options, schema = where
    order = sorted(job.groups)
    files = {g: [f.path for f in job.groups[g]] for g in order}
    union = scan_per_task(spark, location, schema, [files[g] for g in order])
    with session_conf(spark, _ONE_TASK_SCAN):  # the scans are planned here
        if not _one_task_each(locked, union, len(order)):
            return None
    whole = read_files(spark, location, schema, [p for g in order for p in files[g]])
    rows = cells_per_group(spark, union, CurveGroups(files, job.outputs, pcols,
                                                     _recorded_rows(job.groups)),
                           curve_of, whole)
    with session_conf(spark, {**_JIT_SIZED_CODEGEN, **_ONE_TASK_SCAN}):
        rows.write.partitionBy(*pcols, SLOT).options(**options).mode("append").parquet(out)
    return [{job.groups[g][0].partition: g} for g in order]


def _all_in_place(locked, files) -> bool:
    """Whether every file is still at its path with its planned size."""
    location = locked.proto.location
    sizes = {f.path[len(location):].lstrip("/"): f.size
             for f in locked.fs.list_files(location)}
    return all(sizes.get(f.path) == f.bytes for f in files)


def one_file_per_group(spark: SparkSession, df: DataFrame,
                       files_by_group: Mapping[str, Sequence[str]], cluster_by: Sequence[str],
                       strategy: str, pcols: Sequence[str] = ()) -> DataFrame:
    """Groups that each become one file: route group i to task i, sort within it."""
    keys = routing_keys(len(files_by_group))
    route = {p: keys[i] for i, g in enumerate(sorted(files_by_group)) for p in files_by_group[g]}
    data_cols = df.columns
    routed = with_file_values(spark, df, pcols, route, "__sized_route") \
        .repartition(len(keys), "__sized_route")
    return _sort_within(routed.drop("__sized_route"), cluster_by, strategy, data_cols)


def read_per_task(spark: SparkSession, location: str, schema: Optional[StructType],
                  task_files: Sequence[Sequence[str]], pcols: Sequence[str]) -> DataFrame:
    """The rows of each list of files read by one task of its own (scan_per_task), task i
    holding task_files[i]. Within a task, rows are ordered by partition, then file, then
    row: each file's rows in their order, and in the order Spark's writer needs, so it adds
    no sort of its own."""
    union = scan_per_task(spark, location, schema, task_files,
                          {"__sized_file": "file_path", "__sized_row": "row_index"})
    return union.sortWithinPartitions(*pcols, "__sized_file", "__sized_row") \
        .drop("__sized_file", "__sized_row")


# Where a row is read from, for _with_runs (a union of scans has no _metadata column: each
# scan adds these before it)
_FILE_AND_ROW = {"__sized_name": "file_name", "__sized_row": "row_index"}


def scan_per_task(spark: SparkSession, location: str, schema: Optional[StructType],
                  task_files: Sequence[Sequence[str]],
                  metadata: Mapping[str, str] = {}) -> DataFrame:
    """A union of one scan per list of files, planned as one task each under
    _ONE_TASK_SCAN: task i reads task_files[i]. metadata: {column: field of _metadata}
    each scan adds."""
    reads = [_with_metadata(read_files(spark, location, schema, paths), metadata)
             for paths in task_files]
    union = reads[0]
    for more in reads[1:]:
        union = union.union(more)
    return union


def _with_metadata(read: DataFrame, metadata: Mapping[str, str]) -> DataFrame:
    """A scan's rows with {column: field of _metadata} added."""
    return read.select("*", *[F.col(f"_metadata.{field}").alias(name)
                              for name, field in metadata.items()])


def in_file_order(spark: SparkSession, df: DataFrame, groups: Mapping[str, Sequence[FileEntry]],
                  outputs: Mapping[str, int], pcols: Sequence[str], location: str,
                  packing: Tuple[int, Mapping[str, int]]) -> DataFrame:
    """Compaction's rows, unsorted, each output file's rows in one task: each group's rows
    cut into outputs[g] equal runs in file order (_with_runs), run k going to task
    (first[g] + k) mod tasks (packing = (tasks, first), core/compaction.pack_outputs: no
    task holds two runs of one partition). Within a task, rows are ordered by partition,
    then file, then row: each partition's run in file order, and in the order Spark's
    writer needs, so it adds no sort of its own."""
    tasks, first = packing
    keys = local_table(spark, [("__sized_task", "bigint"), ("__sized_route", "bigint")],
                       list(enumerate(routing_keys(tasks))))
    keyed = _with_runs(spark, _with_metadata(df, _FILE_AND_ROW), groups, outputs,
                       (pcols, location), first)
    routed = (keyed.withColumn("__sized_task", F.pmod(F.col("__sized_run"), F.lit(tasks))
                               .cast("bigint"))
              .join(F.broadcast(keys), "__sized_task"))
    return (routed.repartition(tasks, "__sized_route")
            .sortWithinPartitions(*pcols, "__sized_file", "__sized_row").select(*df.columns))


def runs_per_group(spark: SparkSession, union: DataFrame,
                   groups: Mapping[str, Sequence[FileEntry]], outputs: Mapping[str, int],
                   where: Tuple[Sequence[str], str]) -> DataFrame:
    """Compaction's rows of groups each read whole by one task (union: scan_per_task's, a
    task's files those of whole groups), each group cut into its outputs[g] equal runs in
    file order as in_file_order cuts them, the job's file number in SLOT (groups in sorted
    order, each its files in a row). Within a task rows are ordered by partition, SLOT,
    file, then row: Spark's writer, partitioning by SLOT too, writes each run as one file
    (staged_file drops SLOT's directory), adding no sort of its own. No shuffle."""
    order = sorted(groups)
    first = {g: sum(outputs[h] for h in order[:i]) for i, g in enumerate(order)}
    keyed = _with_runs(spark, union, groups, outputs, where, first)
    data_cols = [c for c in union.columns if c not in _FILE_AND_ROW]
    return (keyed.withColumn(SLOT, F.col("__sized_run"))
            .sortWithinPartitions(*where[0], SLOT, "__sized_file", "__sized_row")
            .select(*data_cols, SLOT))


def _with_runs(spark, df, groups: Mapping[str, Sequence[FileEntry]], outputs: Mapping[str, int],
               where: Tuple[Sequence[str], str], first: Mapping[str, int]) -> DataFrame:
    """df's rows (with _FILE_AND_ROW's columns) of the groups' files with their run,
    `__sized_run` = first[g] + k for run k of the outputs[g] equal runs a group's rows are
    cut into, counted through its files in their order and each file's rows in their order
    in it (_metadata.row_index); and `__sized_file`, `__sized_row` (the file's index, the
    row's in it) to keep that order.
    Rows per file come from the timeline; a file whose count is unknown is counted first."""
    pcols, location = where
    files = [f for g in sorted(groups) for f in groups[g]]
    rows_of = {f.path: f.rows for f in files}
    unknown = [p for p, n in rows_of.items() if n < 0]
    if unknown:  # files recorded without a count
        rows_of.update(rows_per_file(spark, location, unknown))
    cuts: Dict[str, Tuple[int, int, int, int, int]] = {}
    for g in sorted(groups):
        offset, total = 0, max(1, sum(rows_of[f.path] for f in groups[g]))
        for f in groups[g]:
            cuts[f.path] = (len(cuts), offset, outputs[g], total, first[g])
            offset += rows_of[f.path]
    keyed = with_file_values(spark, df, pcols, cuts, ("__sized_file", "__sized_offset",
                                                      "__sized_n", "__sized_total",
                                                      "__sized_first"), "__sized_name")
    position = F.col("__sized_offset") + F.col("__sized_row")
    run = F.floor(position * F.col("__sized_n") / F.col("__sized_total"))
    return keyed.withColumn("__sized_run", (F.col("__sized_first") + run).cast("bigint"))


def _sort_within(df, cluster_by, strategy, data_cols):
    if strategy == "linear":
        return df.sortWithinPartitions(*cluster_by)
    curve = with_curve_key(df, cluster_by, strategy, RANK_BITS)
    return curve.df.sortWithinPartitions(curve.key).select(*data_cols)


@dataclass(frozen=True)
class CurveGroups:
    """The groups order_groups cuts: each group's files, its output files, the table's
    partition columns, and the rows of them all (None: unknown, counted)."""
    files: Mapping[str, Sequence[str]]
    outputs: Mapping[str, int]
    pcols: Sequence[str]
    rows: Optional[int]


def order_groups(spark: SparkSession, df: DataFrame, groups: CurveGroups,
                 curve_of: Tuple[Sequence[str], str]) -> DataFrame:
    """Several groups' rows in one job, each group cut into its own outputs[g] grid cells,
    as order_rows cuts one group (_group_cells), and shuffled so file i of the job (groups
    in sorted order, each its files in a row) is task i's, sorted along the curve. For
    groups too big for one task to read and sort (cells_per_group), or a scan Spark would
    not plan as one task per group."""
    index = {p: i for i, g in enumerate(sorted(groups.files)) for p in groups.files[g]}
    data_cols = df.columns
    grouped = with_file_values(spark, df, groups.pcols, index, "__sized_group")
    curve, cell = _group_cells(grouped, groups, curve_of)
    total = sum(groups.outputs.values())
    routes = F.array(*[F.lit(k) for k in routing_keys(total)]).cast("array<bigint>")
    return (curve.df.withColumn("__sized_route", F.element_at(routes, cell + 1))
            .repartition(total, "__sized_route")
            .sortWithinPartitions(curve.key)
            .select(*data_cols))


def cells_per_group(spark: SparkSession, union: DataFrame, groups: CurveGroups,
                    curve_of: Tuple[Sequence[str], str], whole: DataFrame) -> DataFrame:
    """Groups' rows, group i (of the sorted ids) read by task i of `union` (a union of one
    scan per group, planned as one task each under _ONE_TASK_SCAN), each group cut into its
    grid cells as order_groups cuts them, the job's file number in SLOT. Within a task rows
    are sorted by partition, file, then along the curve: Spark's writer, partitioning by
    SLOT too, writes each cell as one file (staged_file drops SLOT's directory), adding no
    sort of its own. No shuffle, no join: a row's group is its task's number. The sample is
    taken from `whole`, the same files in one scan (a task per group made it 2-4x slower)."""
    index = {p: i for i, g in enumerate(sorted(groups.files)) for p in groups.files[g]}
    sample_from = with_file_values(spark, whole, groups.pcols, index, "__sized_group")
    grouped = union.withColumn("__sized_group", F.spark_partition_id())
    curve, cell = _group_cells(grouped, groups, curve_of, sample_from)
    return (curve.df.withColumn(SLOT, cell)
            .sortWithinPartitions(*groups.pcols, SLOT, curve.key)
            .select(*union.columns, SLOT))


def _group_cells(grouped: DataFrame, groups: CurveGroups, curve_of: Tuple[Sequence[str], str],
                 sample_from: Optional[DataFrame] = None) -> Tuple[CurveKey, Column]:
    """grouped's curve key and each row's file of the job (0-based, groups in sorted order,
    each its outputs in a row): the columns' ranks from one sample of all the groups' rows
    (each group's share of it at least SAMPLE_PER_FILE rows a file, `__sized_group` the
    group's index), each group cut into its own cells from its own points of it. One job for
    many groups, not one each: a day's group is a few files, and a Spark job per group (its
    sample, its shuffle, its commit) cost ~1.5 s of fixed work each
    (benchmarks/peer_services.py)."""
    (cluster_by, strategy), outputs = curve_of, groups.outputs
    order = sorted(groups.files)
    total = sum(outputs[g] for g in order)
    curve = with_curve_key(grouped, cluster_by, strategy, RANK_BITS,
                           Sampling(("__sized_group",), SAMPLE_PER_FILE * total, groups.rows,
                                    sample_from))
    points: Dict[int, list] = {}
    for p, (group,) in zip(curve.sample, curve.carried):
        points.setdefault(group, []).append(p)
    cells = [grid_cells(points.get(i, []), outputs[g], sum(outputs[h] for h in order[:i]))
             for i, g in enumerate(order)]
    stacked = group_cell_column(cells, curve, "__sized_group")
    if stacked is not None:
        return curve, stacked
    cell = None   # a group's cells too many for a table: a CASE of a branch per group
    for i, here in enumerate(cell_column(c, curve) for c in cells):
        cell = F.when(F.col("__sized_group") == i, here) if cell is None \
            else cell.when(F.col("__sized_group") == i, here)
    return curve, cast(Column, cell)


def order_rows(df: DataFrame, cluster_by: Sequence[str], strategy: str,
               num_files: int, rows: Optional[int] = None) -> DataFrame:
    """Rows in `num_files` tasks, each a file's rows, sorted. Linear: contiguous ranges of
    the sort. Z-order and Hilbert: the grid cells of core/clustering.grid_cells (boxes in
    the columns' ranks, so min/max rule a file out of a point query on any of them), each
    sorted along the curve (which orders its row groups and pages)."""
    data_cols = df.columns
    if strategy == "linear":
        return df.repartitionByRange(num_files, *cluster_by).sortWithinPartitions(*cluster_by)
    curve = with_curve_key(df, cluster_by, strategy, RANK_BITS, Sampling(rows=rows))
    cells = grid_cells(curve.sample, num_files)
    # bigint, as routing_keys hashes them (Spark hashes an int differently)
    routes = F.array(*[F.lit(k) for k in routing_keys(num_files)]).cast("array<bigint>")
    route = F.element_at(routes, cell_column(cells, curve) + 1)
    return (curve.df.withColumn("__sized_route", route)
            .repartition(num_files, "__sized_route")
            .sortWithinPartitions(curve.key)
            .select(*data_cols))
