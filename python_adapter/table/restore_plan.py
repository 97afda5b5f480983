"""What `sized_restore` can bring back, decided from what is kept (docs/design.md,
"Retention and archival"). Pure: works on the timeline's records and a predicate that says
whether a set-aside copy is still there.

The state right after a completed instant T is the table's files now with the completed
instants after T undone, newest first: each one's adds taken out, its removes put back. It
needs the file lists of the instants after T only (the timeline directory's, or the
archive's history files), not T's own, so an archived instant can be restored too. A file of
that state the table no longer holds comes back from where the newest instant that removed
it set it aside. T can be restored when every such copy is still kept (the cleaner deletes
the set-aside files of instants past retention) and no instant after T defined the table
again (a restore does not bring back another definition's columns or location).
"""
from dataclasses import dataclass, replace
from typing import Callable, Dict, Iterator, List, Mapping, Sequence, Tuple, cast

from python_adapter.table.timeline import (ARCHIVED, DEFINES_TABLE, FileEntry, Instant,
                                           files_added, files_removed)


@dataclass(frozen=True)
class RestorePlan:
    """The state right after `instant`, as the moves that bring the table back to it."""
    instant: str
    back: Tuple[FileEntry, ...] = ()    # files to bring back; moved_path: their kept copy
    gone: Tuple[FileEntry, ...] = ()    # current files that state did not hold
    missing: Tuple[FileEntry, ...] = ()  # files to bring back whose copy is not kept
    blocked: str = ""                   # why the state cannot be known; '' when it can

    @property
    def possible(self) -> bool:
        return not self.blocked and not self.missing


@dataclass
class _Step:
    """The walk back at one completed instant: the files right after it, and for each
    path an instant after it removed, where the newest such removal set it aside.
    Mutated as the walk goes on: read it, do not keep it."""
    instant: Instant
    state: Dict[str, FileEntry]
    copies: Dict[str, str]
    blocked: str


def _walk_back(history: Sequence[Instant], current: Mapping[str, FileEntry]
               ) -> Iterator[_Step]:
    """One _Step per completed instant of `history` (every instant, oldest first, with its
    file lists where kept), newest first."""
    # the loop sets step.instant before each yield: no step is seen with None
    step = _Step(cast(Instant, None), dict(current), {}, "")
    for inst in reversed([i for i in history if i.state == "completed"]):
        step.instant = inst
        yield step
        if not step.blocked:
            step.blocked = _cannot_undo(inst)
        if step.blocked:
            continue
        for f in inst.added:
            step.state.pop(f.path, None)
        for f in inst.removed:
            step.state[f.path] = replace(f, moved_path="")
            step.copies.setdefault(f.path, f.moved_path)


def _cannot_undo(inst: Instant) -> str:
    """Why the instants before `inst` cannot be reached by undoing it ('' when they can)."""
    if inst.extra.get(DEFINES_TABLE) == "true":
        return (f"a later instant, {inst.instant}, defined the table again (its columns, "
                f"partitioning or location), which a restore does not undo")
    if inst.extra.get(ARCHIVED) == "true" and (files_added(inst) or files_removed(inst)):
        return (f"the file lists of a later instant, {inst.instant}, are no longer kept (its "
                f"archive history file is gone)")
    return ""


def _plan(step: _Step, current: Mapping[str, FileEntry],
          kept: Callable[[str], bool]) -> RestorePlan:
    back = [replace(f, moved_path=step.copies.get(p, ""))
            for p, f in sorted(step.state.items()) if p not in current]
    missing = [f for f in back if not f.moved_path or not kept(f.moved_path)]
    gone = [f for p, f in sorted(current.items()) if p not in step.state]
    return RestorePlan(step.instant.instant, tuple(back), tuple(gone), tuple(missing))


def plan_restore(history: Sequence[Instant], current: Mapping[str, FileEntry], instant: str,
                 kept: Callable[[str], bool]) -> RestorePlan:
    """The plan that brings the table ({rel path: FileEntry} now) back to its state right
    after the completed `instant` (RestorePlan.blocked says why the state is not known:
    an unknown or unfinished instant too)."""
    for step in _walk_back(history, current):
        if step.instant.instant == instant:
            return (RestorePlan(instant, blocked=step.blocked) if step.blocked
                    else _plan(step, current, kept))
    states = {i.instant: i.state for i in history}
    why = ("it is not an instant of the table" if instant not in states
           else f"it is {states[instant]}, not completed")
    return RestorePlan(instant, blocked=why)


def restorable_instants(history: Sequence[Instant], current: Mapping[str, FileEntry],
                        kept: Callable[[str], bool]) -> List[str]:
    """Ids of the completed instants the table can be brought back to, oldest first."""
    out = []
    for step in _walk_back(history, current):
        if step.blocked:
            break
        if _plan(step, current, kept).possible:
            out.append(step.instant.instant)
    return out[::-1]
