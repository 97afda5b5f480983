"""The model config keys are declared once (core/config_keys.MODEL_KEYS): the engine reads
no other, every declared key is read somewhere, the docs' reference is rendered from them,
and a model's key that looks like a typo of one of them is caught, naming it."""
import os
import re

from python_adapter.core import config, config_keys
from python_adapter.core.config_keys import MODEL_KEYS, reference_markdown, unknown_key_error

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
REFERENCE = os.path.join(REPO, "docs", "reference", "configuration.md")
# the dbt layer reads these model keys itself (impl.py: location_root; macros: the others)
READ_BY_THE_DBT_LAYER = {"location_root", "sized"}  # sized: SizedSparkAdapter.sized_takes


def _macro_keys():
    keys = set()
    for root, _dirs, files in os.walk(os.path.join(REPO, "macros")):
        for name in files:
            with open(os.path.join(root, name)) as fh:
                keys.update(re.findall(r"config\.get\('([a-z_]+)'", fh.read()))
    return keys


def test_every_key_the_engine_reads_is_declared_and_every_declared_key_is_read(monkeypatch):
    read = set()

    def recording(raw, name):
        read.add(name)
        return config_keys.read(raw, name)   # raises on a key that is not declared

    monkeypatch.setattr(config, "read", recording)
    config.parse_config({})
    declared = {k.name for k in MODEL_KEYS}
    assert read and read <= declared
    unread = declared - read - _macro_keys() - READ_BY_THE_DBT_LAYER
    assert not unread, f"declared but read nowhere: {sorted(unread)}"


def test_the_docs_reference_is_rendered_from_the_declared_keys():
    with open(REFERENCE) as fh:
        committed = fh.read()
    assert committed == reference_markdown() + "\n", (
        "docs/reference/configuration.md is out of date: run "
        "python -m python_adapter.core.config_keys > docs/reference/configuration.md")
    for key in MODEL_KEYS:
        assert (f"`{key.name}`" in committed) != key.internal


def test_a_typo_of_a_key_names_the_closest_one():
    error = unknown_key_error(["materialized", "target_filesize"], {"materialized"})
    assert error.startswith("target_filesize: not a config key")
    assert "did you mean `target_file_size`?" in error
    assert "did you mean `small_file_limit`?" in unknown_key_error(["smal_file_limit"], set())
    assert "did you mean `unique_key`?" in unknown_key_error(["uniqe_key"], set())


def test_dbts_keys_other_packages_keys_and_ours_are_not_flagged():
    dbt_keys = {"materialized", "tags", "meta", "pre-hook", "full_refresh", "batch_size"}
    keys = [*dbt_keys, *(k.name for k in MODEL_KEYS),
            "elementary_timestamp_column", "external_location", "owner", "sla_hours"]
    assert unknown_key_error(keys, dbt_keys) is None


def test_the_reference_shows_the_defaults_the_engine_applies():
    """Each default the reference shows as a value (`'128MB'`, `exact`, `10`) is what
    parse_config gives a model that leaves the key unset; those it describes in words
    (100/128 of the target, with a `unique_key`) are checked against the rule."""
    from python_adapter.core.sizes import parse_duration, parse_size

    unset = config.parse_config({})
    checked = set()
    for key in MODEL_KEYS:
        literal = re.fullmatch(r"`'?([^`']*)'?`", key.shown_default)
        if key.shown_default == "none" and hasattr(unset, key.name):
            assert getattr(unset, key.name) in (None, ()), key.name
        elif literal and hasattr(unset, key.name):
            parse = {"size": parse_size, "duration": parse_duration}.get(key.type, type(
                getattr(unset, key.name)))
            assert getattr(unset, key.name) == parse(literal.group(1)), key.name
        else:
            continue
        checked.add(key.name)
    assert {"target_file_size", "distribution", "lock_lease", "retain_commits",
            "retain_hours", "cluster_every_n_commits", "file_count"} <= checked
    assert unset.small_file_limit == unset.target_file_size * 100 // 128
    assert config.parse_config({"unique_key": "id"}).incremental_strategy == "upsert"
