"""The generated rows: backfill.py's events over daily partitions (daily_events), the names
of the tables and views they are read from, and upsert.py's incremental batches (BatchOptions,
batch_plan, batch_rows)."""
import math
import random
from dataclasses import dataclass, field, fields
from datetime import date, timedelta

SCHEMA = "bench"
SOURCE = f"{SCHEMA}.source"          # the input, materialized once as a Parquet table ...
SOURCE_VIEW = "backfill_source"      # ... and read by every method from this in-memory copy
BATCHES = f"{SCHEMA}.upsert_batches"      # every batch, partitioned by batch
START = date(2025, 1, 1)
DAYS = 365
MONTHLY_GROWTH = 0.10
SEED = 20251122
DATA_COLS = ["event_id", "user_id", "session_id", "event_type", "amount", "payload"]
COLS = ", ".join(DATA_COLS + ["event_date"])
FIRST_NEW_DAY = START + timedelta(days=DAYS)     # 2026-01-01: batch b adds day FIRST_NEW_DAY + b - 1


def daily_events(spark, rows, partitions, seed=SEED, days=DAYS, start=START):
    """`days` daily dates from `start` (365 from 2025-01-01), volume growing MONTHLY_GROWTH per
    month over a year (continuous in the day; with other `days` the same growth over the span),
    dates in random order over the rows (a backfill's input arrives shuffled), ~100 B/row."""
    from pyspark.sql import functions as F

    g = (1 + MONTHLY_GROWTH) ** (12 / days)  # growth per day
    u = F.rand(seed)
    # inverse CDF of a density proportional to g**t on [0, DAYS)
    t = F.log(F.lit(1.0) + u * F.lit(g ** days - 1)) / F.lit(math.log(g))
    day = F.least(F.floor(t), F.lit(days - 1)).cast("int")
    types = F.array(*[F.lit(x) for x in ("view", "click", "search", "add_to_cart", "purchase",
                                          "login", "logout", "share")])
    return (
        spark.range(0, rows, 1, partitions)
        .withColumn("event_date", F.date_add(F.lit(start.isoformat()).cast("date"), day))
        .withColumn("user_id", F.pmod(F.xxhash64("id", F.lit(1)), F.lit(1_000_000)))
        .withColumn("session_id", F.substring(
            F.md5(F.concat_ws("/", F.col("user_id").cast("string"),
                              F.floor(F.col("id") / 16).cast("string"))), 1, 20))
        .withColumn("event_type", F.element_at(types, (F.pmod(F.xxhash64("id", F.lit(2)),
                                                              F.lit(8)) + 1).cast("int")))
        .withColumn("amount", F.round(F.rand(seed + 1) * 500, 2))
        .withColumn("payload", F.substring(F.sha2(F.col("id").cast("string"), 256), 1, 40))
        .select(F.col("id").alias("event_id"), "user_id", "session_id", "event_type", "amount",
                "payload", "event_date")
    )


# ----------------------------------------------------------------------------------------
# upsert.py's batches (scale.py builds its batches the same way)
# ----------------------------------------------------------------------------------------
def _option(default, help_text=None):
    return field(default=default, metadata={"help": help_text})


@dataclass
class BatchOptions:
    """The shape of the incremental batches: upsert.py's command-line options (in the order
    of its --help), their defaults and help texts."""
    batches: int = _option(20)
    new_frac: float = _option(0.02, "new rows per batch, as a share of --rows (0.02)")
    new_day_share: float = _option(
        0.5, "share of the new rows on the batch's new day; the rest are late arrivals spread "
             "over the --recent-days days before it (0.5)")
    recent_days: int = _option(7)
    update_frac: float = _option(0.01, "updated rows per batch, as a share of --rows (0.01)")
    update_days: int = _option(
        30, "older days the updates of a batch are spread over, chosen at random per batch; "
            "0 = all older days (30)")
    batch_files: int = _option(2, "Parquet files (= input sPartitions) of each batch (2)")

    @classmethod
    def add_arguments(cls, parser):
        """--batches, --new-frac, ... --batch-files: one option per field."""
        for f in fields(cls):
            parser.add_argument("--" + f.name.replace("_", "-"), type=f.type, default=f.default,
                                help=f.metadata["help"])

    @classmethod
    def from_args(cls, args):
        return cls(**{f.name: getattr(args, f.name) for f in fields(cls)})


def batch_plan(shape, base_rows, base_dates):
    """Pure description of every batch: new day, recent window, update days, row counts."""
    n_new = round(shape.new_frac * base_rows)
    n_upd = round(shape.update_frac * base_rows)
    plans = []
    for b in range(1, shape.batches + 1):
        new_day = FIRST_NEW_DAY + timedelta(days=b - 1)
        recent = [new_day - timedelta(days=d) for d in range(shape.recent_days, 0, -1)]
        older = [d for d in base_dates if d < recent[0]]
        if shape.update_days and shape.update_days < len(older):
            days = sorted(random.Random(SEED + b).sample(older, shape.update_days))
        else:
            days = older
        plans.append({"batch": b, "new_day": new_day, "recent": recent, "update_days": days,
                      "n_new": n_new, "n_upd": n_upd,
                      "first_id": base_rows + (b - 1) * n_new})
    return plans


def batch_rows(spark, shape, plans, base_rows, rows_by_date, input_partitions):
    """Every batch's rows, with a column `batch`. New rows: daily_events continued past the
    backfill's ids, with their dates set here (shape.new_day_share on the batch's new day, the
    rest over the shape.recent_days before it). Updates: rows of the backfill (SOURCE) in the
    batch's update days, sampled (about n_upd), with a new amount and event_type, same key
    and partition."""
    from pyspark.sql import functions as F

    total = base_rows + sum(p["n_new"] for p in plans)
    n_new = plans[0]["n_new"]
    # The generator's rows for ids >= base_rows (ids < base_rows are the backfill itself).
    batch = (F.floor((F.col("event_id") - F.lit(base_rows)) / F.lit(n_new)) + 1).cast("int")
    new_day = F.date_add(F.lit(FIRST_NEW_DAY.isoformat()).cast("date"), F.col("batch") - 1)
    late = F.date_sub(new_day, (F.floor(F.rand(SEED + 100) * shape.recent_days) + 1).cast("int"))
    new = (daily_events(spark, total, input_partitions).where(F.col("event_id") >= base_rows)
           .withColumn("batch", batch)
           .withColumn("event_date", F.when(F.rand(SEED + 200) < shape.new_day_share, new_day)
                       .otherwise(late)))
    # Updates: one (batch, day, sampling fraction) row per update day of each batch.
    picks = []
    for p in plans:
        in_days = sum(rows_by_date[d] for d in p["update_days"])
        for d in p["update_days"]:
            picks.append((p["batch"], d, min(1.0, p["n_upd"] / max(in_days, 1))))
    picks = spark.createDataFrame(picks, "batch int, event_date date, fraction double")
    types = F.array(*[F.lit(x) for x in ("refund", "purchase", "chargeback")])
    # uniform draws from the key, not rand(): rand follows the rows' order in their
    # sPartitions, which follows the order the source's files are listed in (their names
    # hold a job's uuid), so every process (benchmarks/peers.py runs one a method) would
    # sample other updates
    upd = (spark.table(SOURCE).join(F.broadcast(picks), "event_date")
           .where(_uniform(SEED + 300) < F.col("fraction"))
           .withColumn("amount", F.round(_uniform(SEED + 500) * 500, 2))
           .withColumn("event_type",
                       F.element_at(types, (F.floor(_uniform(SEED + 600) * 3) + 1).cast("int"))))
    cols = [*DATA_COLS, "event_date", "batch"]
    return new.select(*cols).unionByName(upd.select(*cols))


def _uniform(seed):
    """A draw in [0, 1) from the row's key and its batch: the same in every process."""
    from pyspark.sql import functions as F

    return F.pmod(F.xxhash64("event_id", "batch", F.lit(seed)), F.lit(1_000_003)) / F.lit(1_000_003.0)
