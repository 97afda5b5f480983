"""The records a write passes around: the job (what, where, how), what its staging step
produced, and the result the dbt layer logs."""
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from enum import Enum
from typing import Callable, Iterator, List, Optional, Sequence, cast

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.types import StructType
from pyspark.sql import functions as F

from python_adapter.io.session_info import (describe_jobs, job_description, plan_stats,
                                            select_exprs)
from python_adapter.core.config import SizedConfig
from python_adapter.core.notice import Notice
from python_adapter.core.sizes import count_of, format_count, format_duration, format_size
from python_adapter.io.interfaces import FileSystem
from python_adapter.spark.catalog.tables import TableRef
from python_adapter.spark.handle import Locked
from python_adapter.spark.session_conf import session_conf
from python_adapter.table.commit import CommitProtocol
from python_adapter.table.timeline import FileEntry


@contextmanager
def job_phases(spark: SparkSession, name: str, first: str) -> Iterator[Callable[[str], None]]:
    """The Spark jobs this thread starts meanwhile are described `<name>: <phase>` (the
    Spark UI ties each to a model and a step), `first` until the phase yielded is given
    another; on exit the description from before is back, so the caller's later jobs (and
    a write's, after an inline service) do not inherit it."""
    before = job_description(spark)

    def phase(what: str) -> None:
        describe_jobs(spark, f"{name}: {what}")
    phase(first)
    try:
        yield phase
    finally:
        describe_jobs(spark, before)


class Progress:
    """Logs each phase of one model's write with the time since it started; a line that
    starts a phase names it (`phase`), and the Spark jobs from then on carry it
    (job_phases)."""

    def __init__(self, log: Callable[[str], None], name: str,
                 phases: Optional[Callable[[str], None]] = None) -> None:
        self.log, self.name, self.start = log, name, time.monotonic()
        self.phases = phases

    def __call__(self, text: str, phase: Optional[str] = None) -> None:
        if phase:
            self.phase(phase)
        line = f"[{self.name}] {text} ({format_duration(time.monotonic() - self.start)})"
        self.log(Notice(line) if isinstance(text, Notice) else line)

    def phase(self, name: str) -> None:
        """The Spark jobs from now on carry `<model>: <name>` (a phase without a line)."""
        if self.phases:
            self.phases(name)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.start


# A table service's run says how far it got at dbt's default level at most this often
# (seconds), between the lines of its committed batches: a clustering of 30 groups in 30
# Spark jobs over 32 s then prints 3 lines, a post-hook's run of a few seconds none.
PROGRESS_EVERY = 10.0


class ServiceProgress:
    """The log of a table service's run (clustering, compaction) on one table: its phase
    lines as given (debug), a line at dbt's default level per committed batch of groups and
    at most every PROGRESS_EVERY seconds while groups are written, and the description of
    its Spark jobs (`phase`)."""

    def __init__(self, log: Callable[[str], None], name: str, service: str,
                 phases: Callable[[str], None]) -> None:
        self.log, self.name, self.service, self.phases = log, name, service, phases
        self.start = self.last = time.monotonic()

    def __call__(self, text: str) -> None:
        self.log(text)

    def phase(self, what: str) -> None:
        """The Spark jobs from now on carry `<table>: <service> <what>`."""
        self.phases(f"{self.service} {what}")

    def notice(self, text: str) -> None:
        """`<table>: <service> <text> (<time since the start>)` at dbt's default level."""
        self.last = time.monotonic()
        self.log(Notice(f"{self.name}: {self.service} {text} "
                        f"({format_duration(self.last - self.start)})"))

    def groups_written(self, done: int, total: int) -> None:
        """`done` of the plan's `total` groups are written: a line if none came for a while."""
        if time.monotonic() - self.last >= PROGRESS_EVERY:
            self.notice(f"{done} of {count_of(total, 'group')} written")

    def batch_committed(self, number: str, groups: int, files: tuple) -> None:
        """A batch (`2/5`) of `groups` groups committed, files (replaced, written)."""
        self.notice(f"batch {number}, {count_of(groups, 'group')}, "
                    f"{count_of(files[0], 'file')} -> {files[1]}")


@contextmanager
def service_progress(spark: SparkSession, table: TableRef, service: str,
                     log: Callable[[str], None]) -> Iterator[ServiceProgress]:
    """A table service's ServiceProgress; its Spark jobs described until the run ends."""
    name = f"{table.schema}.{table.identifier}"
    with job_phases(spark, name, f"{service} plan") as phases:
        yield ServiceProgress(log, name, service, phases)


@dataclass(frozen=True)
class WriteJob:
    """One write of a model's result: where, what, how, and its progress log."""
    spark: SparkSession
    fs: FileSystem
    locked: Optional[Locked]    # the table at the write's location, its lock held
    df: DataFrame            # the rows; once shaped, in the table's column order
    table: TableRef
    cfg: SizedConfig
    pcols: tuple             # partition columns, as the model names them
    progress: Progress
    operation: str = "full_refresh"
    data_cols: tuple = ()
    extra: dict = field(default_factory=dict)   # the instant's extra, once requested
    staging: str = ""                           # the instant's staging directory
    table_schema: Optional[StructType] = None   # an existing table's, as Spark reads it

    @property
    def table_name(self) -> str:
        return f"{self.table.schema}.{self.table.identifier}"

    @property
    def proto(self) -> CommitProtocol:
        return cast(Locked, self.locked).proto  # read once the write holds the lock

    def read_schema(self) -> StructType:
        """The table's schema for reading its files: the one its description gave under the
        lock (a metastore lookup and an analysis fewer per write), else the catalog's now."""
        if self.table_schema is not None:
            return self.table_schema
        return self.spark.table(self.table_name).schema

    def shaped(self, column_names: Sequence[str]) -> "WriteJob":
        """The job with its rows in the table's column order: data columns, then partitions."""
        pset = {c.lower() for c in self.pcols}
        data_cols = tuple(c for c in column_names if c.lower() not in pset)
        return replace(self, df=select_names(self.df, [*data_cols, *self.pcols]),
                       data_cols=data_cols)


@dataclass(frozen=True)
class RowChanges:
    """What a write did to the table's rows (an upsert counts by key: a key that changes
    partition is updated; a delete of a key the table does not hold counts for nothing)."""
    inserted: int = 0
    updated: int = 0
    deleted: int = 0

    def text(self) -> str:
        parts = [f"{format_count(n)} {what}" for n, what in
                 ((self.inserted, "inserted"), (self.updated, "updated"),
                  (self.deleted, "deleted")) if n]
        return ", ".join(parts) or "no rows changed"


class Route(str, Enum):
    """The way a write went, a named value of its result: tests and run-operations read it
    instead of the log's wording."""
    PLANNED = "planned"                     # counted per partition, planned, routed (Algorithms 1, 2)
    SMALL_BATCH = "small batch"             # no count: one task writes each partition's file
    FILE_A_PARTITION = "a file a partition"  # no count: each partition's rows in one task
    SMALL_INSERT = "small insert"           # an insert topping up small files in one task
    NEW_KEYS = "insert of new keys"         # an upsert no file's key range meets, as a small insert
    SMALL_UPSERT = "small upsert"           # an upsert merged with the files it may touch, one task
    BIN_PACKED = "bin-packed"               # tagged, bin-packed, written by slots (Algorithm 3)


@dataclass(frozen=True)
class Written:
    """The files a full build or insert_overwrite wrote to staging, and from what plan."""
    added: List[FileEntry]
    files_planned: int
    bytes_per_row: Optional[float]
    route: Route


@dataclass(frozen=True)
class Staged:
    """What a write's staging step produced, for its transaction."""
    added: List[FileEntry]
    removed: List[FileEntry]
    files_planned: int
    bytes_per_row: Optional[float]
    files_before: int                        # the table's files before the write
    changes: RowChanges
    route: Route


@dataclass
class WriteResult:
    operation: str
    instant: str
    partitions: int             # partitions that received files
    files_planned: int
    files_written: int
    files_removed: int
    files_before: int
    rows: int                   # rows in the files written (rewritten files' old rows too)
    bytes: int
    bytes_per_row: float
    seconds: float
    changes: RowChanges
    target_file_size: int
    partitioned: bool = False   # the table has partition columns (`partitions` is 1 if not)
    route: Route = Route.PLANNED

    @property
    def files_after(self) -> int:
        return self.files_before - self.files_removed + self.files_written

    @property
    def message(self) -> str:
        """The model's one summary line."""
        where = f" in {count_of(self.partitions, 'partition')}" if self.partitioned else ""
        return (f"{self.operation}: {self.changes.text()}; files {format_count(self.files_before)}"
                f" -> {format_count(self.files_after)} ({format_count(self.files_written)} "
                f"written, {format_count(self.files_removed)} replaced), "
                f"{format_size(self.bytes, like=self.target_file_size)}{where}, "
                f"{format_duration(self.seconds)}")

    def as_dict(self) -> dict:
        changed = self.changes.inserted + self.changes.updated + self.changes.deleted
        return {**asdict(self), "route": self.route.value, "message": self.message,
                "rows_changed": changed}


def quoted(name: str) -> str:
    """A column name as Spark SQL text."""
    return "`" + name.replace("`", "``") + "`"


def select_names(df: DataFrame, names: Sequence[str]) -> DataFrame:
    """df.select(*names), in a few calls into the JVM whatever the number of columns:
    pyspark makes a Column per name, two calls each (~2 s for 2,000 columns, issue 46)."""
    return select_exprs(df, [quoted(n) for n in names])


def delete_flag(cfg: SizedConfig) -> Column:
    """True on a row the model flags deleted (its delete_column true; null is not)."""
    if not cfg.delete_column:
        return F.lit(False)
    return F.coalesce(F.col(cfg.delete_column).cast("boolean"), F.lit(False))


def resolve_names(cfg_cols: Sequence[str], df_cols: Sequence[str]) -> tuple:
    """The model's spelling of the columns a config names (names match case-insensitively)."""
    lookup = {c.lower(): c for c in df_cols}
    return tuple(lookup[c.lower()] for c in cfg_cols)


# Spark plans a cached query with AQE unable to change its output partitioning (so later
# queries may rely on it), which leaves a cache of a query that shuffles with one partition
# per spark.sql.shuffle.partitions: 202 partitions for a snapshot's 20,000 staging rows,
# each scan of the cache 200 tasks (2.5 s; 0.1 s with AQE's 4). A write's cached batch is
# only read by the write's own queries, which shuffle it again where they need to. Spark
# 4 only: Spark 3.5's AQE does not coalesce the last stage of a cached plan.
_COALESCED_CACHE = {"spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true"}


def cache_batch(spark: SparkSession, df: DataFrame) -> DataFrame:
    """df persisted in memory and on disk, its shuffle partitions coalesced by AQE."""
    with session_conf(spark, _COALESCED_CACHE):  # read when persist() plans the query
        return df.persist(StorageLevel.MEMORY_AND_DISK)


def worth_caching(df: DataFrame) -> bool:
    """Whether a write that reads `df` several times (count, sample, write) should cache it.

    Running the plan again costs one more read of its files when it only scans, filters and
    projects; caching costs building and reading a columnar cache of every row, which the
    backfill benchmark measured at more than the reads it saves. A plan that shuffles
    (joins, aggregations, windows, sorts) is cached, so it runs once; so is a
    non-deterministic one (rand(), uuid()), so the counts the plan is made from are the
    rows that get written."""
    stats = plan_stats(df, executed=True)
    return not stats.deterministic or "Exchange" in cast(str, stats.executed)  # asked for
