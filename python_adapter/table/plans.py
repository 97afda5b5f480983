"""A table service's plan as the timeline keeps it: a `requested` replacecommit marked
`scheduled`, whose removed files are the files of its groups (file_group: the group id)
and whose extra gives each group's output file count. A run executes it whole, as the
plan's own instant, or (partial progress) a batch of groups at a time, each committed as a
replacecommit of its own naming the plan and its groups; the plan is closed after its last
batch. Plain data over the timeline: the Spark layer writes the files."""
from typing import Collection, Dict, Iterable, List, Mapping, Protocol, Sequence, Set, Tuple

from python_adapter.table.extra import CLUSTER_BY, STRATEGY, TARGET_FILE_SIZE, output_files
from python_adapter.table.commit import CommitProtocol
from python_adapter.table.timeline import FileEntry, Instant, Timeline

SCHEDULED = "scheduled"
PLAN = "plan"                   # a batch's extra: the plan it carried out part of
PLAN_GROUPS = "plan_groups"     # ... and the groups it committed, comma-separated


class PlannedGroup(Protocol):
    """A group as core's planners give it (core/clustering, core/compaction). Read-only
    (properties), as the planners' frozen dataclasses are."""

    @property
    def group_id(self) -> str: ...

    @property
    def output_files(self) -> int: ...

    @property
    def files(self) -> Sequence[Tuple[str, int]]: ...   # (rel path, bytes)


def schedule_plan(proto: CommitProtocol, operation: str, partition_columns: Iterable[str],
                  groups: Iterable[PlannedGroup], current: Iterable[FileEntry],
                  extra: Mapping[str, str]) -> Instant:
    """The groups as a scheduled replacecommit, written once: their files in `removed`
    (file_group = the group id, with what the timeline knows of each), each group's output
    file count in extra."""
    entry = {f.path: f for f in current}
    record: Dict[str, str] = {SCHEDULED: "true", **extra}
    removed = []
    for g in groups:
        record.update(output_files(g.group_id).entry(g.output_files))
        for rel, _size in g.files:
            f = entry[rel]
            removed.append(FileEntry(f.partition, f.path, f.rows, f.bytes, g.group_id, "",
                                     f.key_min, f.key_max))
    return proto.request(operation, partition_columns, action="replacecommit", extra=record,
                         removed=removed)


def planned_groups(plan: Instant) -> Dict[str, List[FileEntry]]:
    """{group id: [FileEntry]} as the plan lists them, in its order."""
    groups: Dict[str, List[FileEntry]] = {}
    for f in plan.removed:
        groups.setdefault(f.file_group, []).append(f)
    return groups


def group_count(plan: Instant) -> int:
    return len({f.file_group for f in plan.removed})


def changed_groups(groups: Mapping[str, Sequence[FileEntry]],
                   current: Mapping[str, FileEntry]) -> Set[str]:
    """The groups a writer changed since they were planned: a file gone or of another size
    (`current`: the table's files now, by rel path)."""
    return {g for g, files in groups.items()
            if any(current.get(f.path) is None or current[f.path].bytes != f.bytes
                   for f in files)}


def committed_groups(timeline: Timeline, plan: Instant) -> Set[str]:
    """The plan's groups that completed batches (partial progress) committed."""
    return {g for i in timeline.completed(("replacecommit",))
            if i.extra.get(PLAN) == plan.instant
            for g in i.extra.get(PLAN_GROUPS, "").split(",") if g}


def batch_extra(plan: Instant, kept: Collection[str]) -> Dict[str, str]:
    """A batch's record: the plan's strategy and target, the plan and the groups it did."""
    extra = {k.name: plan.extra[k.name] for k in (STRATEGY, CLUSTER_BY, TARGET_FILE_SIZE)
             if k.name in plan.extra}
    return {**extra, PLAN: plan.instant, PLAN_GROUPS: ",".join(sorted(kept))}


def close_plan(proto: CommitProtocol, plan: Instant) -> None:
    """A plan whose batches are all committed (or dropped) is done: its staging goes, then
    its requested instant. A crash in between leaves a plan with nothing left to do, which
    the next run closes."""
    proto.fs.delete(proto.staging_dir(plan.instant))
    proto.timeline.delete_unfinished(plan)
