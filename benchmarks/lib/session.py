"""The benchmarks' Spark session: start_spark, a private session with Hive support whose
warehouse, Derby metastore and scratch space live in the run's work directory, bound to
loopback with the UI off; conf_set, session conf for a block."""
import os

LOCAL_MASTER = "local[2]"


def start_spark(work_dir, driver_memory, *, master=LOCAL_MASTER,
                app_name="sized-backfill-benchmark", fast_local_fs=True, warehouse_uri=False,
                conf=()):
    """A private session with Hive support; everything it writes is under work_dir.
    master: local[2], or a standalone cluster's spark://127.0.0.1:PORT.
    fast_local_fs=False: Hadoop's own local filesystem (a chmod process per file), not the
    one a dbt profile's embedded session gets (python_adapter.io.fast_local_fs.configure).
    warehouse_uri: the warehouse as a file:// URI (a cluster's executors share this disk).
    conf: more (key, value) settings."""
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    from python_adapter.io.fast_local_fs import configure

    warehouse = os.path.join(work_dir, "warehouse")
    metastore = os.path.join(work_dir, "metastore_db")
    builder = SparkSession.builder.master(master)
    if fast_local_fs:
        builder = configure(builder, master)
    builder = (
        builder.appName(app_name)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", driver_memory)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.warehouse.dir", ("file://" if warehouse_uri else "") + warehouse)
        .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                f"jdbc:derby:;databaseName={metastore};create=true")
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={work_dir}")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.local.dir", os.path.join(work_dir, "spark-local"))
    )
    for key, value in conf:
        builder = builder.config(key, value)
    spark = builder.enableHiveSupport().getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class conf_set:
    """Set session conf for a block, restore afterwards."""

    def __init__(self, spark, **pairs):
        self.spark, self.pairs, self.old = spark, pairs, {}

    def __enter__(self):
        for k, v in self.pairs.items():
            self.old[k] = self.spark.conf.get(k, None)
            self.spark.conf.set(k, str(v))

    def __exit__(self, *exc):
        for k, v in self.old.items():
            if v is None:
                self.spark.conf.unset(k)
            else:
                self.spark.conf.set(k, v)
