"""What a table keeps of its past (docs/design.md, "Retention and archival"). Pure.

Every completed instant sets the files it replaced aside; they are what `sized_restore` and
`sized_rollback` bring back. Retention keeps them for the last `commits` completed instants
and for every instant completed in the last `hours` (Hudi's KEEP_LATEST_COMMITS with a time
floor, Delta's VACUUM retention); older set-aside files are deleted by the cleaner, and the
instants themselves are folded into the archive, so a write reads a bounded timeline.
"""
from dataclasses import dataclass
from typing import List, Sequence, Set

DEFAULT_RETAIN_COMMITS = 10
DEFAULT_RETAIN_HOURS = 24.0
# Instants are archived in batches of at least this many, so most commits archive nothing
# and the archive grows by few files.
ARCHIVE_BATCH = 10


@dataclass(frozen=True)
class Retention:
    commits: int = DEFAULT_RETAIN_COMMITS
    hours: float = DEFAULT_RETAIN_HOURS


@dataclass(frozen=True)
class Done:
    """A completed instant as retention sees it."""
    instant: str            # its id; ids order the instants as the timeline replays them
    completed_ms: int       # when it completed (wall clock)


def retained(done: Sequence[Done], retention: Retention, now_ms: int) -> Set[str]:
    """Ids of the completed instants whose set-aside files are kept: the last
    `retention.commits`, and those completed within `retention.hours` of now."""
    ordered = sorted(done, key=lambda d: d.instant)
    keep = {d.instant for d in ordered[max(0, len(ordered) - retention.commits):]}
    cutoff = now_ms - retention.hours * 3_600_000
    return keep | {d.instant for d in ordered if d.completed_ms >= cutoff}


def archivable(done: Sequence[Done], retention: Retention, now_ms: int,
               batch: int = ARCHIVE_BATCH) -> List[str]:
    """Ids of the completed instants to fold into the archive now, oldest first: those past
    retention, once there are at least `batch` of them."""
    keep = retained(done, retention, now_ms)
    old = sorted(d.instant for d in done if d.instant not in keep)
    return old if len(old) >= batch else []
