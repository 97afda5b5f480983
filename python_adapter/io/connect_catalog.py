"""The metastore calls of spark/catalog/tables.py and stats.py over `method: connect`: the
same external-catalog calls as SessionCatalog's (session_catalog.py), made by the Connect
server's extension (CatalogOps.java) in the server's session."""
import json
from typing import Any, Iterable, List, Mapping, Optional, Sequence, Set

from pyspark.sql import types as T

from python_adapter.io.connect_client import call
from python_adapter.io.session_catalog import PartitionRow, encode_rows


class ConnectCatalog:
    """The metastore of a Connect server's session; SessionCatalog's methods, one call each."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark

    def describe(self, db: str, name: str) -> Optional[dict]:
        got = call(self.spark, "catalog.describe", db=db, table=name)
        if got is not None:
            got["schema"] = T.StructType.fromJson(json.loads(got["schema"]))
        return got

    def database_location(self, db: str) -> str:
        return call(self.spark, "catalog.db_location", db=db)

    def set_table_type(self, db: str, name: str, external: bool) -> bool:
        return bool(call(self.spark, "catalog.set_type", db=db, table=name, external=external))

    def table_property(self, db: str, name: str, key: str) -> Optional[str]:
        return call(self.spark, "catalog.property", db=db, table=name, key=key)

    def set_data_schema(self, db: str, name: str, schema: T.StructType) -> None:
        call(self.spark, "catalog.set_data_schema", db=db, table=name, schema=schema.json())

    def partition_names(self, db: str, name: str) -> Set[str]:
        return set(call(self.spark, "catalog.partition_names", db=db, table=name))

    def uncache(self, db: str, name: str, mode: str) -> None:
        call(self.spark, "catalog.uncache", db=db, table=name, mode=mode)

    def create_partitions(self, db: str, name: str, rows: Sequence[PartitionRow],
                          if_not_exists: bool) -> None:
        self._partitions(db, name, "create", fields=encode_rows(rows),
                         if_not_exists=if_not_exists)

    def alter_partitions(self, db: str, name: str, rows: Sequence[PartitionRow]) -> None:
        self._partitions(db, name, "alter", fields=encode_rows(rows))

    def drop_partitions(self, db: str, name: str, parts: Iterable[str]) -> None:
        self._partitions(db, name, "drop", parts=list(parts))

    def table_stats(self, db: str, name: str, params: Mapping[str, str], drop: List[str],
                    drop_prefix: str) -> bool:
        return bool(call(self.spark, "catalog.table_stats", db=db, table=name,
                         params=dict(params), drop=drop, drop_prefix=drop_prefix))

    def _partitions(self, db: str, name: str, action: str, **args: Any) -> None:
        call(self.spark, "catalog.partitions", db=db, table=name, action=action,
             **{"fields": "", "parts": [], "if_not_exists": False, **args})

