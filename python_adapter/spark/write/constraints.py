"""Checks of a write's new rows before anything is written. The contract's not_null
columns, checked by an aggregation the write already runs (the per-partition count of full
builds, the tag statistics of upserts and inserts): each adds one null count per column
(core/constraints.py raises). Partition values that would read back as NULL."""
from typing import Any, Iterable, List, Mapping, Sequence, Union, cast

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql import types as T

from python_adapter.core.constraints import check_not_null
from python_adapter.core.partitions import NULL_LIKE, check_partition_texts


def _name(i: int) -> str:
    return f"__sized_null{i}"


def null_counts(columns: Sequence[str]) -> List[Column]:
    """One aggregate per column: how many rows hold null in it."""
    return [F.sum(F.when(F.col(c).isNull(), 1).otherwise(0)).alias(_name(i))
            for i, c in enumerate(columns)]


def null_count_names(columns: Sequence[str]) -> List[str]:
    """The names null_counts gives its aggregates, to carry them through a projection."""
    return [_name(i) for i in range(len(columns))]


def check_null_counts(columns: Sequence[str],
                      rows: Iterable[Union[Row, Mapping[str, Any]]]) -> None:
    """Sum null_counts over the aggregation's rows (groups) and fail naming the columns that
    hold nulls (ConstraintError)."""
    totals = {c: 0 for c in columns}
    for row in rows:
        for i, c in enumerate(columns):
            totals[c] += row[_name(i)] or 0
    check_not_null(totals)


def check_not_null_rows(df: DataFrame, columns: Sequence[str]) -> None:
    """One aggregation of its own, for a write that makes none (distribution none, or a
    static file_count with range)."""
    if columns:
        # an aggregation without groups has exactly one row
        check_null_counts(columns, [cast(Row, df.agg(*null_counts(columns)).first())])


def refuse_null_like_partitions(df: DataFrame, pcols: Sequence[str]) -> None:
    """core/partitions.check_partition_texts where no count is made (distribution none, a
    static file_count, a small batch that wrote a null partition): one query for the first
    row holding such a value, string columns only."""
    strings = [c for c in pcols if isinstance(df.schema[c].dataType,
                                              (T.StringType, T.CharType, T.VarcharType))]
    if not strings:
        return
    cond = None
    for c in strings:
        term = F.col(c).isin(*NULL_LIKE)
        cond = term if cond is None else cond | term
    row = df.where(cast(Column, cond)).select(*strings).first()  # strings is not empty
    if row is not None:
        check_partition_texts(strings, [tuple(row)])
