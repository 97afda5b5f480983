"""The HTML table report, rendered from hand-built layouts and timelines (no Spark)."""
import re

import pytest

from python_adapter.core.layout import Layout
from python_adapter.core.sizes import format_size
from python_adapter.report.page import MAX_RANGE_ROWS, render_report
from tests.unit.report.samples import (SMALL, TARGET, WHEN, cards, commit, fe, lf, parse,
                                       sample_layout)


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
    assert "3 files, 3 small" in section and "1 file, 1 small" in section
    assert cards(page)["Small-file limit"] == format_size(SMALL)


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
