"""The table's writer lock: one file, `<meta dir>/lock`, created only if absent.

The file records its holder: host, pid, operation, when it was taken, and on Linux the
holder process's start time and the machine's boot id. A lock is stale (taken over by the
next writer, which then rolls back the holder's unfinished instant) when its holder is
known to be gone: a lock with no readable holder, a process of this host that no longer
exists, a pid now used by another process (it started after the lock was taken, or at
another time than the holder), or a holder from before this machine's last boot. Locks of
other hosts are never guessed stale here.
"""
import json
import os
import socket
import time
import uuid
from datetime import datetime
from typing import Callable, Optional

from python_adapter.core.sizes import format_duration
from python_adapter.errors import LockError
from python_adapter.io.fs import HadoopFS

_HELD = {}  # lock path -> token, for the locks this process holds right now


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


def holder_record(operation: str) -> dict:
    now = time.time()
    pid = os.getpid()
    return {"host": socket.gethostname(), "pid": pid, "operation": operation,
            "since": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(now)),
            "since_ms": int(now * 1000), "boot_id": boot_id(), "process_start": process_start(pid),
            "token": uuid.uuid4().hex}


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
    if holder["host"] != socket.gethostname():
        return None
    try:
        pid = int(holder["pid"])
    except (TypeError, ValueError):
        return f"the lock records no valid pid ({holder['pid']!r})"
    if pid == os.getpid():
        if lock_path in _HELD and _HELD[lock_path] == holder.get("token"):
            return None  # another thread of this process holds it
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
    return (f"host {holder.get('host')}, pid {holder.get('pid')}, {holder.get('operation')} "
            f"since {holder.get('since')}{age}; lock file {lock_path}")


class WriterLock:
    """The writer lock of one table through a HadoopFS."""

    def __init__(self, fs: HadoopFS, path: str, log: Callable[[str], None] = print) -> None:
        self.fs, self.path, self.log = fs, path, log

    def acquire(self, operation: str) -> None:
        holder = holder_record(operation)
        for _attempt in range(2):
            try:
                self.fs.write_bytes(self.path, json.dumps(holder).encode(), overwrite=False)
                _HELD[self.path] = holder["token"]
                return
            except Exception as exc:  # the Hadoop FS raises FileAlreadyExistsException via py4j
                if not self.fs.exists(self.path):
                    raise
                current = self.read()
                why = stale_reason(current, self.path)
                if why is None:
                    raise LockError(
                        f"the table is being written by another writer ({describe_holder(current, self.path)}). "
                        f"Try again when it has finished. If that writer is known to be gone "
                        f"(its host was lost), delete the lock file: the next write rolls back "
                        f"its unfinished work") from exc
                self.log(f"recovering stale writer lock of pid {current.get('pid')} on "
                         f"{current.get('host')} ({why})")
                self.fs.delete(self.path, recursive=False)
        raise LockError(f"could not take the writer lock {self.path}")

    def read(self) -> dict:
        try:
            data = json.loads(self.fs.read_bytes(self.path).decode() or "{}")
            return data if isinstance(data, dict) else {}
        except (ValueError, OSError):
            return {}
        except Exception:  # py4j: the file vanished between exists() and the read
            return {}

    def release(self) -> None:
        _HELD.pop(self.path, None)
        self.fs.delete(self.path, recursive=False)


def forget_held_locks() -> None:
    """As a crash does: this process no longer holds any lock (tests of crash recovery)."""
    _HELD.clear()
