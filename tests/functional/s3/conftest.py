"""Tests on a real S3 server (SeaweedFS on 127.0.0.1), one per pytest worker, which the
worker's Spark session reaches through S3A (tests/functional/object_store.py). They run in a
pytest process of their own (scripts/test.sh): the S3A jars must be on the JVM's launch."""
import pytest

from tests.functional.conftest import TEST_CONF
from tests.functional.object_store import conditional_writes, point_session_at
from tests.functional.object_store import running_s3_server, s3a_missing_from_driver
from tests.functional.object_store import session_conf


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """The worker's session with the S3A jars (the first session of its process)."""
    from benchmarks.lib.session import LocalSpark, start

    assert conditional_writes(), ("S3 needs pyspark's Hadoop 3.4.2+ (pyspark 4): "
                                  "scripts/test.sh leaves tests/functional/s3 out on 3.5")
    if s3a_missing_from_driver():
        pytest.fail("tests/functional/s3 need a pytest process of their own (another "
                    "module's Spark started this JVM without the S3A jars): run "
                    "`pytest tests/functional/s3`, as scripts/test.sh does", pytrace=False)
    home = tmp_path_factory.mktemp("spark_home")
    session = start(LocalSpark(home, app_name="sized-tests-s3", class_archive=True,
                               conf=TEST_CONF + session_conf()))
    yield session
    session.stop()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """The worker's S3 server (dbt's processes reach it through the profile's s3 target)."""
    with running_s3_server(str(tmp_path_factory.mktemp("s3"))) as server:
        yield server


@pytest.fixture(scope="session")
def s3(spark, s3_server):
    """The worker's S3 server, which its Spark session reaches."""
    point_session_at(spark, s3_server)
    return s3_server
