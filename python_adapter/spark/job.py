"""The records a write passes around: the job (what, where, how), what its staging step
produced, and the result the dbt layer logs."""
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Callable, Dict, List, Optional, Sequence

from pyspark.sql import DataFrame, SparkSession

from python_adapter.core.config import SizedConfig
from python_adapter.core.sizes import format_duration, format_size
from python_adapter.io.fs import HadoopFS
from python_adapter.spark.catalog import TableRef
from python_adapter.table.commit import CommitProtocol
from python_adapter.table.timeline import FileEntry


class Progress:
    """Logs each phase of one model's write with the time since it started."""

    def __init__(self, log: Callable[[str], None], name: str) -> None:
        self.log, self.name, self.start = log, name, time.monotonic()

    def __call__(self, text: str) -> None:
        self.log(f"[{self.name}] {text} ({format_duration(time.monotonic() - self.start)})")

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.start


@dataclass(frozen=True)
class WriteJob:
    """One write of a model's result: where, what, how, and its progress log."""
    spark: SparkSession
    fs: HadoopFS
    proto: CommitProtocol    # of the table's location, its lock held
    df: DataFrame            # the rows; once shaped, in the table's column order
    table: TableRef
    cfg: SizedConfig
    pcols: tuple             # partition columns, as the model names them
    progress: Progress
    operation: str = "full_refresh"
    data_cols: tuple = ()
    extra: dict = field(default_factory=dict)   # the instant's extra, once requested
    staging: str = ""                           # the instant's staging directory

    @property
    def table_name(self) -> str:
        return f"{self.table.schema}.{self.table.identifier}"

    def shaped(self, column_names: Sequence[str]) -> "WriteJob":
        """The job with its rows in the table's column order: data columns, then partitions."""
        pset = {c.lower() for c in self.pcols}
        data_cols = tuple(c for c in column_names if c.lower() not in pset)
        return replace(self, df=self.df.select(*data_cols, *self.pcols), data_cols=data_cols)


@dataclass(frozen=True)
class Staged:
    """What a write's staging step produced, for its transaction."""
    added: List[FileEntry]
    removed: List[FileEntry]
    files_planned: int
    bytes_per_row: Optional[float]
    registered: set                          # partitions that held files before the write
    changes: Dict[str, int] = field(default_factory=dict)  # rows inserted / updated / deleted


@dataclass
class WriteResult:
    operation: str
    instant: str
    partitions: int
    files_planned: int
    files_written: int
    files_removed: int
    rows: int
    bytes: int
    bytes_per_row: float
    seconds: float

    @property
    def message(self) -> str:
        return (f"{self.operation}: {self.files_written} files, {format_size(self.bytes)}, "
                f"{self.rows} rows in {self.partitions} partitions")

    def as_dict(self) -> dict:
        return {**asdict(self), "message": self.message}


def resolve_names(cfg_cols: Sequence[str], df_cols: Sequence[str]) -> tuple:
    """The model's spelling of the columns a config names (names match case-insensitively)."""
    lookup = {c.lower(): c for c in df_cols}
    return tuple(lookup[c.lower()] for c in cfg_cols)
