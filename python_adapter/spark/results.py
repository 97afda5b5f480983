"""What the operations without figures of their own return: one record each, holding what
a caller acts on (an instant, a path, whether a lock was broken) and the line the dbt
operations print (`message`), so callers and tests read the record, not the log's wording.
The operations with figures return their own records beside their code: WriteResult
(spark/job.py), ClusterResult (services/cluster_exec.py), CleanResult (services/clean.py),
RepairResult (services/repair.py)."""
from dataclasses import dataclass
from enum import Enum
from typing import Tuple

from python_adapter.core.sizes import count_of


@dataclass(frozen=True)
class RollbackResult:
    table: str          # schema.identifier
    instant: str        # the completed commit undone

    @property
    def message(self) -> str:
        return f"Rolled back {self.table} to before commit {self.instant}"


@dataclass(frozen=True)
class RestoreResult:
    table: str
    restored_to: str    # the retained instant whose state the table holds again
    instant: str        # the restore's own instant

    @property
    def message(self) -> str:
        return f"Restored {self.table} to {self.restored_to} (instant {self.instant})"


@dataclass(frozen=True)
class RecoverResult:
    table: str
    instants: Tuple[str, ...]   # the unfinished instants rolled back, oldest first

    @property
    def message(self) -> str:
        return (f"Recovered {self.table}: "
                f"{count_of(len(self.instants), 'unfinished instant')} rolled back")


class LockState(str, Enum):
    """Where a table's writer lock stands after `unlock`."""
    NOT_LOCKED = "not locked"
    HELD = "held"           # someone holds it; without force it stays
    BROKEN = "broken"       # with force: broken, the holder's unfinished work rolls back next


@dataclass(frozen=True)
class UnlockResult:
    table: str
    state: LockState
    message: str        # who held it (host, pid, operation, age, lease) and what comes next


@dataclass(frozen=True)
class ReportResult:
    table: str
    path: str           # the qualified path of the HTML report written

    @property
    def message(self) -> str:
        return f"Report of {self.table} written to {self.path}"
