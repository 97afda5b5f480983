"""Files deleted or changed outside the table's commits stop every write that would read or
replace them, with a message naming the files and `sized_repair`; the repair records the
table as it is (a new instant listing the rows lost); column types that would turn values
into NULL stop incremental runs under every on_schema_change mode."""
import pytest

from python_adapter.spark.catalog.tables import TableRef, describe_table
from python_adapter.errors import SchemaChangeError
from python_adapter.core.config import parse_config
from python_adapter.io.fs import HadoopFS
from python_adapter.spark.services.repair import repair_table
from python_adapter.spark.table_files import unreadable_file
from python_adapter.table.timeline import Timeline
from python_adapter.errors import DamagedTableError
from python_adapter.spark.services.describe import timeline_rows
from python_adapter.api import write_dataframe
from tests.functional.helpers import rows_of, rows_of_df

QUIET = dict(log=lambda m: None)
UPSERT = parse_config({"partition_by": ["day"], "unique_key": "id", "target_file_size": 16_000,
                       "distribution": "exact"})
OVERWRITE = parse_config({"partition_by": ["day"], "incremental_strategy": "insert_overwrite",
                          "target_file_size": 16_000, "distribution": "exact"})


def _files(spark, schema, name):
    fs = HadoopFS(spark)
    location = fs.qualify(describe_table(spark, TableRef(schema, name)).location)
    index = Timeline(fs, location).file_index()
    return fs, location, index


@pytest.mark.parametrize("damage", ["deleted", "truncated"])
def test_a_damaged_file_stops_writes_until_repaired(spark, schema, events, damage):
    table = TableRef(schema, f"dmg_{damage}")
    name = f"{schema}.dmg_{damage}"
    base = events(days=3)
    write_dataframe(spark, base, table, UPSERT, **QUIET)
    fs, location, index = _files(spark, schema, f"dmg_{damage}")
    victim = sorted(index)[0]
    path = f"{location}/{victim}"
    if damage == "deleted":
        fs.delete(path)
    else:
        data = fs.read_bytes(path)
        fs.delete(path)
        fs.write_bytes(path, data[: len(data) // 2])
    before = [i.instant for i in Timeline(fs, location).instants()]

    batch = events(days=3, tag="v2").where("id % 7 = 0")
    for cfg in (UPSERT, OVERWRITE):
        with pytest.raises(DamagedTableError, match=f"{victim}.*sized_repair --args "
                                                    f"'{{relation: {name}}}'"):
            write_dataframe(spark, batch, table, cfg, **QUIET)
    assert [i.instant for i in Timeline(fs, location).instants()] == before

    result = repair_table(spark, table, **QUIET)
    assert result.rows_lost == index[victim].rows > 0
    assert (result.files_missing, result.files_unreadable) == \
        ((1, 0) if damage == "deleted" else (0, 1))
    assert not fs.exists(path)  # an unreadable file is set aside, not left in the table
    kept = rows_of(spark, schema, f"dmg_{damage}")
    assert len(kept) == base.count() - result.rows_lost and set(kept) <= set(rows_of_df(base))
    [last] = [r for r in timeline_rows(spark, table)][-1:]
    assert last[4] == "repair"

    # writes go on from the repaired state
    write_dataframe(spark, batch, table, UPSERT, **QUIET)
    keys = {r[0] for r in rows_of_df(batch)}
    expected = sorted([r for r in kept if r[0] not in keys] + rows_of_df(batch))
    assert rows_of(spark, schema, f"dmg_{damage}") == expected
    assert repair_table(spark, table, **QUIET).instant == ""  # nothing left to repair


def test_an_unreadable_file_of_the_same_size_is_named(spark, schema, events):
    table = TableRef(schema, "corrupt_same_size")
    write_dataframe(spark, events(days=2), table, UPSERT, **QUIET)
    fs, location, index = _files(spark, schema, "corrupt_same_size")
    victim = sorted(index)[0]
    path = f"{location}/{victim}"
    data = fs.read_bytes(path)
    fs.delete(path)
    fs.write_bytes(path, b"\0" * len(data))  # same size, not Parquet any more
    with pytest.raises(Exception) as failed:
        write_dataframe(spark, events(days=2, tag="v2"), table, UPSERT, **QUIET)
    assert unreadable_file(failed.value).endswith(victim.rsplit("/", 1)[-1])
    assert not Timeline(fs, location).pending()
    result = repair_table(spark, table, **QUIET)  # its size is as recorded: read to be found
    assert (result.files_unreadable, result.rows_lost) == (1, index[victim].rows)
    write_dataframe(spark, events(days=2, tag="v2"), table, UPSERT, **QUIET)
    assert rows_of(spark, schema, "corrupt_same_size") == rows_of_df(events(days=2, tag="v2"))


@pytest.mark.parametrize("mode", ["ignore", "append_new_columns", "sync_all_columns", "fail"])
def test_a_type_change_that_would_null_values_fails_under_every_mode(spark, schema, mode):
    table = TableRef(schema, f"types_{mode}")
    name = f"{schema}.types_{mode}"
    cfg = parse_config({"unique_key": "id", "on_schema_change": mode})
    first = spark.sql("select cast(id as bigint) as id, cast(id * 10 as bigint) as amount "
                      "from range(200)")
    write_dataframe(spark, first, table, cfg, **QUIET)
    texts = spark.sql("select cast(id as bigint) as id, if(id % 4 = 0, cast(id as string), "
                      "concat('x', id)) as amount from range(200)")
    with pytest.raises(SchemaChangeError, match="column amount is string in the model but "
                                                "bigint in the table.*--full-refresh"):
        write_dataframe(spark, texts, table, cfg, **QUIET)
    assert rows_of(spark, schema, f"types_{mode}", "id, amount") == rows_of_df(first, ("id", "amount"))
    if mode == "fail":
        return
    # a narrower type that loses nothing goes ahead, cast to the table's type
    ints = spark.sql("select cast(id as bigint) as id, cast(id as int) as amount from range(5)")
    write_dataframe(spark, ints, table, cfg, **QUIET)
    got = dict(rows_of(spark, schema, f"types_{mode}", "id, amount"))
    assert [got[i] for i in range(6)] == [0, 1, 2, 3, 4, 50]
    assert dict(spark.table(name).dtypes)["amount"] == "bigint"
