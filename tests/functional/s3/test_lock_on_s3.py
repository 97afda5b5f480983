"""The writer lock on an object store (table/lock.py, on io/fs.HadoopFS's conditional
writes through S3A), against a real S3 server (SeaweedFS on 127.0.0.1): of 16 writers
creating the lock at once exactly one wins; a file is replaced only over the version read
(of two swaps over one version one wins); a second writer is refused naming the holder;
the holder renews its lease by compare-and-swap; a release writes a released state that
the next writer swaps out; a dead process's expired lease on another host is taken over,
a live one refused; a holder whose lock was swapped away has lost it and leaves the new
holder's lock alone (the scenarios: tests/functional/s3_lock_scenarios.py)."""
import pytest

from tests.functional import s3_lock_scenarios


@pytest.fixture(scope="module")
def seen(spark, s3):
    return s3_lock_scenarios.run(spark, s3.bucket)


def test_of_sixteen_creators_exactly_one_wins(seen):
    assert seen["creators"] == [{"won": 1, "holds_winner": True}] * 3


def test_a_file_is_replaced_only_over_the_version_read(seen):
    swaps = seen["swaps"]
    assert swaps["versioned"] and swaps["first"] == "v1" and swaps["to_v2"]
    assert swaps["stale_refused"] and swaps["second"] == "v2" and swaps["versions_differ"]
    assert swaps["racing_won"] == [False, True]
    assert swaps["absent"]


def test_a_second_writer_is_refused_and_the_holder_renews_by_swap(seen):
    writers = seen["writers"]
    assert writers["swaps"]
    assert writers["second_writer"].startswith("the table is being written by another writer "
                                               f"(host ")
    assert ", write a since " in writers["second_writer"]
    assert writers["renewed"]


def test_a_release_is_a_released_state_the_next_writer_swaps_out(seen):
    writers = seen["writers"]
    assert list(writers["released_state"]) == ["released_ms"]
    assert writers["holder_after_release"] is None
    assert writers["taken_after_release"]


def test_an_expired_lease_of_another_host_is_taken_over_and_a_live_one_refused(seen):
    other = seen["other_hosts"]
    assert other["took_over"]
    assert any("recovering stale writer lock of pid 1 on other-host (its lease expired" in m
               for m in other["said"]), other["said"]
    assert "host other-host, pid 1, write x" in other["live"]


def test_a_holder_whose_lock_was_swapped_away_has_lost_it_and_leaves_it(seen):
    other = seen["other_hosts"]
    assert other["lost"].startswith("the writer lock s3a://sized/")
    assert "is no longer this writer's" in other["lost"]
    assert other["thief_kept"]
