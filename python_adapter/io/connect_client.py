"""The client of the Spark Connect server's extension (the jar of python_adapter/io/
java_connect, class `sizedspark.connect.SizedOps`): the engine's file, metastore and JVM
operations over `method: connect`, run where the server's Hadoop configuration reaches the
table's storage. The dbt host needs no JVM and never sees the storage.

A call is one relation sent to the server: its extension holds the operation as JSON and,
for an operation on a query, the query's own relation; the server runs the operation while
it plans the relation (an AnalyzePlan request: no query runs) and answers in the plan's
schema, the result as JSON in its field's metadata. The session implementation
of the same operations is py4j (python_adapter/io/fs.py, spark/catalog/tables.py); `is_connect`
tells the two sessions apart.
"""
import json
import uuid
from typing import Any, Optional

from python_adapter.errors import WriteError
from python_adapter.io.connect_retries import server_gone

TYPE_URL = "type.googleapis.com/sizedspark.Op"
PLUGIN_CLASS = "sizedspark.connect.SizedOps"
# A session whose server did not answer within its bound (connect_retries.server_gone) keeps
# that error here: each later call would wait the whole bound again (a failed write's
# rollback, the lock's release and renewal make several), and its server-side session is
# gone with the server anyway. The engine's error names the server once.
_GONE = "_sized_server_gone"


class RemoteError(IOError):
    """A Java exception the server's extension answered with: its text starts with the
    Java class, as py4j's errors do, so callers match it the same way."""

    def __init__(self, java_class: str, message: str, trace: str = "") -> None:
        super().__init__(f"{java_class}: {message}")
        self.java_class = java_class
        self.trace = trace


class ExtensionMissing(WriteError):
    """The Connect server has no dbt-sized-spark extension loaded."""


def is_connect(spark: Any) -> bool:
    """Whether `spark` is a Spark Connect session (no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, data: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _request(op: str, args: dict, child: Optional[bytes]) -> bytes:
    body = json.dumps({"op": op, "nonce": uuid.uuid4().hex, **args}).encode()
    return _field(1, body) + (_field(2, child) if child is not None else b"")


def call(spark: Any, op: str, on: Any = None, **args: Any) -> Any:
    """Run operation `op` with `args` in the Connect server (on DataFrame `on`'s query when
    given) and return its answer. Raises RemoteError with the Java exception it failed
    with, ExtensionMissing when the server does not know the extension."""
    from pyspark.sql.connect.dataframe import DataFrame
    from pyspark.sql.connect.plan import LogicalPlan

    child = on._plan.plan(spark.client).SerializeToString() if on is not None else None
    payload = _request(op, args, child)

    class _Op(LogicalPlan):
        def __init__(self) -> None:
            super().__init__(None)

        def plan(self, session):  # the relation, with our extension as its body
            rel = self._create_proto_relation()
            rel.extension.type_url = TYPE_URL
            rel.extension.value = payload
            return rel

    gone = getattr(spark, _GONE, None)
    if gone is not None:  # the server stopped answering an earlier call: fail at once
        raise gone
    try:  # the schema only: the server plans the relation (running the operation), no query
        schema = DataFrame(_Op(), spark).schema
    except Exception as exc:  # the server's planner: no plugin took the extension
        if "NO_HANDLER_FOR_EXTENSION" in str(exc) or TYPE_URL in str(exc):
            raise ExtensionMissing(missing_message(str(exc))) from None
        if server_gone(spark, exc) is not None:
            setattr(spark, _GONE, exc)
        raise
    answer = json.loads(schema.fields[0].metadata["answer"])
    if "error" in answer:
        err = answer["error"]
        raise RemoteError(err["class"], err["message"], err.get("trace", ""))
    return answer["ok"]


def missing_message(detail: str) -> str:
    return (
        "the Spark Connect server has no dbt-sized-spark extension, which every sized "
        "operation over `method: connect` needs (files, the timeline and the metastore are "
        "reached from the server). Start the server with the jar this package ships and "
        f"its plugin: --jars <{'sized-spark-connect.jar'}> --conf "
        f"spark.connect.extensions.relation.classes={PLUGIN_CLASS} (the jar's path: python "
        "-c 'from python_adapter.io.fast_local_fs import connect_jar; print(connect_jar())'; "
        f"docs: Remote Spark (Spark Connect)). The server said: {detail[:300]}")
