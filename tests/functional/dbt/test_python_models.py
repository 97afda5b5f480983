"""dbt Python models on a sized_spark profile, end to end (tests/functional/dbt_python): the
model's function runs in the dbt process on the profile's session, and the sized engine
writes the DataFrame it returns like a SQL model of the same materialization: `table` (a
Spark DataFrame reading dbt.ref and dbt.source), incremental `merge` with a unique_key
(dbt.is_incremental, dbt.this), `append` (a pandas DataFrame) and `insert_overwrite` (a
pandas-on-Spark DataFrame), each in files of its target_file_size, read back by DuckDB. A
failing model fails with dbt's error naming it and the traceback of its code, and writes
nothing; the models dbt-spark submits (`sized: false`, delta) reach dbt-spark's submission
instead of dbt-core's guard.

One dbt process (dbt_steps.py) for its commands: a first build, the incremental run, the
failing models, then one whose sized config is refused."""
import math
import re
import shutil
from datetime import date, timedelta
from pathlib import Path

import pytest

from tests.functional.dbt.test_dbt_project import REPO, _dbt_steps, _plain
from tests.functional.readers import duckdb_rows, parquet_files

FIRST = ["run", "--exclude", "path:models/fails"]
SECOND = [*FIRST, "--vars", "{batch: 2}"]
# every failing model, and py_append sent to dbt-spark's incremental (`sized: false`)
FAILING = ["run", "--select", "path:models/fails", "py_append",
           "--vars", "{batch: 2, py_sized: false}"]
# a model whose sized config has a bad value (enabled by the var): it fails as it starts
BAD_CONFIG = ["run", "--select", "py_bad_config", "--vars", "{bad_config: true}"]
# dbt-spark's own message when it submits a Python model (to Databricks) without a cluster
DBT_SPARK_SUBMISSION = "Databricks cluster_id is required for all_purpose_cluster submission"
TARGET = 32 * 1024  # py_table's target_file_size


def python_project(tmp_path: Path) -> Path:
    """A copy of tests/functional/dbt_python with the integration profile."""
    project = tmp_path / "python"
    shutil.copytree(REPO / "tests/functional/dbt_python", project)
    shutil.copy(REPO / "integration_tests/profiles.yml", project / "profiles.yml")
    return project


def python_runs(project: Path, home: Path, target: str) -> dict:
    """{'first', 'second', 'failing', 'bad_config': _Step} of the commands in one dbt
    process; home holds the warehouse (a session's SIZED_SPARK_HOME, a Connect server's
    state)."""
    steps = _dbt_steps(project, home, target, FIRST, SECOND, FAILING, BAD_CONFIG)
    return dict(zip(["first", "second", "failing", "bad_config"], steps))


@pytest.fixture(scope="module")
def session_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("python_models")
    home = tmp / "spark"
    return python_runs(python_project(tmp), home, "embedded"), home / "warehouse" / "sized_it.db"


def _events(batch):
    """events.sql's rows: (id, day, customer_id, value), the day as the text of its Hive
    partition directory (what a reader of the partitioned tables gets)."""
    n = 2000 if batch == 1 else 2500
    return [(i, (date(2025, 3, 1) + timedelta(days=i % 5)).isoformat(), i % 40 + 1,
             i * 10 + 1 if batch == 2 and i % 10 == 0 else i * 10) for i in range(1, n + 1)]


def _partition_bytes(table_dir):
    """{partition directory: [file sizes]} of the table's data files."""
    sizes = {}
    for path in parquet_files(table_dir):
        sizes.setdefault(Path(path).parent.name, []).append(Path(path).stat().st_size)
    return sizes


# dbt's summary entry of a failed model: `Failure in model <m> (` on dbt 1.11,
# `[ERROR]: in model <m> (` on 1.12
_SUMMARY_ENTRY = r"(?:Failure|\[ERROR\]:) in model {} \("


def _failure(text, model):
    """dbt's summary entry of a failed model, up to the next entry or dbt's last line."""
    start = re.search(_SUMMARY_ENTRY.format(re.escape(model)), text).start()
    after = re.search(_SUMMARY_ENTRY.format(r"\w+") + "|Done\\.", text[start + 1:])
    return text[start:start + 1 + after.start()] if after else text[start:]


def check_builds(runs: dict, db: Path) -> None:
    """The first build and the incremental run: rows, sizes, and dbt's lines."""
    first, second = runs["first"], runs["second"]
    assert first.returncode == 0, first.stdout[-6000:] + first.stderr[-3000:]
    assert second.returncode == 0, second.stdout[-6000:] + second.stderr[-3000:]
    out = _plain(first.stdout)
    for model, kind in [("py_table", "table"), ("py_upsert", "incremental"),
                        ("py_append", "incremental"), ("py_overwrite", "incremental")]:
        # dbt's result line with the sized write's status, and the engine's timeline
        assert re.search(rf"OK created python {kind} model sized_it\.{model} \.+ \[[\d,]+ rows?, "
                         rf"\d+ files?", out), out[-4000:]
        assert list((db / ".sized" / model / "timeline").glob("*.commit")), model
    assert "submit_python_job" not in first.stdout + second.stdout

    # table: a Spark DataFrame of dbt.ref and dbt.source, dbt.config.get, dbt.this
    columns = ["id", "day", "value", "name", "target", "this"]
    assert duckdb_rows(db / "py_table", columns) == sorted(
        ((i, d, v, f"customer {c}", "32KB", "sized_it.py_table") for i, d, c, v in _events(2)),
        key=repr)
    # sized: files of the target size in Hive partitions, no more than the ideal count
    sizes = _partition_bytes(db / "py_table")
    assert sorted(sizes) == [f"day=2025-03-0{d}" for d in range(1, 6)], sorted(sizes)
    ideal = sum(math.ceil(sum(s) / TARGET) for s in sizes.values())
    files = sum(len(s) for s in sizes.values())
    assert len(sizes) < files <= ideal * 1.05 + 1, sizes

    # merge: the rows the model returned on the second run (changed or new) replaced or
    # added by key, dbt.is_incremental true on that run only
    events = {i: (d, v) for i, d, _c, v in _events(2)}
    changed = {i for i, (_d, v) in events.items() if i > 2000 or v % 10}
    assert duckdb_rows(db / "py_upsert", ["id", "day", "value", "incremental"]) == sorted(
        ((i, d, v, i in changed) for i, (d, v) in events.items()), key=repr)
    assert "500 new, 200 updated" in _plain(second.stdout)

    # append of a pandas DataFrame: the ids past the table's largest, once
    old = {i: v for i, _d, _c, v in _events(1)}
    assert duckdb_rows(db / "py_append", ["id", "value", "run"]) == sorted(
        [(i, v, 1) for i, v in old.items()]
        + [(i, v, 2) for i, (_d, v) in events.items() if i > 2000], key=repr)

    # insert_overwrite of a pandas-on-Spark DataFrame: the even days replaced, the others kept
    assert duckdb_rows(db / "py_overwrite", ["id", "day", "value", "run"]) == sorted(
        [(i, d, v, 2) for i, (d, v) in events.items() if int(d[-2:]) % 2 == 0]
        + [(i, d, v, 1) for i, d, _c, v in _events(1) if int(d[-2:]) % 2], key=repr)


def check_failures(runs: dict, db: Path) -> None:
    """The failing models: each fails with its cause, nothing of it written."""
    failing = runs["failing"]
    out = _plain(failing.stdout)
    assert failing.returncode != 0 and "ERROR=7" in out, out[-6000:]
    assert "submit_python_job is not intended" not in out

    # the model's own code: dbt's error naming it, the traceback of its file's lines
    text = _failure(out, "py_fails")
    assert "Runtime Error in model py_fails (models/fails/py_fails.py)" in text, text
    assert re.search(r'File "models/fails/py_fails.py", line 12, in model\n\s+return session'
                     r'.range\(1\)', text), text
    assert re.search(r'File "models/fails/py_fails.py", line 6, in share\n\s+return part / '
                     r'whole', text), text
    assert "ZeroDivisionError: division by zero" in text and "nothing was written" in text
    assert "pyspark" not in text  # no frames of the library
    # a UDF of the model failing in a Spark task, while the rows are computed
    text = _failure(out, "py_udf")
    assert "Runtime Error in model py_udf (models/fails/py_udf.py)" in text, text
    assert 'py_udf.py", line 7, in inverse' in text and "ZeroDivisionError" in text, text
    text = _failure(out, "py_not_a_frame")
    assert "model() of models/fails/py_not_a_frame.py returned builtins.list" in text, text
    # the sized config's checks, as for SQL models (before the model's code runs)
    bad = _plain(runs["bad_config"].stdout)
    assert runs["bad_config"].returncode != 0, bad[-3000:]
    assert ("model sized_it.py_bad_config: small_file_limit: '2MB' is larger than "
            "target_file_size '1MB'") in bad, bad[-3000:]
    assert "incremental_strategy: 'microbatch' on a Python model (sized_it.py_microbatch)" in out
    for model in ("py_fails", "py_udf", "py_not_a_frame", "py_bad_config", "py_microbatch"):
        assert not parquet_files(db / model), model

    # the models dbt-spark writes reach its Python submission, which fails its own way
    for model in ("py_dbt_spark", "py_delta", "py_append"):
        assert DBT_SPARK_SUBMISSION in _failure(out, model), _failure(out, model)
    # py_append's table as the second run left it
    assert len(duckdb_rows(db / "py_append", ["id"])) == 2500


def test_python_models_are_written_by_the_sized_engine(session_runs):
    runs, db = session_runs
    check_builds(runs, db)


def test_failing_python_models_name_their_cause_and_write_nothing(session_runs):
    runs, db = session_runs
    check_failures(runs, db)


def test_the_docs_python_example_is_a_model_these_tests_run():
    """docs/models/index.md's Python model is py_upsert.py as it is, so it runs as copied."""
    docs = (REPO / "docs/models/index.md").read_text()
    model = (REPO / "tests/functional/dbt_python/models/py_upsert.py").read_text()
    assert f"```python\n{model}```" in docs
