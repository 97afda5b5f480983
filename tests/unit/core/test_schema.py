"""Which type changes an incremental run may cast the new rows across (schema.keeps_values)."""
import pytest

from python_adapter.core.schema import keeps_values, normal_type


@pytest.mark.parametrize("source, target", [
    ("int", "bigint"), ("tinyint", "int"), ("smallint", "bigint"), ("int", "double"),
    ("float", "double"), ("decimal(10,2)", "decimal(12,2)"), ("decimal(10,2)", "decimal(11,3)"),
    ("int", "decimal(10,0)"), ("bigint", "string"), ("date", "string"), ("date", "timestamp"),
    ("varchar(10)", "string"), ("string", "char(5)"), ("array<int>", "array<int>"),
])
def test_widenings_keep_every_value(source, target):
    assert keeps_values(source, target)


@pytest.mark.parametrize("source, target", [
    ("bigint", "int"), ("string", "bigint"), ("double", "float"), ("bigint", "double"),
    ("int", "float"), ("decimal(10,2)", "decimal(10,1)"), ("decimal(12,2)", "decimal(11,2)"),
    ("double", "decimal(38,10)"), ("timestamp", "date"), ("binary", "string"),
    ("array<int>", "array<bigint>"), ("int", "decimal(9,0)"), ("string", "date"),
])
def test_narrowings_and_conversions_may_lose_values(source, target):
    assert not keeps_values(source, target)


def test_describe_and_simple_string_spell_types_alike():
    assert normal_type("decimal(10, 2)") == normal_type("decimal(10,2)")
    assert normal_type("VARCHAR(3)") == "string"
