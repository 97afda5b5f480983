"""What the engine reads of Parquet footers without a Spark job: rows and key range of
staged files, the answers of files' Bloom filters to a batch's keys, and which columns
files hold no dictionary for. Each call goes to
the session's backend (io/session_backend.SessionFooters, io/connect_backend.ConnectFooters);
`None` means the caller reads the files with a Spark job, which spreads the footer reads
over the executors.
"""
from typing import Any, List, Optional, Sequence

from pyspark.sql import SparkSession

from python_adapter.io.backend import backend
from python_adapter.io.interfaces import StagedFooter


def staged_footers(spark: SparkSession, staging: str, key_col: Optional[str] = None
                   ) -> Optional[List[StagedFooter]]:
    """[(uri, bytes, rows, key min, key max)] of the visible Parquet files below `staging`
    (a qualified URI), or None when the footers are to be read by a Spark job."""
    return backend(spark).footers.staged(staging, key_col)


def bloom_probe_usable(spark: SparkSession) -> bool:
    """Whether bloom_probe can run: over Connect in the server's extension, with a JVM here
    where the jar of fast_local_fs is loaded (not a cluster's driver)."""
    return backend(spark).footers.bloom_usable()


def bloom_probe(spark: SparkSession, keyed: Any, files: str, key: str) -> Optional[str]:
    """`sizedspark.fs.BloomProbe`'s answer for `files` (encode_fields of path, group pairs)
    probed with the (group, key) rows of `keyed`: a character per file, '0' ruled out, '1'
    may hold, '2' cannot tell. The keys stay in the JVM (collected there, deduplicated);
    None when the probe failed (e.g. a jar built against another Parquet: read them all)."""
    return backend(spark).footers.bloom_probe(keyed, files, key)


def plain_columns(spark: SparkSession, files: Sequence[str]) -> Optional[List[str]]:
    """The top-level columns none of `files` (qualified URIs) holds a dictionary page for in
    any row group, or None when the footers cannot be read here."""
    return backend(spark).footers.plain_columns(files)
