"""The writer lock and the file interface's conditional writes on a real S3 server through
S3A (tests/functional/s3/test_lock_on_s3.py): `run` returns what each scenario saw."""
import json
import socket
import threading
import time
import uuid

from python_adapter.errors import LockError, LockLostError
from python_adapter.io.fs import HadoopFS
from python_adapter.table.lock import LockOptions, WriterLock


def _creators(fs, root, threads=16, rounds=3):
    """Of `threads` conditional creates of one key at once, how many succeeded, per round,
    and whether the key holds the winner's bytes."""
    seen = []
    for n in range(rounds):
        key, won, gate = f"{root}/creators/{n}", [], threading.Barrier(threads)

        def create(token):
            gate.wait()
            try:
                fs.write_bytes(key, token.encode(), overwrite=False)
                won.append(token)
            except Exception:
                pass
        workers = [threading.Thread(target=create, args=(uuid.uuid4().hex,))
                   for _ in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        seen.append({"won": len(won), "holds_winner": won == [fs.read_bytes(key).decode()]})
    return seen


def _swaps(fs, root):
    key = f"{root}/swap"
    fs.write_bytes(key, b"v1", overwrite=False)
    first = fs.read_versioned(key)
    to_v2 = fs.replace_if(key, b"v2", first.version)
    stale = fs.replace_if(key, b"v3", first.version)
    second = fs.read_versioned(key)
    racing, gate = [], threading.Barrier(2)

    def swap(data):
        gate.wait()
        racing.append(fs.replace_if(key, data, second.version))
    workers = [threading.Thread(target=swap, args=(d,)) for d in (b"a", b"b")]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return {"versioned": fs.versioned(key), "first": first.data.decode(), "to_v2": to_v2,
            "stale_refused": not stale, "second": second.data.decode(),
            "versions_differ": first.version != second.version,
            "racing_won": sorted(racing), "absent": fs.read_versioned(f"{root}/none") is None}


def _writers(fs, root):
    """Two writers on one lock, its renewal, release and a take over a released state."""
    path, out = f"{root}/t1/lock", {}
    a = WriterLock(fs, path, log=lambda m: None)
    a.acquire("write a", LockOptions(lease=2.0))
    out["swaps"] = a.swaps
    taken = json.loads(fs.read_bytes(path))
    b = WriterLock(fs, path, log=lambda m: None)
    try:
        b.acquire("write b", LockOptions(timeout=0))
        out["second_writer"] = "took it"
    except LockError as exc:
        out["second_writer"] = str(exc)
    time.sleep(2.5)     # past the lease: renewed meanwhile (every 0.5 s)
    renewed = json.loads(fs.read_bytes(path))
    out["renewed"] = renewed["renewed_ms"] > taken["renewed_ms"] and renewed["token"] == a.token
    a.ensure_held()
    a.release()
    out["released_state"] = json.loads(fs.read_bytes(path))
    out["holder_after_release"] = WriterLock(fs, path).holder()
    c = WriterLock(fs, path, log=lambda m: None)
    c.acquire("write c", LockOptions(timeout=0))
    out["taken_after_release"] = json.loads(fs.read_bytes(path))["token"] == c.token
    c.release()
    return out


def _other_hosts(fs, root):
    """A lease of a dead process on another host taken over once expired; a live one
    refused, naming its holder; a holder whose lock is swapped away loses it."""
    now, out, said = int(time.time() * 1000), {}, []
    dead = {"host": "other-host", "pid": 1, "operation": "write x", "token": "dead",
            "since": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(now / 1000 - 9)),
            "since_ms": now - 9000, "lease_ms": 1000, "renewed_ms": now - 5000}
    fs.write_bytes(f"{root}/t2/lock", json.dumps(dead).encode(), overwrite=False)
    d = WriterLock(fs, f"{root}/t2/lock", log=said.append)
    d.acquire("write d", LockOptions(timeout=0))
    out["took_over"] = json.loads(fs.read_bytes(f"{root}/t2/lock"))["token"] == d.token
    out["said"] = [str(m) for m in said]
    # another host takes it over (as after this holder's lease expired): d has lost it
    found = fs.read_versioned(f"{root}/t2/lock")
    fs.replace_if(f"{root}/t2/lock", json.dumps({**dead, "token": "thief",
                                                 "renewed_ms": now + 60_000}).encode(),
                  found.version)
    try:
        d.ensure_held()
        out["lost"] = "still held"
    except LockLostError as exc:
        out["lost"] = str(exc)
    d.release()     # the thief's lock stays
    out["thief_kept"] = json.loads(fs.read_bytes(f"{root}/t2/lock"))["token"] == "thief"
    live = {**dead, "token": "live", "renewed_ms": now, "lease_ms": 600_000}
    fs.write_bytes(f"{root}/t3/lock", json.dumps(live).encode(), overwrite=False)
    try:
        WriterLock(fs, f"{root}/t3/lock").acquire("write e", LockOptions(timeout=0))
        out["live"] = "took it"
    except LockError as exc:
        out["live"] = str(exc)
    return out


def run(spark, bucket):
    fs = HadoopFS(spark)
    root = f"s3a://{bucket}/{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
    return {"creators": _creators(fs, root), "swaps": _swaps(fs, root),
            "writers": _writers(fs, root), "other_hosts": _other_hosts(fs, root)}
