"""Spark session settings changed for the duration of one read or write."""
import threading
from contextlib import contextmanager
from typing import Any, Dict, Iterator, Mapping, Tuple, cast

from pyspark.sql import SparkSession

from python_adapter.io.session_info import conf_bytes, session_copy
from python_adapter.spark.catalog.tables import TableRef, drop_cached_relation


_lock = threading.Lock()
# (session, key) -> [blocks holding it, value before the first]
_held: Dict[Tuple[int, str], list] = {}
# id of a session writes run on (own_session) -> [the writes on it, {key raised: value
# before} on the caller's own session (over Connect), None on a copy]
_own: Dict[int, list] = {}


@contextmanager
def session_conf(spark: SparkSession, settings: Mapping[str, Any]) -> Iterator[None]:
    """Set {key: value} on the session; on exit restore each key's earlier value (or unset
    it). Each write runs on its own session (own_session), but its threads share it (the
    key check runs beside the listing), so this is for settings that change speed, not
    results; blocks that overlap in time restore the value from before the first of them,
    once the last one ends (not one another's values)."""
    keys = [(id(spark), k) for k in settings]
    with _lock:
        for (sid, k), v in zip(keys, settings.values()):
            if (sid, k) not in _held:
                _held[(sid, k)] = [0, spark.conf.get(k, None)]
            _held[(sid, k)][0] += 1
            spark.conf.set(k, str(v))
    try:
        yield
    finally:
        with _lock:
            for sid, k in keys:
                held = _held[(sid, k)]
                held[0] -= 1
                if held[0] == 0:
                    del _held[(sid, k)]
                    if held[1] is None:
                        spark.conf.unset(k)
                    else:
                        spark.conf.set(k, held[1])


def shuffle_conf(spark: SparkSession, nbytes: int) -> Dict[str, Any]:
    """Settings for a query over about `nbytes` (Spark's estimate of its input): one shuffle
    partition per advisory partition size, the size AQE coalesces to, at least 1 and at most
    the session's spark.sql.shuffle.partitions. AQE would coalesce a small batch's 200
    partitions to one anyway, but only after every map task has written all 200 (a small
    batch's key check took about twice as long, measured when this was chosen). A
    query that fits one partition also runs without AQE, as one job instead of one per
    stage: there is nothing left for AQE to coalesce, split or switch to a broadcast."""
    # Spark has a default for it: never None
    current = int(cast(str, spark.conf.get("spark.sql.shuffle.partitions")))
    per = conf_bytes(spark, "spark.sql.adaptive.advisoryPartitionSizeInBytes", "64MB")
    n = max(1, min(current, -(-int(nbytes) // max(per, 1))))
    settings: Dict[str, Any] = {"spark.sql.shuffle.partitions": n}
    if n == 1:
        settings["spark.sql.adaptive.enabled"] = "false"
    return settings


# Columns from which a model's query counts as wide: Spark's constraint propagation
# (InferFiltersFromConstraints) infers equalities between aliases of the same expression and
# grows faster than their square; over a model whose columns repeat expressions the write's
# joins and filters made it the whole cost: a 50-row full build of 1,000 such columns took
# 95 s with it, 14 s without; of 2,000, over 16 minutes in the optimizer, 19 s without
# (benchmarks/wide.py --source query, issue 46). Below this, the filters it infers (pushed
# through a model's joins, partition pruning) are worth keeping.
WIDE_COLUMNS = 500


def wide_plan_conf(columns: int) -> Dict[str, Any]:
    """Settings for the queries of a write of a model with `columns` columns: constraint
    propagation off when the model is wide. It infers filters only, so results are the same."""
    if columns < WIDE_COLUMNS:
        return {}
    return {"spark.sql.constraintPropagation.enabled": "false"}


@contextmanager
def own_session(spark: SparkSession, schema: str, table: str) -> Iterator[SparkSession]:
    """The session one model's write to schema.table runs on. With a JVM here: a copy of the
    session, its settings, temporary views and functions copied, the SparkContext, catalog
    and cache shared. dbt threads build models at once on one session; settings a write
    makes for its own queries (shuffle partitions, AQE, split sizes) then stay on its copy
    and never reach another model's queries. Each session keeps its own cache of table
    relations (their file listings), so on exit, written or failed, the caller's cached
    relation of the table is dropped: dbt's next query on it (a test after the model) lists
    its files again instead of opening files the write replaced.

    Over Spark Connect the write runs on the caller's session itself. A server-side clone
    (pyspark 4.1's cloneSession) gets a class loader of its own, so each write's generated
    code was compiled again and ran unwarmed by the JIT: the same jobs took 30-80% more CPU
    (benchmarks/connect.py, upsert batches 1.4-1.6x session's). Its settings are put back by
    session_conf as each block ends, and what raise_on_own_session raised once the last
    write on the session ends; they change speed, not results (session_conf), so a model
    running beside a write on another dbt thread at most runs with its settings."""
    copy = session_copy(spark)
    shared = copy is None
    own = cast(SparkSession, spark if shared else copy)  # shared: copy is None
    with _lock:  # a copy is dropped after the write: nothing to put back on it
        _own.setdefault(id(own), [0, {} if shared else None])[0] += 1
    try:
        yield own
    finally:
        _release(own)
        drop_cached_relation(spark, TableRef(schema, table))


def raise_on_own_session(spark: SparkSession, key: str, value: int) -> bool:
    """Raise an integer setting to at least `value` on a session a write runs on
    (own_session), until the last write on it ends. False, and nothing set, on any other
    session."""
    with _lock:
        held = _own.get(id(spark))
        if held is None:
            return False
        before = spark.conf.get(key, None)
        if held[1] is not None:
            held[1].setdefault(key, before)
        if int(before or "0") < value:
            spark.conf.set(key, str(value))
    return True


def _release(own: SparkSession) -> None:
    """One write less on the session; after the last, the settings raise_on_own_session
    raised are put back on the caller's Connect session (a copy is dropped anyway)."""
    with _lock:
        held = _own[id(own)]
        held[0] -= 1
        if held[0]:
            return
        del _own[id(own)]
        for key, before in (held[1] or {}).items():
            if before is None:
                own.conf.unset(key)
            else:
                own.conf.set(key, before)
