"""dbt-tests-adapter's basic suite for the sized_spark adapter on an embedded Spark session."""
import pytest

from dbt.tests.adapter.basic.test_adapter_methods import BaseAdapterMethod
from dbt.tests.adapter.basic.test_base import BaseSimpleMaterializations
from dbt.tests.adapter.basic.test_empty import BaseEmpty
from dbt.tests.adapter.basic.test_ephemeral import BaseEphemeral
from dbt.tests.adapter.basic.test_generic_tests import BaseGenericTests
from dbt.tests.adapter.basic.test_incremental import BaseIncremental
from dbt.tests.adapter.basic.test_singular_tests import BaseSingularTests
from dbt.tests.adapter.basic.test_singular_tests_ephemeral import BaseSingularTestsEphemeral
from dbt.tests.adapter.basic.test_snapshot_check_cols import BaseSnapshotCheckCols
from dbt.tests.adapter.basic.test_snapshot_timestamp import BaseSnapshotTimestamp
from dbt.tests.adapter.basic.test_validate_connection import BaseValidateConnection
from dbt.tests.adapter.basic import test_snapshot_check_cols as check_cols_suite
from dbt.tests.adapter.basic import test_snapshot_timestamp as timestamp_suite
from tests.adapter.snapshot_helpers import spark_update_rows


class TestSimpleMaterializationsSizedSpark(BaseSimpleMaterializations):
    pass


class TestSingularTestsSizedSpark(BaseSingularTests):
    pass


class TestSingularTestsEphemeralSizedSpark(BaseSingularTestsEphemeral):
    pass


class TestEmptySizedSpark(BaseEmpty):
    pass


class TestEphemeralSizedSpark(BaseEphemeral):
    pass


class TestIncrementalSizedSpark(BaseIncremental):
    pass


class TestGenericTestsSizedSpark(BaseGenericTests):
    pass


@pytest.fixture
def parquet_update_rows(monkeypatch):
    """The suites edit their seed with UPDATE, which Spark's Parquet tables do not support:
    the same edit through snapshot_helpers.spark_update_rows."""
    for module in (check_cols_suite, timestamp_suite):
        monkeypatch.setattr(module, "update_rows", spark_update_rows)


@pytest.mark.usefixtures("parquet_update_rows")
class TestSnapshotCheckColsSizedSpark(BaseSnapshotCheckCols):
    """A Parquet snapshot on a session profile: written by the sized engine."""


@pytest.mark.usefixtures("parquet_update_rows")
class TestSnapshotTimestampSizedSpark(BaseSnapshotTimestamp):
    pass


class TestAdapterMethodSizedSpark(BaseAdapterMethod):
    pass


class TestValidateConnectionSizedSpark(BaseValidateConnection):
    pass
