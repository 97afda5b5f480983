"""Per-file key statistics kept in the timeline (the min / max of the first unique_key
column), so tagging can rule files out without opening them. Pure.

A statistic is text: numbers 'n:<decimal>' (compared as numbers), others 's:<text>'
(compared as text, which orders ISO dates and times as they order); '' is unknown.
"""
import datetime
import decimal
from typing import Any, Optional, Protocol, Tuple


class KeyRange(Protocol):
    """What may_hold_keys reads of a file: a FileEntry of the table layer."""

    @property
    def key_min(self) -> str: ...

    @property
    def key_max(self) -> str: ...


def encode_key(value: Any) -> str:
    """A key statistic as text for the timeline."""
    if value is None:
        return ""
    if isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool):
        return f"n:{decimal.Decimal(value)}"
    if isinstance(value, (datetime.date, datetime.datetime)):
        return f"s:{value.isoformat()}"
    return f"s:{value}"


def decode_key(text: str) -> Tuple[str, Any]:
    if text.startswith("n:"):
        return ("n", decimal.Decimal(text[2:]))
    return ("s", text[2:])


def may_hold_keys(entry: Optional[KeyRange], lo: Any, hi: Any) -> bool:
    """False only when the file's recorded key range (a FileEntry's key_min / key_max)
    cannot overlap the keys [lo, hi]."""
    if entry is None or not entry.key_min or not entry.key_max or lo is None:
        return True
    fmin, fmax = decode_key(entry.key_min), decode_key(entry.key_max)
    blo, bhi = decode_key(encode_key(lo)), decode_key(encode_key(hi))
    if not (fmin[0] == fmax[0] == blo[0] == bhi[0]):
        return True
    return not (fmax[1] < blo[1] or fmin[1] > bhi[1])
