"""Tests on a real S3 server (SeaweedFS on 127.0.0.1), one per pytest worker, which the
worker's Spark session reaches through S3A (tests/functional/object_store.py)."""
import pytest

from tests.functional.object_store import conditional_writes, point_session_at, s3_server


@pytest.fixture(scope="session")
def s3(spark, tmp_path_factory):
    assert conditional_writes(), ("S3 needs pyspark's Hadoop 3.4.2+ (pyspark 4): "
                                  "scripts/test.sh leaves tests/functional/s3 out on 3.5")
    with s3_server(str(tmp_path_factory.mktemp("s3"))) as server:
        point_session_at(spark, server)
        yield server
