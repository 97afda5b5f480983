"""Parquet's dictionary encoding per column, chosen from the files a rewrite reads.

parquet-mr builds a dictionary for every column and, at a column's first page, keeps it
only when the dictionary and its indices are smaller than the plain values (its size
check); otherwise it encodes the page's values again, plain, and writes the rest plain.
For columns of unique or near-unique values (ids, timestamps, free text) that is the
dictionary's hashing and a second encoding paid for nothing: ~20% of the task threads'
time in a profile of a compaction of the peer benchmarks' table. A rewrite (compaction, clustering) reads files whose
footers already record the outcome, so a column none of them kept a dictionary for is
written without one: the same encodings, without the work.
"""
from typing import Dict, Iterable, List, Sequence, Tuple

# parquet-mr ends a page at 20,000 rows (parquet.page.row.count.limit) or 1 MB, and makes
# its size check on the first: a file of at least half as many rows checked a window like
# the rewrite's; smaller files (fewer repeats in view) say nothing
EVIDENCE_ROWS = 10_000
# footers read per rewrite job (each is an open and a read; on an object store, requests)
EVIDENCE_FILES = 16


def evidence_files(files: Sequence[Tuple[str, int]]) -> List[str]:
    """Of (path, rows) pairs, the paths of up to EVIDENCE_FILES holding the most rows, each
    of at least EVIDENCE_ROWS (none: a rewrite of small files keeps parquet-mr's default)."""
    big = sorted((f for f in files if f[1] >= EVIDENCE_ROWS), key=lambda f: (-f[1], f[0]))
    return [path for path, _rows in big[:EVIDENCE_FILES]]


def no_dictionary_options(columns: Iterable[str]) -> Dict[str, str]:
    """Parquet writer options that write these columns without a dictionary."""
    return {f"parquet.enable.dictionary#{c}": "false" for c in sorted(columns)}
