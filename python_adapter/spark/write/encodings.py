"""The writer options of a rewrite's columns' encodings (core/encodings.py): a column none
of the files it reads holds a dictionary for is written without one."""
from typing import Dict, Sequence

from pyspark.sql import SparkSession

from python_adapter.core.encodings import evidence_files, no_dictionary_options
from python_adapter.io.footers import plain_columns
from python_adapter.table.timeline import FileEntry


def dictionary_options(spark: SparkSession, location: str,
                       files: Sequence[FileEntry]) -> Dict[str, str]:
    """Writer options for rewriting `files` (paths relative to location): a column the
    footers of the largest show no dictionary for is written without one; none when no
    file is large enough to tell or the footers cannot be read here."""
    chosen = evidence_files([(f.path, f.rows) for f in files])
    if not chosen:
        return {}
    base = location.rstrip("/")
    return no_dictionary_options(plain_columns(spark, [f"{base}/{p}" for p in chosen]) or ())
