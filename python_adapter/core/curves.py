"""Space-filling curves over integer coordinates (ranks). Pure.

Clustering maps each `cluster_by` column to a rank in [0, 2**bits) (Spark's range
partitioner, so strings, dates, numbers and nulls all work), then orders rows by one of
these curves over the ranks, so rows close in every column land in the same files.
"""
from typing import Any, Sequence


def z_value(coords: Sequence[int], bits: int) -> int:
    """Morton code: the bits of the coordinates interleaved, most significant first."""
    z = 0
    k = len(coords)
    for j in range(bits):
        for i, c in enumerate(coords):
            z |= ((c >> j) & 1) << (j * k + (k - 1 - i))
    return z


def hilbert_index(coords: Sequence[int], bits: int) -> int:
    """Position on the Hilbert curve of a point of a 2**bits grid in len(coords) dims.

    Skilling's transform (AIP Conf. Proc. 707, 2004): undo the excess work of a Gray code
    in place, then interleave like Morton. Consecutive indices are grid neighbours, which
    Morton does not give, hence better locality in every dimension.
    """
    x = list(coords)
    n = len(x)
    if n == 1:
        return x[0]
    m = 1 << (bits - 1)
    # inverse undo
    q = m
    while q > 1:
        p = q - 1
        for i in range(n):
            if x[i] & q:
                x[0] ^= p
            else:
                t = (x[0] ^ x[i]) & p
                x[0] ^= t
                x[i] ^= t
        q >>= 1
    # Gray encode
    for i in range(1, n):
        x[i] ^= x[i - 1]
    t = 0
    q = m
    while q > 1:
        if x[n - 1] & q:
            t ^= q - 1
        q >>= 1
    for i in range(n):
        x[i] ^= t
    # interleave the transposed bits, most significant first
    h = 0
    for j in range(bits - 1, -1, -1):
        for i in range(n):
            h = (h << 1) | ((x[i] >> j) & 1)
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
