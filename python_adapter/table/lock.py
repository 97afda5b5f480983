"""The table's writer lock: one file, `<meta dir>/lock`, created only if absent.

The file records its holder: host, pid, operation, when it was taken, on Linux the holder
process's start time and the machine's boot id, and a lease: the holder renews the lock
every few seconds while it works (a heartbeat thread), and a lock not renewed within its
lease is stale whatever host took it. A lock is also stale (taken over by the next
writer, which then rolls back the holder's unfinished instant) when its holder is known to
be gone: a lock with no readable holder, a process of this host that no longer exists, a
pid now used by another process (it started after the lock was taken, or at another time
than the holder), or a holder from before this machine's last boot. Hosts must agree on the
time to well within a lease.

On a store that replaces a file only if unchanged (an object store's conditional PUT on
the ETag: `fs.versioned`), the lock is one object whose content is its state: taken by a
conditional create, or by a compare-and-swap over a stale holder's or a released state;
renewed by compare-and-swap; released by writing a released state the same way. No rename
and no delete race: of two writers swapping out the same state, one wins. Elsewhere (local
disk, HDFS) a stale lock is set aside by a rename and a released one deleted.

A writer that finds the lock held waits up to its `lock_timeout`, then fails naming the
holder. Before it publishes and before it completes, the holder checks that the lock is
still its own (a lease that expired while the process was frozen, or a forced unlock).
"""
import hashlib
import json
import os
import socket
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Dict, Iterator, Optional, Set, Tuple

from python_adapter.core.notice import Notice
from python_adapter.core.sizes import format_duration
from python_adapter.errors import LockError, LockLostError
from python_adapter.io.interfaces import FileSystem
from python_adapter.io.interfaces import Fence

# The locks this process holds right now, by lock file: a lock whose holder record names
# this process is either one of them or left by a crash inside it (stale_reason).
_HELD: Dict[str, "WriterLock"] = {}
# The tokens this process is writing a lock file with right now, by lock file: from just
# before the exclusive create until the lock is in _HELD (or the create failed). Another
# thread that reads such a file in that window sees its own pid and a token it would not
# find in _HELD; without this it would judge the lock left by a crash and take it over.
_TAKING: Dict[str, Set[str]] = {}
_TAKING_MUTEX = threading.Lock()
# A stale lock is set aside as `<lock name>.stale.<its token>` (lock, cluster.lock).
STALE_MARK = ".stale."
# How long a lock set aside stays before the cleaner deletes it: a writer that judged the
# same lock stale holds its look at it for seconds, and renames it to that name only while
# the name is free; once deleted, such a rename would catch the new holder's lock (given
# back, but its holder may find it lost meanwhile). An hour is far past any such look.
SET_ASIDE_GRACE_MS = 3600_000
# A lock released by compare-and-swap (a versioned store) records only when
RELEASED = "released_ms"


# Where a model's writer sets how long it waits for a held lock (the lock error says it)
MODEL_TIMEOUT = ("the model's lock_timeout config, e.g. config(lock_timeout='10m'), or "
                 "+lock_timeout in dbt_project.yml")
# How long any writer waits for a holder that takes the lock only for a short step (a table
# service planning or committing: `brief`), whatever its own lock_timeout: services run
# beside loads, so a load must not fail because one is committing at that moment.
BRIEF_WAIT = 120.0


@dataclass(frozen=True)
class LockOptions:
    """lease: seconds a lock stays valid without renewal; timeout: seconds a writer waits
    for a held lock (0: fail at once); poll: seconds between looks while waiting;
    timeout_set: where the user sets `timeout` (the lock error says it); brief: this
    holder takes the lock for a short step only (others wait up to BRIEF_WAIT for it)."""
    lease: float = 300.0
    timeout: float = 0.0
    poll: float = 2.0
    timeout_set: str = MODEL_TIMEOUT
    brief: bool = False

    @property
    def heartbeat(self) -> float:
        """Seconds between renewals: a few per lease, at most every 10 s."""
        return max(0.2, min(self.lease / 4, 10.0))


def _read(path):
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return None


def boot_id() -> Optional[str]:
    text = _read("/proc/sys/kernel/random/boot_id")
    return text.strip() if text else None


def process_start(pid: int) -> Optional[int]:
    """The start time of a process in clock ticks since boot (Linux), None elsewhere or
    when there is no such process. Field 22 of /proc/<pid>/stat; the command name before
    it may hold spaces and parentheses, so fields are counted after its last ')'."""
    text = _read(f"/proc/{pid}/stat")
    if not text:
        return None
    try:
        return int(text[text.rindex(")") + 2:].split()[19])
    except (ValueError, IndexError):
        return None


def _process_start_ms(ticks):
    """Wall clock start (ms) of a process started `ticks` after boot."""
    stat = _read("/proc/stat") or ""
    btime = next((int(line.split()[1]) for line in stat.splitlines()
                  if line.startswith("btime ")), None)
    if btime is None:
        return None
    return int((btime + ticks / os.sysconf("SC_CLK_TCK")) * 1000)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def holder_record(operation: str, lease: float = LockOptions.lease) -> dict:
    now = time.time()
    pid = os.getpid()
    return {"host": socket.gethostname(), "pid": pid, "operation": operation,
            "since": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(now)),
            "since_ms": int(now * 1000), "boot_id": boot_id(), "process_start": process_start(pid),
            "token": uuid.uuid4().hex, "lease_ms": int(lease * 1000),
            "renewed_ms": int(now * 1000)}


def wait_for(holder: dict, options: LockOptions) -> float:
    """Seconds to wait for `holder`: the writer's timeout, or at least BRIEF_WAIT for a
    holder that takes the lock for a short step only."""
    return max(options.timeout, BRIEF_WAIT) if holder.get("brief") else options.timeout


def lease_left(holder: dict, now_ms: Optional[int] = None) -> Optional[float]:
    """Seconds the holder's lease has left (negative: expired), None for a lock without one
    (written by an earlier version)."""
    if not isinstance(holder.get("lease_ms"), int) or not isinstance(holder.get("renewed_ms"), int):
        return None
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    return (holder["renewed_ms"] + holder["lease_ms"] - now_ms) / 1000


def _since_ms(holder):
    if isinstance(holder.get("since_ms"), int):
        return holder["since_ms"]
    try:
        return int(datetime.strptime(holder.get("since", ""), "%Y-%m-%dT%H:%M:%S%z").timestamp() * 1000)
    except ValueError:
        return None


def stale_reason(holder: dict, lock_path: str) -> Optional[str]:
    """Why the holder of a lock is known to be gone, or None when it may still be working."""
    if not holder or "pid" not in holder or "host" not in holder:
        return "the lock records no holder"
    left = lease_left(holder)
    if left is not None and left < 0:
        return f"its lease expired {format_duration(-left)} ago"
    if holder["host"] != socket.gethostname():
        return None
    try:
        pid = int(holder["pid"])
    except (TypeError, ValueError):
        return f"the lock records no valid pid ({holder['pid']!r})"
    if pid == os.getpid():
        held = _HELD.get(lock_path)
        if held is not None and held.token == holder.get("token"):
            return None  # another thread of this process holds it
        with _TAKING_MUTEX:
            if holder.get("token") in _TAKING.get(lock_path, ()):
                return None  # another thread of this process is taking it this moment
        return "this process took it and no longer holds it (a crash inside this process)"
    if not pid_alive(pid):
        return f"pid {pid} is gone"
    if holder.get("boot_id") and boot_id() and holder["boot_id"] != boot_id():
        return "it was taken before this machine's last boot"
    started = process_start(pid)
    if started is not None and holder.get("process_start") is not None:
        if started != holder["process_start"]:
            return f"pid {pid} is now another process"
    elif started is not None:
        start_ms, since = _process_start_ms(started), _since_ms(holder)
        if start_ms is not None and since is not None and start_ms > since + 1000:
            return f"pid {pid} is now another process (started after the lock was taken)"
    return None


def describe_holder(holder: dict, lock_path: str) -> str:
    since = _since_ms(holder)
    age = f", {format_duration(time.time() - since / 1000)} ago" if since else ""
    left = lease_left(holder)
    lease = "" if left is None else (f", lease expires in {format_duration(left)}" if left >= 0
                                      else f", lease expired {format_duration(-left)} ago")
    return (f"host {holder.get('host')}, pid {holder.get('pid')}, {holder.get('operation')} "
            f"since {holder.get('since')}{age}{lease}; lock file {lock_path}")


class WriterLock:
    """The writer lock of one table through the session's filesystem."""

    def __init__(self, fs: FileSystem, path: str, log: Callable[[str], None] = print,
                 covers: Tuple[str, ...] = ()) -> None:
        """covers: the directories whose changes the lock fences while held (the table's
        and its metadata directory), handed to fs when it is taken (io/interfaces.Fence)."""
        self.fs, self.path, self.log, self.covers = fs, path, log, covers
        self._beat: Optional[threading.Event] = None
        self._holder: dict = {}
        self._mutex = threading.Lock()  # a renewal never races the release
        self._swaps: Optional[bool] = None   # fs.versioned(path), asked once

    @property
    def token(self) -> Optional[str]:
        """The token this lock was taken with (None before it is taken)."""
        return self._holder.get("token")

    def acquire(self, operation: str, options: LockOptions = LockOptions()) -> None:
        """Take the lock, waiting up to options.timeout for a holder to finish; LockError
        names the holder when it does not."""
        start = time.monotonic()
        waited = 0.0
        while True:
            holder = {**holder_record(operation, options.lease), **self.fs.holder_extra(),
                      **({"brief": True} if options.brief else {})}
            with _taking(self.path, holder["token"]):
                current = self._try_take(holder)
                if current is None:
                    self._holder = holder
                    _HELD[self.path] = self
            if current is None:
                if self.covers:
                    self.fs.hold_fence(Fence(self.path, holder["token"], self.covers))
                self._start_heartbeat(options)
                return
            wait = wait_for(current, options)
            if time.monotonic() - start >= wait:
                raise LockError(self._held_message(current, waited, options))
            if not waited:
                self.log(Notice(f"waiting up to {format_duration(wait)} for the "
                                f"writer lock ({describe_holder(current, self.path)})"))
            time.sleep(min(options.poll, max(0.0, start + wait - time.monotonic())))
            waited = time.monotonic() - start

    def _held_message(self, current: dict, waited: float, options: LockOptions) -> str:
        return (f"the table is being written by another writer "
                f"({describe_holder(current, self.path)})"
                f"{f'; waited {format_duration(waited)}' if waited else ''}. Try again when it "
                f"has finished, or let this writer wait for it: {options.timeout_set}. If that "
                f"writer is known to be gone, break its lock: dbt run-operation sized_unlock "
                f"--args '{{relation: <schema.table>, force: true}}' (or delete the lock "
                f"file); the next write rolls back its unfinished work")

    @property
    def swaps(self) -> bool:
        """Whether this lock is renewed and taken over by compare-and-swap (module doc)."""
        if self._swaps is None:
            self._swaps = self.fs.versioned(self.path)
        return self._swaps

    def _try_take(self, holder: dict) -> Optional[dict]:
        """None when the lock was taken for `holder` (a stale one taken over), else the
        current holder's record."""
        if self.swaps:
            return self._try_swap_in(holder)
        for attempt in range(4):
            try:
                self.fs.write_bytes(self.path, json.dumps(holder).encode(), overwrite=False)
                return None
            except Exception:  # the Hadoop FS raises FileAlreadyExistsException via py4j
                if not self.fs.exists(self.path):
                    if attempt == 3:
                        raise
                    continue  # another writer set a stale lock aside meanwhile: try again
                current = self._read_written()
                why = stale_reason(current, self.path)
                if why is None:
                    return current
                if self._set_aside(current):
                    self.log(Notice(f"recovering stale writer lock of pid "
                                    f"{current.get('pid')} on {current.get('host')} ({why})"))
                    ended = self.fs.end_holder(current)
                    if ended:
                        self.log(Notice(ended))
        return self.read() or {"host": "?", "pid": "?", "operation": "?"}

    def _try_swap_in(self, holder: dict) -> Optional[dict]:
        """_try_take on a versioned store: a conditional create, else a compare-and-swap over
        a released or stale state (a writer that swapped first wins; look again)."""
        data = json.dumps(holder).encode()
        for attempt in range(4):
            try:
                self.fs.write_bytes(self.path, data, overwrite=False)
                return None
            except Exception:  # the conditional create refused: there is a lock object
                found = self.fs.read_versioned(self.path)
                if found is None:
                    if attempt == 3:
                        raise
                    continue  # broken (deleted) meanwhile: create again
            current = _record(found.data)
            why = "released" if is_released(current) else stale_reason(current, self.path)
            if why is None:
                return current
            if self.fs.replace_if(self.path, data, found.version):
                if not is_released(current):
                    self.log(Notice(f"recovering stale writer lock of pid "
                                    f"{current.get('pid')} on {current.get('host')} ({why})"))
                    ended = self.fs.end_holder(current)
                    if ended:
                        self.log(Notice(ended))
                return None
        return self.read() or {"host": "?", "pid": "?", "operation": "?"}

    def _set_aside(self, stale: dict) -> bool:
        """Move the stale lock out of the way by a rename to a name of its own (never a
        delete): of two writers that judged the same lock stale, only the first rename
        succeeds, so the second never deletes the lock the first has just taken. False when
        another writer came first (its lock, if the rename caught it, is put back)."""
        tag = stale.get("token") or hashlib.sha1(json.dumps(stale, sort_keys=True)
                                                 .encode()).hexdigest()
        aside = f"{self.path}{STALE_MARK}{tag}"
        try:
            self.fs.rename(self.path, aside)
        except Exception:  # gone, or already set aside by another writer
            return False
        if WriterLock(self.fs, aside).read().get("token") != stale.get("token"):
            try:  # the lock was taken anew between the look and the rename: give it back
                self.fs.rename(aside, self.path)
            except Exception:
                pass  # its holder finds it lost before it publishes (ensure_held)
            return False
        try:  # written again: a rename keeps the time of the last renewal, and the
            # cleaner's grace (prune_set_aside) counts from the set-aside
            self.fs.write_bytes(aside, json.dumps({**stale, "set_aside_ms": int(
                time.time() * 1000)}).encode(), overwrite=True)
        except Exception:  # the grace then counts from the last renewal
            pass
        return True

    def _start_heartbeat(self, options: LockOptions) -> None:
        stop = self._beat = threading.Event()

        def beat():
            while not stop.wait(options.heartbeat):
                try:
                    if not self._renew():
                        return
                except Exception as exc:  # a missed beat is renewed by the next one
                    self.log(f"could not renew the writer lock {self.path} ({exc})")

        threading.Thread(target=beat, name="sized-lock-heartbeat", daemon=True).start()

    def _renew(self) -> bool:
        """Renew the lease; False (and stop) when the lock is no longer ours."""
        with self._mutex:
            if self._beat is None or self._beat.is_set():
                return False  # released meanwhile
            renewed = {**self._holder, "renewed_ms": int(time.time() * 1000)}
            if self.swaps:
                return self._swap_renewed(renewed)
            current = self.read()
            if not current:  # raises when the filesystem does not answer: a missed beat,
                self.fs.exists(self.path)  # not a lost lock (a Connect server gone)
            if current.get("token") != self._holder.get("token"):
                self.log(f"the writer lock {self.path} was taken over; this write will not "
                         f"commit")
                return False
            self._holder = renewed
            self.fs.write_bytes(self.path, json.dumps(self._holder).encode(), overwrite=True)
            return True

    def _swap_renewed(self, renewed: dict) -> bool:
        """The renewal on a versioned store: swapped in only over this holder's own state,
        so a takeover between the look and the write loses the renewal, not the lock's new
        holder (under the mutex)."""
        found = self.fs.read_versioned(self.path)
        if (found is None or _record(found.data).get("token") != self._holder.get("token")
                or not self.fs.replace_if(self.path, json.dumps(renewed).encode(),
                                          found.version)):
            self.log(f"the writer lock {self.path} was taken over; this write will not commit")
            return False
        self._holder = renewed
        return True

    def ensure_held(self) -> None:
        """LockError unless the lock file is still this holder's (checked before publishing
        and before completing: a lease that expired, or a forced unlock, means another
        writer may be rolling this write back). Under the mutex: the heartbeat's renewal
        rewrites the file, which a look in the middle would find empty."""
        with self._mutex:
            current = self.read()
        if current.get("token") != self._holder.get("token"):
            raise LockLostError(
                f"the writer lock {self.path} is no longer this writer's "
                f"({describe_holder(current, self.path) if current else 'no lock'}): its lease "
                f"expired or it was broken while this write ran. The write stops; the next "
                f"writer (or sized_recover) rolls its unfinished instant back")

    def _read_written(self, tries: int = 6, pause: float = 0.2) -> dict:
        """The holder's record, looked at again for about a second while the file exists but
        holds none: a writer creates the lock and then writes its record, and a renewal
        rewrites it, so a look in between finds it empty; only a lock that stays empty (its
        writer died between the two) is one with no holder."""
        for _ in range(tries - 1):
            current = self.read()
            if current or not self.fs.exists(self.path):
                return current
            time.sleep(pause)
        return self.read()

    def read(self) -> dict:
        """The holder's record ({} for none: no lock, an unreadable one, or released)."""
        try:
            current = _record(self.fs.read_bytes(self.path))
        except OSError:
            return {}
        except Exception:  # py4j: the file vanished between exists() and the read
            return {}
        return {} if is_released(current) else current

    def holder(self) -> Optional[dict]:
        """None when the table is not locked (no lock, or a released one), else the
        holder's record ({} when it is unreadable)."""
        if not self.fs.exists(self.path):
            return None
        try:
            current = _record(self.fs.read_bytes(self.path))
        except Exception:  # gone since exists(), or unreadable
            return None if not self.fs.exists(self.path) else {}
        return None if is_released(current) else current

    def stop(self) -> None:
        """Stop renewing and forget the hold, the lock file left as it is (it is moved, or
        deleted by the caller)."""
        with self._mutex:
            if self._beat is not None:
                self._beat.set()
            if _HELD.get(self.path) is self:
                del _HELD[self.path]
            self.fs.drop_fence(self.path)

    def release(self) -> None:
        self.stop()
        if self.swaps:
            found = self.fs.read_versioned(self.path)
            if found is not None and _record(found.data).get("token") == self.token:
                # a takeover meanwhile wins the swap: its lock stays
                self.fs.replace_if(self.path, json.dumps(
                    {RELEASED: int(time.time() * 1000)}).encode(), found.version)
            return
        if self.read().get("token") == self._holder.get("token"):
            self.fs.delete(self.path, recursive=False)


def _record(data: bytes) -> dict:
    """A lock file's record ({} when it holds none that parses)."""
    try:
        parsed = json.loads(data.decode() or "{}")
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def is_released(record: dict) -> bool:
    """A lock released by compare-and-swap: a state that records no holder, only when."""
    return RELEASED in record and "token" not in record


@contextmanager
def _taking(path: str, token: str) -> Iterator[None]:
    """While a thread writes the lock file `path` with `token` (see _TAKING)."""
    with _TAKING_MUTEX:
        _TAKING.setdefault(path, set()).add(token)
    try:
        yield
    finally:
        with _TAKING_MUTEX:
            tokens = _TAKING.get(path, set())
            tokens.discard(token)
            if not tokens:
                _TAKING.pop(path, None)


def break_lock(fs: FileSystem, path: str) -> Optional[str]:
    """Delete a lock file whatever holds it (sized_unlock with force). Over Spark Connect
    the holder's session is ended too, so its work stops: returns the line saying what was
    stopped, or None."""
    holder = WriterLock(fs, path).read() if fs.exists(path) else {}
    if not fs.exists(path):
        return None
    fs.delete(path, recursive=False)
    return fs.end_holder(holder)


def prune_set_aside(fs: FileSystem, folder: str, now_ms: Optional[int] = None) -> int:
    """Delete the locks of `folder` (a table's meta dir) set aside as stale more than
    SET_ASIDE_GRACE_MS ago; returns how many. A lock in use is never one of them: its name
    holds no STALE_MARK."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    pruned = 0
    for st in fs.list_dir(folder):
        if (not st.is_dir and STALE_MARK in st.name
                and 0 < st.modified_ms < now_ms - SET_ASIDE_GRACE_MS):
            fs.delete(st.path, recursive=False)
            pruned += 1
    return pruned


def forget_held_locks() -> None:
    """As a crash does: this process no longer holds any lock (tests of crash recovery)."""
    for held in list(_HELD.values()):
        held.fs.drop_fence(held.path)
    _HELD.clear()
