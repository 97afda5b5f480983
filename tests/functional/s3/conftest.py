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


# The heaviest modules first (seconds on 2 workers here: the dbt build ~335, the killed run
# and Connect ~250, the crashes ~200, the table ~135, the lock ~35), so both pytest workers
# finish together: scripts/test.sh hands modules out in collection order
HEAVIEST_FIRST = ["test_dbt_on_s3", "test_dbt_recovery_on_s3", "test_crashes_on_s3",
                  "test_table_on_s3", "test_lock_on_s3"]


def pytest_collection_modifyitems(items):
    """This directory's tests in HEAVIEST_FIRST's order, in the places they held (the rest of
    a run's items stay where they are)."""
    def rank(item):
        name = item.module.__name__.rsplit(".", 1)[-1]
        return HEAVIEST_FIRST.index(name) if name in HEAVIEST_FIRST else len(HEAVIEST_FIRST)

    slots = [i for i, item in enumerate(items) if "/functional/s3/" in str(item.fspath)]
    ours = sorted((items[i] for i in slots), key=rank)   # stable: a module's own order kept
    for i, item in zip(slots, ours):
        items[i] = item
