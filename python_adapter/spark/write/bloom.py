"""The bloom index: Parquet's own Bloom filters on the key column, for keys with no order.

Min/max ranges rule files out only for keys that grow with time; for uuids and hashes every
file's range covers the whole domain, and tagging would read every file of the touched
partitions (with `index_scope: global`, of the whole table). With `index_type: bloom` every
file the adapter writes carries a Parquet Bloom filter of the first unique_key column (made
by Spark's own Parquet writer, so DuckDB, Trino and Spark use it for point lookups too), and
tagging probes the candidate files' filters with the batch's keys before it reads a row of
them (`sizedspark.fs.BloomProbe`, in the jar of fast_local_fs): Hudi's bloom index.

The probe runs in the driver's JVM; where the jar is not loaded (a cluster's driver) every
candidate is read, as with `index_type: range`.
"""
import math
from typing import Dict, List, Optional, Sequence, Tuple

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from python_adapter.core.config import SizedConfig
from python_adapter.core.partitions import parse_partition_path
from python_adapter.io.fast_local_fs import encode_fields
from python_adapter.io.footers import bloom_probe, bloom_probe_usable
from python_adapter.spark.job import resolve_names
from python_adapter.spark.local_table import local_table
from python_adapter.table.timeline import FileEntry, Instant

# False positives per probed file are 1 - (1 - FPP)^keys: at 1e-6 a batch of 10,000 keys
# reads 1% of the files that hold none of them, for 5-6 bytes of filter per row of a full
# file (Parquet rounds a filter up to a power of two).
BLOOM_FPP = 1e-6
# Parquet caps a filter at 1 MB by default, which a 128 MB file of short rows outgrows (and
# a capped filter answers "maybe" far more often); this cap is only a guard.
_MAX_BYTES = 1 << 27
BLOOM_KEY = "bloom_filter"   # instant extra: the key column the write's files filter on


def write_options(key_column: Optional[str], target_bytes: int,
                  bytes_per_row: Optional[float]) -> Dict[str, str]:
    """Parquet writer options for a Bloom filter on key_column in files of target_bytes
    (none without a column), sized for the rows of a full file (Parquet rounds the size up
    to a power of two). Tried and dropped: Parquet's adaptive filter (1.14+), which sizes
    each file's filter to its keys: it hashes every key into up to 10 candidate filters
    (writes ~25% slower) and keeps the smallest that holds the keys at the nominal rate,
    which read 2.4x the files holding a key where this reads 1.1-1.2x."""
    if not key_column:
        return {}
    rows = math.ceil(target_bytes / max(bytes_per_row or 1.0, 1.0))
    return {f"parquet.bloom.filter.enabled#{key_column}": "true",
            f"parquet.bloom.filter.expected.ndv#{key_column}": str(max(rows, 100)),
            f"parquet.bloom.filter.fpp#{key_column}": repr(BLOOM_FPP),
            "parquet.bloom.filter.max.bytes": str(_MAX_BYTES)}


def bloom_key(cfg: SizedConfig, columns: Sequence[str]) -> Optional[str]:
    """The model's column its files carry a Bloom filter of: the first unique_key column
    with index_type 'bloom', else None."""
    if cfg.index_type != "bloom" or not cfg.unique_key:
        return None
    return resolve_names(cfg.unique_key[:1], columns)[0]


def recorded_key(instants: Sequence[Instant]) -> Optional[str]:
    """The key column the table's last write filtered its files on (None: no Bloom filter),
    so that compaction and clustering write the filters the model's writes do."""
    for inst in reversed(instants):
        if inst.state == "completed" and BLOOM_KEY in inst.extra:
            return inst.extra[BLOOM_KEY] or None
    return None


ANY = -1   # BloomProbe's group of the files probed with every key of the batch


class BloomIndex:
    """Rules files out for a batch's keys by the files' Bloom filters."""

    def __init__(self, spark: SparkSession, location: str, key: str,
                 pcols: Sequence[str]) -> None:
        self.spark, self.location, self.key, self.pcols = spark, location.rstrip("/"), key, pcols
        self.usable = bloom_probe_usable(spark)

    def probe(self, batch: DataFrame, own: List[FileEntry], others: List[FileEntry]
              ) -> Optional[Tuple[str, str]]:
        """BloomProbe's answers ('0' ruled out, '1' may hold, '2' cannot tell) for `own`,
        each file probed with the keys of the batch's rows of its partition, and for
        `others`, each probed with every key of the batch; None when no probe ran. One Spark
        job collects the keys (into the JVM), one call probes every file."""
        files = own + others
        if not files or not self.usable:
            return None
        ids = {p: i for i, p in enumerate(sorted({f.partition for f in own}))}
        groups = [ids[f.partition] for f in own] + [ANY] * len(others)
        answer = self._probe(self._keyed(batch, ids), files, groups)
        return None if answer is None else (answer[:len(own)], answer[len(own):])

    def _keyed(self, batch: DataFrame, ids: Dict[str, int]) -> DataFrame:
        """(group, key) of the batch's rows: the id of the row's partition among `ids`
        (-2, no file's group, for a partition without files)."""
        if not self.pcols:
            return batch.select(F.lit(0).alias("__sized_g"), self.key)
        rows = [tuple(t for _c, t in parse_partition_path(p)) + (i,) for p, i in ids.items()]
        if not rows:
            return batch.select(F.lit(-2).alias("__sized_g"), self.key)
        table = F.broadcast(local_table(self.spark, [*[(f"__sized_p{i}", "string")
                                                      for i in range(len(self.pcols))],
                                                    ("__sized_g", "int")], rows))
        cond = None
        for i, c in enumerate(self.pcols):
            term = batch[c].cast("string").eqNullSafe(table[f"__sized_p{i}"])
            cond = term if cond is None else cond & term
        return batch.join(table, cond, "left").select(
            F.coalesce(F.col("__sized_g"), F.lit(-2)).alias("__sized_g"), self.key)

    def _probe(self, keyed, files, groups) -> Optional[str]:
        text = encode_fields([v for f, g in zip(files, groups)
                              for v in (f"{self.location}/{f.path}", str(g))])
        answer = bloom_probe(self.spark, keyed, text, self.key)
        return answer if answer is not None and len(answer) == len(files) else None
