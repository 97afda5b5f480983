"""Bloom filter sizes as Parquet makes them."""
from python_adapter.core.bloom import adaptive_filter, filter_bytes


def test_filter_bytes_match_what_parquet_wrote():
    # parquet-mr 1.17 at fpp 1e-6 (the adaptive filter's pick, measured): 12,500 distinct
    # keys -> 64 KiB, 25,000 -> 128 KiB
    assert filter_bytes(12_500) == 1 << 16
    assert filter_bytes(25_000) == 1 << 17


def test_filter_bytes_are_bounded():
    assert filter_bytes(0) == 1024
    assert filter_bytes(10**12) == 1 << 27
    # about 5 bytes a row at the sizes users write (a 128 MB file of 50-byte rows)
    rows = 128_000_000 / 50
    assert 4 <= filter_bytes(rows) / rows <= 8


def test_adaptive_filter_spans_a_full_file_down_to_4kb():
    largest, candidates = adaptive_filter(25_000)  # 25,000 x 1.25 keys need 256 KiB
    assert (largest, candidates) == (1 << 18, 7)   # 256 KiB .. 4 KiB
    assert adaptive_filter(10) == (1 << 16, 5)     # never below 64 KiB .. 4 KiB
    assert adaptive_filter(2_560_000)[1] == 10     # 128 MB of 50-byte rows: 10 candidates
