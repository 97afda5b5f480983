"""The constraints of a model's contract that the engine enforces on the new rows.

Pure: the Spark side counts, in an aggregation the write already runs, the null rows of
each `not_null_columns` column; this turns the counts into the model's error.
"""
from typing import Mapping

from python_adapter.core.sizes import count_of
from python_adapter.errors import ConstraintError


def check_not_null(null_rows: Mapping[str, int]) -> None:
    """Raise ConstraintError naming every not_null column that is null in some new rows,
    and in how many; nothing has been written when it is called."""
    bad = [(column, n) for column, n in null_rows.items() if n]
    if not bad:
        return
    found = "; ".join(f"column {column} is null in {count_of(n, 'row')}" for column, n in bad)
    raise ConstraintError(f"not_null constraint violated by the new data: {found}; "
                          f"nothing was written")
