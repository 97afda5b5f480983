"""Sizes of the bloom index's Parquet Bloom filters (pure; spark/bloom.py writes and probes
them)."""
import math
from typing import Tuple

# False positives per probed file are 1 - (1 - FPP)^keys: at 1e-6 a batch of 10,000 keys
# reads 1% of the files that hold none of them, for about 5 bytes of filter per row.
BLOOM_FPP = 1e-6
_MIN_BYTES, MAX_BYTES = 1 << 10, 1 << 27


def filter_bytes(rows: float) -> int:
    """Bytes of a split-block Bloom filter holding `rows` distinct keys at BLOOM_FPP, as
    Parquet sizes it (a power of two), within [1 KB, 128 MB]."""
    bits = -8 * max(rows, 1.0) / math.log(1 - BLOOM_FPP ** (1 / 8))
    size = 1 << max(0, math.ceil(math.log2(bits / 8)))
    return min(max(size, _MIN_BYTES), MAX_BYTES)


# Parquet counts a candidate's keys in steps of 500, so at BLOOM_FPP a candidate below
# ~2.6 KB holds none, and a file whose keys outgrow every candidate falls back to the
# smallest filter there is (32 bytes: it answers "maybe" to every key). Measured on
# parquet-mr 1.17.
_SMALLEST_CANDIDATE = 1 << 12
_MAX_CANDIDATES = 10


def adaptive_filter(rows_per_file: float) -> Tuple[int, int]:
    """(largest filter, number of candidates) of Parquet's adaptive Bloom filter for files
    of about `rows_per_file` keys: the largest holds 1.25 x that (a file may exceed its
    target), the smallest is 4 KB, so a file of few rows gets a filter of its own size."""
    largest = max(filter_bytes(rows_per_file * 1.25), _SMALLEST_CANDIDATE * 16)
    steps = int(math.log2(largest // _SMALLEST_CANDIDATE)) + 1
    return largest, min(steps, _MAX_CANDIDATES)
