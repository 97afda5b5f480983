"""A dbt Python model run in this process, on the session its write runs on.

dbt compiles a Python model into one module: the model's file as written, then dbt's
helpers (`ref`, `source`, `config`, `this`, `dbtObj`; dbt-core's py_script_postfix). Here
that module is executed, its `model(dbt, session)` called with `dbt = dbtObj(spark.table)`
(what dbt-spark's py_write_table does on Databricks, and dbt-duckdb does in its own
process), and what it returns made a Spark DataFrame, which the sized write then plans and
writes like a SQL model's rows. Over Spark Connect the session is the Connect client's: the
model's function runs here, its DataFrame's work on the server."""
import linecache
import os
import sys
import traceback
import types
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Optional

import pyspark
from pyspark.errors import PythonException
from pyspark.sql import DataFrame, SparkSession

from python_adapter.errors import PythonModelError
from python_adapter.io.active_session import active_session
from python_adapter.spark.session_conf import session_conf

# pandas -> Spark through Arrow, as Spark Connect always converts and Databricks does by
# default; Spark falls back to its row-by-row conversion (its default) when Arrow cannot
# take a column
_ARROW = {"spark.sql.execution.arrow.pyspark.enabled": "true"}

# frames of pyspark (and py4j, beside it in site-packages; a Connect client has none) are
# left out of a model's traceback: the user's code and the error's message say what went wrong
_PYSPARK = os.path.dirname(pyspark.__file__)
_LIBRARIES = (_PYSPARK + os.sep, os.path.join(os.path.dirname(_PYSPARK), "py4j") + os.sep)


@dataclass(frozen=True)
class PythonModel:
    """A dbt Python model as dbt compiled it."""
    code: str   # the model's file, then dbt's helpers (ref, source, config, this, dbtObj)
    path: str   # what its traceback names: the model's file, whose lines come first in code


def model_dataframe(spark: SparkSession, model: PythonModel) -> DataFrame:
    """Run the model's code with `spark` as its session; the rows it returns as a Spark
    DataFrame. Raises PythonModelError, with the traceback of the model's code, when that
    code fails or returns something else than a DataFrame."""
    stem = os.path.splitext(os.path.basename(model.path))[0]
    # a module of its own, not in sys.modules: functions it defines (UDFs) are pickled by
    # value for Spark's Python workers, which cannot import it
    module = types.ModuleType(f"dbt_python_model_{stem}")
    module.__file__ = model.path
    # the traceback shows the compiled lines under the model's name (mtime None: linecache
    # keeps the entry instead of reading a file of that name)
    linecache.cache[model.path] = (len(model.code), None, model.code.splitlines(True),
                                   model.path)
    try:
        with active_session(spark):
            exec(compile(model.code, model.path, "exec"), module.__dict__)  # noqa: S102
            return _spark_dataframe(spark, module.model(module.dbtObj(spark.table), spark),
                                    model)
    except PythonModelError:
        raise
    except Exception as exc:
        raise PythonModelError(
            f"{model.path} raised {type(exc).__name__}, so nothing was written:\n"
            f"{_model_traceback(exc, model.path)}") from None
    finally:
        linecache.cache.pop(model.path, None)


def _model_traceback(exc: BaseException, path: str) -> str:
    """The exception's traceback from the model's own code on (the frames that ran it left
    out), without pyspark's and py4j's frames."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != path:
        tb = tb.tb_next
    frames = [f for f in traceback.extract_tb(tb) if not f.filename.startswith(_LIBRARIES)]
    lines = traceback.format_list(frames) + traceback.format_exception_only(type(exc), exc)
    return "Traceback (most recent call last):\n" + "".join(lines).rstrip()


def _spark_dataframe(spark: SparkSession, result: Any, model: PythonModel) -> DataFrame:
    """What model() returned as a Spark DataFrame: as it is, pandas-on-Spark's through
    to_spark, pandas' through createDataFrame (dbt-spark's py_write_table's conversions)."""
    if _is_spark_dataframe(result):
        return result
    # only a module the model's code imported can have made the value
    pandas_on_spark = sys.modules.get("pyspark.pandas")
    if pandas_on_spark is not None and isinstance(result, pandas_on_spark.DataFrame):
        # without its advice that the index is dropped: dbt-spark drops it too
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="If `index_col` is not specified")
            return result.to_spark()
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(result, pandas.DataFrame):
        with session_conf(spark, _ARROW):
            return spark.createDataFrame(result)
    raise PythonModelError(
        f"model() of {model.path} returned {type(result).__module__}.{type(result).__name__}, "
        f"so nothing was written. A Python model returns a DataFrame: a Spark DataFrame, a "
        f"pandas DataFrame or a pandas-on-Spark DataFrame")


@contextmanager
def worker_errors(model: PythonModel) -> Iterator[None]:
    """A function of the model's code that Spark runs in its Python workers (a UDF) and that
    fails while the write computes the rows is reported as the model's failure, with the
    worker's traceback. The engine runs no Python in Spark's workers: every such error is
    the model's; the write was rolled back."""
    try:
        yield
    except Exception as exc:
        worker = _worker_traceback(exc)
        if worker is None:
            raise
        raise PythonModelError(
            f"a function of {model.path} failed in a Spark task, so nothing was written:\n"
            f"{worker}") from None


_JAVA_WORKER_ERROR = "org.apache.spark.api.python.PythonException: "


def _worker_traceback(exc: BaseException) -> Optional[str]:
    """The Python worker's traceback of a failed UDF, or None for any other error. pyspark 4
    raises it as PythonException; pyspark 3.5 as the Py4JJavaError of the write's action,
    the worker's exception a `Caused by:` of its Java stack (its lines up to the Java
    frames that follow)."""
    if isinstance(exc, PythonException):
        return str(exc).strip()
    text = str(exc) if type(exc).__name__ == "Py4JJavaError" else ""
    at = text.find(_JAVA_WORKER_ERROR)
    if at < 0:
        return None
    lines = text[at + len(_JAVA_WORKER_ERROR):].splitlines()
    end = next((i for i, line in enumerate(lines) if line.startswith("\tat ")), len(lines))
    return "\n".join(lines[:end]).strip()


def _is_spark_dataframe(value: Any) -> bool:
    if isinstance(value, DataFrame):
        return True
    # pyspark 3.5's Connect DataFrame is no pyspark.sql.DataFrame (4.x's is)
    connect = sys.modules.get("pyspark.sql.connect.dataframe")
    return connect is not None and isinstance(value, connect.DataFrame)
