"""The adapter declares its model config to dbt as dbt-spark does (`AdapterSpecificConfigs`,
a SparkConfig with the engine's keys): every key of ours is a field, dbt-spark's stay, and
dbt merges a model's value over its project's as it merges dbt-spark's own."""
import dataclasses

from dbt.adapters.spark.impl import SparkConfig
from dbt.artifacts.resources import ModelConfig

from dbt.adapters.sized_spark.impl import SizedSparkAdapter
from python_adapter.core.config_keys import MODEL_KEYS


def _fields(cls):
    return {f.name for f in dataclasses.fields(cls)}


def test_every_key_of_ours_is_declared_to_dbt_and_dbt_sparks_stay():
    declared = SizedSparkAdapter.AdapterSpecificConfigs
    assert issubclass(declared, SparkConfig)
    ours = {k.name for k in MODEL_KEYS if not (k.dbt or k.internal)}
    assert ours <= _fields(declared), sorted(ours - _fields(declared))
    assert _fields(SparkConfig) <= _fields(declared)
    assert not {k.name for k in MODEL_KEYS if k.internal} & _fields(declared)


def test_a_models_value_replaces_its_projects_as_dbt_merges_it():
    declared = SizedSparkAdapter.AdapterSpecificConfigs
    project = ModelConfig.from_dict({"target_file_size": "64MB", "lock_timeout": "1m",
                                     "file_format": "parquet"})
    model = project.update_from({"target_file_size": "16MB", "cluster_by": ["a", "b"]},
                                declared, validate=True)
    merged = model.to_dict()
    assert merged["target_file_size"] == "16MB" and merged["cluster_by"] == ["a", "b"]
    assert merged["lock_timeout"] == "1m" and merged["file_format"] == "parquet"
