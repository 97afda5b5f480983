"""The metastore calls of catalog.py and metastore_stats.py over `method: connect`: the
same external-catalog calls, made by the Connect server's extension (CatalogOps.java) in
the server's session, since Spark's SQL has no statement for them."""
import json
from typing import Any, Iterable, List, Mapping, Optional, Set

from pyspark.sql import types as T

from python_adapter.io.connect_client import call


def describe(spark: Any, db: str, name: str) -> Optional[dict]:
    """{location, schema (JSON, as Spark reads the table), partition_columns, provider,
    table_type, input_format}, None when there is no such table."""
    got = call(spark, "catalog.describe", db=db, table=name)
    if got is not None:
        got["schema"] = T.StructType.fromJson(json.loads(got["schema"]))
    return got


def database_location(spark: Any, db: str) -> str:
    return call(spark, "catalog.db_location", db=db)


def set_table_type(spark: Any, db: str, name: str, external: bool) -> bool:
    return bool(call(spark, "catalog.set_type", db=db, table=name, external=external))


def table_property(spark: Any, db: str, name: str, key: str) -> Optional[str]:
    return call(spark, "catalog.property", db=db, table=name, key=key)


def set_data_schema(spark: Any, db: str, name: str, schema: T.StructType) -> None:
    call(spark, "catalog.set_data_schema", db=db, table=name, schema=schema.json())


def partition_names(spark: Any, db: str, name: str) -> Set[str]:
    return set(call(spark, "catalog.partition_names", db=db, table=name))


def uncache(spark: Any, db: str, name: str, mode: str) -> None:
    """mode: drop (the cached relation), forget (as Spark's refreshTable when data is
    cached), refresh (listed again in place)."""
    call(spark, "catalog.uncache", db=db, table=name, mode=mode)


def partitions(spark: Any, db: str, name: str, action: str, fields: str = "",
               parts: Iterable[str] = (), if_not_exists: bool = False) -> None:
    """create / alter partitions from PartitionRecords' fields, or drop `parts` (data kept)."""
    call(spark, "catalog.partitions", db=db, table=name, action=action, fields=fields,
         parts=list(parts), if_not_exists=if_not_exists)


def table_stats(spark: Any, db: str, name: str, params: Mapping[str, str],
                drop: List[str], drop_prefix: str) -> bool:
    """Hive's table statistics parameters set on the raw record; False when the catalog is
    not Hive's (the caller then says it by SQL)."""
    return bool(call(spark, "catalog.table_stats", db=db, table=name, params=dict(params),
                     drop=drop, drop_prefix=drop_prefix))
