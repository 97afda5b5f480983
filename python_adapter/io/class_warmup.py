"""The process that writes the driver JVM's class archive (io/jvm_startup.py), apart from
every dbt command:

    python -m python_adapter.io.class_warmup ['<the key confs as JSON>']

A dbt process starts it, detached, at its exit when its key has no archive
(jvm_startup.start_warm_up), with the session's KEY_CONFS; without an argument it writes the
archive of a local session as `fast_local_fs.configure` builds one: scripts/test.sh runs it
so before the suite from the checkout (the test sessions' key) and from `/` (the installed
package's, the key of a dbt profile on a local master without a classpath of its own).

It claims the archive (a claim names this process), lowers its priority, starts a JVM with
those confs, a temporary warehouse and Derby metastore of its own (so it can never hold a
project's), `local[1]`, loopback and no UI; runs a small job that loads what a dbt command
loads (Spark SQL, the Hive client over Derby and DataNucleus, Parquet, the helper jar's
filesystem and footer reader); stops the session and waits for its JVM to exit, which writes
the classes it loaded into the claim; then moves the claim into place (os.replace: an
archive under its final name is complete). Its lines go to the log in the cache folder.
One that fails, whose JVM exits with an error, or that still runs just before its claim stops
counting (its JVM then killed) writes no archive and marks the key as failed
(jvm_startup.failed_marker), saying so in one line.
"""
import json
import os
import sys
import tempfile
import threading
import time
import traceback
from typing import Any, Dict, List, Mapping, cast

from python_adapter.io.fast_local_fs import embedded_confs
from python_adapter.io.jvm_startup import (CLAIM_MINUTES, JAVA_OPTIONS, QUIET_CDS, RETRY_HOURS,
                                          archive_path, claim, end_spark_jvm, failed_marker,
                                          live_claim)
from python_adapter.io.spark_logging import CONFIG

NICENESS = 10  # below the dbt commands it runs beside


def _say(text: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} warm-up process {os.getpid()}: {text}",
          flush=True)


def key_confs(argv: List[str]) -> Dict[str, str]:
    """The confs of the session whose archive is wanted: the argument's, else a local
    session's."""
    if len(argv) > 1:
        return json.loads(argv[1])
    return embedded_confs({"spark.master": "local[1]"}).confs


def session_confs(key: Mapping[str, str], written: str, home: str) -> Dict[str, str]:
    """The warm-up session's confs: the key's, and a warehouse, metastore and JVM options
    of its own (its JVM writes the archive to `written` at exit)."""
    return {**key,
            "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.sql.warehouse.dir": os.path.join(home, "warehouse"),
            "spark.hadoop.javax.jdo.option.ConnectionURL":
                f"jdbc:derby:;databaseName={home}/metastore_db;create=true",
            "spark.hadoop.hive.metastore.uris": "",
            JAVA_OPTIONS: f"-Dderby.system.home={home} -Dlog4j2.configurationFile=file:{CONFIG} "
                          f"-XX:+IgnoreUnrecognizedVMOptions -XX:ArchiveClassesAtExit={written} "
                          f"{QUIET_CDS}"}


def representative_work(spark: Any, home: str) -> None:
    """What a dbt command's JVM loads: dbt-spark's statements, a partitioned Parquet table
    in the Hive metastore, written, read with its files' paths, joined, overwritten by
    partition, and its files listed and footers read through the helper jar."""
    from python_adapter.io.footers import staged_footers
    from python_adapter.io.fs import HadoopFS

    spark.sql("create database if not exists warm_up")
    spark.sql("show databases").collect()
    rows = spark.range(2000).selectExpr(
        "id", "date_add(date'2025-01-01', cast(id % 4 as int)) as day",
        "sha2(cast(id as string), 256) as payload", "cast(id * 10 as bigint) as value")
    (rows.repartitionByRange(4, "day", "id").write.mode("overwrite").format("parquet")
     .partitionBy("day").saveAsTable("warm_up.t"))
    spark.sql("show table extended in warm_up like '*'").collect()
    spark.sql("describe table extended warm_up.t").collect()
    spark.sql("create or replace view warm_up.v as select * from warm_up.t where id % 2 = 0")
    files = spark.table("warm_up.t").select("id", "_metadata.file_path")
    updates = spark.range(1500, 2500).selectExpr("id", "cast(id as bigint) as value")
    joined = files.join(updates, "id", "full_outer").groupBy("file_path").count()
    joined.collect()
    spark.sql("insert overwrite table warm_up.t partition (day) select id, sha2(cast(id as "
              "string), 256), id, date'2025-01-02' from range(100)")
    spark.sql("alter table warm_up.t add if not exists partition (day = date'2025-02-01')")
    spark.sql("select day, count(*), max(value) from warm_up.v group by day").collect()
    table = os.path.join(home, "warehouse", "warm_up.db", "t")
    fs = HadoopFS(spark)
    fs.list_files(fs.qualify(table))
    staged_footers(spark, fs.qualify(table), "id")
    spark.sql("drop database warm_up cascade")


def write_archive(key: Mapping[str, str], written: str) -> bool:
    """Runs the job on a JVM that writes its classes to `written` at exit; whether it did."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # this process's own environment
    with tempfile.TemporaryDirectory(prefix="sized-warm-up-") as home:
        builder = SparkSession.builder.master("local[1]")
        for name, value in session_confs(key, written, home).items():
            builder = builder.config(name, value)
        spark = builder.enableHiveSupport().getOrCreate()
        # pyspark types the gateway Optional; a session started here has one
        jvm = cast(Any, spark.sparkContext._gateway).proc
        try:
            spark.sparkContext.setLogLevel("ERROR")
            representative_work(spark, home)
        finally:
            spark.stop()
            # the session stopped, the gateway shut down, the JVM's stdin closed: it writes
            # the archive as it exits; waited for before the temporary metastore goes, up to
            # the claim's age limit
            end_spark_jvm(CLAIM_MINUTES * 60 - 60)
    # a JVM that could not write the whole archive (a full disk) exits with an error: what
    # it left is not moved into place, where every start would try to map it
    return jvm.poll() == 0 and os.path.exists(written) and os.path.getsize(written) > 0


def main(argv: List[str]) -> int:
    os.nice(NICENESS)
    key = key_confs(argv)
    archive = archive_path(key, os.environ)
    if archive is None:
        _say("no java found: nothing to write")
        return 0
    written = claim(archive)
    if written is None:
        writer = live_claim(archive)
        _say(f"{archive} is " + (f"being written by process {writer}" if writer else "there"))
        return 0
    _say(f"writing {archive} (classpath {key.get('spark.driver.extraClassPath', '-')})")
    # against a hang (a job stuck): given up before the claim stops counting
    watchdog = threading.Timer(CLAIM_MINUTES * 60 - 30, _give_up, (written, archive))
    watchdog.daemon = True
    watchdog.start()
    return _write_and_move(key, written, archive)


def _give_up(written: str, archive: str) -> None:
    """A warm-up still running near CLAIM_MINUTES: its JVM killed (it would write into a
    claim nobody moves), the key marked as failed."""
    from pyspark import SparkContext

    proc = getattr(SparkContext._gateway, "proc", None)
    if proc is not None:
        proc.kill()
        proc.wait()
    _failed(written, archive, f"still running after {CLAIM_MINUTES - 1} min, stopped")
    os._exit(3)


def _write_and_move(key: Mapping[str, str], written: str, archive: str) -> int:
    started = time.time()
    try:
        done = write_archive(key, written)
    except Exception as exc:  # its traceback, then the one line that says what follows
        traceback.print_exc(file=sys.stdout)
        _failed(written, archive, f"the job failed ({type(exc).__name__}: {exc})")
        return 1
    except BaseException:
        _failed(written, archive, "interrupted")
        raise
    if not done:
        _failed(written, archive, "the JVM wrote none or exited with an error (a Java before "
                                  "13? its lines above say)")
        return 1
    os.replace(written, archive)
    if os.path.exists(failed_marker(archive)):  # an earlier failure, mended since
        os.remove(failed_marker(archive))
    _say(f"wrote {archive}, {os.path.getsize(archive) / 2 ** 20:.0f} MB, in "
         f"{time.time() - started:.0f} s")
    return 0


def _failed(written: str, archive: str, why: str) -> None:
    """Drops what the JVM wrote, marks the key as failed (jvm_startup.failed_marker) and
    says so."""
    if os.path.exists(written):
        os.remove(written)
    open(failed_marker(archive), "wb").close()
    _say(f"no archive written: {why}. dbt commands start without one and start no warm-up "
         f"for {RETRY_HOURS} h (delete {failed_marker(archive)} to try at the next command's "
         f"exit, or set SIZED_SPARK_NO_CLASS_ARCHIVE=1 to turn it off)")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
