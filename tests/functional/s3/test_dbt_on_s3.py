"""A warehouse on S3 (a real S3 server: SeaweedFS on 127.0.0.1, `sized-spark serve s3`;
S3A's jars fetched by `sized-spark jars s3a`), through the integration profile's `s3`
target, in one dbt process: this version refuses to commit there, once per model, with one
message naming the store, what is missing and what to set, and no Java stack, before any
data file is written and with the lock given back (issue 64, goal 4). A bucket whose S3A
client makes no conditional create is refused for that, naming the setting.

pyspark 3.5's Hadoop (3.3.4) has no conditional create at all: scripts/test.sh runs this
module on pyspark 4 only (io/storage.no_conditional_create's wording for it is the one
tested here)."""
import shutil

import pytest
import yaml

from python_adapter.cli import object_store
from python_adapter.cli.jars import s3a_jars
from tests.functional.dbt.test_dbt_project import REPO, _dbt_steps, _plain
from tests.functional.dbt.test_failures_said_once import _java_stack
from benchmarks.lib.session import free_port


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    server = object_store.S3Server(state=str(tmp_path_factory.mktemp("s3")), port=free_port(),
                                   bucket="sized", access_key="sized", secret_key="sized-secret")
    object_store.start(server)
    try:
        yield server
    finally:
        object_store.stop(server)


def _store(server):
    from pyarrow import fs

    return fs.S3FileSystem(access_key=server.access_key, secret_key=server.secret_key,
                           endpoint_override=f"127.0.0.1:{server.port}", scheme="http",
                           region="us-east-1", allow_bucket_creation=True)


def _keys(store, bucket):
    from pyarrow import fs

    return [i.path for i in store.get_file_info(fs.FileSelector(bucket, recursive=True))
            if i.type == fs.FileType.File]


@pytest.fixture(scope="module")
def runs(s3, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("s3_project")
    project, home = tmp / "project", tmp / "spark"
    shutil.copytree(REPO / "tests/functional/dbt_s3", project)
    profiles = yaml.safe_load((REPO / "integration_tests/profiles.yml").read_text())
    target = profiles["sized_spark_integration_tests"]["outputs"]["s3"]
    target["server_side_parameters"][
        "spark.hadoop.fs.s3a.bucket.nocond.create.conditional.enabled"] = "false"
    (project / "profiles.yml").write_text(yaml.safe_dump(profiles))
    store = _store(s3)
    store.create_dir("nocond")     # a second bucket
    env = {"SIZED_S3_PORT": str(s3.port), "SIZED_S3A_JARS": ",".join(s3a_jars({}))}
    names = ["s3_events", "s3_table", "s3_unconditional"]
    steps = _dbt_steps(project, home, "s3", *[["run", "--select", n] for n in names],
                       env_extra=env)
    return dict(zip(names, steps)), store


@pytest.mark.parametrize("model", ["s3_events", "s3_table"])
def test_a_model_on_s3_is_refused_once_naming_the_store_and_the_way_out(runs, model):
    steps, _store = runs
    out = _plain(steps[model].stdout)
    assert steps[model].returncode != 0
    said = out.count("cannot commit to s3a://sized (the table's lock s3a://sized/warehouse/")
    assert said == 1, out[-3000:]
    assert "rename is a copy and a delete, not atomic" in out
    assert "Keep the table on local disk or HDFS (location_root, or spark.sql.warehouse.dir)" in out
    assert "Unhandled error" not in out and not _java_stack(out), out[-3000:]


def test_a_store_without_conditional_create_is_refused_naming_the_setting(runs):
    steps, _store = runs
    out = _plain(steps["s3_unconditional"].stdout)
    assert steps["s3_unconditional"].returncode != 0
    assert out.count("cannot commit to s3a://nocond") == 1, out[-3000:]
    assert "set spark.hadoop.fs.s3a.create.conditional.enabled=true" in out
    assert "this Spark has Hadoop 3." in out
    assert not _java_stack(out), out[-3000:]


def test_nothing_is_written_and_no_lock_is_left(runs):
    steps, store = runs
    for bucket in ("sized", "nocond"):
        keys = _keys(store, bucket)
        assert not [k for k in keys if k.endswith(".parquet")], keys
        assert not [k for k in keys if k.rsplit("/", 1)[-1] in ("lock", "cluster.lock")], keys
    # and the process printed no Java stack on stderr either
    assert not _java_stack(steps["s3_events"].stderr), steps["s3_events"].stderr[-3000:]
