"""Short, escaped text for the report's HTML and its SVG charts.

Every string that comes from the table (partition values, paths, operations, column values)
goes through `escape` before it reaches the page.
"""
import html
import time


def escape(value: object) -> str:
    """Text and attribute values alike (quotes escaped); None is empty."""
    return html.escape("" if value is None else str(value), quote=True)


def when(ms: int) -> str:
    """An instant's time in UTC, so the report reads the same wherever it is opened."""
    if not ms:
        return ""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000)) + " UTC"


def clip(text: object, limit: int) -> str:
    """At most `limit` characters, an ellipsis marking the cut."""
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def decimal(v: float) -> str:
    """One decimal at most: '2', '0.5'."""
    return f"{v:.1f}".rstrip("0").rstrip(".")
