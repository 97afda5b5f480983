import pytest

from python_adapter.errors import ConfigError
from python_adapter.core.config import check_columns, parse_config
from python_adapter.core.sizes import format_duration, format_size, parse_size


@pytest.mark.parametrize("text,expected", [
    ("128MB", 128_000_000), ("1GiB", 1024**3), ("512 kb", 512_000), ("1.5MiB", 1572864),
    (1048576, 1048576), ("100", 100), ("0", 0), ("2tb", 2 * 1000**4),
])
def test_parse_size_reads_human_units(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["12 parsecs", "MB", "-5MB", -1, True, "1e9", None, [1]])
def test_parse_size_rejects_nonsense_naming_the_key(bad):
    with pytest.raises(ValueError, match="target_file_size"):
        parse_size(bad, "target_file_size")


def test_format_size_and_duration_are_human():
    assert format_size(512) == "512 B"
    # in the unit family the user wrote the target in: '256KB' stays '256 KB'
    assert format_size(256_000) == format_size(256_000, like=256_000) == "256 KB"
    assert format_size(1_500_000, like=128_000_000) == "1.5 MB"
    assert format_size(128 * 1024 * 1024, like=1024**3) == "128 MiB"
    assert format_size(262_144, like=256 * 1024) == "256 KiB"
    assert format_duration(0.25) == "250ms"
    assert format_duration(12.34) == "12.3s"
    assert format_duration(245) == "4m05s"


def test_defaults_follow_design():
    cfg = parse_config({})
    assert cfg.target_file_size == 128_000_000
    assert cfg.small_file_limit == 100_000_000
    assert cfg.distribution == "exact"  # the default writes the ideal file count
    assert cfg.incremental_strategy == "insert"
    assert parse_config({"unique_key": "id"}).incremental_strategy == "upsert"
    assert parse_config({"unique_key": ["a", "b"]}).unique_key == ("a", "b")
    assert cfg.index_scope == "global"
    assert parse_config({"index_scope": "Partition"}).index_scope == "partition"


def test_small_file_limit_defaults_below_a_custom_target():
    cfg = parse_config({"target_file_size": "1MB"})
    assert 0 < cfg.small_file_limit < cfg.target_file_size


@pytest.mark.parametrize("raw,key,value", [
    ({"target_file_size": "-1MB"}, "target_file_size", "-1MB"),
    ({"target_file_size": 0}, "target_file_size", "0"),
    ({"target_file_size": "10MB", "small_file_limit": "20MB"}, "small_file_limit", "20MB"),
    ({"incremental_strategy": "merge"}, "incremental_strategy", "merge"),
    ({"incremental_strategy": "upsert"}, "unique_key", "none"),
    ({"distribution": "random"}, "distribution", "random"),
    ({"cluster_strategy": "peano"}, "cluster_strategy", "peano"),
    ({"file_count": 0}, "file_count", "0"),
    ({"file_count": "many"}, "file_count", "many"),
    ({"insert_split_size": -3}, "insert_split_size", "-3"),
    ({"bytes_per_row": 0}, "bytes_per_row", "0"),
    ({"cluster_every_n_commits": -1}, "cluster_every_n_commits", "-1"),
    ({"cluster_every_n_commits": 3}, "cluster_by", "cluster_by"),
    ({"compact_every_n_commits": "often"}, "compact_every_n_commits", "often"),
    ({"on_schema_change": "explode"}, "on_schema_change", "explode"),
    ({"file_format": "delta"}, "file_format", "delta"),
    ({"partition_by": 5}, "partition_by", "5"),
    ({"index_scope": "table"}, "index_scope", "table"),
])
def test_every_bad_value_names_key_and_value(raw, key, value):
    with pytest.raises(ConfigError) as err:
        parse_config(raw)
    assert key in str(err.value) and value in str(err.value)


def test_check_columns_names_missing_columns():
    cfg = parse_config({"partition_by": "day", "unique_key": "id"})
    check_columns(cfg, ["id", "DAY", "v"])  # case-insensitive, as Spark
    with pytest.raises(ConfigError, match="unique_key.*ident"):
        check_columns(parse_config({"unique_key": "ident"}), ["id", "v"])
    with pytest.raises(ConfigError, match="partition_by.*month"):
        check_columns(parse_config({"partition_by": ["month"]}), ["id", "v"])
    with pytest.raises(ConfigError, match="no data column"):
        check_columns(parse_config({"partition_by": ["id", "v"]}), ["id", "v"])
