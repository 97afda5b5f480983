"""The backend of a Spark Connect client (`method: connect`): every call goes to the
server's extension (io/connect_client.py), which runs it where the storage and the JVM are.
Its filesystem is io/connect_fs.py's ConnectFS, its metastore io/connect_catalog.py's."""
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple

from python_adapter.io.interfaces import Backend, PlanStats, StagedFooter
from python_adapter.io.connect_catalog import ConnectCatalog
from python_adapter.io.connect_client import RemoteError, call
from python_adapter.io.connect_fs import ConnectFS
from python_adapter.io.connect_retries import server_gone
from python_adapter.io.fast_local_fs import decode_fields, encode_fields
from python_adapter.io.session_backend import footer_rows

# The job tag of this thread's jobs, per session: the one we added, so that setting the
# next phase removes it and leaves the caller's own tags alone.
_TAGS = threading.local()


def connect_backend(spark: Any) -> Backend:
    return Backend(ConnectFS(spark), ConnectCatalog(spark), ConnectPlans(),
                   ConnectFooters(spark), ConnectSession(spark))


class ConnectPlans:
    def stats(self, df: Any, optimized: bool = False, executed: bool = False) -> PlanStats:
        got = call(df.sparkSession, "plan.stats", on=df, plan_text=optimized,
                   executed_text=executed)
        return PlanStats(int(got["size"]), int(got["default_size"]), bool(got["deterministic"]),
                         got.get("plan_text"), got.get("executed_text"))

    def partitions(self, df: Any) -> int:
        return int(call(df.sparkSession, "plan.partitions", on=df)["partitions"])

    def sql_type(self, df: Any, column: str) -> str:
        return df.schema[column].dataType.simpleString()

    def select_exprs(self, df: Any, exprs: Sequence[str]) -> Any:
        return df.selectExpr(*exprs)  # the list goes in the plan: no round trip per item

    def read_parquet(self, reader: Any, paths: Sequence[str]) -> Any:
        return reader.parquet(*paths)


class ConnectFooters:
    """Footers are read in the server, where the storage is."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark

    def staged(self, staging: str, key_col: Optional[str]) -> Optional[List[StagedFooter]]:
        try:
            text = call(self.spark, "fs.footers", path=staging, key=key_col)
        except RemoteError:
            return None
        return footer_rows(text)

    def bloom_usable(self) -> bool:
        return True  # the server's extension holds the probe

    def bloom_probe(self, keyed: Any, files: str, key: str) -> Optional[str]:
        try:
            return str(call(self.spark, "plan.bloom_probe", on=keyed, files=files, key=key))
        except RemoteError:
            return None

    def plain_columns(self, files: Sequence[str]) -> Optional[List[str]]:
        try:
            text = call(self.spark, "fs.plain_columns", files=encode_fields(files))
        except RemoteError:
            return None
        return [name for (name,) in decode_fields(str(text), 1)]


class ConnectSession:
    remote = True

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self._parallelism: Optional[int] = None

    def default_parallelism(self) -> int:
        if self._parallelism is None:
            self._parallelism = int(call(self.spark, "session.info")["parallelism"])
        return self._parallelism

    def session_copy(self) -> Optional[Any]:
        """None: a server-side clone gets a class loader of its own and compiles every
        write's generated code again (spark/session_conf.own_session)."""
        return None

    def _tags(self) -> Dict[int, str]:
        return _TAGS.__dict__.setdefault("by_session", {})

    def job_description(self) -> Optional[str]:
        return self._tags().get(id(self.spark))

    def describe_jobs(self, text: Optional[str]) -> None:
        """A client cannot set a job description: the text becomes a job tag (thread-local
        in the client as well; commas, which separate tags, become spaces)."""
        tags = self._tags()
        old = tags.pop(id(self.spark), None)
        if old is not None:
            self.spark.removeTag(old)
        if text:
            tags[id(self.spark)] = text.replace(",", " ")
            self.spark.addTag(tags[id(self.spark)])

    def catalog_description(self) -> Tuple[str, bool]:
        return "the server's catalog", False

    def lost_server(self, exc: BaseException) -> Optional[str]:
        return server_gone(self.spark, exc)
