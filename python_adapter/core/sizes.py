"""Human byte sizes: parse '128MB' / '1GiB' / 1048576 and format bytes back."""
import math
import re
from typing import Optional, Union, cast

_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "kib": 1024,
    "m": 1000**2, "mb": 1000**2, "mib": 1024**2,
    "g": 1000**3, "gb": 1000**3, "gib": 1024**3,
    "t": 1000**4, "tb": 1000**4, "tib": 1024**4,
}
_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(value: Union[int, float, str], key: str = "size") -> int:
    """Bytes from an int or a string such as '128MB', '1GiB', '512 kb'.

    MB is decimal (1000**2) and MiB binary (1024**2), as on disk tools; `key` names the
    config key in the error so users can find the bad value.
    """
    if isinstance(value, bool):
        raise ValueError(f"{key}: expected a size such as '128MB' or a number of bytes, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{key}: size must not be negative, got {value!r}")
        return value
    if isinstance(value, float):
        if value < 0 or math.isnan(value) or math.isinf(value):
            raise ValueError(f"{key}: size must be a finite non-negative number, got {value!r}")
        return int(value)
    if isinstance(value, str):
        match = _SIZE_RE.match(value)
        if match:
            number, unit = match.groups()
            factor = _UNITS.get(unit.lower())
            if factor is not None:
                return int(float(number) * factor)
    raise ValueError(
        f"{key}: cannot read {value!r} as a size; use bytes or a number with a unit "
        f"(B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), e.g. '128MB'"
    )


def binary_units(size: Optional[int]) -> bool:
    """Whether a size the user wrote is in binary units: a whole number of KiB that is not a
    whole number of KB ('1GiB', '256KiB', 1048576), as opposed to '128MB' or '256KB'."""
    whole = cast(int, size)  # bool(size) rules None out first; mypy does not narrow through bool()
    return bool(size) and whole % 1024 == 0 and whole % 1000 != 0


def format_size(num_bytes: Optional[float], like: Optional[int] = None) -> str:
    """'256 KB', '1.5 MB' for logs and reports: decimal units (MB = 1000², as the
    config's '128MB'), or binary ('1.5 MiB') when `like`, the size the user wrote (the
    table's target), is in binary units; '.0' is left out."""
    if num_bytes is None:
        return "-"
    step, units = (1024, ("B", "KiB", "MiB", "GiB", "TiB")) if binary_units(like) \
        else (1000, ("B", "KB", "MB", "GB", "TB"))
    value = float(num_bytes)
    for unit in units:
        if abs(value) < step or unit == units[-1]:
            if unit == "B":
                return f"{int(value)} B"
            text = f"{value:.1f}"
            return f"{text[:-2] if text.endswith('.0') else text} {unit}"
        value /= step
    return f"{value:.1f} {units[-1]}"  # not reached


_DURATION_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h)?\s*$")
_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}


def parse_duration(value: Union[int, float, str], key: str = "duration") -> float:
    """Seconds from a number (seconds) or a string such as '30s', '5m', '1h', '500ms'."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    if isinstance(value, str):
        match = _DURATION_RE.match(value)
        if match:
            return float(match.group(1)) * _SECONDS[match.group(2)]
    raise ValueError(f"{key}: cannot read {value!r} as a duration; use seconds or a number with "
                     f"a unit (ms, s, m, h), e.g. '5m'")


def format_count(n: int) -> str:
    """'12,345': counts in logs and messages."""
    return f"{n:,}"


# Plurals that adding an s does not make; words ending in s, x, ch or sh take -es
# (`batch` -> `batches`), a consonant and y -ies (`entry` -> `entries`).
_IRREGULAR = {"was": "were", "is": "are", "has": "have", "this": "these", "it": "they"}


def plural(word: str) -> str:
    """The plural of an English noun as our messages use them: 'file' -> 'files',
    'batch' -> 'batches', 'directory' -> 'directories', 'hPartition' -> 'hPartitions'."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    if len(word) > 1 and word[-1] == "y" and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def count_of(n: int, word: str, many: Optional[str] = None) -> str:
    """'1 file', '0 files', '12,345 rows': a count and its noun, plural unless n is 1 (as
    English and dbt's own lines have it: '1 of 2 START'). many: the plural where
    `plural(word)` would be wrong."""
    return f"{n:,} {word if n == 1 else (many or plural(word))}"


def format_duration(seconds: float) -> str:
    """'850ms', '12.3s', '4m05s' for progress logs."""
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes}m{secs:02d}s"
