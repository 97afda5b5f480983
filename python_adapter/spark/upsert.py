"""Algorithm 3 on Spark: upsert and insert by Hudi copy-on-write bin-packing.

Tag each incoming key with the file that holds it, plan per partition with
`binpack.plan_partition_write` (updates rewrite their file, inserts top up small files, the
rest go to new files), then write every planned output file ("slot") from exactly one
Spark task (`slot_write`). Files that receive nothing are neither read nor rewritten.
"""
import datetime
import decimal
import os
import threading
from dataclasses import dataclass
from typing import Optional, Tuple
from urllib.parse import unquote

from pyspark import inheritable_thread_target
from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from python_adapter.core.binpack import plan_partition_write, summarize
from python_adapter.core.config import ConfigError
from python_adapter.spark.local_table import local_table
from python_adapter.core.partitions import check_partition_texts, partition_path
from python_adapter.spark.session_conf import session_conf, shuffle_conf
from python_adapter.spark.slot_write import FIRST_ROW, SLOT, cached_size, write_slots
from python_adapter.spark.table_files import read_files, with_file_values

SEED = 4242
_ORDERABLE = (T.NumericType, T.StringType, T.DateType, T.TimestampType)


@dataclass(frozen=True)
class Slot:
    """One output file: a rewrite of an existing file, or a new file."""
    slot: int
    partition: str                 # partition path
    values: Tuple                  # partition values
    file: Optional[str]            # rel path of the file rewritten, None for a new file
    inserts: int
    updates: int = 0


def validate_keys(df, keys, precombine_column, pcols=()):
    """Null keys fail; duplicate keys fail unless a precombine column picks the latest.
    Returns (the rows to write, (min, max) of the first key column or (None, None) when it
    has no order, the set of partition values of the rows): one aggregation finds all of it."""
    null_cond = None
    for k in keys:
        cond = F.col(k).isNull()
        null_cond = cond if null_cond is None else null_cond | cond
    # partition values as Spark's writer names their directories (partitions.py)
    part = [F.collect_set(F.struct(*[F.col(c).cast("string") for c in pcols])).alias("__sized_parts")] \
        if pcols else []
    groups = df.groupBy(*keys).agg(F.count(F.lit(1)).alias("count"), *part)
    first = keys[0]
    orderable = isinstance(df.schema[first].dataType, _ORDERABLE)
    aggs = [F.sum(F.when(null_cond, 1).otherwise(0)),
            F.sum(F.when(F.col("count") > 1, 1).otherwise(0))]
    aggs += [F.min(first), F.max(first)] if orderable else [F.lit(None), F.lit(None)]
    if pcols:
        aggs.append(F.collect_set("__sized_parts"))  # few distinct sets: one per partition
    found = groups.agg(*aggs).first()
    if found[0]:
        raise ConfigError(f"unique_key: the new data has rows with a null {' / '.join(keys)}; "
                          f"a unique key must not be null")
    if found[1] and not precombine_column:
        dups = groups.where("count > 1").limit(3).collect()
        shown = ", ".join(str(tuple(r[:len(keys)]) if len(keys) > 1 else r[0]) for r in dups)
        raise ConfigError(
            f"unique_key: the new data holds the same key more than once (e.g. {shown}); "
            f"set precombine_column to the column whose largest value wins, or dedupe the model")
    key_range = (found[2], found[3])
    partitions = {tuple(p) for parts in found[4] for p in parts} if pcols else set()
    if precombine_column and found[1]:
        w = Window.partitionBy(*keys).orderBy(F.col(precombine_column).desc_nulls_last())
        df = (df.withColumn("__sized_rn", F.row_number().over(w))
                .where("__sized_rn = 1").drop("__sized_rn"))
    return df, key_range, partitions


def upsert_keys(cfg, columns):
    """The model's columns that make the unique key ([] unless the strategy is upsert)."""
    if cfg.incremental_strategy != "upsert":
        return []
    return [c for c in columns if c.lower() in {k.lower() for k in cfg.unique_key}]


class KeyCheck:
    """validate_keys of an upsert's new data, run in a background thread: its Spark job runs
    while the driver lists the table and reads its timeline. result() returns what
    validate_keys returns (without a key: the data as it is) or raises its error; wait()
    waits for the job without raising, so the data is not unpersisted under it."""

    def __init__(self, spark, df, cfg, pcols, progress):
        self.keys = upsert_keys(cfg, df.columns)
        self.batch_bytes = cached_size(df)  # the plan's estimate, no job
        self._done = threading.Event()
        self._result, self._error = (df, (None, None), set()), None
        if not self.keys:
            self._done.set()
            return
        progress("checking keys of the new data")
        settings = shuffle_conf(spark, self.batch_bytes)

        def run():
            try:
                with session_conf(spark, settings):
                    self._result = validate_keys(df, self.keys, cfg.precombine_column, pcols)
            except BaseException as exc:  # handed to the caller by result()
                self._error = exc
            finally:
                self._done.set()

        threading.Thread(target=inheritable_thread_target(run), name="sized-key-check",
                         daemon=True).start()

    def wait(self):
        self._done.wait()

    def result(self):
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._result


def _union(frames):
    """The union of some DataFrames of the same columns, None for none."""
    out = None
    for df in frames:
        out = df if out is None else out.unionByName(df)
    return out


def _slot_of_rows(spark, rows, columns):
    return F.broadcast(local_table(spark, columns, rows))


def encode_key(value):
    """A key statistic as text for the timeline: numbers 'n:<decimal>', others 's:<text>'."""
    if value is None:
        return ""
    if isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool):
        return f"n:{decimal.Decimal(value)}"
    if isinstance(value, (datetime.date, datetime.datetime)):
        return f"s:{value.isoformat()}"
    return f"s:{value}"


def _decode_key(text):
    if text.startswith("n:"):
        return ("n", decimal.Decimal(text[2:]))
    return ("s", text[2:])


def may_hold_keys(entry, lo, hi):
    """False only when the file's recorded key range cannot overlap [lo, hi]."""
    if entry is None or not entry.key_min or not entry.key_max or lo is None:
        return True
    fmin, fmax = _decode_key(entry.key_min), _decode_key(entry.key_max)
    blo, bhi = _decode_key(encode_key(lo)), _decode_key(encode_key(hi))
    if not (fmin[0] == fmax[0] == blo[0] == bhi[0]):
        return True
    return not (fmax[1] < blo[1] or fmin[1] > bhi[1])


def _unit_hash(columns):
    """A number in [0, 1) per row from its columns: which insert range a row falls in must
    not depend on evaluation order, since the rows are read by more than one Spark job."""
    return F.pmod(F.xxhash64(F.lit(SEED), *[F.col(c) for c in columns]), F.lit(1 << 30)) / float(1 << 30)


def _tag_columns(pcols):
    return ["__sized_file", "__sized_same", *[f"__sized_op{i}" for i in range(len(pcols))]]


def _tag(spark, location, table_schema, batch, keys, pcols, candidates):
    """The batch with, per row, the file holding its key among `candidates` (__sized_file,
    null when none), that file's partition values (__sized_op<i>) and whether the row stays
    in that partition (__sized_same)."""
    if not candidates:
        tagged = (batch.withColumn("__sized_file", F.lit(None).cast("string"))
                       .withColumn("__sized_same", F.lit(False)))
        for i, c in enumerate(pcols):
            tagged = tagged.withColumn(f"__sized_op{i}", F.col(c))
        return tagged
    key_names = [f"__sized_k{i}" for i in range(len(keys))]
    existing = read_files(spark, location, table_schema, candidates).select(
        *[F.col(k).alias(key_names[i]) for i, k in enumerate(keys)],
        *[F.col(c).alias(f"__sized_op{i}") for i, c in enumerate(pcols)],
        F.col("_metadata.file_path").alias("__sized_file"))
    # Keep only the table's rows whose key comes in before the outer join: the batch's
    # keys are small next to the table, so this streams the table past them once.
    existing = existing.join(
        batch.select(*[F.col(k).alias(key_names[i]) for i, k in enumerate(keys)]),
        key_names, "left_semi")
    cond = None
    for i, k in enumerate(keys):
        c = batch[k] == existing[key_names[i]]
        cond = c if cond is None else cond & c
    tagged = batch.join(existing, cond, "left").drop(*key_names)
    same = F.lit(True)
    for i, c in enumerate(pcols):
        same = same & F.col(c).eqNullSafe(F.col(f"__sized_op{i}"))
    return tagged.withColumn("__sized_same", F.col("__sized_file").isNotNull() & same)


def _tag_the_unfound(spark, location, table_schema, tagged, stats, keys, pcols, rest, progress,
                     batch_bytes):
    """Second tagging pass: the keys no file of their own partition held, against the other
    files whose key range may hold them. Returns the (persisted) tagged rows and their stats."""
    unfound = [r for r in stats if r["__sized_file"] is None]
    lows = [r["__sized_kmin"] for r in unfound if r["__sized_kmin"] is not None]
    highs = [r["__sized_kmax"] for r in unfound if r["__sized_kmax"] is not None]
    lo, hi = (min(lows), max(highs)) if lows and len(lows) == len(unfound) else (None, None)
    second = [f for f in rest if may_hold_keys(f, lo, hi)] if unfound else []
    progress(f"{sum(r['count'] for r in unfound)} keys not in their partitions' files: "
             f"looking in {len(second)} of the other {len(rest)} files")
    if not second:
        return tagged, stats
    found = tagged.where("__sized_file is not null")
    untagged = tagged.where("__sized_file is null").drop(*_tag_columns(pcols))
    tag_conf = shuffle_conf(spark, batch_bytes + sum(f.bytes for f in second))
    with session_conf(spark, tag_conf):  # before persist(), which plans the join
        retagged = found.unionByName(
            _tag(spark, location, table_schema, untagged, keys, pcols, [f.path for f in second])
        ).persist()
    try:
        with session_conf(spark, tag_conf):
            stats = _tag_stats(retagged, pcols, keys)  # also fills retagged's cache from tagged's
    except BaseException:
        retagged.unpersist()
        raise
    tagged.unpersist()
    return retagged, stats


def _tag_stats(tagged, pcols, keys):
    """What goes where, in one aggregation: rows per (new partition, old partition, file,
    stays, deleted), with the key range of each group (to look for unfound keys). Partition
    values come as the texts Spark's writer names their directories by."""
    aggs = [F.count(F.lit(1)).alias("count")]
    orderable = keys and isinstance(tagged.schema[keys[0]].dataType, _ORDERABLE)
    aggs += [F.min(keys[0]).alias("__sized_kmin"), F.max(keys[0]).alias("__sized_kmax")] \
        if orderable else [F.lit(None).alias("__sized_kmin"), F.lit(None).alias("__sized_kmax")]
    texts = [F.col(c).cast("string").alias(c) for c in pcols] + \
        [F.col(f"__sized_op{i}").cast("string").alias(f"__sized_op{i}") for i in range(len(pcols))]
    return tagged.groupBy(*texts, "__sized_file", "__sized_same", "__sized_del").agg(*aggs).collect()


def stage_upsert(spark, location, table_name, key_check, cfg, pcols, data_cols, bytes_per_row,
                 staging, progress, current_files, excluded=()):
    """Write the upsert/insert output files to `staging`; returns (removed rel paths, summary).
    key_check: the KeyCheck started on the new data; current_files: FileEntry of every data
    file of the table now, with the key ranges the timeline recorded."""
    keys = key_check.keys
    delete_flag = F.coalesce(F.col(cfg.delete_column).cast("boolean"), F.lit(False)) \
        if cfg.delete_column else F.lit(False)

    table_schema = spark.table(table_name).schema
    current = {}
    for f in current_files:
        current.setdefault(f.partition, []).append((f.path, f.bytes))
    have_files = bool(current)

    batch_bytes = key_check.batch_bytes
    batch, (lo, hi), batch_parts = key_check.result()
    batch = batch.withColumn("__sized_del", delete_flag)

    # -- tag: which existing file holds each incoming key ------------------------------
    # First in the batch's own partitions, the files whose recorded key range may hold its
    # keys. Keys are unique across the table, so with index_scope 'global' a key not found
    # there is then looked for in every other file whose key range may hold the keys still
    # unfound: for keys that grow with time (new keys above every file's range) that is no
    # file at all. With 'partition' keys never change partition and the first pass is all.
    total_files = len(current_files)
    first_pass, rest = [], []
    if keys and have_files:
        touched = {partition_path(pcols, p) for p in batch_parts} if pcols else None
        for f in current_files:
            (first_pass if touched is None or f.partition in touched else rest).append(f)
        first_pass = [f for f in first_pass if may_hold_keys(f, lo, hi)]
        progress(f"tagging incoming keys against {len(first_pass)} of {total_files} files "
                 f"(the batch's partitions; index scope {cfg.index_scope})")
    # persist() plans the join at once: the settings must be in place before it
    tag_conf = shuffle_conf(spark, batch_bytes + sum(f.bytes for f in first_pass))
    with session_conf(spark, tag_conf):
        tagged = _tag(spark, location, table_schema, batch, keys, pcols,
                      [f.path for f in first_pass]).persist()
    try:
        with session_conf(spark, tag_conf):
            stats = _tag_stats(tagged, pcols, keys)  # runs the join, fills the cache
        if keys and rest and cfg.index_scope == "global":
            tagged, stats = _tag_the_unfound(spark, location, table_schema, tagged, stats, keys,
                                             pcols, rest, progress, batch_bytes)

        # -- count what goes where ---------------------------------------------------------
        n = len(pcols)
        check_partition_texts(pcols, (tuple(r[:n]) for r in stats))
        values_of = {}                 # partition path -> partition values (texts)
        updates_by_file = {}           # rel path -> rows replaced or removed in it
        inserts_by_part = {}           # partition path -> rows to insert
        spark_path_of = {}             # rel path -> the path string Spark reports
        for r in stats:
            new_vals, old_vals = tuple(r[:n]), tuple(r[n:2 * n])
            file_uri, same, deleted, count = (r["__sized_file"], r["__sized_same"],
                                              r["__sized_del"], r["count"])
            if file_uri is not None:
                rel = unquote(file_uri)[len(unquote(location)):].lstrip("/")
                spark_path_of[rel] = file_uri
                updates_by_file[rel] = updates_by_file.get(rel, 0) + count
                values_of.setdefault(os.path.dirname(rel), old_vals)
                if same or deleted:
                    continue
            if deleted:
                continue
            part = partition_path(pcols, new_vals)
            values_of.setdefault(part, new_vals)
            inserts_by_part[part] = inserts_by_part.get(part, 0) + count

        # -- plan per partition (pure) -----------------------------------------------------
        plans = {}
        for part in sorted(set(inserts_by_part) | {os.path.dirname(f) for f in updates_by_file}):
            files = current.get(part, [])
            upd = {f: c for f, c in updates_by_file.items() if os.path.dirname(f) == part}
            plans[part] = plan_partition_write(
                files, upd, inserts_by_part.get(part, 0), bytes_per_row, cfg.target_file_size,
                cfg.small_file_limit, cfg.insert_split_size, excluded=excluded)
        summary = summarize(plans)
        progress(f"plan: {summary['files_rewritten']} files rewritten, {summary['new_files']} new "
                 f"files, {summary['inserts_into_existing']} inserts packed into small files, "
                 f"{summary['inserts_into_new']} into new files, {summary['updates']} rows "
                 f"updated or deleted")

        slots = []
        for part, plan in plans.items():
            for rw in plan.rewrites:
                slots.append(Slot(len(slots), part, values_of[part], rw.file_id, rw.inserts, rw.updates))
            for count in plan.new_files:
                slots.append(Slot(len(slots), part, values_of[part], None, count))
        if not slots:
            return [], summary

        # -- the output rows, each with its slot, written one task per slot -------------
        columns = [*data_cols, *pcols]
        rewrites = [s for s in slots if s.file]
        old = keys_df = None
        bound, fresh = [], []  # batch rows bound for rewritten files / for new files
        if rewrites:
            # Old rows of the rewritten files only: the file list prunes every other file
            # before it is opened.
            files = read_files(spark, location, table_schema, [s.file for s in rewrites])
            files = files.withColumn(FIRST_ROW, F.col("_metadata.row_index") == 0)
            old = with_file_values(spark, files, pcols, {s.file: s.slot for s in rewrites},
                                   SLOT).select(*columns, SLOT, FIRST_ROW)
            if keys:  # every incoming key replaces (or deletes) its old row, wherever it was
                keys_df = batch.select(*keys)
            updated = [(spark_path_of[s.file], s.slot) for s in rewrites if s.file in spark_path_of]
            if updated:
                upd_map = _slot_of_rows(spark, updated, [("__sized_file", "string"), (SLOT, "bigint")])
                updates = tagged.where("__sized_same and not __sized_del").join(upd_map, "__sized_file")
                bound.append(updates.select(*columns, SLOT))

        # Inserts: per partition, each slot takes a range of a hash of the key; one table of
        # ranges for the slots that rewrite a file and one for new files, each joined once.
        ranges = {True: [], False: []}
        for part in plans:
            total = inserts_by_part.get(part, 0)
            done = 0
            for s in slots:
                if s.partition == part and s.inserts:
                    ranges[s.file is not None].append(
                        s.values + (done / total, (done + s.inserts) / total, s.slot))
                    done += s.inserts
        if ranges[True] or ranges[False]:
            ins = tagged.where("not __sized_del and not __sized_same").withColumn(
                "__sized_u", _unit_hash(keys or columns))
            range_columns = [
                *[(f"__sized_p{i}", "string") for i in range(len(pcols))],
                ("__sized_lo", "double"), ("__sized_hi", "double"), (SLOT, "bigint")]
            for to_rewrite, rows in ranges.items():
                if not rows:
                    continue
                imap = _slot_of_rows(spark, rows, range_columns)
                cond = (ins["__sized_u"] >= imap["__sized_lo"]) & (ins["__sized_u"] < imap["__sized_hi"])
                for i, col in enumerate(pcols):
                    cond = cond & ins[col].cast("string").eqNullSafe(imap[f"__sized_p{i}"])
                (bound if to_rewrite else fresh).append(ins.join(imap, cond).select(*columns, SLOT))

        entry = {f.path: f for f in current_files}
        weights = {s.slot: (s.partition, (entry[s.file].bytes if s.file else 0)
                            + (s.inserts + s.updates) * bytes_per_row) for s in slots}
        write_slots(spark, old, keys_df, _union(bound), _union(fresh), columns, pcols, weights,
                    rewrite_slots={s.slot for s in rewrites}, batch_bytes=cached_size(tagged),
                    rows_unknown=any(entry[s.file].rows <= 0 for s in rewrites),
                    largest_file=max((entry[s.file].bytes for s in rewrites), default=0),
                    staging=staging, progress=progress)
        return [s.file for s in rewrites], summary
    finally:
        tagged.unpersist()
