import pytest

from python_adapter.table.timeline import (
    FileEntry, Instant, SCHEMA_VERSION, decode, encode, new_instant_id, parse_file_name,
    written_with)
from python_adapter.errors import TimelineError


def test_instant_round_trips_through_avro():
    inst = Instant(instant="20261122103000123", action="commit", state="inflight",
                   operation="insert_overwrite", partition_columns=("d",),
                   added=(FileEntry("d=1", "d=1/part-0.parquet", 10, 1000, "g1", "/s/x"),),
                   removed=(FileEntry("d=1", "d=1/old.parquet", -1, 900, "g0", "/a/y"),),
                   rows_written=10, bytes_written=1000, extra={"target_file_size": "1000"})
    data = encode(inst)
    assert data[:4] == b"Obj\x01"  # an Avro object container file
    back = decode(data)
    assert back.added == inst.added and back.removed == inst.removed
    assert back.operation == "insert_overwrite" and back.extra == {"target_file_size": "1000"}
    assert back.file_name == "20261122103000123.commit.inflight"
    assert back.with_state("completed").file_name == "20261122103000123.commit"


def test_corrupt_or_truncated_instant_is_a_clear_error():
    data = encode(Instant(instant="1", action="commit", state="requested", operation="x"))
    with pytest.raises(TimelineError, match="corrupt or unreadable"):
        decode(data[: len(data) // 2], "1.commit.requested")
    with pytest.raises(TimelineError, match="1.commit.requested"):
        decode(b"not avro at all", "1.commit.requested")


def test_file_names_and_ids():
    assert parse_file_name("20261122103000123.commit") == ("20261122103000123", "commit", "completed")
    assert parse_file_name("1.replacecommit.requested") == ("1", "replacecommit", "requested")
    assert parse_file_name("lock") is None and parse_file_name("1.commit.weird") is None
    ident = new_instant_id()
    assert len(ident) == 17 and ident.isdigit()
    assert SCHEMA_VERSION == 1


def test_written_with_is_the_last_completed_write_that_recorded_its_sizes():
    def inst(n, operation, state="completed", **extra):
        return Instant(instant=n, action="commit", state=state, operation=operation,
                       extra={k: str(v) for k, v in extra.items()})
    writes = [inst("1", "insert", target_file_size=1000, small_file_limit=800),
              inst("2", "insert", target_file_size=2000, small_file_limit=0),
              inst("3", "restore"),                                   # records no sizes
              inst("4", "insert", state="inflight", target_file_size=9)]
    assert written_with(writes) == {"target_file_size": "2000", "small_file_limit": "0"}
    assert written_with(writes[2:]) == {}
