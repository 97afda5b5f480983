"""dbt end to end with the warehouse on S3 (a real S3 server: SeaweedFS on 127.0.0.1,
`sized-spark serve s3`; S3A's jars fetched by `sized-spark jars s3a`), through the
integration profile's `s3` target, as on local disk (tests/functional/dbt/test_dbt_project.py):
the integration project builds with its data tests (every source row once, files sized); a
snapshot, a Python model and a `table` model written through the engine (a run killed
mid-publish and the models over Connect: test_dbt_recovery_on_s3.py, extended). Every table is read back from S3 by pyarrow. A bucket whose S3A client
makes no conditional create is refused once, naming the setting, before anything is
written there.

pyspark 3.5's Hadoop (3.3.4) has no conditional create at all: scripts/test.sh runs
tests/functional/s3 on pyspark 4 only."""
import json
import re
import shutil

import pytest
import yaml

from python_adapter.cli.jars import s3a_jars
from python_adapter.table.timeline import parse_file_name
from tests.functional import object_store
from tests.functional.dbt.test_dbt_project import (REPO, _dbt_steps, _integration_project,
                                                   _plain)
from tests.functional.dbt.test_failures_said_once import _java_stack

WAREHOUSE = f"{object_store.BUCKET}/warehouse/sized_it.db"
# tests/functional/dbt_s3's s3_events after version 2 (sorted as the readers sort rows)
UPSERTED = sorted(((i, f"v{i}+" if i % 3 == 0 else f"v{i}")
                   for i in range(1, 401)), key=repr)


def _env(server):
    return {"SIZED_S3_PORT": str(server.port), "SIZED_S3_BUCKET": server.bucket,
            "SIZED_S3A_JARS": ",".join(s3a_jars({}))}


def _rows(server, table, columns):
    return object_store.pyarrow_rows(server, f"s3a://{WAREHOUSE}/{table}", columns)


def _completed(server, table):
    """The completed instants of a table's timeline on S3, oldest first."""
    keys = object_store.keys(server, f"{object_store.BUCKET}/warehouse/sized_it.db/.sized/"
                                     f"{table}/timeline")
    return sorted(parsed[0] for key in keys
                  if (parsed := parse_file_name(key.rsplit("/", 1)[-1])) and
                  parsed[2] == "completed")


@pytest.fixture(scope="module")
def integration(s3_server, tmp_path_factory):
    """The integration project's build on S3, with its data tests (12 days, at 4 threads).
    Its incremental rebuilds and microbatch batches run on local disk in
    test_dbt_project.py; on S3 their commits are the upserts and the microbatch window of
    test_table_on_s3.py."""
    project, home = _integration_project(tmp_path_factory.mktemp("integration_s3"))
    return _dbt_steps(project, home, "s3", ["build", "--vars",
                                            "{event_days: 12, base_rows_per_day: 300}",
                                            "--threads", "4"],
                      short_jvm=False, env_extra=_env(s3_server))[0]


# extended (about 4 minutes of CI): dbt's views, tables and incrementals are the integration
# project's on local disk (test_dbt_project.py); on S3 a table, a Python model, an upsert and
# a snapshot (below), and every engine step (test_table_on_s3.py)
@pytest.mark.extended
def test_the_integration_project_builds_on_s3_with_its_tests(integration):
    assert integration.returncode == 0, integration.stdout[-4000:]
    assert "Completed successfully" in integration.stdout and "ERROR=0" in integration.stdout
    assert "Concurrency: 4 threads" in integration.stdout
    assert re.search(r"OK created sql \w+ model sized_it\.events_incremental \.+ "
                     r"\[[\d,]+ rows, [\d,]+ files? in [\d,]+ partitions? in ",
                     _plain(integration.stdout)), integration.stdout[-3000:]
    assert "Unhandled error" not in integration.stdout
    assert not _java_stack(integration.stdout + integration.stderr)


@pytest.fixture(scope="module")
def small_runs(s3_server, tmp_path_factory):
    """tests/functional/dbt_s3 in one dbt process: version 1 of its models and a snapshot,
    then version 2 and the snapshot again; then the model on the bucket without
    conditional create."""
    tmp = tmp_path_factory.mktemp("s3_project")
    project, home = tmp / "project", tmp / "spark"
    shutil.copytree(REPO / "tests/functional/dbt_s3", project)
    profiles = yaml.safe_load((REPO / "integration_tests/profiles.yml").read_text())
    target = profiles["sized_spark_integration_tests"]["outputs"]["s3"]
    target["server_side_parameters"][
        "spark.hadoop.fs.s3a.bucket.nocond.create.conditional.enabled"] = "false"
    (project / "profiles.yml").write_text(yaml.safe_dump(profiles))
    object_store.arrow_store(s3_server).create_dir("nocond")     # a second bucket
    v2 = ["--vars", json.dumps({"version": 2})]
    names = ["built", "snapshot", "upserted", "snapshot2", "refused"]
    steps = _dbt_steps(
        project, home, "s3", ["run", "--select", "s3_events", "s3_table", "s3_python"],
        ["snapshot"], ["run", "--select", "s3_events", *v2], ["snapshot", *v2],
        ["run", "--select", "s3_unconditional"], env_extra=_env(s3_server))
    return dict(zip(names, steps))


def test_a_table_a_python_model_an_upsert_and_a_snapshot_on_s3(small_runs, s3_server):
    for name in ("built", "snapshot", "upserted", "snapshot2"):
        assert small_runs[name].returncode == 0, small_runs[name].stdout[-4000:]
    assert _rows(s3_server, "s3_events", ["id", "tag"]) == UPSERTED
    assert len(_rows(s3_server, "s3_table", ["id"])) == 300
    assert [n for _day, n in _rows(s3_server, "s3_python", ["day", "count"])] == [100] * 3
    snapshot = _rows(s3_server, "s3_snapshot", ["id", "tag", "dbt_valid_to"])
    closed = [r for r in snapshot if r[2] is not None]
    assert len(snapshot) == 300 + 100 + 100 and len(closed) == 100
    assert sorted(r[0] for r in closed) == list(range(3, 301, 3))
    # each of the snapshot's runs is one commit of the engine
    assert len(_completed(s3_server, "s3_snapshot")) == 2


def test_a_store_without_conditional_create_is_refused_naming_the_setting(small_runs, s3_server):
    out = _plain(small_runs["refused"].stdout)
    assert small_runs["refused"].returncode != 0
    assert out.count("cannot commit to s3a://nocond") == 1, out[-3000:]
    assert "set spark.hadoop.fs.s3a.create.conditional.enabled=true" in out
    assert "this Spark has Hadoop 3." in out
    assert not _java_stack(out), out[-3000:]
    keys = object_store.keys(s3_server, "nocond")
    assert not [k for k in keys if k.endswith(".parquet") or k.endswith("/lock")], keys
