"""Which column type changes keep every value. Pure, over Spark's type names
(`DataType.simpleString()`, as DESCRIBE shows them).

An incremental run whose column has another type than the table's column casts the new
rows to the table's type. That is only safe when the cast keeps every value: a bigint
cast to int, or a string cast to a number, turns what does not fit into NULL without an
error (Spark's non-ANSI cast, which dbt-spark sessions use).
"""
import re
from typing import Optional, Tuple

_INTEGRAL = ("tinyint", "smallint", "int", "bigint")
_DIGITS = {"tinyint": 3, "smallint": 5, "int": 10, "bigint": 19}  # whole digits each holds
_MANTISSA = {"float": 24, "double": 53}                            # bits held exactly
_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}
_DECIMAL = re.compile(r"decimal\((\d+),\s*(\d+)\)")
_ATOMIC = (*_INTEGRAL, "float", "double", "boolean", "date", "timestamp", "timestamp_ntz",
           "string", "binary")


def normal_type(type_name: str) -> str:
    """A type name as DESCRIBE and simpleString() agree on it (char/varchar as string)."""
    name = type_name.strip().lower()
    if re.fullmatch(r"(var)?char\(\d+\)", name):
        return "string"
    if name == "integer":
        return "int"
    if name == "long":
        return "bigint"
    if name == "decimal":
        return "decimal(10,0)"
    return name.replace(", ", ",")


def _decimal(name: str) -> Optional[Tuple[int, int]]:
    m = _DECIMAL.fullmatch(name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def keeps_values(source: str, target: str) -> bool:
    """True when casting every value of type `source` to `target` gives back the same value
    (same number, same text, same instant): equal types and widenings. Anything else (a
    narrower number, text to a number, nested types that differ) may lose values."""
    src, dst = normal_type(source), normal_type(target)
    if src == dst:
        return True
    if dst == "string":
        return src in _ATOMIC and src != "binary" or _decimal(src) is not None
    if src in _INTEGRAL:
        if dst in _INTEGRAL:
            return _INTEGRAL.index(src) <= _INTEGRAL.index(dst)
        if dst in _MANTISSA:
            return _BITS[src] <= _MANTISSA[dst]
        dec = _decimal(dst)
        return dec is not None and dec[0] - dec[1] >= _DIGITS[src]
    if src == "float":
        return dst == "double"
    src_dec, dst_dec = _decimal(src), _decimal(dst)
    if src_dec and dst_dec:
        return dst_dec[1] >= src_dec[1] and dst_dec[0] - dst_dec[1] >= src_dec[0] - src_dec[1]
    if src == "date":
        return dst in ("timestamp", "timestamp_ntz")
    return False
