"""core/keys.summarize_keys: an upsert's key check of a small batch in the driver."""
import datetime
from decimal import Decimal

from python_adapter.core.keys import KeyRowShape, summarize_keys

PARTITIONED = KeyRowShape(keys=1, identity=1, orderable=True, partitioned=True)


def test_the_key_range_overall_and_per_partition_and_the_rows():
    rows = [(5, "2025-01-01"), (2, "2025-01-02"), (9, "2025-01-01"), (7, None)]
    found = summarize_keys(rows, PARTITIONED)
    assert found.key_range == (2, 9) and found.rows == 4
    assert found.partitions == {("2025-01-01",): (5, 9), ("2025-01-02",): (2, 2), (None,): (7, 7)}


def test_a_null_key_or_a_key_twice_leaves_the_check_to_spark():
    assert summarize_keys([(1, "a"), (None, "b")], PARTITIONED) is None
    assert summarize_keys([(1, "a"), (1, "b")], PARTITIONED) is None


def test_a_key_is_unique_within_its_scope_columns_which_may_be_null():
    """index_scope partition: the key with the partition value is the identity; the same
    key in two partitions is two rows, a null partition value is a value."""
    scoped = KeyRowShape(keys=1, identity=2, orderable=True, partitioned=True)
    found = summarize_keys([(1, "a", "a"), (1, None, None), (3, "a", "a")], scoped)
    assert found.rows == 3 and found.partitions == {("a",): (1, 3), (None,): (1, 1)}
    assert summarize_keys([(1, None, None), (1, None, None)], scoped) is None


def test_composite_keys_strings_dates_and_decimals():
    composite = KeyRowShape(keys=2, identity=2, orderable=True, partitioned=False)
    found = summarize_keys([("b", 1), ("a", 2), ("b", 2)], composite)
    assert found.key_range == ("a", "b") and found.partitions == {} and found.rows == 3
    assert summarize_keys([("a", None)], composite) is None   # any key column null
    days = [(datetime.date(2025, 1, d),) for d in (3, 1, 2)]
    flat = KeyRowShape(keys=1, identity=1, orderable=True, partitioned=False)
    assert summarize_keys(days, flat).key_range == (days[1][0], days[0][0])
    # 1.50 and 1.5 are one decimal, as in Spark
    assert summarize_keys([(Decimal("1.50"),), (Decimal("1.5"),)], flat) is None


def test_a_key_without_order_has_no_range_and_no_rows_no_partitions():
    unordered = KeyRowShape(keys=1, identity=1, orderable=False, partitioned=True)
    found = summarize_keys([(True, "x"), (False, "y")], unordered)
    assert found.key_range == (None, None)
    assert found.partitions == {("x",): (None, None), ("y",): (None, None)}
    assert summarize_keys([], PARTITIONED) == ((None, None), {}, 0)
