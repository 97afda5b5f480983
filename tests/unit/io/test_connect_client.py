"""The Connect client's pure parts: the request the server's extension parses, the fence a
write carries, Spark's size strings."""
import json

import pytest

protobuf = pytest.importorskip("google.protobuf", reason="the Connect client's protobuf "
                               "(pyspark 4's connect extra) decodes the request")
from google.protobuf.empty_pb2 import Empty  # noqa: E402
from google.protobuf.unknown_fields import UnknownFieldSet  # noqa: E402

from python_adapter.io import connect_client as cc  # noqa: E402
from python_adapter.io.connect_fs import fence_among, lock_file_of  # noqa: E402
from python_adapter.io.interfaces import Fence  # noqa: E402
from python_adapter.io.session_info import byte_string_bytes  # noqa: E402


def _fields(data: bytes):
    message = Empty()
    message.ParseFromString(data)
    return {f.field_number: f.data for f in UnknownFieldSet(message)}


def test_the_request_is_two_length_delimited_fields_protobuf_reads():
    child = bytes(range(256)) * 3  # a relation's bytes, longer than one varint byte
    fields = _fields(cc._request("fs.list_dir", {"path": "file:/t/é"}, child))
    body = json.loads(fields[1])
    assert body["op"] == "fs.list_dir" and body["path"] == "file:/t/é" and body["nonce"]
    assert fields[2] == child
    assert 2 not in _fields(cc._request("session.info", {}, None))


def test_two_requests_never_look_alike_to_the_plan_cache():
    a, b = (cc._request("fs.exists", {"path": "/x"}, None) for _ in range(2))
    assert a != b


def test_writes_under_a_held_lock_carry_its_token_and_the_lock_itself_none():
    lock = "file:/w/db/.sized/t/lock"
    held = [Fence(lock, "tok-1", ("file:/w/db/t", "file:/w/db/.sized/t"))]
    table_file = "file:/w/db/t/day=1/part-0.parquet"
    meta_file = "file:/w/db/.sized/t/timeline/1.commit"
    # the table's files are in the table's directory, the lock in its meta directory
    fence = {"lock": lock, "token": "tok-1"}
    assert fence_among(held, meta_file) == fence_among(held, table_file) == fence
    assert fence_among(held, "file:/w/db/t") == fence
    assert fence_among(held, "file:/w/db/t2/x.parquet") is None
    assert fence_among(held, "file:/w/db/.sized/t/lock") is None
    assert fence_among(held, "file:/w/db/.sized/t/lock.stale.abc") is None
    assert fence_among(held, "file:/w/db/other/x.parquet") is None
    assert fence_among([], table_file) is None
    assert lock_file_of("file:/w/db/.sized/t/lock.stale.abc") == lock
    assert lock_file_of("file:/w/db/.sized/t/cluster.lock") == "file:/w/db/.sized/t/cluster.lock"
    assert lock_file_of(table_file) is None


def test_a_commit_under_a_service_lock_is_fenced_by_the_writer_lock():
    """A compaction holds cluster.lock, then the writer lock for each commit: its commit's
    changes are fenced by the writer lock, so they stop once another writer breaks it."""
    covers = ("file:/w/db/t", "file:/w/db/.sized/t")
    service = Fence("file:/w/db/.sized/t/cluster.lock", "tok-service", covers)
    writer = Fence("file:/w/db/.sized/t/lock", "tok-writer", covers)
    commit_file = "file:/w/db/.sized/t/timeline/2.commit"
    assert fence_among([service], commit_file)["token"] == "tok-service"
    assert fence_among([service, writer], commit_file)["token"] == "tok-writer"


@pytest.mark.parametrize("text,expected", [
    ("64MB", 64 << 20), ("10m", 10 << 20), ("1g", 1 << 30), ("-1", -1), ("1024", 1024),
    ("4 kb", 4096), ("10485760b", 10485760)])
def test_sizes_are_parsed_as_spark_parses_them(text, expected):
    assert byte_string_bytes(text) == expected


def test_a_size_spark_would_refuse_is_refused():
    with pytest.raises(ValueError, match="not a size in bytes: '12 parsecs'"):
        byte_string_bytes("12 parsecs")
