"""Tests on a real S3 server (SeaweedFS on 127.0.0.1), one per pytest worker, which the
worker's Spark session reaches through S3A (tests/functional/object_store.py)."""
import pytest

from tests.functional.object_store import conditional_writes, point_session_at
from tests.functional.object_store import running_s3_server


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """The worker's S3 server (dbt's processes reach it through the profile's s3 target)."""
    assert conditional_writes(), ("S3 needs pyspark's Hadoop 3.4.2+ (pyspark 4): "
                                  "scripts/test.sh leaves tests/functional/s3 out on 3.5")
    with running_s3_server(str(tmp_path_factory.mktemp("s3"))) as server:
        yield server


@pytest.fixture(scope="session")
def s3(spark, s3_server):
    """The worker's S3 server, which its Spark session reaches."""
    point_session_at(spark, s3_server)
    return s3_server
