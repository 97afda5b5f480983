"""A self-contained HTML report of one table: file sizes, small files over time, clustering.

`render_report` is pure (a Layout and the timeline's instants in, an HTML string out);
`write_report` reads a table on Spark and writes the report through the Hadoop FileSystem,
so `file://`, HDFS and S3A destinations work like local paths.

The page needs no network: no external script, style sheet, font or image. Charts are inline
SVG (tooltips are SVG <title> elements), styles one small <style> block. Every string that
comes from the table (partition values, paths, operations, column values) is escaped.
"""
import bisect
import html
import math
import statistics
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Optional

from python_adapter.core.sizes import format_size

OVERSIZE_RATIO = 1.25          # a file above 1.25 x target counts as oversized
MAX_HEATMAP_PARTITIONS = 40    # heat-map rows; the strip above it shows every partition
MAX_PARTITION_ROWS = 25
MAX_TIMELINE_ROWS = 40
MAX_RANGE_ROWS = 200
MAX_CELL_CHARS = 40

SMALL_COLOR = "#d97706"
OK_COLOR = "#2563eb"
BIG_COLOR = "#dc2626"
TARGET_COLOR = "#059669"
CLUSTER_COLOR = "#7c3aed"
MUTED = "#6b7280"
GRID = "#e5e7eb"
KIND_COLORS = {"small": SMALL_COLOR, "ok": OK_COLOR, "big": BIG_COLOR}


# -- data ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TimelinePoint:
    """The table after one completed instant of the replayed timeline."""
    instant: str
    action: str
    operation: str
    created_at_ms: int
    added: int
    removed: int
    files: int
    small: int
    bytes: int


@dataclass(frozen=True)
class SizeBin:
    lo: float
    hi: Optional[float]     # None: the open-ended overflow bin
    kind: str               # 'small', 'ok' or 'big'

    @property
    def label(self):
        if self.hi is None:
            return f"\u2265 {format_size(self.lo)}"
        return f"{format_size(self.lo)} \u2013 {format_size(self.hi)}"


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def resolve_limits(layout, instants=()):
    """(target_file_size, small_file_limit): the layout's, else the last completed commit's
    that records them; None when unknown."""
    target, small = layout.target_file_size, layout.small_file_limit
    for inst in sorted(instants, key=lambda i: i.instant, reverse=True):
        if inst.state != "completed" or inst.action != "commit":
            continue
        if target is None:
            target = _int(inst.extra.get("target_file_size"))
        if small is None:
            small = _int(inst.extra.get("small_file_limit"))
        if target is not None and small is not None:
            break
    return target, small


def is_small(size, small_file_limit):
    return bool(small_file_limit) and size < small_file_limit


def is_oversized(size, target_file_size):
    return bool(target_file_size) and size > OVERSIZE_RATIO * target_file_size


def replay_timeline(instants, small_file_limit=None):
    """Replay the completed instants in order (a full build starts over from its adds) and
    return one TimelinePoint per instant: files, files below small_file_limit, bytes."""
    files = {}
    points = []
    for inst in sorted(instants, key=lambda i: i.instant):
        if inst.state != "completed":
            continue
        if inst.action == "commit" and inst.operation == "full_refresh":
            files = {}
        for f in inst.removed:
            files.pop(f.path, None)
        for f in inst.added:
            files[f.path] = f.bytes
        points.append(TimelinePoint(
            instant=inst.instant, action=inst.action, operation=inst.operation,
            created_at_ms=inst.created_at_ms, added=len(inst.added), removed=len(inst.removed),
            files=len(files), small=sum(1 for b in files.values() if is_small(b, small_file_limit)),
            bytes=sum(files.values())))
    return points


def size_bins(target, small, max_bytes):
    """Histogram bins: tenths of the target up to 1.5 x target (plus an overflow bin when a
    file is bigger), or twentieths of the largest file when the target is unknown. The
    small-file limit and 1.25 x target are bin edges, so every bin is of one kind."""
    if target:
        top = 1.5 * target
        step = target / 10
        specials = [s for s in (small, OVERSIZE_RATIO * target) if s and 0 < s < top]
    else:
        top = float(max(max_bytes, 1))
        step = top / 20
        specials = [small] if small and 0 < small < top else []
    regular = [i * step for i in range(1, round(top / step))]
    edges = [0.0] + [e for e in regular if all(abs(e - s) > 0.3 * step for s in specials)]
    edges = sorted(set(edges + [float(s) for s in specials])) + [top]
    bins = [SizeBin(lo, hi, _kind(lo, hi, target, small)) for lo, hi in zip(edges, edges[1:])]
    if target and max_bytes >= top:
        bins.append(SizeBin(top, None, "big"))
    return bins


def _kind(lo, hi, target, small):
    if small and hi <= small:
        return "small"
    if target and lo >= OVERSIZE_RATIO * target:
        return "big"
    return "ok"


def bin_counts(sizes, bins):
    """Files per bin; sizes past the last closed bin go to the overflow bin, or to the last."""
    edges = [b.lo for b in bins]
    counts = [0] * len(bins)
    for s in sizes:
        counts[min(max(0, bisect.bisect_right(edges, s) - 1), len(bins) - 1)] += 1
    return counts


def _by_partition(layout):
    parts = {}
    for f in layout.files:
        parts.setdefault(f.partition, []).append(f)
    return dict(sorted(parts.items()))


def range_overlaps(intervals):
    """For each (lo, hi) interval, how many of the others overlap it; None entries (unknown
    ranges) get None. Lower is better clustered: sorted files overlap no other file."""
    known = [(lo, hi) for lo, hi in (iv or (None, None) for iv in intervals)
             if lo is not None and hi is not None]
    try:
        los = sorted(lo for lo, _ in known)
        his = sorted(hi for _, hi in known)
        out = []
        for iv in intervals:
            lo, hi = iv or (None, None)
            if lo is None or hi is None:
                out.append(None)
                continue
            # others with lo_j <= hi minus those with hi_j < lo, minus itself
            out.append(bisect.bisect_right(los, hi) - bisect.bisect_left(his, lo) - 1)
        return out
    except TypeError:       # values of mixed types: no order to compare
        return [None] * len(intervals)


# -- formatting ------------------------------------------------------------------------------

def _e(value):
    return html.escape("" if value is None else str(value), quote=True)


def _n(value):
    return f"{value:,}"


def _when(ms):
    if not ms:
        return ""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000)) + " UTC"


def _clip(text, limit=MAX_CELL_CHARS):
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def _cell(text, limit=MAX_CELL_CHARS):
    """An escaped, clipped cell text; the full text as a tooltip when clipped."""
    text = "" if text is None else str(text)
    if len(text) <= limit:
        return _e(text)
    return f'<span title="{_e(text)}">{_e(_clip(text, limit))}</span>'


def _pct(part, whole):
    if not whole or not part:
        return "0%"
    share = 100 * part / whole
    return "<1%" if share < 1 else (">99%" if share > 99 and part < whole else f"{share:.0f}%")


def _nice_max(value, ticks=4):
    """A round axis maximum >= value and its tick step."""
    if value <= 0:
        return 1, 1
    raw = value / ticks
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        step = m * mag
        if step >= raw:
            break
    step = max(1, step)     # counts: whole ticks
    return step * math.ceil(value / step), step


def _num(v):
    return f"{v:.1f}".rstrip("0").rstrip(".")


def _table(headers, rows, numeric=(), cls=""):
    head = "".join(f'<th class="num">{_e(h)}</th>' if i in numeric else f"<th>{_e(h)}</th>"
                   for i, h in enumerate(headers))
    body = []
    for row in rows:
        tds = "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>"
                      for i, c in enumerate(row))
        body.append(f"<tr>{tds}</tr>")
    cls_attr = f' class="{cls}"' if cls else ""
    return (f'<div class="scroll"><table{cls_attr}><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


# -- charts ----------------------------------------------------------------------------------

def _svg_open(width, height, label):
    return (f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="{_e(label)}" preserveAspectRatio="xMinYMin meet">')


def _legend(items):
    spans = "".join(f'<span><i style="background:{c}"></i>{_e(t)}</span>' for t, c in items)
    return f'<div class="legend">{spans}</div>'


def _y_axis(parts, ml, mt, pw, ph, ymax, step):
    v = 0
    while v <= ymax + 1e-9:
        y = mt + ph - ph * v / ymax
        parts.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{y:.1f}" y2="{y:.1f}" '
                     f'stroke="{GRID}"></line>')
        parts.append(f'<text x="{ml - 6}" y="{y + 4:.1f}" text-anchor="end" '
                     f'class="tick">{_n(int(v)) if v == int(v) else _num(v)}</text>')
        v += step


def _histogram_svg(bins, counts, target, small, width=960, height=270):
    ml, mr, mt, mb = 52, 16, 40, 40
    pw, ph = width - ml - mr, height - mt - mb
    over = bins[-1].hi is None
    over_w, gap = (pw * 0.07, 14) if over else (0, 0)
    lin_w = pw - over_w - gap
    top = bins[-2].hi if over else bins[-1].hi
    ymax, step = _nice_max(max(counts) if counts else 0)

    def x(v):
        return ml + lin_w * v / top

    p = [_svg_open(width, height, "file size histogram")]
    _y_axis(p, ml, mt, pw, ph, ymax, step)
    for b, c in zip(bins, counts):
        if b.hi is None:
            x0, x1 = ml + lin_w + gap, ml + pw
        else:
            x0, x1 = x(b.lo), x(b.hi)
        h = ph * c / ymax
        w = max(x1 - x0 - 1.5, 1)
        p.append(f'<rect x="{x0 + 0.75:.1f}" y="{mt + ph - h:.1f}" width="{w:.1f}" '
                 f'height="{h:.1f}" fill="{KIND_COLORS[b.kind]}" opacity="0.85">'
                 f'<title>{_e(b.label)}: {_n(c)} files</title></rect>')
        if c:
            p.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{mt + ph - h - 4:.1f}" '
                     f'text-anchor="middle" class="val">{_n(c)}</text>')
    # x ticks
    ticks = [target * r for r in (0, .25, .5, .75, 1, 1.25, 1.5)] if target else \
        [top * i / 5 for i in range(6)]
    for t in ticks:
        if t > top + 1e-9 or (over and t >= top - 1e-9):
            continue
        p.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{mt + ph}" y2="{mt + ph + 4}" '
                 f'stroke="{MUTED}"></line>')
        p.append(f'<text x="{x(t):.1f}" y="{mt + ph + 17}" text-anchor="middle" '
                 f'class="tick">{_e(format_size(t))}</text>')
    if over:
        p.append(f'<text x="{ml + lin_w + gap + over_w / 2:.1f}" y="{mt + ph + 17}" '
                 f'text-anchor="middle" class="tick">\u2265 {_e(format_size(top))}</text>')
    p.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{mt + ph}" y2="{mt + ph}" '
             f'stroke="{MUTED}"></line>')
    p.append(f'<text x="{ml + pw / 2:.1f}" y="{height - 4}" text-anchor="middle" '
             f'class="axis">file size</text>')
    # markers: small-file limit, target, 1.25 x target
    marks = []
    if small and small < top:
        marks.append((small, f"small-file limit {format_size(small)}", SMALL_COLOR, "5 4"))
    if target:
        marks.append((target, f"target {format_size(target)}", TARGET_COLOR, "5 4"))
        marks.append((OVERSIZE_RATIO * target, f"{OVERSIZE_RATIO}\u00d7 target", BIG_COLOR, "2 3"))
    for i, (v, text, color, dash) in enumerate(marks):
        xv = x(v)
        ly = mt - 24 + 12 * (i % 2)
        anchor = "end" if i == 0 and len(marks) > 1 else "start"
        dx = -4 if anchor == "end" else 4
        p.append(f'<line x1="{xv:.1f}" x2="{xv:.1f}" y1="{ly + 3}" y2="{mt + ph}" '
                 f'stroke="{color}" stroke-width="1.5" stroke-dasharray="{dash}"></line>')
        p.append(f'<text x="{xv + dx:.1f}" y="{ly}" text-anchor="{anchor}" class="mark" '
                 f'fill="{color}">{_e(text)}</text>')
    p.append("</svg>")
    return "".join(p)


def _strip_svg(parts, small, target, width=960, height=190):
    """Every partition as one stacked bar (small / in range / oversized files)."""
    ml, mr, mt, mb = 52, 16, 12, 46
    pw, ph = width - ml - mr, height - mt - mb
    names = list(parts)
    n = len(names)
    ymax, step = _nice_max(max(len(fs) for fs in parts.values()))
    bw = pw / n
    p = [_svg_open(width, height, "files per partition")]
    _y_axis(p, ml, mt, pw, ph, ymax, step)
    for i, name in enumerate(names):
        sizes = [f.bytes for f in parts[name]]
        ns = sum(1 for s in sizes if is_small(s, small))
        nb = sum(1 for s in sizes if is_oversized(s, target))
        segs = (("small", ns), ("ok", len(sizes) - ns - nb), ("big", nb))
        x0 = ml + i * bw
        w = max(bw - (1 if bw > 4 else 0), 0.6)
        tip = (f"{name or '(unpartitioned)'}: {_n(len(sizes))} files, {_n(ns)} small, "
               f"{_n(nb)} oversized, {format_size(sum(sizes))}")
        y = mt + ph
        p.append("<g>")
        p.append(f"<title>{_e(tip)}</title>")
        for kind, c in segs:
            if not c:
                continue
            h = ph * c / ymax
            y -= h
            p.append(f'<rect x="{x0:.2f}" y="{y:.2f}" width="{w:.2f}" height="{h:.2f}" '
                     f'fill="{KIND_COLORS[kind]}" opacity="0.85"></rect>')
        p.append("</g>")
    p.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{mt + ph}" y2="{mt + ph}" '
             f'stroke="{MUTED}"></line>')
    for i, anchor in _spread_labels([_clip(nm, 34) for nm in names], ml, bw):
        xc = ml + (i + 0.5) * bw
        p.append(f'<line x1="{xc:.1f}" x2="{xc:.1f}" y1="{mt + ph}" y2="{mt + ph + 4}" '
                 f'stroke="{MUTED}"></line>')
        p.append(f'<text x="{xc:.1f}" y="{mt + ph + 17}" text-anchor="{anchor}" '
                 f'class="tick">{_e(_clip(names[i], 34))}</text>')
    p.append(f'<text x="{ml + pw / 2:.1f}" y="{height - 6}" text-anchor="middle" '
             f'class="axis">{_n(n)} partitions, in partition order (hover a bar for its '
             f'numbers)</text>')
    p.append("</svg>")
    return "".join(p)


def _spread_labels(labels, ml, bw, char_w=6.2, gap=16):
    """[(index, anchor)] of the bar labels to draw: the first, the last and as many evenly
    spaced ones between as fit without overlapping (11px text, about char_w per char)."""
    n = len(labels)

    def span(i, anchor):
        xc, w = ml + (i + 0.5) * bw, len(labels[i]) * char_w
        return {"start": (xc, xc + w), "end": (xc - w, xc)}.get(anchor, (xc - w / 2, xc + w / 2))

    chosen = [(0, "start")] + ([(n - 1, "end")] if n > 1 else [])
    taken = [span(i, a) for i, a in chosen]
    step = max(1, n // 8)
    for i in range(step, n - 1, step):
        lo, hi = span(i, "middle")
        if all(hi + gap <= a or lo - gap >= b for a, b in taken):
            chosen.append((i, "middle"))
            taken.append((lo, hi))
    return sorted(chosen)


def _heatmap_svg(rows, bins, width=960):
    """rows: [(partition, [count per bin], files, small files)]."""
    label_w, right_w, head_h, row_h = 230, 96, 64, 18
    nb = len(bins)
    cw = (width - label_w - right_w - 8) / nb
    height = head_h + row_h * len(rows) + 8
    cmax = max((c for _, counts, _, _ in rows for c in counts), default=1) or 1
    p = [_svg_open(width, height, "files per partition and size bucket")]
    for j, b in enumerate(bins):
        xc = label_w + (j + 0.5) * cw
        p.append(f'<rect x="{label_w + j * cw + 0.5:.1f}" y="{head_h - 6}" '
                 f'width="{cw - 1:.1f}" height="4" fill="{KIND_COLORS[b.kind]}"></rect>')
        text = f"\u2265{format_size(b.lo)}" if b.hi is None else format_size(b.lo)
        p.append(f'<text transform="translate({xc + 3:.1f},{head_h - 10}) rotate(-45)" '
                 f'class="tick"><title>{_e(b.label)}</title>{_e(text)}</text>')
    xr = label_w + nb * cw + 8
    p.append(f'<text x="{xr + 40}" y="{head_h - 10}" text-anchor="end" class="hdr">files</text>')
    p.append(f'<text x="{xr + 88}" y="{head_h - 10}" text-anchor="end" class="hdr">small</text>')
    for r, (name, counts, files, nsmall) in enumerate(rows):
        y = head_h + r * row_h
        label = name or "(unpartitioned)"
        p.append(f'<text x="{label_w - 8}" y="{y + 13}" text-anchor="end" class="lbl">'
                 f'<title>{_e(label)}</title>{_e(_clip(label, 34))}</text>')
        for j, (b, c) in enumerate(zip(bins, counts)):
            x0 = label_w + j * cw
            if c:
                op = 0.18 + 0.82 * math.sqrt(c / cmax)
                fill = KIND_COLORS[b.kind]
            else:
                op, fill = 1, "#f8fafc"
            p.append(f'<rect x="{x0 + 0.5:.1f}" y="{y + 0.5}" width="{cw - 1:.1f}" '
                     f'height="{row_h - 1}" fill="{fill}" fill-opacity="{op:.2f}">'
                     f'<title>{_e(label)}, {_e(b.label)}: {_n(c)} files</title></rect>')
            if c and cw >= 18:
                color = "#fff" if op > 0.55 else "#111827"
                p.append(f'<text x="{x0 + cw / 2:.1f}" y="{y + 13}" text-anchor="middle" '
                         f'class="cnt" fill="{color}">{_n(c)}</text>')
        p.append(f'<text x="{xr + 40}" y="{y + 13}" text-anchor="end" class="lbl">'
                 f'{_n(files)}</text>')
        p.append(f'<text x="{xr + 88}" y="{y + 13}" text-anchor="end" class="lbl" '
                 f'style="fill:{SMALL_COLOR if nsmall else MUTED}">{_n(nsmall)}</text>')
    p.append("</svg>")
    return "".join(p)


def _timeline_svg(points, width=960, height=300):
    ml, mr, mt, mb = 52, 24, 16, 96
    pw, ph = width - ml - mr, height - mt - mb
    n = len(points)
    ymax, step = _nice_max(max(max(pt.files for pt in points), 1))

    def x(i):
        return ml + (pw / 2 if n == 1 else pw * i / (n - 1))

    def y(v):
        return mt + ph - ph * v / ymax

    p = [_svg_open(width, height, "files and small files over time")]
    _y_axis(p, ml, mt, pw, ph, ymax, step)
    for i, pt in enumerate(points):
        if pt.action == "replacecommit":
            p.append(f'<line x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{mt}" y2="{mt + ph}" '
                     f'stroke="{CLUSTER_COLOR}" stroke-opacity="0.35" '
                     f'stroke-width="{min(6, max(2, pw / max(n, 1) / 2)):.1f}">'
                     f'</line>')
    for attr, color in (("files", OK_COLOR), ("small", SMALL_COLOR)):
        pts = " ".join(f"{x(i):.1f},{y(getattr(pt, attr)):.1f}" for i, pt in enumerate(points))
        p.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2">'
                 f'</polyline>')
    r = 3.5 if n <= 60 else 2
    for i, pt in enumerate(points):
        tip = (f"{pt.instant} {pt.action} {pt.operation} ({_when(pt.created_at_ms)}): "
               f"+{pt.added} / \u2212{pt.removed} files; {_n(pt.files)} files, {_n(pt.small)} "
               f"small, {format_size(pt.bytes)}")
        p.append(f'<g><title>{_e(tip)}</title>'
                 f'<circle cx="{x(i):.1f}" cy="{y(pt.files):.1f}" r="{r}" fill="{OK_COLOR}">'
                 f'</circle><circle cx="{x(i):.1f}" cy="{y(pt.small):.1f}" r="{r}" '
                 f'fill="{SMALL_COLOR}"></circle></g>')
    p.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{mt + ph}" y2="{mt + ph}" '
             f'stroke="{MUTED}"></line>')
    # label notable instants (clustering, rollback, full build, the last) first, then as
    # many others as fit 24px apart
    notable = [i for i, pt in enumerate(points) if pt.action != "commit"
               or pt.operation == "full_refresh" or i == n - 1]
    placed = []
    seen = set(notable)
    for i in notable + [i for i in range(n) if i not in seen]:
        if all(abs(x(i) - x(j)) >= 24 for j in placed):
            placed.append(i)
    for i in sorted(placed):
        pt = points[i]
        color = CLUSTER_COLOR if pt.action == "replacecommit" else \
            (MUTED if pt.action == "rollback" else "#374151")
        p.append(f'<text transform="translate({x(i) + 3:.1f},{mt + ph + 10}) rotate(-40)" '
                 f'text-anchor="end" class="tick" style="fill:{color}">'
                 f'{_e(_clip(pt.operation, 18))}</text>')
    p.append("</svg>")
    return "".join(p)


# -- sections --------------------------------------------------------------------------------

def _summary(layout, parts, target, small):
    sizes = [f.bytes for f in layout.files]
    n = len(sizes)
    n_small = sum(1 for s in sizes if is_small(s, small))
    n_big = sum(1 for s in sizes if is_oversized(s, target))
    parts_small = sum(1 for fs in parts.values() if any(is_small(f.bytes, small) for f in fs))
    rows = sum(max(f.rows, 0) for f in layout.files)
    small_text = "unknown" if small is None else ("0 (off)" if small == 0 else format_size(small))

    def card(label, value, note="", cls=""):
        note_html = f'<div class="note">{_e(note)}</div>' if note else ""
        return (f'<div class="card {cls}"><div class="label">{_e(label)}</div>'
                f'<div class="value">{value}</div>{note_html}</div>')

    cards = [
        card("Files", _n(n)),
        card("Rows", _n(rows)),
        card("Size", _e(format_size(sum(sizes))), f"{_n(sum(sizes))} bytes"),
        card("Partitions", _n(len(parts)), "unpartitioned" if list(parts) == [""] else ""),
        card("Target file size", _e(format_size(target)) if target else "unknown"),
        card("Small-file limit", _e(small_text)),
        card("Small files", _n(n_small),
             f"{_pct(n_small, n)} of files, in {_n(parts_small)} partitions"
             if small else "no small-file limit", "warn" if n_small else ""),
        card(f"Above {OVERSIZE_RATIO}\u00d7 target", _n(n_big),
             f"{_pct(n_big, n)} of files" if target else "no target known",
             "bad" if n_big else ""),
    ]
    if sizes:
        spread = (f"File sizes: smallest {_e(format_size(min(sizes)))}, median "
                  f"{_e(format_size(statistics.median(sizes)))}, largest "
                  f"{_e(format_size(max(sizes)))}.")
    else:
        spread = "The table has no data files."
    return (f'<section id="summary"><h2>Summary</h2><div class="cards">{"".join(cards)}</div>'
            f'<p class="muted">{spread}</p></section>')


def _sizes_section(layout, parts, target, small):
    out = ['<section id="sizes"><h2>File sizes</h2>']
    sizes = [f.bytes for f in layout.files]
    if not sizes:
        out.append('<p class="muted">No files.</p></section>')
        return "".join(out)
    bins = size_bins(target, small, max(sizes))
    out.append(_legend([("below the small-file limit", SMALL_COLOR),
                        ("in range", OK_COLOR),
                        (f"above {OVERSIZE_RATIO}\u00d7 target", BIG_COLOR)]))
    out.append(f'<h3>All {_n(len(sizes))} files</h3>')
    out.append(_histogram_svg(bins, bin_counts(sizes, bins), target, small))
    if len(parts) > 1:
        out.append("<h3>Files per partition</h3>")
        out.append(_strip_svg(parts, small, target))
        ranked = sorted(parts, key=lambda p: (
            -sum(1 for f in parts[p] if is_small(f.bytes, small)), -len(parts[p]), p))
        chosen = sorted(ranked[:MAX_HEATMAP_PARTITIONS])
        rows = [(p, bin_counts([f.bytes for f in parts[p]], bins), len(parts[p]),
                 sum(1 for f in parts[p] if is_small(f.bytes, small))) for p in chosen]
        out.append("<h3>Size histogram per partition</h3>")
        if len(parts) > MAX_HEATMAP_PARTITIONS:
            out.append(f'<p class="muted">The {_n(len(chosen))} of {_n(len(parts))} partitions '
                       f'with the most small files, in partition order; the chart above shows '
                       f'them all.</p>')
        else:
            out.append('<p class="muted">Files per partition (rows) and size bucket (columns); '
                       'darker cells hold more files.</p>')
        out.append(_heatmap_svg(rows, bins))
    # the partitions that need attention first
    stats = []
    for p, fs in parts.items():
        ss = [f.bytes for f in fs]
        stats.append((p, len(ss), sum(1 for s in ss if is_small(s, small)),
                      sum(1 for s in ss if is_oversized(s, target)), sum(ss), min(ss),
                      statistics.median(ss), max(ss)))
    stats.sort(key=lambda r: (-r[2], -r[3], -r[1], r[0]))
    shown = stats[:MAX_PARTITION_ROWS]
    title = "Partitions" if len(stats) <= MAX_PARTITION_ROWS else \
        f"The {_n(len(shown))} partitions with the most small files"
    out.append(f"<h3>{_e(title)}</h3>")
    rows = [[_cell(p or "(unpartitioned)", 60), _n(nf), _n(ns), _n(nbig), _e(format_size(b)),
             _e(format_size(lo)), _e(format_size(med)), _e(format_size(hi))]
            for p, nf, ns, nbig, b, lo, med, hi in shown]
    out.append(_table(["partition", "files", "small", f">{OVERSIZE_RATIO}\u00d7 target", "size",
                       "smallest", "median", "largest"], rows, numeric=range(1, 8)))
    if len(stats) > len(shown):
        out.append(f'<p class="muted">{_n(len(stats) - len(shown))} more partitions not '
                   f'listed.</p>')
    out.append("</section>")
    return "".join(out)


def _timeline_section(instants, small):
    out = ['<section id="timeline"><h2>Small files over time</h2>']
    points = replay_timeline(instants, small)
    if not points:
        out.append('<p class="muted">The timeline holds no completed instant.</p></section>')
        return "".join(out)
    limit = "unknown" if small is None else ("off" if small == 0 else format_size(small))
    out.append(f'<p class="muted">The table after each of its {_n(len(points))} completed '
               f'instants, replayed from the timeline (a full build starts over from the files '
               f'it wrote). Small means below the current small-file limit ({_e(limit)}).</p>')
    if not small:
        out.append('<p class="callout">The table has no small-file limit (0 turns packing off, '
                   'or no commit recorded one): no file counts as small here.</p>')
    out.append(_legend([("files", OK_COLOR), ("small files", SMALL_COLOR),
                        ("clustering (replacecommit)", CLUSTER_COLOR)]))
    out.append(_timeline_svg(points))
    shown = points[-MAX_TIMELINE_ROWS:]
    rows = [[_e(pt.instant), _e(_when(pt.created_at_ms)), _e(pt.action), _cell(pt.operation),
             _n(pt.added), _n(pt.removed), _n(pt.files), _n(pt.small), _e(format_size(pt.bytes))]
            for pt in reversed(shown)]
    out.append("<h3>Instants, newest first</h3>")
    out.append(_table(["instant", "time", "action", "operation", "added", "removed", "files",
                       "small", "size"], rows, numeric=range(4, 9)))
    if len(points) > len(shown):
        out.append(f'<p class="muted">{_n(len(points) - len(shown))} older instants not '
                   f'listed.</p>')
    unfinished = [i for i in instants if i.state != "completed"
                  and not (i.action == "replacecommit" and i.extra.get("scheduled") == "true")]
    if unfinished:
        items = "".join(f"<li>{_e(i.instant)} {_e(i.action)} {_e(i.operation)} "
                        f"({_e(i.state)})</li>" for i in unfinished)
        out.append(f'<div class="callout"><strong>Unfinished instants</strong>: the next write '
                   f'(or sized_recover) rolls them back.<ul>{items}</ul></div>')
    out.append("</section>")
    return "".join(out)


def _cluster_section(layout, instants):
    out = ['<section id="clustering"><h2>Clustering</h2>']
    done = [i for i in sorted(instants, key=lambda i: i.instant)
            if i.state == "completed" and i.action == "replacecommit"]
    if done:
        last = done[-1]
        since = sum(1 for i in instants if i.state == "completed" and i.action == "commit"
                    and i.instant > last.instant)
        cols = last.extra.get("cluster_by", "")
        out.append(
            f'<p>Last clustering <strong>{_e(last.instant)}</strong> '
            f'({_e(_when(last.created_at_ms))}): strategy '
            f'<strong>{_e(last.extra.get("strategy", "?"))}</strong> on '
            f'<strong>{_e(cols.replace(",", ", "))}</strong>, '
            f'{_n(len(last.removed))} files replaced by {_n(len(last.added))}. '
            f'{_n(since)} commit{"" if since == 1 else "s"} since; {_n(len(done))} '
            f'clustering{"" if len(done) == 1 else "s"} in all.</p>')
    else:
        out.append('<p class="muted">The table has not been clustered.</p>')
    plans = [i for i in sorted(instants, key=lambda i: i.instant)
             if i.action == "replacecommit" and i.state == "requested"
             and i.extra.get("scheduled") == "true"]
    if plans:
        rows = []
        for plan in plans:
            groups = {f.file_group for f in plan.removed}
            outputs = sum(_int(v) or 0 for k, v in plan.extra.items()
                          if k.startswith("group.") and k.endswith(".output_files"))
            rows.append([_e(plan.instant), _e(_when(plan.created_at_ms)),
                         _e(plan.extra.get("strategy", "")),
                         _cell(plan.extra.get("cluster_by", "").replace(",", ", ")),
                         _n(len(groups)), _n(len(plan.removed)),
                         _e(format_size(sum(f.bytes for f in plan.removed))), _n(outputs)])
        out.append(f"<h3>Pending plans ({_n(len(plans))})</h3>")
        out.append(_table(["plan", "scheduled", "strategy", "columns", "groups", "files", "size",
                           "files after"], rows, numeric=range(4, 8)))
    else:
        out.append('<p class="muted">No clustering plan is pending.</p>')
    if layout.cluster_by:
        out.append(_ranges(layout))
    out.append("</section>")
    return "".join(out)


def _ranges(layout):
    cols = list(layout.cluster_by)
    parts = _by_partition(layout)
    overlaps = {}
    means = []
    for c in cols:
        per_col = []
        for fs in parts.values():
            ivs = [_range_of(f, c) for f in fs]
            for f, o in zip(fs, range_overlaps(ivs)):
                overlaps[(f.path, c)] = o
                if o is not None:
                    per_col.append(o)
        means.append((c, statistics.fmean(per_col) if per_col else None))
    out = ["<h3>Cluster column ranges per file</h3>"]
    notes = "; ".join(f"<strong>{_e(c)}</strong> {_num(m) if m is not None else 'unknown'}"
                      for c, m in means)
    out.append(f'<p class="muted">Overlap: how many other files of the same partition a '
               f'file\u2019s min\u2013max range overlaps. 0 means the files of a partition cover '
               f'disjoint ranges, so a filter on the column can skip all files but one. '
               f'Mean overlap: {notes}.</p>')
    first = cols[0]

    def order(f):
        lo, _ = _range_of(f, first)
        return (f.partition, lo is not None, "" if lo is None else lo, f.path)

    try:
        files = sorted(layout.files, key=order)
    except TypeError:
        files = sorted(layout.files, key=lambda f: (f.partition, f.path))
    shown = files[:MAX_RANGE_ROWS]
    headers = ["partition", "file", "rows", "size"]
    for c in cols:
        headers += [f"{c} min", f"{c} max", "overlap"]
    rows = []
    for f in shown:
        row = [_cell(f.partition or "(unpartitioned)", 30), _cell(f.path.rsplit("/", 1)[-1], 28),
               _n(max(f.rows, 0)), _e(format_size(f.bytes))]
        for c in cols:
            lo, hi = _range_of(f, c)
            o = overlaps.get((f.path, c))
            row += [_cell(lo, 28), _cell(hi, 28), "" if o is None else _n(o)]
        rows.append(row)
    numeric = {2, 3} | {4 + 3 * i + 2 for i in range(len(cols))}
    out.append(_table(headers, rows, numeric=numeric, cls="compact"))
    if len(files) > len(shown):
        out.append(f'<p class="muted">{_n(len(files) - len(shown))} more files hidden (first '
                   f'{_n(len(shown))} of {_n(len(files))} shown).</p>')
    return "".join(out)


def _range_of(f, column):
    for c, lo, hi in f.ranges:
        if c == column:
            return lo, hi
    return None, None


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


def render_report(title, layout, instants, generated_at, location=None):
    """The HTML report of one table (a str): `layout` a python_adapter.core.layout.Layout,
    `instants` the table's timeline (python_adapter.table.timeline.Instant, any order),
    `generated_at` a datetime or a string. Pure: no Spark, no file access."""
    instants = sorted(instants, key=lambda i: i.instant)
    target, small = resolve_limits(layout, instants)
    parts = _by_partition(layout)
    when = generated_at.strftime("%Y-%m-%d %H:%M:%S %Z").strip() \
        if isinstance(generated_at, datetime) else str(generated_at)
    where = f" \u00b7 {_e(location)}" if location else ""
    body = [
        "<header>",
        f"<h1>{_e(title)}</h1>",
        f"<p>dbt-sized-spark table report \u00b7 generated {_e(when)}{where}</p>",
        '<nav><a href="#summary">Summary</a><a href="#sizes">File sizes</a>'
        '<a href="#timeline">Small files over time</a><a href="#clustering">Clustering</a></nav>',
        "</header>",
        _summary(layout, parts, target, small),
        _sizes_section(layout, parts, target, small),
        _timeline_section(instants, small),
        _cluster_section(layout, instants),
        "<footer>Self-contained report: no scripts, no network.</footer>",
    ]
    return ("<!DOCTYPE html>\n"
            '<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_e(title)} \u2013 table report</title>"
            f"<style>{_STYLE}</style></head>"
            f'<body><main>{"".join(body)}</main></body></html>\n')


def write_report(spark, table_ref, path, log=print):
    """Render the report of a table and write it to `path` (a local path, file://, hdfs://,
    s3a://...; a path without a scheme resolves like Hadoop does, against fs.defaultFS).
    Overwrites; returns the qualified path written."""
    from python_adapter.spark.catalog import TableRef
    from python_adapter.table.timeline import Timeline
    from python_adapter.spark.locking import open_table
    from python_adapter.spark.describe import read_layout

    if isinstance(table_ref, str):
        schema, _, identifier = table_ref.partition(".")
        if not identifier:
            raise ValueError(f"table: expected 'schema.table', got {table_ref!r}")
        table_ref = TableRef(schema, identifier)
    _info, fs, location = open_table(spark, table_ref)
    layout = read_layout(spark, table_ref)
    instants = Timeline(fs, location).instants()
    text = render_report(f"{table_ref.schema}.{table_ref.identifier}", layout, instants,
                         datetime.now(timezone.utc), location=location)
    target = fs.qualify(path)
    fs.write_bytes(target, text.encode("utf-8"), overwrite=True)
    log(f"report of {table_ref.schema}.{table_ref.identifier} written to {target}")
    return target
