"""The report's SVG charts, as they appear on a rendered page."""
import re

from python_adapter.core.layout import Layout
from python_adapter.report.page import MAX_HEATMAP_PARTITIONS, render_report
from tests.unit.report.samples import SMALL, TARGET, WHEN, lf, parse


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
