"""Small batches: rows that Spark estimates at a few megabytes are written by one task, one
file per partition, with no count, no bytes-per-row sample and no shuffle. The ideal layout
of a batch below the target is one file per partition, and for a 1,000-row model the count,
the plan and the routing of a planned write cost more than the write (benchmarks/startup.py).

The estimate is the optimizer's (sizeInBytes of the optimized plan), which runs high for
scans, filters and joins; a plan that can make more rows than it reads (a generator such as
explode) is not trusted, and goes the planned way. The files are checked after the write:
one above the target sends the batch the planned way after all, so the layout rules hold
whatever the estimate said. What the planned write's count checks on the way (not_null
columns, partition values that read back as NULL) is checked on the staged files instead,
before anything reaches the table."""
import re
from typing import List, Optional

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from python_adapter.core.partitions import parse_partition_path
from python_adapter.core.planning import is_small_batch
from python_adapter.core.sizes import format_size
from python_adapter.spark.bloom import bloom_key, write_options
from python_adapter.spark.constraints import check_not_null_rows, refuse_null_like_partitions
from python_adapter.spark.job import WriteJob, Written, resolve_names
from python_adapter.spark.staging import known_bytes_per_row, staged_entries
from python_adapter.table.timeline import FileEntry

# A generator node in a plan's tree string (explode, posexplode, inline, stack, a UDTF).
_GENERATE = re.compile(r"(?m)^[\s:+\-]*Generate\b")


def estimated_bytes(df: DataFrame) -> int:
    """The optimizer's estimate of df's size in bytes."""
    size = df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()
    return int(size if isinstance(size, int) else size.toString())  # a scala BigInt


def makes_rows(df: DataFrame) -> bool:
    """Whether df's plan may make more rows than it reads, beyond what its estimate counts."""
    return bool(_GENERATE.search(df._jdf.queryExecution().optimizedPlan().toString()))


def write_small_batch(job: WriteJob, df: DataFrame, staging: str) -> Optional[Written]:
    """Write df to staging with one task when it is a small batch: Written, or None when it
    is not one (nothing written: the caller plans the write)."""
    cfg = job.cfg
    key = bloom_key(cfg, df.columns)
    known_bpr, _source = known_bytes_per_row(job)
    if key and known_bpr is None:
        return None  # its Bloom filter is sized for a full file's rows: plan it
    estimate = estimated_bytes(df)
    if not is_small_batch(estimate, cfg) or makes_rows(df):
        return None
    target = cfg.target_file_size
    job.progress(f"small batch (Spark estimates {format_size(estimate, target)}): "
                 f"one task writes each partition's file")
    (df.coalesce(1).write.partitionBy(*job.pcols).options(**write_options(key, target, known_bpr))
     .mode("overwrite").parquet(staging))
    key_col = resolve_names(cfg.unique_key[:1], df.columns)[0] if cfg.unique_key else None
    added = [a for a in staged_entries(job.spark, job.fs, staging, key_col) if a.rows != 0]
    if any(a.bytes > target for a in added):
        job.progress("a file came out above the target: planning the batch")
        job.fs.delete(staging)
        return None
    _check_staged(job, df, staging, added)
    job.progress(f"wrote {len(added)} files, {format_size(sum(a.bytes for a in added), target)}")
    rows = sum(a.rows for a in added)
    bpr = sum(a.bytes for a in added) / rows if rows > 0 else None
    return Written(added, len(added), bpr)


def _check_staged(job: WriteJob, df: DataFrame, staging: str, added: List[FileEntry]) -> None:
    """The checks a planned write makes in its count: no null in a not_null column (read
    from the staged files), no partition value '' or '__HIVE_DEFAULT_PARTITION__' (they
    share NULL's directory, so only a staged NULL partition sends back to the rows)."""
    not_null = resolve_names(job.cfg.not_null_columns, df.columns)
    if not_null and added:
        pset = {c.lower() for c in job.pcols}
        # partition columns as the directory's text: no type is inferred from it
        schema = T.StructType([f for f in df.schema.fields if f.name.lower() not in pset] +
                              [T.StructField(c, T.StringType()) for c in job.pcols])
        check_not_null_rows(job.spark.read.schema(schema).parquet(staging), not_null)
    if any(text is None for a in added for _c, text in parse_partition_path(a.partition)):
        refuse_null_like_partitions(df, job.pcols)
