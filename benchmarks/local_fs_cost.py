"""What a file costs on the embedded Spark's local filesystem: processes forked per write.

Without Hadoop's native library (pip's pyspark has none), Hadoop's RawLocalFileSystem sets the
permissions of every file and directory it creates by forking `chmod`. The embedded session
of a dbt profile uses python_adapter/io/fast_local_fs.py instead, which sets them through
java.nio. This prints, for each of the two, in its own JVM: a partitioned Spark write, a table
listing and our publish renames, with the wall time and the processes the machine started
meanwhile (Linux: the last pid in /proc/loadavg).

    python benchmarks/local_fs_cost.py [--partitions 300] [--rows 200000]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks.lib.session import start_spark  # noqa: E402
from python_adapter.io.fs import HadoopFS  # noqa: E402


def last_pid():
    with open("/proc/loadavg") as fh:
        return int(fh.read().split()[-1])


def timed(label, fn):
    pid, t0 = last_pid(), time.perf_counter()
    out = fn()
    spawned = last_pid() - pid  # pids wrap only after ~4 million: fine for a few seconds
    print(f"{label:<52} {time.perf_counter() - t0:7.2f} s  {spawned:6d} processes started")
    return out


FILESYSTEMS = {"hadoop": "Hadoop's LocalFileSystem (chmod forks)",
               "nio": "fast_local_fs (java.nio), as dbt's embedded session"}


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=300)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--fs", choices=sorted(FILESYSTEMS),
                    help="measure this one only (default: both, each in its own process)")
    return ap.parse_args(argv)


def run_each_filesystem(args):
    """This script once per filesystem, each in its own process."""
    for fs in ("hadoop", "nio"):  # one JVM each: the classpath is fixed at JVM start
        print(f"== {FILESYSTEMS[fs]}", flush=True)
        subprocess.run([sys.executable, os.path.abspath(__file__), "--fs", fs,
                        "--partitions", str(args.partitions), "--rows", str(args.rows)],
                       check=True)


def measure(args):
    """In this process's JVM, with args.fs: a partitioned write (twice), a listing and
    renames, each printed with its wall time and the processes started meanwhile."""
    tmp = tempfile.mkdtemp(prefix="local-fs-cost-")
    spark = start_spark(tmp, "2g", fast_local_fs=args.fs == "nio")
    try:
        jvm = spark._jvm
        native = jvm.org.apache.hadoop.io.nativeio.NativeIO.isAvailable()
        local = jvm.org.apache.hadoop.fs.FileSystem.getLocal(
            spark.sparkContext._jsc.hadoopConfiguration())
        print(f"Hadoop native library loaded: {native}; file: is {local.getClass().getName()}")
        df = spark.range(args.rows).selectExpr(
            "id", f"id % {args.partitions} as p", "sha2(cast(id as string), 256) as s")
        df.write.mode("overwrite").partitionBy("p").parquet(f"{tmp}/warm")  # JIT, classes
        files = 2 * args.partitions
        for i in range(2):
            timed(f"write {files} files (2 tasks x {args.partitions} partitions)",
                  lambda: df.repartition(2).write.mode("overwrite").partitionBy("p")
                  .parquet(f"{tmp}/w{i}"))
        fs = HadoopFS(spark)
        listed = timed(f"list {files} files (HadoopFS.list_files)",
                       lambda: fs.list_files(f"{tmp}/w0"))
        moves = [(f.path, f.path.replace("/w0/", "/moved/")) for f in listed[:100]]
        timed("rename 100 files into new directories (rename_many)",
              lambda: fs.rename_many(moves))
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv=None):
    args = parse_args(argv)
    if args.fs is None:
        run_each_filesystem(args)
    else:
        measure(args)


if __name__ == "__main__":
    main()
