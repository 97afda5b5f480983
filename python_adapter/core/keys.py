"""Per-file key statistics kept in the timeline (the min / max of the first unique_key
column), so tagging can rule files out without opening them; and the key check of a small
batch's collected keys (summarize_keys). Pure.

A statistic is text: numbers 'n:<decimal>' (compared as numbers), others 's:<text>'
(compared as text, which orders ISO dates and times as they order); '' is unknown.
"""
import datetime
import decimal
from typing import Any, Dict, Iterable, NamedTuple, Optional, Protocol, Sequence, Tuple


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


class KeyRowShape(NamedTuple):
    """How summarize_keys reads a row: its first `keys` values are the key columns, the
    first `identity` the key with the columns it is unique within; the rest, when
    `partitioned`, the partition texts. orderable: the first key column has an order."""
    keys: int
    identity: int
    orderable: bool
    partitioned: bool


class KeySummary(NamedTuple):
    """What an upsert's key check finds in a batch: (min, max) of the first key column,
    the same per partition (values as texts), and the rows."""
    key_range: Tuple[Any, Any]
    partitions: Dict[Tuple[Optional[str], ...], Tuple[Any, Any]]
    rows: int


def summarize_keys(rows: Iterable[Sequence[Any]], shape: KeyRowShape) -> Optional[KeySummary]:
    """The key check of a small batch's rows in the driver: each row is its key columns,
    then the columns a key is unique within, then its partition values as texts. None
    when a key is null or appears twice: the Spark check then names the error or dedupes.
    Only for types whose Python values compare and hash as Spark's do."""
    seen: set = set()
    parts: Dict[Tuple[Optional[str], ...], Tuple[Any, Any]] = {}
    overall = None
    for row in rows:
        if any(v is None for v in row[:shape.keys]):
            return None
        identity = tuple(row[:shape.identity])
        if identity in seen:
            return None
        seen.add(identity)
        first = row[0] if shape.orderable else None
        overall = _widen(overall, first)
        if shape.partitioned:
            part = tuple(row[shape.identity:])
            parts[part] = _widen(parts.get(part), first)
    return KeySummary(overall or (None, None), parts, len(seen))


def _widen(bounds: Optional[Tuple[Any, Any]], value: Any) -> Tuple[Any, Any]:
    """(min, max) with value taken in; (None, None) for a key without order (value None)."""
    if value is None:
        return bounds or (None, None)
    if bounds is None:
        return (value, value)
    return (min(bounds[0], value), max(bounds[1], value))
