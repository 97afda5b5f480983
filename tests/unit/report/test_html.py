"""The HTML table report, rendered from hand-built layouts and timelines (no Spark)."""
import re
from datetime import datetime, timezone
from html.parser import HTMLParser

import pytest

from python_adapter.core.layout import Layout, LayoutFile
from python_adapter.report.html import (MAX_HEATMAP_PARTITIONS, MAX_RANGE_ROWS, bin_counts,
                                   range_overlaps, render_report, replay_timeline, size_bins)
from python_adapter.core.sizes import format_size
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


def test_summary_shows_the_numbers_a_user_checks():
    page = render_report("db.events", sample_layout(), [], WHEN)
    got = cards(page)
    assert got["Files"] == "5"
    assert got["Rows"] == "47"
    assert got["Partitions"] == "3"
    assert got["Size"] == format_size(3650)
    assert got["Target file size"] == format_size(TARGET)
    assert got["Small-file limit"] == format_size(SMALL)
    assert got["Small files"] == "2"                 # 100 and 300 bytes
    assert got["Above 1.25\u00d7 target"] == "1"     # 1300 > 1250
    assert "in 2 partitions" in page                 # partitions holding small files
    assert "db.events" in page and "2026-01-02 03:04:05" in page


def test_page_is_well_formed_and_has_every_section():
    inst = [commit("001", "full_refresh", [fe("day=2025-01-01", "a.parquet", 100)])]
    page = render_report("t", sample_layout(cluster_by=("id",)), inst, WHEN)
    p = parse(page)
    assert not p.errors and not p.stack
    assert page.startswith("<!DOCTYPE html>")
    for tag in ("html", "head", "body", "main", "style", "svg", "table"):
        assert tag in p.tags
    for section in ("summary", "sizes", "timeline", "clustering"):
        assert f'<section id="{section}">' in page


def test_page_is_self_contained():
    inst = [commit("001", "full_refresh", [fe("d=1", "a.parquet", 100)])]
    page = render_report("t", sample_layout(), inst, WHEN)
    low = page.lower()
    for needle in ("http://", "https://", "<script", "<link", "<img", "<iframe", "url(",
                   "@import", "src="):
        assert needle not in low, needle


def test_strings_from_data_are_escaped():
    evil = "p=<script>alert(1)</script>"
    layout = Layout((lf(evil, 'x"y.parquet', 100, ranges=(("c", "<b>", "</b>&"),)),
                     lf("p=ok", "z.parquet", 900, ranges=(("c", "a", "b"),))),
                    TARGET, SMALL, ("c",))
    inst = [commit("001", "full_refresh<i>", [fe(evil, "x.parquet", 100)]),
            commit("002", "cluster", [], [fe(evil, "x.parquet", 100, group="g<0>")],
                   action="replacecommit", state="requested", scheduled="true",
                   strategy="<zorder>", cluster_by="c")]
    page = render_report("<title>", layout, inst, "<now>")
    assert "<script" not in page and "<b>" not in page and "<i>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;zorder&gt;" in page and "full_refresh&lt;i&gt;" in page
    assert "&lt;/b&gt;&amp;" in page and "&lt;title&gt;" in page and "&lt;now&gt;" in page
    p = parse(page)
    assert not p.errors and not p.stack


def test_replay_counts_small_files_after_each_instant():
    small3 = [fe("d=1", f"s{i}.parquet", 100) for i in range(3)]
    inst = [commit("001", "full_refresh", small3),
            commit("002", "cluster", [fe("d=1", "c.parquet", 300)], small3,
                   action="replacecommit")]
    points = replay_timeline(inst, SMALL)
    assert [p.files for p in points] == [3, 1]
    assert [p.small for p in points] == [3, 1]           # 300 B is still below 800 B
    assert [p.operation for p in points] == ["full_refresh", "cluster"]
    assert points[-1].bytes == 300

    big = [commit("001", "full_refresh", small3),
           commit("002", "cluster", [fe("d=1", "c.parquet", 900)], small3,
                  action="replacecommit")]
    assert [p.small for p in replay_timeline(big, SMALL)] == [3, 0]


def test_replay_skips_unfinished_instants_and_restarts_at_full_builds():
    a, b, c = fe("d=1", "a", 100), fe("d=1", "b", 900), fe("d=2", "c", 50)
    inst = [commit("001", "full_refresh", [a, b]),
            commit("002", "insert", [c], state="inflight"),           # crashed: not applied
            commit("003", "cluster", [], [a], action="replacecommit", state="requested",
                   scheduled="true"),                                   # a plan: not applied
            commit("004", "insert_overwrite", [c], [a]),
            commit("005", "rollback", [a], [c], action="rollback", rolled_back="004"),
            commit("006", "full_refresh", [b])]                         # starts over
    points = replay_timeline(list(reversed(inst)), SMALL)              # order does not matter
    assert [p.instant for p in points] == ["001", "004", "005", "006"]
    assert [p.files for p in points] == [2, 2, 2, 1]
    assert [p.small for p in points] == [1, 1, 1, 0]


def test_timeline_section_lists_instants_and_plots_both_series():
    small3 = [fe("d=1", f"s{i}.parquet", 100) for i in range(3)]
    inst = [commit("20260101000000001", "full_refresh", small3, target_file_size=TARGET,
                   small_file_limit=SMALL),
            commit("20260101000000002", "cluster", [fe("d=1", "c.parquet", 300)], small3,
                   action="replacecommit", strategy="linear", cluster_by="id")]
    layout = Layout((lf("d=1", "c.parquet", 300),))   # limits come from the commit's extra
    page = render_report("t", layout, inst, WHEN)
    section = page[page.index('<section id="timeline">'):page.index('<section id="clustering">')]
    assert section.count("<polyline") == 2
    assert "20260101000000001" in section and "20260101000000002" in section
    assert "3 files, 3 small" in section and "1 files, 1 small" in section
    assert cards(page)["Small-file limit"] == format_size(SMALL)


def test_histogram_bins_hold_every_file_once_and_split_at_the_limits():
    bins = size_bins(TARGET, SMALL, 5000)
    edges = [b.lo for b in bins]
    assert SMALL in edges and 1.25 * TARGET in edges
    assert bins[-1].hi is None and bins[-1].kind == "big"                # overflow bin
    assert all(b.kind == "small" for b in bins if b.hi is not None and b.hi <= SMALL)
    sizes = [0, 1, 799, 800, 999, 1000, 1249, 1250, 1499, 1500, 5000]
    counts = bin_counts(sizes, bins)
    assert sum(counts) == len(sizes)
    small_bins = sum(c for b, c in zip(bins, counts) if b.kind == "small")
    assert small_bins == 3                                              # 0, 1, 799
    # no target: bins span the largest file, which lands in the last bin
    plain = size_bins(None, None, 777)
    assert plain[-1].hi == 777 and bin_counts([777, 0], plain) == [1] + [0] * 18 + [1]


def test_many_partitions_heatmap_shows_those_with_most_small_files():
    files = []
    for d in range(300):
        part = f"day={d:03d}"
        files.append(lf(part, "big.parquet", 950))
        files += [lf(part, f"s{i}.parquet", 10) for i in range(d % 7)]
    page = render_report("t", Layout(tuple(files), TARGET, SMALL), [], WHEN)
    assert not parse(page).errors
    strip = page[page.index('aria-label="files per partition"'):]
    strip = strip[:strip.index("</svg>")]
    assert strip.count("<g>") == 300                        # every partition in the strip
    heat = page[page.index('aria-label="files per partition and size bucket"'):]
    heat = heat[:heat.index("</svg>")]
    labels = re.findall(r'class="lbl"><title>(day=\d+)</title>', heat)
    assert len(labels) == MAX_HEATMAP_PARTITIONS
    assert labels == sorted(labels)                         # shown in partition order
    assert {int(lbl[4:]) % 7 for lbl in labels} == {6}      # the ones with 6 small files
    assert f"The {MAX_HEATMAP_PARTITIONS} of 300 partitions" in page


def test_clustering_state_plans_and_ranges():
    files = tuple(lf("d=1", f"f{i:04d}.parquet", 900, ranges=(("id", i * 10, i * 10 + 9),))
                  for i in range(MAX_RANGE_ROWS + 5))
    layout = Layout(files, TARGET, SMALL, ("id",))
    plan_files = [fe("d=1", "f0000.parquet", 900, group="g0"),
                  fe("d=1", "f0001.parquet", 900, group="g0"),
                  fe("d=1", "f0002.parquet", 900, group="g1")]
    inst = [commit("001", "full_refresh", []),
            commit("002", "cluster", [], [], action="replacecommit", strategy="hilbert",
                   cluster_by="id,ts"),
            commit("003", "insert", []),
            commit("004", "cluster", [], plan_files, action="replacecommit", state="requested",
                   scheduled="true", strategy="zorder", cluster_by="id",
                   **{"group.g0.output_files": 1, "group.g1.output_files": 1})]
    page = render_report("t", layout, inst, WHEN)
    section = page[page.index('<section id="clustering">'):]
    assert "strategy <strong>hilbert</strong> on <strong>id, ts</strong>" in section
    assert "1 commit since" in section
    assert "Pending plans (1)" in section
    row = re.search(r"<tr><td>004</td>.*?</tr>", section).group(0)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    assert cells[2:] == ["zorder", "id", "2", "3", format_size(2700), "2"]
    assert "<td>1990</td><td>1999</td>" in section        # the last shown file's id range
    assert "2049" not in section                          # the hidden ones are not listed
    assert section.count("f0") == MAX_RANGE_ROWS
    assert "5 more files hidden" in section
    assert "Mean overlap: <strong>id</strong> 0" in section         # disjoint, sorted ranges


def test_range_overlaps():
    assert range_overlaps([(0, 9), (10, 19), (20, 29)]) == [0, 0, 0]
    assert range_overlaps([(0, 99), (0, 99), (50, 60)]) == [2, 2, 2]
    assert range_overlaps([(0, 10), (10, 20), None, (None, 5)]) == [1, 1, None, None]
    assert range_overlaps([("a", "c"), ("b", "d")]) == [1, 1]
    assert range_overlaps([(1, 2), ("a", "b")]) == [None, None]     # no order across types


@pytest.mark.parametrize("layout", [Layout(()), Layout((lf("", "x.parquet", 5),))])
def test_empty_or_unpartitioned_tables_without_limits_render(layout):
    page = render_report("t", layout, [], WHEN)
    p = parse(page)
    assert not p.errors and not p.stack
    assert cards(page)["Target file size"] == "unknown"
    assert "The timeline holds no completed instant." in page
    assert "The table has not been clustered." in page
    if layout.files:
        assert "(unpartitioned)" in page
        assert 'aria-label="files per partition"' not in page    # one partition: no strip
