"""A commit's settling: what it does after its completed instant, which neither the table's
readers nor its correctness wait for. The metastore statistics of the partitions it changed
(numFiles, totalSize, numRows) and of the table, then the cleanup (its earlier state files,
its staging, the archive), then the writer lock's release.

By default a commit settles at once. Inside `in_background()` (a dbt command's models) the
commits of this thread leave their settling to one worker thread, which runs it, in commit
order, while the caller goes on (dbt's next model): the statistics of a 10-partition write
cost ~0.1-0.3 s on a Derby metastore, as much as the rest of a tiny model. The lock is held
until the settling is done, so no other writer commits in between; a writer of this process
waits for the settling of its table first (`wait(location)`), and the caller waits for all
of it before it alters a table's metadata itself or ends (`wait()`).

A crash before the settling is done leaves the completed instant with its inflight file in
the timeline directory (cleanup deletes it last): the next writer's recovery finds it
(`Timeline.unsettled`) and writes the statistics from the files the timeline records.
Meanwhile a reader of the metastore sees the new files (new partitions are registered with
their statistics before the instant completes), and the statistics of partitions that
already existed, and of the table, as they were before the commit.
"""
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Callable, Dict, Iterator, Optional

_local = threading.local()
_guard = threading.Lock()
_worker: Optional[ThreadPoolExecutor] = None
_pending: Dict[str, Future] = {}   # table location -> the last settling queued for it


@contextmanager
def in_background() -> Iterator[None]:
    """Commits made by this thread inside it settle on the worker thread."""
    before = backgrounded()
    _local.on = True
    try:
        yield
    finally:
        _local.on = before


def backgrounded() -> bool:
    return getattr(_local, "on", False)


def submit(location: str, work: Callable[[], None]) -> None:
    """Queue `work` (a table's settling) behind every settling queued before it."""
    global _worker
    with _guard:
        if _worker is None:
            _worker = ThreadPoolExecutor(1, thread_name_prefix="sized-settle")
        _pending[location] = _worker.submit(work)


def pending() -> bool:
    with _guard:
        return any(not f.done() for f in _pending.values())


def wait(location: Optional[str] = None) -> None:
    """Wait for the settling queued for one table location (None: for every table). A
    failure that stopped it (an injected crash: the lock is left as a dead writer leaves
    it) is raised here, once."""
    with _guard:
        queued = list(_pending.items()) if location is None else \
            [(location, _pending[location])] if location in _pending else []
    for key, future in queued:
        try:
            future.result()
        finally:
            with _guard:
                if _pending.get(key) is future:
                    del _pending[key]
