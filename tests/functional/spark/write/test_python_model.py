"""api.write_python without dbt, on pyspark 3.5 and 4: a Python model's compiled code (its
file, then the helpers dbt appends: here a `dbtObj` as dbt-core's py_script_postfix makes
it) run on the write's session, and what `model(dbt, session)` returns written as a sized
table; its failures are PythonModelError with the traceback of its own lines, before
anything is written. dbt end to end: tests/functional/dbt/test_python_models.py."""
import os

import pytest

from python_adapter.api import PythonModel, parse_config, write_python
from python_adapter.errors import PythonModelError
from python_adapter.spark.catalog.tables import TableRef
from tests.functional.helpers import rows_of

QUIET = dict(log=lambda m: None)
# what dbt appends to a model's file (py_script_postfix): ref() reads the referenced table
DBT_HELPERS = '''

class dbtObj:
    def __init__(self, load_df_function):
        self.ref = lambda name: load_df_function(REFS[name])
        self.is_incremental = False
'''


def _model(body, schema, path="models/py_model.py"):
    return PythonModel(f"{body}\nREFS = {{'source': '{schema}.source'}}{DBT_HELPERS}", path)


def _source(spark, schema):
    spark.range(1, 2001).selectExpr("id", "id % 4 as day", "concat('row ', id) as tag",
                                    "sha2(cast(id as string), 256) as payload") \
        .write.saveAsTable(f"{schema}.source")


def test_a_pandas_dataframe_it_returns_is_written_partitioned_and_sized(spark, schema):
    _source(spark, schema)
    model = _model(
        "def model(dbt, session):\n"
        "    frame = dbt.ref('source').toPandas()\n"
        "    frame['tag'] = frame['tag'].str.upper()\n"
        "    return frame\n", schema)
    cfg = parse_config({"partition_by": ["day"], "target_file_size": "16KB"})
    result = write_python(spark, TableRef(schema, "py_out"), model, cfg, **QUIET)
    assert rows_of(spark, schema, "py_out") == [(i, f"ROW {i}") for i in range(1, 2001)]
    assert result.partitions == 4 and result.files_written >= 8  # sized: several a day


def test_the_models_own_failure_names_its_lines_and_writes_nothing(spark, schema):
    _source(spark, schema)
    model = _model(
        "def half(n):\n"
        "    return n // 0\n"
        "\n"
        "def model(dbt, session):\n"
        "    return dbt.ref('source').limit(half(10))\n", schema, path="models/broken.py")
    with pytest.raises(PythonModelError) as failed:
        write_python(spark, TableRef(schema, "broken"), model, parse_config({}), **QUIET)
    text = str(failed.value)
    assert text.startswith("models/broken.py raised ZeroDivisionError, so nothing was written")
    assert 'File "models/broken.py", line 5, in model\n    return dbt.ref' in text, text
    assert 'File "models/broken.py", line 2, in half\n    return n // 0' in text, text
    assert os.path.basename(__file__) not in text and "python_model.py" not in text
    assert not spark.catalog.tableExists(f"{schema}.broken")


def test_a_value_that_is_no_dataframe_is_refused(spark, schema):
    _source(spark, schema)
    model = _model("def model(dbt, session):\n    return {'id': [1, 2]}\n", schema)
    with pytest.raises(PythonModelError, match=r"model\(\) of models/py_model.py returned "
                                               r"builtins.dict, so nothing was written"):
        write_python(spark, TableRef(schema, "nothing"), model, parse_config({}), **QUIET)
    assert not spark.catalog.tableExists(f"{schema}.nothing")
