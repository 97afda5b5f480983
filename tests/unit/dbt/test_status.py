"""The short status dbt prints in a sized model's OK line (docs/getting-started.md)."""
from dbt.adapters.sized_spark.impl import _STATUS_WIDTH, _status


def _result(inserted=0, updated=0, deleted=0, files=0, partitions=0, partitioned=True):
    return {"changes": {"inserted": inserted, "updated": updated, "deleted": deleted},
            "files_written": files, "partitions": partitions, "partitioned": partitioned}


def test_the_status_says_the_rows_files_and_partitions_in_the_users_terms():
    assert _status(_result(12_345, files=38, partitions=4)) == \
        "12,345 rows, 38 files in 4 partitions"
    assert _status(_result(1_000, 1_000, files=13)) == "1,000 new, 1,000 updated, 13 files"
    assert _status(_result(1, files=1, partitions=1)) == "1 row, 1 file in 1 partition"


def test_a_long_status_drops_the_partitions_then_the_files_never_the_rows():
    assert _status(_result(1_200, 5_700, 100, files=18, partitions=38)) == \
        "1,200 new, 5,700 updated, 100 deleted, 18 files"  # getting started's example
    huge = _status(_result(1_234_567_890, 234_567_890, 34_567_890, files=123_456,
                           partitions=36_500))
    assert huge == "1,234,567,890 new, 234,567,890 updated, 34,567,890 deleted"
    assert len(huge) <= _STATUS_WIDTH


def test_an_unpartitioned_table_says_nothing_about_partitions():
    # its files are all in one directory, which the write result counts as one partition
    assert _status(_result(1, files=1, partitions=1, partitioned=False)) == "1 row, 1 file"
    assert _status(_result(25_532, files=3, partitions=1, partitioned=False)) == \
        "25,532 rows, 3 files"
