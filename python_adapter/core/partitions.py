"""Hive partition directory names from partition values, as Spark writes them. Pure.

Upserts plan per partition from two sides: the existing files (known by directory) and the
new rows (known by value). A value is known here by its text: what Spark's cast to string
gives, which is what Spark's writer puts in the directory name (in the session's time
zone for timestamps), so every type Spark can partition by maps to the directory Spark
writes. The text is escaped the way ExternalCatalogUtils.escapePathName does.
"""
from typing import Iterable, List, Optional, Sequence, Tuple

from python_adapter.core.config import ConfigError

DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
# Texts that Hive's layout writes to the default partition, like NULL: read back as NULL.
NULL_LIKE = ("", DEFAULT_PARTITION)
_HEX = set("0123456789abcdefABCDEF")
_ESCAPE = set('"#%\'*/:=?\\\x7f{[]^') | {chr(c) for c in range(1, 32)}


def escape_path_name(text: str) -> str:
    return "".join(f"%{ord(ch):02X}" if ch in _ESCAPE else ch for ch in text)


def partition_path(columns: Sequence[str], texts: Sequence[Optional[str]]) -> str:
    """'a=1/b=x%2Fy' for columns (a, b) whose values Spark casts to the texts ('1', 'x/y');
    None stands for NULL; '' when unpartitioned."""
    parts = []
    for col, text in zip(columns, texts):
        shown = DEFAULT_PARTITION if text is None or text in NULL_LIKE else escape_path_name(text)
        parts.append(f"{escape_path_name(col)}={shown}")
    return "/".join(parts)


def check_partition_texts(columns: Sequence[str], rows: Iterable[Sequence[Optional[str]]]) -> None:
    """Refuse partition values that Hive's layout cannot keep apart from NULL, before
    anything is written: the empty string (and the default partition's own name) would be
    read back as NULL, merged with the NULL rows."""
    for texts in rows:
        for col, text in zip(columns, texts):
            if text is not None and text in NULL_LIKE:
                raise ConfigError(
                    f"partition_by: column {col} holds the value {text!r}, which Hive's partition "
                    f"layout writes to {DEFAULT_PARTITION} like NULL: it would read back as NULL, "
                    f"mixed with the NULL rows. Nothing was written. Map it in the model: "
                    f"nullif({col}, {text!r}) stores it as NULL, coalesce(nullif({col}, {text!r}), "
                    f"'(empty)') keeps it apart")


def unescape_path_name(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        code = text[i + 1:i + 3]
        if text[i] == "%" and len(code) == 2 and all(c in _HEX for c in code):
            out.append(chr(int(code, 16)))
            i += 3
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def parse_partition_path(path: str) -> List[Tuple[str, Optional[str]]]:
    """'a=1/b=x%2Fy' -> [('a', '1'), ('b', 'x/y')]; None stands for the default partition."""
    out = []
    for part in [p for p in path.split("/") if p]:
        col, _, text = part.partition("=")
        value = unescape_path_name(text)
        out.append((unescape_path_name(col), None if value == DEFAULT_PARTITION else value))
    return out
