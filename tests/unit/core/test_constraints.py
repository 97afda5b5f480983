"""not_null_columns: the config key (from an enforced contract's not_null constraints) and
the error a write fails with when the new rows hold nulls in those columns."""
import pytest

from python_adapter.core.config import check_columns, parse_config
from python_adapter.core.constraints import check_not_null
from python_adapter.errors import ConfigError, ConstraintError, WriteError


def test_not_null_columns_is_a_column_list_checked_against_the_model():
    assert parse_config({}).not_null_columns == ()
    assert parse_config({"not_null_columns": "id"}).not_null_columns == ("id",)
    assert parse_config({"not_null_columns": ["id", "Day"]}).not_null_columns == ("id", "Day")
    with pytest.raises(ConfigError, match="not_null_columns.*5"):
        parse_config({"not_null_columns": 5})
    cfg = parse_config({"not_null_columns": ["ID", "colour"]})
    with pytest.raises(ConfigError, match="not_null_columns: column.*colour.*not found"):
        check_columns(cfg, ["id", "color"])


def test_the_error_names_each_column_and_its_null_rows_and_says_nothing_was_written():
    check_not_null({"id": 0, "tag": 0})
    check_not_null({})
    with pytest.raises(ConstraintError) as err:
        check_not_null({"id": 1, "day": 0, "tag": 12345})
    assert str(err.value) == (
        "not_null constraint violated by the new data: column id is null in 1 row; "
        "column tag is null in 12,345 rows; nothing was written")
    assert isinstance(err.value, WriteError)  # the dbt layer fails the model with it
