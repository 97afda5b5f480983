"""Partition directories from the texts of partition values, as Spark writes them."""
import pytest

from python_adapter.errors import ConfigError
from python_adapter.core.partitions import (check_partition_texts, parse_partition_path,
                                       partition_path)

AWKWARD = ["a/b", "x=y", "50%", "c:d", "with space", "ünï", "日本", ".hidden", "_u", "..",
           "../up", "/abs", "q'uote", "#h?*", "back\\slash", "{[]^}", "tab\tx", "%2F"]


@pytest.mark.parametrize("text", AWKWARD)
def test_every_text_round_trips_through_its_directory(text):
    path = partition_path(["s", "n"], [text, "1"])
    assert "/" not in path.split("/")[0][2:]  # one directory level per column
    assert parse_partition_path(path) == [("s", text), ("n", "1")]


def test_null_is_the_default_partition():
    assert partition_path(["s"], [None]) == "s=__HIVE_DEFAULT_PARTITION__"
    assert parse_partition_path("s=__HIVE_DEFAULT_PARTITION__") == [("s", None)]


@pytest.mark.parametrize("text", ["", "__HIVE_DEFAULT_PARTITION__"])
def test_texts_hive_reads_back_as_null_are_refused_naming_the_column(text):
    with pytest.raises(ConfigError, match=f"column day holds the value '{text}'"):
        check_partition_texts(["id", "day"], [("1", "x"), ("2", text)])
    check_partition_texts(["day"], [(None,), ("x",)])  # NULL itself is fine
