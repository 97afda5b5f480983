"""sized_restore: bring a table back to its state right after a completed instant, as a
new instant of its own (so a restore is undone like any commit).

What can be restored is decided from what is kept (table/restore_plan.py): the state after
instant T is the table's files now with the instants after T undone; the files of that
state the table no longer holds come back from where the instants after T set them aside,
as long as the cleaner has not deleted them. The restore instant adds those back and sets
aside the current files that state did not hold; files in both stay.
"""
from dataclasses import replace
from typing import Callable, cast

from pyspark.sql import SparkSession

from python_adapter.core.sizes import count_of
from python_adapter.errors import ConfigError
from python_adapter.spark.catalog.tables import TableRef
from python_adapter.spark.handle import partitions_holding
from python_adapter.spark.locking import locked_table
from python_adapter.table.archive import table_retention
from python_adapter.table.files import current_files
from python_adapter.table.restore_plan import RestorePlan, plan_restore, restorable_instants
from python_adapter.table.timeline import Instant
from python_adapter.table.transaction import TxnOptions

RESTORED_TO = "restored_to"


def restore_table(spark: SparkSession, table: TableRef, instant: str,
                  log: Callable[[str], None] = print) -> str:
    """Restore the table to its state right after `instant`; returns the restore's own
    instant. Nothing changes when `instant` cannot be restored (the error says why and
    names those that can)."""
    instant = str(instant).strip()
    name = table.name
    with locked_table(spark, table, "restore", log=log) as here:
        fs, proto = here.fs, here.proto
        timeline = proto.timeline
        current = {f.path: f for f in current_files(fs, proto.location, timeline, check=name)}
        history = timeline.history()
        kept_dirs = {st.name for st in fs.list_dir(proto.replaced_dir)}

        def in_kept_dir(copy: str) -> bool:
            """The cleaner deletes an instant's set-aside files as a whole directory."""
            rel = copy[len(proto.replaced_dir):].lstrip("/")
            return copy.startswith(proto.replaced_dir) and rel.split("/")[0] in kept_dirs

        plan = plan_restore(history, current, instant, kept=in_kept_dir)
        if plan.possible:  # and each copy really there: one listing per directory
            there = fs.existing(f.moved_path for f in plan.back)
            plan = replace(plan, missing=tuple(f for f in plan.back if f.moved_path not in there))
        if not plan.possible:
            can = restorable_instants(history, current, kept=in_kept_dir)
            raise ConfigError(f"instant: {instant!r} cannot be restored: {_why(plan, timeline)}"
                              f"; {name} can be restored to {', '.join(can) or 'none'}. "
                              f"Nothing changed")
        # a partition that holds files now is registered: only the others are created
        with here.transaction("restore", TxnOptions(
                extra={RESTORED_TO: instant},
                registered=partitions_holding(current.values()))) as txn:
            txn.add(list(plan.back))
            txn.remove(list(plan.gone))
    done = cast(Instant, txn.done)  # the transaction completed
    log(f"restored {name} to {instant} as {done.instant}: "
        f"{count_of(len(plan.back), 'file')} back, "
        f"{len(plan.gone)} set aside")
    return done.instant


def _why(plan: RestorePlan, timeline) -> str:
    """The real reason a plan is not possible, for the error."""
    if plan.blocked:
        return plan.blocked
    retention = table_retention(timeline)
    return (f"{len(plan.missing)} of the files it held were deleted by the cleaner, past the "
            f"table's retention (retain_commits={retention.commits}, "
            f"retain_hours={retention.hours:g}), e.g. {plan.missing[0].path}")
