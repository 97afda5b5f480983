"""One process of a chain of real crashes (kill -9 at a fault point) of full refreshes that
change a table's definition, for test_definition_changes.py.

    python crash_chain.py <home> <expect> <action> [<action> ...]

home: the Spark home (Derby metastore, warehouse) the chain's processes share.
expect: '' or the definition (A or B) the table must hold, exactly, once recovered.
action: 'refresh:<A|B>' (a full refresh to that definition, then its rows checked), or
'crash:<A|B>:<point>' (the same, dying like kill -9 at the fault point: exit 137). The
process exits 0 when every action ran, 1 when a check failed, 3 when a crash point was
never reached.
"""
import os
import sys

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

A = ("day", """select cast(id as bigint) as id, date_add(date'2025-01-01', cast(id % 7 as int)) as day,
                      concat('a', id) as tag from range(3000)""")
B = ("region", """select cast(id as bigint) as id, concat('r', id % 5) as region,
                         sha2(cast(id as string), 256) as payload, id / 7.0 as score from range(2000)""")


def main():
    from benchmarks.lib.session import LocalSpark, start
    from python_adapter.spark.catalog.tables import TableRef, describe_table
    from python_adapter.core.config import parse_config
    from python_adapter.spark.services.rollback import recover_table
    from python_adapter.api import write_dataframe

    home, expect, actions = sys.argv[1], sys.argv[2], sys.argv[3:]
    spark = start(LocalSpark(home, app_name="sized-crash-chain", class_archive=True,
                             conf=(("spark.sql.shuffle.partitions", "4"),)))
    spark.sql("create database if not exists chain")
    table = TableRef("chain", "t")
    quiet = dict(log=lambda m: None)
    definitions = {"A": A, "B": B}

    def holds(name):
        info = describe_table(spark, table)
        pcol, sql = definitions[name]
        if info is None or list(info.partition_columns) != [pcol]:
            return False
        expected = spark.sql(sql)
        got = spark.table("chain.t").select(*expected.columns)
        return sorted(map(tuple, got.collect())) == sorted(map(tuple, expected.collect()))

    if expect:
        recover_table(spark, table, **quiet)
        if not holds(expect):
            info = describe_table(spark, table)
            print(f"CHECK FAILED: expected {expect}, table is {info}", flush=True)
            return 1
    for action in actions:
        kind, name, *point = action.split(":", 2)
        pcol, sql = definitions[name]
        cfg = parse_config({"partition_by": [pcol], "target_file_size": "20KB",
                            "incremental_strategy": "insert_overwrite"})
        if kind == "crash":
            os.environ["SIZED_SPARK_FAULT"] = point[0]
            os.environ["SIZED_SPARK_FAULT_MODE"] = "exit"
        write_dataframe(spark, spark.sql(sql), table, cfg, full_refresh=True, **quiet)
        if kind == "crash":
            print(f"CRASH POINT NEVER REACHED: {point[0]}", flush=True)
            return 3
        if not holds(name):
            print(f"CHECK FAILED: after a refresh to {name}", flush=True)
            return 1
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
