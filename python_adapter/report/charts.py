"""The report's charts as inline SVG strings: no script, no external resource; a tooltip is
an SVG <title> element. Pure: numbers from report.data in, markup out."""
import math
from dataclasses import dataclass
from typing import List, Sequence, Tuple, cast

from python_adapter.core.sizes import count_of, format_count, format_size
from python_adapter.report.data import (OVERSIZE_RATIO, FileGroup, Limits, SizeBin,
                                        TimelinePoint, bin_counts)
from python_adapter.report.text import clip, decimal, escape, when

SMALL_COLOR = "#d97706"
OK_COLOR = "#2563eb"
BIG_COLOR = "#dc2626"
TARGET_COLOR = "#059669"
CLUSTER_COLOR = "#7c3aed"
MUTED = "#6b7280"
GRID = "#e5e7eb"
KIND_COLORS = {"small": SMALL_COLOR, "ok": OK_COLOR, "big": BIG_COLOR}


@dataclass(frozen=True)
class Frame:
    """A chart's size and the margins around its plot area (room for ticks and labels)."""
    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int

    @property
    def plot_width(self) -> int:
        return self.width - self.left - self.right

    @property
    def plot_height(self) -> int:
        return self.height - self.top - self.bottom

    @property
    def base(self) -> int:
        """The y of the x axis."""
        return self.top + self.plot_height


HISTOGRAM = Frame(960, 270, left=52, right=16, top=40, bottom=40)
STRIP = Frame(960, 190, left=52, right=16, top=12, bottom=46)
TIMELINE = Frame(960, 300, left=52, right=24, top=16, bottom=96)
HEATMAP_WIDTH = 960
# heat-map geometry: partition labels left, file counts right, rotated bin labels on top
LABEL_W, RIGHT_W, HEAD_H, ROW_H = 230, 96, 64, 18


def legend(items: Sequence[Tuple[str, str]]) -> str:
    """A colour key: (text, colour) pairs."""
    spans = "".join(f'<span><i style="background:{c}"></i>{escape(t)}</span>' for t, c in items)
    return f'<div class="legend">{spans}</div>'


def nice_max(value: float, ticks: int = 4) -> Tuple[int, int]:
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


def _svg_open(width, height, label):
    return (f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="{escape(label)}" preserveAspectRatio="xMinYMin meet">')


def _y_axis(f, ymax, step):
    """Grid lines and count labels, from 0 to ymax."""
    out = []
    v = 0
    while v <= ymax + 1e-9:
        y = f.base - f.plot_height * v / ymax
        out.append(f'<line x1="{f.left}" x2="{f.left + f.plot_width}" y1="{y:.1f}" '
                   f'y2="{y:.1f}" stroke="{GRID}"></line>')
        out.append(f'<text x="{f.left - 6}" y="{y + 4:.1f}" text-anchor="end" '
                   f'class="tick">{format_count(int(v)) if v == int(v) else decimal(v)}</text>')
        v += step
    return out


def _x_axis(f):
    return (f'<line x1="{f.left}" x2="{f.left + f.plot_width}" y1="{f.base}" y2="{f.base}" '
            f'stroke="{MUTED}"></line>')


def _x_tick(f, x):
    return (f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{f.base}" y2="{f.base + 4}" '
            f'stroke="{MUTED}"></line>')


def _axis_title(f, y, text):
    return (f'<text x="{f.left + f.plot_width / 2:.1f}" y="{y}" text-anchor="middle" '
            f'class="axis">{text}</text>')


# -- the size histogram ----------------------------------------------------------------------

@dataclass(frozen=True)
class _SizeAxis:
    """The histogram's x axis: linear from 0 to `top`, then, after a gap, one bar of its own
    for the overflow bin (files of any size above top)."""
    frame: Frame
    top: float
    over_w: float       # the overflow bar's width, 0 without one
    gap: float

    @property
    def over(self):
        return self.over_w > 0

    @property
    def linear_w(self):
        return self.frame.plot_width - self.over_w - self.gap

    @property
    def over_x(self):
        return self.frame.left + self.linear_w + self.gap

    def x(self, v):
        return self.frame.left + self.linear_w * v / self.top


def histogram_svg(bins: Sequence[SizeBin], counts: Sequence[int], limits: Limits) -> str:
    """Files per size bin, marked at the small-file limit, the target and 1.25 x target."""
    f = HISTOGRAM
    over = bins[-1].hi is None
    over_w, gap = (f.plot_width * 0.07, 14) if over else (0, 0)
    # only the last bin is open-ended (hi None)
    axis = _SizeAxis(f, cast(float, bins[-2].hi if over else bins[-1].hi), over_w, gap)
    ymax, step = nice_max(max(counts) if counts else 0)
    p = [_svg_open(f.width, f.height, "file size histogram"), *_y_axis(f, ymax, step)]
    for b, c in zip(bins, counts):
        p += _histogram_bar(axis, b, c, ymax)
    p += _size_ticks(axis, limits.target)
    p.append(_x_axis(f))
    p.append(_axis_title(f, f.height - 4, "file size"))
    p += _size_marks(axis, limits)
    p.append("</svg>")
    return "".join(p)


def _histogram_bar(axis, b, c, ymax):
    f = axis.frame
    if b.hi is None:
        x0, x1 = axis.over_x, f.left + f.plot_width
    else:
        x0, x1 = axis.x(b.lo), axis.x(b.hi)
    h = f.plot_height * c / ymax
    w = max(x1 - x0 - 1.5, 1)
    out = [f'<rect x="{x0 + 0.75:.1f}" y="{f.base - h:.1f}" width="{w:.1f}" '
           f'height="{h:.1f}" fill="{KIND_COLORS[b.kind]}" opacity="0.85">'
           f'<title>{escape(b.label)}: {count_of(c, "file")}</title></rect>']
    if c:
        out.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{f.base - h - 4:.1f}" '
                   f'text-anchor="middle" class="val">{format_count(c)}</text>')
    return out


def _size_ticks(axis, target):
    """Quarters of the target when it is known, else fifths of the axis."""
    f, top = axis.frame, axis.top
    ticks = [target * r for r in (0, .25, .5, .75, 1, 1.25, 1.5)] if target else \
        [top * i / 5 for i in range(6)]
    out = []
    for t in ticks:
        if t > top + 1e-9 or (axis.over and t >= top - 1e-9):
            continue
        out.append(_x_tick(f, axis.x(t)))
        out.append(f'<text x="{axis.x(t):.1f}" y="{f.base + 17}" text-anchor="middle" '
                   f'class="tick">{escape(format_size(t))}</text>')
    if axis.over:
        out.append(f'<text x="{axis.over_x + axis.over_w / 2:.1f}" y="{f.base + 17}" '
                   f'text-anchor="middle" class="tick">\u2265 {escape(format_size(top))}</text>')
    return out


def _size_marks(axis, limits):
    """Dashed lines at the small-file limit, the target and 1.25 x target; labels alternate
    between two heights so that neighbours do not overprint."""
    small, target = limits.small, limits.target
    marks = []
    if small and small < axis.top:
        marks.append((small, f"small-file limit {format_size(small)}", SMALL_COLOR, "5 4"))
    if target:
        marks.append((target, f"target {format_size(target)}", TARGET_COLOR, "5 4"))
        marks.append((OVERSIZE_RATIO * target, f"{OVERSIZE_RATIO}\u00d7 target", BIG_COLOR, "2 3"))
    out = []
    top_y, base = axis.frame.top, axis.frame.base
    for i, (v, text, color, dash) in enumerate(marks):
        xv = axis.x(v)
        ly = top_y - 24 + 12 * (i % 2)
        anchor = "end" if i == 0 and len(marks) > 1 else "start"
        dx = -4 if anchor == "end" else 4
        out.append(f'<line x1="{xv:.1f}" x2="{xv:.1f}" y1="{ly + 3}" y2="{base}" '
                   f'stroke="{color}" stroke-width="1.5" stroke-dasharray="{dash}"></line>')
        out.append(f'<text x="{xv + dx:.1f}" y="{ly}" text-anchor="{anchor}" class="mark" '
                   f'fill="{color}">{escape(text)}</text>')
    return out


# -- files per partition ---------------------------------------------------------------------

def strip_svg(groups: Sequence[FileGroup]) -> str:
    """Every partition as one stacked bar (small / in range / oversized files)."""
    f = STRIP
    n = len(groups)
    ymax, step = nice_max(max(g.files for g in groups))
    bw = f.plot_width / n
    p = [_svg_open(f.width, f.height, "files per partition"), *_y_axis(f, ymax, step)]
    for i, g in enumerate(groups):
        p += _stacked_bar(g, f.left + i * bw, bw, ymax)
    p.append(_x_axis(f))
    names = [g.name for g in groups]
    for i, anchor in _spread_labels([clip(nm, 34) for nm in names], f.left, bw):
        xc = f.left + (i + 0.5) * bw
        p.append(_x_tick(f, xc))
        p.append(f'<text x="{xc:.1f}" y="{f.base + 17}" text-anchor="{anchor}" '
                 f'class="tick">{escape(clip(names[i], 34))}</text>')
    p.append(_axis_title(f, f.height - 6, f"{format_count(n)} partitions, in partition order "
                                          f"(hover a bar for its numbers)"))
    p.append("</svg>")
    return "".join(p)


def _stacked_bar(g, x0, bw, ymax):
    f = STRIP
    segs = (("small", g.small), ("ok", g.files - g.small - g.oversized), ("big", g.oversized))
    w = max(bw - (1 if bw > 4 else 0), 0.6)
    tip = (f"{g.name or '(unpartitioned)'}: {count_of(g.files, 'file')}, "
           f"{format_count(g.small)} small, {format_count(g.oversized)} oversized, "
           f"{format_size(g.bytes)}")
    y = f.base
    out = ["<g>", f"<title>{escape(tip)}</title>"]
    for kind, c in segs:
        if not c:
            continue
        h = f.plot_height * c / ymax
        y -= h
        out.append(f'<rect x="{x0:.2f}" y="{y:.2f}" width="{w:.2f}" height="{h:.2f}" '
                   f'fill="{KIND_COLORS[kind]}" opacity="0.85"></rect>')
    out.append("</g>")
    return out


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


# -- the heat map: partitions x size bins ----------------------------------------------------

@dataclass(frozen=True)
class _Grid:
    """The heat map's cells: a column per size bin, a row per partition."""
    bins: Sequence[SizeBin]
    cell_w: float
    cmax: int           # the fullest cell, which gets the darkest shade

    @property
    def counts_x(self):
        """Where the columns of file counts right of the cells begin."""
        return LABEL_W + len(self.bins) * self.cell_w + 8


def heatmap_svg(groups: Sequence[FileGroup], bins: Sequence[SizeBin]) -> str:
    """One row per partition: its files per size bin, shaded by count."""
    counts = [bin_counts(g.sizes, bins) for g in groups]
    cmax = max((c for row in counts for c in row), default=1) or 1
    grid = _Grid(bins, (HEATMAP_WIDTH - LABEL_W - RIGHT_W - 8) / len(bins), cmax)
    height = HEAD_H + ROW_H * len(groups) + 8
    p = [_svg_open(HEATMAP_WIDTH, height, "files per partition and size bucket")]
    p += _heatmap_head(grid)
    for r, (g, row) in enumerate(zip(groups, counts)):
        p += _heatmap_row(grid, HEAD_H + r * ROW_H, g, row)
    p.append("</svg>")
    return "".join(p)


def _heatmap_head(grid):
    """The bins' colours and lower edges over the columns, and the count columns' titles."""
    cw = grid.cell_w
    out = []
    for j, b in enumerate(grid.bins):
        xc = LABEL_W + (j + 0.5) * cw
        out.append(f'<rect x="{LABEL_W + j * cw + 0.5:.1f}" y="{HEAD_H - 6}" '
                   f'width="{cw - 1:.1f}" height="4" fill="{KIND_COLORS[b.kind]}"></rect>')
        text = f"\u2265{format_size(b.lo)}" if b.hi is None else format_size(b.lo)
        out.append(f'<text transform="translate({xc + 3:.1f},{HEAD_H - 10}) rotate(-45)" '
                   f'class="tick"><title>{escape(b.label)}</title>{escape(text)}</text>')
    return out + _count_columns(grid, HEAD_H - 10, "hdr", [("", "files"), ("", "small")])


def _heatmap_row(grid, y, g, counts):
    label = g.name or "(unpartitioned)"
    out = [f'<text x="{LABEL_W - 8}" y="{y + 13}" text-anchor="end" class="lbl">'
           f'<title>{escape(label)}</title>{escape(clip(label, 34))}</text>']
    for j, (b, c) in enumerate(zip(grid.bins, counts)):
        out += _heatmap_cell(grid, LABEL_W + j * grid.cell_w, y, f"{escape(label)}, "
                             f"{escape(b.label)}", b, c)
    small_style = f' style="fill:{SMALL_COLOR if g.small else MUTED}"'
    return out + _count_columns(grid, y + 13, "lbl", [("", format_count(g.files)),
                                                      (small_style, format_count(g.small))])


def _count_columns(grid, y, cls, cells):
    """The files and small-files columns right of the cells: [(extra attributes, text)]."""
    xr = grid.counts_x
    return [f'<text x="{xr + dx}" y="{y}" text-anchor="end" class="{cls}"{attrs}>{text}</text>'
            for dx, (attrs, text) in zip((40, 88), cells)]


def _heatmap_cell(grid, x0, y, tip, b, c):
    """A cell shaded by the square root of its share of the fullest cell (so that a few files
    still show), with its count written in when the cell is wide enough."""
    cw = grid.cell_w
    if c:
        op = 0.18 + 0.82 * math.sqrt(c / grid.cmax)
        fill = KIND_COLORS[b.kind]
    else:
        op, fill = 1, "#f8fafc"
    out = [f'<rect x="{x0 + 0.5:.1f}" y="{y + 0.5}" width="{cw - 1:.1f}" '
           f'height="{ROW_H - 1}" fill="{fill}" fill-opacity="{op:.2f}">'
           f'<title>{tip}: {count_of(c, "file")}</title></rect>']
    if c and cw >= 18:
        color = "#fff" if op > 0.55 else "#111827"
        out.append(f'<text x="{x0 + cw / 2:.1f}" y="{y + 13}" text-anchor="middle" '
                   f'class="cnt" fill="{color}">{format_count(c)}</text>')
    return out


# -- small files over time -------------------------------------------------------------------

@dataclass(frozen=True)
class _Scale:
    """Where the timeline puts instant i (evenly spaced) and a count v."""
    frame: Frame
    n: int
    ymax: int

    def x(self, i):
        pw = self.frame.plot_width
        return self.frame.left + (pw / 2 if self.n == 1 else pw * i / (self.n - 1))

    def y(self, v):
        return self.frame.base - self.frame.plot_height * v / self.ymax


def timeline_svg(points: Sequence[TimelinePoint]) -> str:
    """Files and small files after each instant, clusterings as bands behind the lines."""
    f = TIMELINE
    ymax, step = nice_max(max(max(pt.files for pt in points), 1))
    s = _Scale(f, len(points), ymax)
    p = [_svg_open(f.width, f.height, "files and small files over time"),
         *_y_axis(f, ymax, step)]
    p += [_cluster_band(s, i) for i, pt in enumerate(points) if pt.action == "replacecommit"]
    for attr, color in (("files", OK_COLOR), ("small", SMALL_COLOR)):
        pts = " ".join(f"{s.x(i):.1f},{s.y(getattr(pt, attr)):.1f}"
                       for i, pt in enumerate(points))
        p.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2">'
                 f'</polyline>')
    r = 3.5 if s.n <= 60 else 2
    p += [_timeline_dots(s, i, pt, r) for i, pt in enumerate(points)]
    p.append(_x_axis(f))
    p += _instant_labels(s, points)
    p.append("</svg>")
    return "".join(p)


def _cluster_band(s, i):
    """A translucent vertical band behind the lines where a clustering completed."""
    f = s.frame
    return (f'<line x1="{s.x(i):.1f}" x2="{s.x(i):.1f}" y1="{f.top}" y2="{f.base}" '
            f'stroke="{CLUSTER_COLOR}" stroke-opacity="0.35" '
            f'stroke-width="{min(6, max(2, f.plot_width / max(s.n, 1) / 2)):.1f}"></line>')


def _timeline_dots(s, i, pt, r):
    """The two points of instant i, with the instant's numbers as their tooltip."""
    tip = (f"{pt.instant} {pt.action} {pt.operation} ({when(pt.created_at_ms)}): "
           f"+{pt.added} / \u2212{pt.removed} files; {count_of(pt.files, 'file')}, "
           f"{format_count(pt.small)} small, {format_size(pt.bytes)}")
    return (f'<g><title>{escape(tip)}</title>'
            f'<circle cx="{s.x(i):.1f}" cy="{s.y(pt.files):.1f}" r="{r}" fill="{OK_COLOR}">'
            f'</circle><circle cx="{s.x(i):.1f}" cy="{s.y(pt.small):.1f}" r="{r}" '
            f'fill="{SMALL_COLOR}"></circle></g>')


def _instant_labels(s, points) -> List[str]:
    """Label the notable instants (clustering, rollback, full build, the last) first, then
    as many others as fit 24px apart."""
    n = len(points)
    notable = [i for i, pt in enumerate(points) if pt.action != "commit"
               or pt.operation == "full_refresh" or i == n - 1]
    placed: List[int] = []
    seen = set(notable)
    for i in notable + [i for i in range(n) if i not in seen]:
        if all(abs(s.x(i) - s.x(j)) >= 24 for j in placed):
            placed.append(i)
    out = []
    for i in sorted(placed):
        pt = points[i]
        color = CLUSTER_COLOR if pt.action == "replacecommit" else \
            (MUTED if pt.action == "rollback" else "#374151")
        out.append(f'<text transform="translate({s.x(i) + 3:.1f},{s.frame.base + 10}) '
                   f'rotate(-40)" text-anchor="end" class="tick" style="fill:{color}">'
                   f'{escape(clip(pt.operation, 18))}</text>')
    return out
