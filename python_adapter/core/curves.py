"""Space-filling curves over integer coordinates (ranks). Pure.

Clustering maps each `cluster_by` column to a rank in [0, 2**bits) (Spark's range
partitioner, so strings, dates, numbers and nulls all work), then orders rows by one of
these curves over the ranks, so rows close in every column land in the same files.

The Spark side (`spark/services/curve_keys.py`) computes the same values with lookups in the tables
built here: `spread_table` for Morton, `hilbert_table` (a finite-state machine) for Hilbert.
"""
import functools
from typing import Any, List, Sequence, Tuple

KEY_BITS = 63               # a curve value is a non-negative Spark bigint
TABLE_ENTRIES = 8192        # several Hilbert levels per lookup while the table stays this small
MAX_TABLE_ENTRIES = 1 << 14  # one level per lookup up to this (6 columns); beyond, arithmetic


def key_bits(dims: int, bits: int) -> int:
    """Bits per coordinate so that a curve value over `dims` coordinates fits `KEY_BITS`."""
    if not 1 <= dims <= KEY_BITS:
        raise ValueError(f"a curve takes 1 to {KEY_BITS} coordinates, got {dims}")
    return min(bits, KEY_BITS // dims)


def z_value(coords: Sequence[int], bits: int) -> int:
    """Morton code: the bits of the coordinates interleaved, most significant first."""
    z = 0
    k = len(coords)
    for j in range(bits):
        for i, c in enumerate(coords):
            z |= ((c >> j) & 1) << (j * k + (k - 1 - i))
    return z


@functools.lru_cache(maxsize=None)
def spread_table(dims: int, bits: int) -> Tuple[int, ...]:
    """For every c < 2**bits, c's bits `dims` apart from bit 0 (z_value of (0, ..., 0, c)):
    a Morton code is the OR of each coordinate's entry shifted left by dims - 1 - its
    position, one lookup per column instead of one shift per bit."""
    return tuple(z_value((0,) * (dims - 1) + (c,), bits) for c in range(1 << bits))


def hilbert_index(coords: Sequence[int], bits: int) -> int:
    """Position on the Hilbert curve of a point of a 2**bits grid in len(coords) dims.

    Hamilton's formulation (Compact Hilbert Indices, Dalhousie CS-2006-07): the curve is
    walked down one level (bit) at a time, most significant first; the coordinates' bits at
    a level form a digit (coordinate 0 highest, as in z_value), which, seen in the frame of
    the current sub-cube, is a Gray code whose rank gives the index's next n bits and picks
    the sub-cube to descend into. Consecutive indices are grid neighbours, which Morton does
    not give, hence better locality in every dimension. The frame after a level depends only
    on the frame before and the digit: `hilbert_table` makes that a finite-state machine.
    """
    n = len(coords)
    frame, h = (0, 0), 0
    for level in range(bits - 1, -1, -1):
        w, frame = hilbert_step(n, frame, _digit(coords, level))
        h = (h << n) | w
    return h


def hilbert_step(dims: int, frame: Tuple[int, int], digit: int) -> Tuple[int, Tuple[int, int]]:
    """(the index's digit, the next frame) for one level. A frame is (e, d): the sub-cube's
    entry corner and the axis its curve leaves along; the digit is mapped into the frame,
    its Gray-code rank is the index digit, and the rank's sub-cube gives the next frame."""
    e, d = frame
    turn = (d + 1) % dims
    w = gray_rank(rotate_right(digit ^ e, turn, dims), dims)
    e = e ^ rotate_right(hilbert_entry(w), dims - turn, dims)    # rotate left by `turn`
    d = (d + hilbert_direction(w) + 1) % dims
    return w, (e, d)


def rotate_right(x: int, r: int, dims: int) -> int:
    """x's low `dims` bits rotated right by r (0 <= r <= dims)."""
    return ((x >> r) | (x << (dims - r))) & ((1 << dims) - 1)


def gray_rank(g: int, dims: int) -> int:
    """The i whose Gray code i ^ (i >> 1) is g: the XOR of g shifted by 0 .. dims-1."""
    i = 0
    for s in range(dims):
        i ^= g >> s
    return i


def hilbert_entry(w: int) -> int:
    """Entry corner of sub-cube w (Hamilton's e(w)): the Gray code of w - 1 rounded down to
    even, 0 for the first."""
    if w == 0:
        return 0
    v = (w - 1) & ~1
    return v ^ (v >> 1)


def hilbert_direction(w: int) -> int:
    """Hamilton's d(w), before the mod: trailing one bits of w - 1 (w even) or w (w odd);
    0 for the first sub-cube."""
    if w == 0:
        return 0
    v = w if w & 1 else w - 1
    return bin(v & ~(v + 1)).count("1")


def _digit(coords: Sequence[int], level: int) -> int:
    digit = 0
    for c in coords:
        digit = (digit << 1) | ((c >> level) & 1)
    return digit


@functools.lru_cache(maxsize=None)
def hilbert_frames(dims: int) -> Tuple[Tuple[int, int], ...]:
    """The frames a walk can reach, the start (0, 0) first: dims * 2**(dims - 1) of them."""
    frames = [(0, 0)]
    number = {(0, 0): 0}
    for frame in frames:            # grows while it is walked: breadth first
        for digit in range(1 << dims):
            _, nxt = hilbert_step(dims, frame, digit)
            if nxt not in number:
                number[nxt] = len(frames)
                frames.append(nxt)
    return tuple(frames)


@functools.lru_cache(maxsize=None)
def hilbert_table(dims: int, levels: int) -> Tuple[int, ...]:
    """The state machine over `levels` levels at once: entry [state << width | digits]
    (width = levels * dims; digits = the levels' digits, most significant first, as a Morton
    code gives them) is next_state << width | the index's `width` bits. State 0 is the start;
    states number `hilbert_frames`."""
    frames = hilbert_frames(dims)
    number = {f: i for i, f in enumerate(frames)}
    width, mask = levels * dims, (1 << dims) - 1
    table = []
    for frame in frames:
        for digits in range(1 << width):
            f, w = frame, 0
            for level in range(levels - 1, -1, -1):
                wl, f = hilbert_step(dims, f, (digits >> (level * dims)) & mask)
                w = (w << dims) | wl
            table.append((number[f] << width) | w)
    return tuple(table)


def hilbert_table_levels(dims: int, bits: int) -> List[int]:
    """How many levels each table lookup takes, most significant first, summing to `bits`:
    as many as keep the table within TABLE_ENTRIES (at least one); [] when even one level's
    table would exceed MAX_TABLE_ENTRIES (7 columns and more), where the walk is arithmetic."""
    states = dims << (dims - 1)
    if states << dims > MAX_TABLE_ENTRIES:
        return []
    per = 1
    while per < bits and states << ((per + 1) * dims) <= TABLE_ENTRIES:
        per += 1
    return [per] * (bits // per) + ([bits % per] if bits % per else [])


def hilbert_index_by_tables(coords: Sequence[int], bits: int) -> int:
    """hilbert_index as the Spark side computes it: the Morton code's digits, a few levels at
    a time, through `hilbert_table` (only where `hilbert_table_levels` has tables)."""
    n = len(coords)
    z, shift, c, h, width = z_value(coords, bits), n * bits, 0, 0, 0
    for levels in hilbert_table_levels(n, bits):
        prev, width = width, levels * n
        shift -= width
        digits = (z >> shift) & ((1 << width) - 1)
        c = hilbert_table(n, levels)[((c >> prev) << width) | digits]
        h = (h << width) | (c & ((1 << width) - 1))
    return h


def quantile_boundaries(values: Sequence, buckets: int) -> list:
    """`buckets - 1` cut points of sorted `values`: rank r holds the values v with
    boundaries[r-1] < v <= boundaries[r], so each rank gets about as many values."""
    n = len(values)
    if n == 0:
        return []
    return [values[max(0, (j * n) // buckets - 1)] for j in range(1, buckets)]


def search_levels(boundaries: Sequence, bits: int) -> list:
    """The boundaries a binary search looks at, level by level: level L holds, for each
    prefix p of L rank bits, the cut point that decides the next bit. Computing a rank
    this way takes `bits` comparisons (a Spark expression per level), not 2**bits."""
    buckets = 1 << bits
    assert len(boundaries) == buckets - 1, "one boundary less than buckets"
    return [[boundaries[(2 * p + 1) * (buckets >> (level + 1)) - 1] for p in range(1 << level)]
            for level in range(bits)]


def rank_of(value: Any, levels: Sequence[Sequence]) -> int:
    """The rank `search_levels` gives a value (number of boundaries below it); the Spark
    expression mirrors this, and tests compare the two."""
    rank = 0
    for level in levels:
        rank = 2 * rank + (1 if value > level[rank] else 0)
    return rank
