"""The report page: `render_report`, a Layout and the timeline's instants in, one
self-contained HTML string out. Pure: no Spark, no file access.

The page needs no network: no external script, style sheet, font or image. Charts are inline
SVG (report.charts), styles one small <style> block. Every string that comes from the table
(partition values, paths, operations, column values) is escaped.
"""
from datetime import datetime
from typing import Optional, Sequence, Union

from python_adapter.core.layout import Layout
from python_adapter.core.sizes import count_of, format_count, format_size
from python_adapter.report.charts import (BIG_COLOR, CLUSTER_COLOR, OK_COLOR, SMALL_COLOR,
                                          heatmap_svg, histogram_svg, legend, strip_svg,
                                          timeline_svg)
from python_adapter.report.data import (OVERSIZE_RATIO, bin_counts, cluster_overlaps,
                                        clustering_history, file_group, files_in_range_order,
                                        most_small_files, partition_groups, pending_plans,
                                        range_of, replay_timeline, resolve_limits, size_bins,
                                        unfinished)
from python_adapter.report.text import clip, decimal, escape, when
from python_adapter.table.extra import CLUSTER_BY, STRATEGY

MAX_HEATMAP_PARTITIONS = 40    # heat-map rows; the strip above it shows every partition
MAX_PARTITION_ROWS = 25
MAX_TIMELINE_ROWS = 40
MAX_RANGE_ROWS = 200
MAX_CELL_CHARS = 40

_STYLE = """
:root{color-scheme:light}
*{box-sizing:border-box}
body{margin:0;background:#f3f4f6;color:#111827;
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1060px;margin:0 auto;padding:24px 20px 48px}
header h1{font-size:22px;margin:0 0 4px;word-break:break-all}
header p{margin:0;color:#6b7280}
nav{margin:10px 0 0;font-size:13px}nav a{color:#2563eb;margin-right:14px;text-decoration:none}
section{background:#fff;border:1px solid #e5e7eb;border-radius:8px;padding:16px 20px;
margin:18px 0}
h2{font-size:17px;margin:0 0 12px}h3{font-size:14px;margin:18px 0 6px;color:#374151}
.cards{display:grid;grid-template-columns:repeat(4,1fr);gap:10px}
.card{border:1px solid #e5e7eb;border-radius:6px;padding:10px 12px;background:#fafafa}
.card .label{font-size:12px;color:#6b7280;text-transform:uppercase;letter-spacing:.03em}
.card .value{font-size:21px;font-weight:600;margin-top:2px;font-variant-numeric:tabular-nums}
.card .note{font-size:12px;color:#6b7280}
.card.warn{border-color:#fcd34d;background:#fffbeb}.card.warn .value{color:#b45309}
.card.bad{border-color:#fca5a5;background:#fef2f2}.card.bad .value{color:#b91c1c}
.muted{color:#6b7280;margin:6px 0}
.legend{display:flex;gap:16px;font-size:12px;color:#374151;margin:4px 0}
.legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px}
svg.chart{width:100%;height:auto;display:block;overflow:visible}
svg .tick{font-size:11px;fill:#6b7280}svg .axis{font-size:12px;fill:#374151}
svg .val{font-size:10px;fill:#374151}svg .mark{font-size:11px;font-weight:600}
svg .lbl{font-size:11px;fill:#374151}svg .hdr{font-size:11px;font-weight:600;fill:#374151}
svg .cnt{font-size:10px}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:13px;font-variant-numeric:tabular-nums}
th,td{padding:4px 8px;border-bottom:1px solid #eef0f3;text-align:left;white-space:nowrap}
th{background:#f9fafb;font-weight:600;color:#374151;position:sticky;top:0}
td.num,th.num{text-align:right}
table.compact{font-size:12px}table.compact td{padding:2px 6px}
.callout{border-left:4px solid #d97706;background:#fffbeb;padding:8px 12px;margin:12px 0}
.callout ul{margin:4px 0 0;padding-left:20px}
footer{color:#9ca3af;font-size:12px;text-align:center}
@media (max-width:760px){.cards{grid-template-columns:repeat(2,1fr)}}
"""


def render_report(title: str, layout: Layout, instants: Sequence,
                  generated_at: Union[datetime, str], location: Optional[str] = None) -> str:
    """The HTML report of one table (a str): `layout` a python_adapter.core.layout.Layout,
    `instants` the table's timeline (python_adapter.table.timeline.Instant, any order),
    `generated_at` a datetime or a string. Pure: no Spark, no file access."""
    instants = sorted(instants, key=lambda i: i.instant)
    limits = resolve_limits(layout, instants)
    when_made = generated_at.strftime("%Y-%m-%d %H:%M:%S %Z").strip() \
        if isinstance(generated_at, datetime) else str(generated_at)
    where = f" \u00b7 {escape(location)}" if location else ""
    body = [
        "<header>",
        f"<h1>{escape(title)}</h1>",
        f"<p>dbt-sized-spark table report \u00b7 generated {escape(when_made)}{where}</p>",
        '<nav><a href="#summary">Summary</a><a href="#sizes">File sizes</a>'
        '<a href="#timeline">Small files over time</a><a href="#clustering">Clustering</a></nav>',
        "</header>",
        *_file_sections(layout, limits),
        _timeline_section(instants, limits.small),
        _cluster_section(layout, instants),
        "<footer>Self-contained report: no scripts, no network.</footer>",
    ]
    return ("<!DOCTYPE html>\n"
            '<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)} \u2013 table report</title>"
            f"<style>{_STYLE}</style></head>"
            f'<body><main>{"".join(body)}</main></body></html>\n')


# -- building blocks -------------------------------------------------------------------------

def _section(ident, title, parts):
    return f'<section id="{ident}"><h2>{title}</h2>{"".join(parts)}</section>'


def _muted(text):
    return f'<p class="muted">{text}</p>'


def _cell(text, limit=MAX_CELL_CHARS):
    """An escaped, clipped cell text; the full text as a tooltip when clipped."""
    text = "" if text is None else str(text)
    if len(text) <= limit:
        return escape(text)
    return f'<span title="{escape(text)}">{escape(clip(text, limit))}</span>'


def _pct(part, whole):
    # never 0% or 100% for a share that is neither: one small file among thousands counts
    if not whole or not part:
        return "0%"
    share = 100 * part / whole
    return "<1%" if share < 1 else (">99%" if share > 99 and part < whole else f"{share:.0f}%")


def _table(headers, rows, numeric=(), cls=""):
    """A scrollable table; the columns whose indexes are in `numeric` align right."""
    head = "".join(f'<th class="num">{escape(h)}</th>' if i in numeric else
                   f"<th>{escape(h)}</th>" for i, h in enumerate(headers))
    body = []
    for row in rows:
        tds = "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>"
                      for i, c in enumerate(row))
        body.append(f"<tr>{tds}</tr>")
    cls_attr = f' class="{cls}"' if cls else ""
    return (f'<div class="scroll"><table{cls_attr}><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def _card(label, value, note="", cls=""):
    note_html = f'<div class="note">{escape(note)}</div>' if note else ""
    return (f'<div class="card {cls}"><div class="label">{escape(label)}</div>'
            f'<div class="value">{value}</div>{note_html}</div>')


# -- sections --------------------------------------------------------------------------------

def _file_sections(layout, limits):
    """The summary and the file sizes: both count the same files, once."""
    table = file_group("", layout.files, limits)
    groups = partition_groups(layout, limits)
    return [_summary(table, groups, limits), _sizes_section(table, groups, limits)]


def _summary(table, groups, limits):
    target, small = limits
    small_text = "unknown" if small is None else ("0 (off)" if small == 0 else format_size(small))
    parts_small = sum(1 for g in groups if g.small)
    n = table.files
    cards = [
        _card("Files", format_count(n)),
        _card("Rows", format_count(table.rows)),
        _card("Size", escape(format_size(table.bytes)), f"{format_count(table.bytes)} bytes"),
        _card("Partitions", format_count(len(groups)),
              "unpartitioned" if [g.name for g in groups] == [""] else ""),
        _card("Target file size", escape(format_size(target)) if target else "unknown"),
        _card("Small-file limit", escape(small_text)),
        _card("Small files", format_count(table.small),
              f"{_pct(table.small, n)} of files, in {count_of(parts_small, 'partition')}"
              if small else "no small-file limit", "warn" if table.small else ""),
        _card(f"Above {OVERSIZE_RATIO}\u00d7 target", format_count(table.oversized),
              f"{_pct(table.oversized, n)} of files" if target else "no target known",
              "bad" if table.oversized else ""),
    ]
    if n:
        spread = (f"File sizes: smallest {escape(format_size(table.smallest))}, median "
                  f"{escape(format_size(table.median))}, largest "
                  f"{escape(format_size(table.largest))}.")
    else:
        spread = "The table has no data files."
    return _section("summary", "Summary", [f'<div class="cards">{"".join(cards)}</div>',
                                           _muted(spread)])


def _sizes_section(table, groups, limits):
    if not table.files:
        return _section("sizes", "File sizes", [_muted("No files.")])
    bins = size_bins(limits.target, limits.small, table.largest)
    out = [legend([("below the small-file limit", SMALL_COLOR), ("in range", OK_COLOR),
                   (f"above {OVERSIZE_RATIO}\u00d7 target", BIG_COLOR)]),
           f'<h3>All {count_of(table.files, "file")}</h3>',
           histogram_svg(bins, bin_counts(table.sizes, bins), limits)]
    if len(groups) > 1:
        out += _partition_charts(groups, bins)
    out += _partition_table(groups)
    return _section("sizes", "File sizes", out)


def _partition_charts(groups, bins):
    chosen = most_small_files(groups, MAX_HEATMAP_PARTITIONS)
    if len(groups) > MAX_HEATMAP_PARTITIONS:
        note = (f'The {format_count(len(chosen))} of {format_count(len(groups))} partitions '
                f'with the most small files, in partition order; the chart above shows them '
                f'all.')
    else:
        note = ('Files per partition (rows) and size bucket (columns); darker cells hold more '
                'files.')
    return ["<h3>Files per partition</h3>", strip_svg(groups),
            "<h3>Size histogram per partition</h3>", _muted(note), heatmap_svg(chosen, bins)]


def _partition_table(groups):
    """The partitions that need attention first: most small files, then most oversized."""
    ranked = sorted(groups, key=lambda g: (-g.small, -g.oversized, -g.files, g.name))
    shown = ranked[:MAX_PARTITION_ROWS]
    title = "Partitions" if len(ranked) <= MAX_PARTITION_ROWS else \
        f"The {format_count(len(shown))} partitions with the most small files"
    rows = [[_cell(g.name or "(unpartitioned)", 60), format_count(g.files),
             format_count(g.small), format_count(g.oversized)]
            + [escape(format_size(v)) for v in (g.bytes, g.smallest, g.median, g.largest)]
            for g in shown]
    out = [f"<h3>{escape(title)}</h3>",
           _table(["partition", "files", "small", f">{OVERSIZE_RATIO}\u00d7 target", "size",
                   "smallest", "median", "largest"], rows, numeric=range(1, 8))]
    if len(ranked) > len(shown):
        out.append(_muted(f"{count_of(len(ranked) - len(shown), 'more partition')} not "
                          f"listed."))
    return out


def _timeline_section(instants, small):
    points = replay_timeline(instants, small)
    if not points:
        return _section("timeline", "Small files over time",
                        [_muted("The timeline holds no completed instant.")])
    limit = "unknown" if small is None else ("off" if small == 0 else format_size(small))
    out = [_muted(f"The table after each of its {format_count(len(points))} completed "
                  f"instants, replayed from the timeline (a full build starts over from the "
                  f"files it wrote). Small means below the current small-file limit "
                  f"({escape(limit)}).")]
    if not small:
        out.append('<p class="callout">The table has no small-file limit (0 turns packing off, '
                   'or no commit recorded one): no file counts as small here.</p>')
    out.append(legend([("files", OK_COLOR), ("small files", SMALL_COLOR),
                       ("clustering (replacecommit)", CLUSTER_COLOR)]))
    out.append(timeline_svg(points))
    out += _instant_table(points)
    out += _unfinished_callout(instants)
    return _section("timeline", "Small files over time", out)


def _instant_table(points):
    shown = points[-MAX_TIMELINE_ROWS:]
    rows = [[escape(pt.instant), escape(when(pt.created_at_ms)), escape(pt.action),
             _cell(pt.operation), format_count(pt.added), format_count(pt.removed),
             format_count(pt.files), format_count(pt.small), escape(format_size(pt.bytes))]
            for pt in reversed(shown)]
    out = ["<h3>Instants, newest first</h3>",
           _table(["instant", "time", "action", "operation", "added", "removed", "files",
                   "small", "size"], rows, numeric=range(4, 9))]
    if len(points) > len(shown):
        out.append(_muted(f"{count_of(len(points) - len(shown), 'older instant')} not "
                          f"listed."))
    return out


def _unfinished_callout(instants):
    left = unfinished(instants)
    if not left:
        return []
    items = "".join(f"<li>{escape(i.instant)} {escape(i.action)} {escape(i.operation)} "
                    f"({escape(i.state)})</li>" for i in left)
    return [f'<div class="callout"><strong>Unfinished instants</strong>: the next write '
            f'(or sized_recover) rolls them back.<ul>{items}</ul></div>']


def _cluster_section(layout, instants):
    out = [_last_clustering(instants), *_plan_table(instants)]
    if layout.cluster_by:
        out += _ranges(layout)
    return _section("clustering", "Clustering", out)


def _last_clustering(instants):
    history = clustering_history(instants)
    if history is None:
        return _muted("The table has not been clustered.")
    last, since, done = history.last, history.commits_since, history.clusterings
    cols = ", ".join(CLUSTER_BY.get(last.extra, []))
    return (f'<p>Last clustering <strong>{escape(last.instant)}</strong> '
            f'({escape(when(last.created_at_ms))}): strategy '
            f'<strong>{escape(STRATEGY.get(last.extra, "?"))}</strong> on '
            f'<strong>{escape(cols)}</strong>, '
            f'{count_of(len(last.removed), "file")} replaced by '
            f'{format_count(len(last.added))}. '
            f'{count_of(since, "commit")} since; '
            f'{count_of(done, "clustering")} in all.</p>')


def _plan_table(instants):
    plans = pending_plans(instants)
    if not plans:
        return [_muted("No clustering plan is pending.")]
    rows = [[escape(p.plan.instant), escape(when(p.plan.created_at_ms)),
             escape(STRATEGY.get(p.plan.extra, "")),
             _cell(", ".join(CLUSTER_BY.get(p.plan.extra, []))),
             format_count(p.groups), format_count(p.files), escape(format_size(p.bytes)),
             format_count(p.output_files)] for p in plans]
    return [f"<h3>Pending plans ({format_count(len(plans))})</h3>",
            _table(["plan", "scheduled", "strategy", "columns", "groups", "files", "size",
                    "files after"], rows, numeric=range(4, 8))]


def _ranges(layout):
    """Each file's min and max of every cluster column, and how much they overlap."""
    cols = list(layout.cluster_by)
    overlaps = cluster_overlaps(layout)
    notes = "; ".join(f"<strong>{escape(c)}</strong> {decimal(m) if m is not None else 'unknown'}"
                      for c, m in overlaps.means)
    out = ["<h3>Cluster column ranges per file</h3>",
           _muted(f"Overlap: how many other files of the same partition a file\u2019s "
                  f"min\u2013max range overlaps. 0 means the files of a partition cover "
                  f"disjoint ranges, so a filter on the column can skip all files but one. "
                  f"Mean overlap: {notes}.")]
    files = files_in_range_order(layout)
    shown = files[:MAX_RANGE_ROWS]
    headers = ["partition", "file", "rows", "size"]
    for c in cols:
        headers += [f"{c} min", f"{c} max", "overlap"]
    rows = [_range_row(f, cols, overlaps.per_file) for f in shown]
    numeric = {2, 3} | {4 + 3 * i + 2 for i in range(len(cols))}
    out.append(_table(headers, rows, numeric=numeric, cls="compact"))
    if len(files) > len(shown):
        out.append(_muted(f"{count_of(len(files) - len(shown), 'more file')} hidden (first "
                          f"{format_count(len(shown))} of {format_count(len(files))} shown)."))
    return out


def _range_row(f, cols, overlaps):
    row = [_cell(f.partition or "(unpartitioned)", 30), _cell(f.path.rsplit("/", 1)[-1], 28),
           format_count(max(f.rows, 0)), escape(format_size(f.bytes))]
    for c in cols:
        lo, hi = range_of(f, c)
        o = overlaps.get((f.path, c))
        row += [_cell(lo, 28), _cell(hi, 28), "" if o is None else format_count(o)]
    return row
