"""Counts in what a user reads: '1 file', '2 files', never '1 files' (core/sizes.count_of),
in the engine's results, errors and the plugin's lines alike."""
import pytest

from python_adapter.core.constraints import check_not_null
from python_adapter.core.retention import Retention
from python_adapter.core.sizes import count_of, plural
from python_adapter.errors import ConstraintError
from python_adapter.spark.services.clean import CleanResult
from python_adapter.spark.services.cluster_exec import ClusterResult
from python_adapter.spark.job import RowChanges, WriteResult


@pytest.mark.parametrize("n, word, text", [
    (0, "file", "0 files"), (1, "file", "1 file"), (2, "file", "2 files"),
    (1, "row", "1 row"), (12_345, "row", "12,345 rows"), (1, "instant", "1 instant"),
    (3, "batch", "3 batches"), (2, "directory", "2 directories"), (2, "key", "2 keys"),
    (1, "small file", "1 small file"), (4, "small file", "4 small files"),
    (2, "hPartition", "2 hPartitions"), (-1, "row", "-1 rows"),
])
def test_a_count_takes_the_singular_only_for_one(n, word, text):
    assert count_of(n, word) == text


def test_an_irregular_plural_is_given_or_known():
    assert count_of(2, "index", "indexes") == "2 indexes"
    assert count_of(1, "index", "indexes") == "1 index"
    assert [plural(w) for w in ("class", "box", "day", "entry")] == \
        ["classes", "boxes", "days", "entries"]


def _write(partitions, partitioned, files=1, rows=1):
    return WriteResult("full_refresh", "20260101000000000", partitions, files, files, 0, 0,
                       rows, 2048, 2048.0, 1.5, RowChanges(inserted=rows), 128_000_000,
                       partitioned=partitioned)


def test_the_write_summary_counts_partitions_only_of_a_partitioned_table():
    assert _write(1, True).message.endswith("2 KB in 1 partition, 1.5s")
    assert _write(3, True, files=3).message.endswith("in 3 partitions, 1.5s")
    unpartitioned = _write(1, False).message
    assert "partition" not in unpartitioned and unpartitioned.endswith("2 KB, 1.5s")


def test_the_services_results_say_one_plan_one_group_one_commit():
    one = ClusterResult(1, 1, 1, 2, 1, 1000, 2.0, groups_dropped=1, commits=1)
    assert one.message.startswith("clustering: 1 plan, 1 group, files 2 -> 1")
    assert "; 1 group dropped" in one.message
    many = ClusterResult(0, 1, 6, 12, 6, 1000, 2.0, service="compaction", commits=2)
    assert many.message.startswith("compaction: 1 plan, 6 groups in 2 commits, files 12 -> 6")
    cleaned = CleanResult("s.t", 1, 1, 1, 1, Retention(1, 1), stale_locks=1).message
    assert "1 instant deleted, 1 instant archived, 1 leftover removed, 1 stale lock file " \
        "deleted (retention: 1 commit, 1 hour)" in cleaned
    assert "; 1 data file in the table's directory that no commit records" in cleaned
    assert "1 files" not in cleaned and "1 instants" not in cleaned


def test_a_constraint_error_counts_rows_in_the_users_terms():
    with pytest.raises(ConstraintError, match=r"column a is null in 1 row; column b is null "
                                              r"in 2 rows; nothing was written"):
        check_not_null({"a": 1, "b": 2, "c": 0})
