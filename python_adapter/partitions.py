"""Hive partition directory names from partition values, as Spark writes them. Pure.

Upserts plan per partition from two sides: the existing files (known by directory) and the
new rows (known by value); this maps values to directories the way Spark's
ExternalCatalogUtils.escapePathName does.
"""
import datetime
import decimal

DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
_ESCAPE = set('"#%\'*/:=?\\\x7f{[]^') | {chr(c) for c in range(1, 32)}
SUPPORTED_TYPES = ("string", "varchar", "char", "tinyint", "smallint", "int", "bigint",
                   "date", "boolean", "decimal")


def escape_path_name(text):
    return "".join(f"%{ord(ch):02X}" if ch in _ESCAPE else ch for ch in text)


def value_text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime.datetime):
        raise TypeError("timestamp partition values are not supported by upsert/insert")
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    return str(value)


def partition_path(columns, values):
    """'a=1/b=x%2Fy' for columns (a, b) and values (1, 'x/y'); '' when unpartitioned."""
    parts = []
    for col, value in zip(columns, values):
        text = DEFAULT_PARTITION if value is None or value == "" else escape_path_name(value_text(value))
        parts.append(f"{escape_path_name(col)}={text}")
    return "/".join(parts)


def check_partition_types(schema, columns):
    """Raise naming the column when a partition column's type cannot be mapped to its path."""
    for col in columns:
        type_name = schema[col].dataType.simpleString()
        if not type_name.startswith(SUPPORTED_TYPES):
            raise TypeError(
                f"partition_by: column {col} has type {type_name}; upsert and insert support "
                f"partition columns of types {', '.join(SUPPORTED_TYPES)}")


def unescape_path_name(text):
    out, i = [], 0
    while i < len(text):
        if text[i] == "%" and i + 2 < len(text) + 0 and len(text[i + 1:i + 3]) == 2:
            try:
                out.append(chr(int(text[i + 1:i + 3], 16)))
                i += 3
                continue
            except ValueError:
                pass
        out.append(text[i])
        i += 1
    return "".join(out)


def parse_partition_path(path):
    """'a=1/b=x%2Fy' -> [('a', '1'), ('b', 'x/y')]; None stands for the default partition."""
    out = []
    for part in [p for p in path.split("/") if p]:
        col, _, text = part.partition("=")
        value = unescape_path_name(text)
        out.append((unescape_path_name(col), None if value == DEFAULT_PARTITION else value))
    return out
