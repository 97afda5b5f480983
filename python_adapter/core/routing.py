"""Keys whose Spark hash lands on a chosen shuffle partition, for `exact` distribution.

`repartition(n, col)` sends a row to pmod(murmur3(col, seed 42), n). Spark has no custom
partitioner in the DataFrame API, so to send file id i to partition i exactly we route by a
key k_i with pmod(hash(k_i), n) == i. Pure Python port of Spark's Murmur3_x86_32.hashLong
(and hashInt, the hash of an int or date column), checked against Spark's own `hash()` in the
tests.
"""
from typing import Dict, Hashable, List, Optional, Sequence, Set, Tuple, cast

_C1, _C2, _MASK = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF
SPARK_HASH_SEED = 42


def _rotl(x, r):
    return ((x << r) | (x >> (32 - r))) & _MASK


def _mix_k1(k1):
    k1 = (k1 * _C1) & _MASK
    k1 = _rotl(k1, 15)
    return (k1 * _C2) & _MASK


def _mix_h1(h1, k1):
    h1 ^= k1
    h1 = _rotl(h1, 13)
    return (h1 * 5 + 0xE6546B64) & _MASK


def _fmix(h1, length):
    h1 ^= length
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _MASK
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _MASK
    h1 ^= h1 >> 16
    return h1


def _signed(h1):
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def spark_hash_long(value: int, seed: int = SPARK_HASH_SEED) -> int:
    """Spark's `hash(<bigint>)`: Murmur3_x86_32.hashLong, as a signed 32-bit int."""
    value &= 0xFFFFFFFFFFFFFFFF
    h1 = _mix_h1(seed & _MASK, _mix_k1(value & _MASK))
    h1 = _mix_h1(h1, _mix_k1(value >> 32))
    return _signed(_fmix(h1, 8))


def spark_hash_int(value: int, seed: int = SPARK_HASH_SEED) -> int:
    """Spark's `hash(<int>)`: Murmur3_x86_32.hashInt, as a signed 32-bit int. A date column
    hashes as its int days since 1970-01-01. Spark hashes several columns in turn, each with
    the previous hash as its seed: hash(d, s) = spark_hash_long(s, seed=spark_hash_int(d))."""
    return _signed(_fmix(_mix_h1(seed & _MASK, _mix_k1(value & _MASK)), 4))


def routing_keys(num_partitions: int) -> List[int]:
    """[k_0, ..., k_{n-1}]: the smallest bigint k_i >= 0 with pmod(hash(k_i), n) == i."""
    keys: List[Optional[int]] = [None] * num_partitions
    missing = num_partitions
    candidate = 0
    while missing:
        slot = spark_hash_long(candidate) % num_partitions  # Python % is pmod
        if keys[slot] is None:
            keys[slot] = candidate
            missing -= 1
        candidate += 1
    return cast(List[int], keys)  # the loop ends when no slot is left None


def assign_tasks(files: Sequence[Tuple[Hashable, float]],
                 min_tasks: int) -> Tuple[List[int], int]:
    """Which task writes each output file: ([task index per file], number of tasks).

    files: [(partition, weight)]. A task writes one file per partition it holds, so files of
    one partition go to different tasks, and a task may write files of several partitions:
    a write of many small partitions then runs in a few tasks instead of one per file.
    Tasks = max(most files of one partition, min(min_tasks, files)); heaviest files first,
    each to the least loaded task that has none of its partition yet.
    """
    if not files:
        return [], 0
    per_partition: Dict[Hashable, int] = {}
    for part, _ in files:
        per_partition[part] = per_partition.get(part, 0) + 1
    n = max(max(per_partition.values()), min(max(min_tasks, 1), len(files)))
    load = [0.0] * n
    holds: List[Set[Hashable]] = [set() for _ in range(n)]
    task_of = [0] * len(files)
    for i in sorted(range(len(files)), key=lambda i: (-files[i][1], i)):
        part, weight = files[i]
        task = min((t for t in range(n) if part not in holds[t]), key=lambda t: (load[t], t))
        task_of[i] = task
        load[task] += weight
        holds[task].add(part)
    return task_of, n
