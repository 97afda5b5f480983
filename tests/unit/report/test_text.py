"""The report's text helpers: what reaches the page is escaped and short."""
from python_adapter.report.text import clip, decimal, escape, when


def test_escape_covers_markup_and_quotes_and_none():
    assert escape('<a href="x">&\'') == "&lt;a href=&quot;x&quot;&gt;&amp;&#x27;"
    assert escape(None) == "" and escape(12) == "12"


def test_clip_marks_the_cut():
    assert clip("abcdef", 6) == "abcdef"
    assert clip("abcdefg", 6) == "abcde\u2026"
    assert clip(None, 3) == ""


def test_when_is_utc_and_empty_when_unknown():
    assert when(1_760_000_000_000) == "2025-10-09 08:53:20 UTC"
    assert when(0) == "" and when(None) == ""


def test_decimal_drops_trailing_zeros():
    assert [decimal(v) for v in (2.0, 0.5, 1.25, 0)] == ["2", "0.5", "1.2", "0"]
