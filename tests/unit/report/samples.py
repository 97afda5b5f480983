"""What the report's unit tests build their tables from (hand-built layouts and timelines,
no Spark) and read their pages with."""
import re
from datetime import datetime, timezone
from html.parser import HTMLParser

from python_adapter.core.layout import Layout, LayoutFile
from python_adapter.table.timeline import FileEntry, Instant

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
TARGET, SMALL = 1000, 800
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


class StrictParser(HTMLParser):
    """Every opened non-void element closed, in order; records tags and visible text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.tags, self.text = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def parse(page):
    p = StrictParser()
    p.feed(page)
    p.close()
    return p


def cards(page):
    """{summary card label: value}."""
    return dict(re.findall(r'<div class="label">([^<]*)</div><div class="value">([^<]*)</div>',
                           page))


def lf(part, name, size, rows=10, ranges=()):
    return LayoutFile(part, f"{part}/{name}" if part else name, size, rows, ranges)


def fe(part, name, size, rows=10, group=""):
    return FileEntry(part, f"{part}/{name}" if part else name, rows, size, group)


def commit(ident, op, added=(), removed=(), action="commit", state="completed", **extra):
    return Instant(instant=ident, action=action, state=state, operation=op,
                   created_at_ms=1_760_000_000_000, added=tuple(added), removed=tuple(removed),
                   extra={k: str(v) for k, v in extra.items()})


def sample_layout(**kw):
    files = (lf("day=2025-01-01", "a.parquet", 100), lf("day=2025-01-01", "b.parquet", 950),
             lf("day=2025-01-02", "c.parquet", 300), lf("day=2025-01-02", "d.parquet", 1300),
             lf("day=2025-01-03", "e.parquet", 1000, rows=7))
    return Layout(files, kw.get("target", TARGET), kw.get("small", SMALL), kw.get("cluster_by", ()))
