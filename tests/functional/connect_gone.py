"""A Spark Connect client (no JVM in this process) whose server is killed while it
publishes, for tests/functional/dbt/test_connect_server_gone.py.

    python connect_gone.py <url> <server pid file>

Writes ck.t (4,000 rows, tag a), then upserts every row again (tag b) and kills the
server (kill -9, by the pid in the file) after the upsert's first rename. Prints the
error the engine raised, `ERROR <seconds after the kill> <class> <message>`, and exits 0;
exits 1 when the upsert did not fail."""
import os
import signal
import sys
import time

os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"  # pyspark's functions over Connect


def main():
    from python_adapter import api
    from python_adapter.core.config import parse_config
    from python_adapter.spark.catalog.tables import TableRef
    from python_adapter.table import faults

    url, pid_file = sys.argv[1], sys.argv[2]
    spark = api.connect_session(api.ConnectBound(url, 2.0, 1))
    spark.sql("create database if not exists ck")
    table = TableRef("ck", "t")
    cfg = parse_config({"partition_by": ["p"], "unique_key": "id", "target_file_size": "64KB"})
    sql = "select id, id % 4 as p, concat('{}', id) as tag from range(4000)"
    api.write_model(spark, table, sql.format("a"), cfg, log=lambda m: None)
    killed = []

    def kill_the_server():
        faults.run_at("publish", None)
        os.kill(int(open(pid_file).read()), signal.SIGKILL)
        killed.append(time.monotonic())

    # a request per rename (connect_fs.rename_many under fault injection): the kill falls
    # between the upsert's first rename and its second
    os.environ["SIZED_SPARK_FAULT"] = "none"
    faults.run_at("publish", kill_the_server)
    try:
        api.write_model(spark, table, sql.format("b"), cfg, log=lambda m: None)
    except Exception as exc:
        print(f"ERROR {time.monotonic() - killed[0]:.1f} {type(exc).__name__} {exc}", flush=True)
        return 0
    return 1


if __name__ == "__main__":
    sys.exit(main())
