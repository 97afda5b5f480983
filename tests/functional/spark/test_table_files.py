"""Reading a chosen set of a table's files, listing them, and telling the metastore which
partitions a commit changed -- on a real Hive table with awkward partition values."""
from python_adapter.spark.catalog.tables import TableRef, describe_table
from python_adapter.io.fs import HadoopFS
from python_adapter.spark.local_table import local_table
from python_adapter.spark.table_files import read_files, with_file_values
from python_adapter.spark.catalog.sync import sync_changed_partitions
from python_adapter.table.files import current_files
from python_adapter.table.transaction import CatalogChange
from tests.functional.helpers import metastore_params

AWKWARD = ["plain", "a b", "x/y", "50%", "it's", None]


def _table(spark, schema):
    spark.sql(f"CREATE TABLE {schema}.t (id bigint, region string) USING parquet "
              f"PARTITIONED BY (region)")
    rows = [(i, AWKWARD[i % len(AWKWARD)]) for i in range(60)]
    (spark.createDataFrame(rows, "id bigint, region string").repartition(2)
     .write.insertInto(f"{schema}.t"))
    fs = HadoopFS(spark)
    location = fs.qualify(describe_table(spark, TableRef(schema, "t")).location)
    files = [f.path[len(location):].lstrip("/") for f in fs.list_files(location)]
    return fs, location, files


def test_listing_parses_the_same_statuses_as_asking_each_attribute(spark, schema):
    fs, location, files = _table(spark, schema)
    jvm = spark.sparkContext._jvm
    jpath = jvm.org.apache.hadoop.fs.Path(location)
    raw = jpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).listStatus(jpath)
    by_calls = sorted((HadoopFS._status_by_calls(st) for st in raw), key=lambda s: s.name)
    parsed = fs.list_dir(location)
    assert [(s.path, s.name, s.is_dir, s.modified_ms) for s in parsed] == \
        [(s.path, s.name, s.is_dir, s.modified_ms) for s in by_calls]
    assert len(files) >= len(AWKWARD)
    assert fs.list_dir(location + "/no_such_dir") == []


def test_read_files_reads_exactly_the_named_files(spark, schema):
    fs, location, files = _table(spark, schema)
    table_schema = spark.table(f"{schema}.t").schema
    every = read_files(spark, location, table_schema, files)
    assert sorted(tuple(r) for r in every.collect()) == \
        sorted(tuple(r) for r in spark.table(f"{schema}.t").collect())

    chosen = [f for f in files if "x%2Fy" in f or "__HIVE_DEFAULT_PARTITION__" in f]
    got = read_files(spark, location, table_schema, chosen)
    assert {r.region for r in got.collect()} == {"x/y", None}
    assert got.select("_metadata.file_path").distinct().count() == len(chosen)

    slots = {rel: i for i, rel in enumerate(chosen)}
    tagged = with_file_values(spark, read_files(spark, location, table_schema, files), ["region"],
                              slots, "slot")
    assert tagged.count() == got.count()
    per_slot = {r.slot: r["count"] for r in tagged.groupBy("slot").count().collect()}
    assert sorted(per_slot) == sorted(slots.values())


def test_read_files_reads_a_file_whose_name_holds_a_newline(spark, schema):
    # read_files sends the paths to the JVM joined by newlines: a name holding one (legal,
    # though no writer of ours makes it) must still be read as itself
    fs, location, files = _table(spark, schema)
    src = next(f for f in files if f.startswith("region=plain/"))
    odd = "region=plain/odd\nname.parquet"
    fs.rename(f"{location}/{src}", f"{location}/{odd}")
    names = [odd if f == src else f for f in files]
    got = read_files(spark, location, spark.table(f"{schema}.t").schema, names)
    assert got.count() == 60
    assert read_files(spark, location, None, [odd]).count() > 0


def test_sync_changed_partitions_adds_and_drops_only_those(spark, schema):
    fs, location, files = _table(spark, schema)
    table = TableRef(schema, "t")
    spark.sql(f"MSCK REPAIR TABLE {schema}.t SYNC PARTITIONS")
    before = {r[0] for r in spark.sql(f"SHOW PARTITIONS {schema}.t").collect()}
    assert len(before) == len(AWKWARD)

    # A new partition directory appears and one partition's files go away.
    new_dir = "region=new%2Fone"
    src = next(f for f in files if f.startswith("region=plain/"))
    fs.rename(f"{location}/{src}", f"{location}/{new_dir}/{src.split('/')[-1]}")
    gone = "region=it's"
    fs.delete(f"{location}/{gone}")
    index = {f.path: f for f in current_files(fs, location)}
    write_stats = sync_changed_partitions(spark, fs, location, table,
                                          CatalogChange.of(index, {"region=plain", new_dir, gone}))
    write_stats()  # the statistics of partitions registered already, as a commit settles

    after = {r[0] for r in spark.sql(f"SHOW PARTITIONS {schema}.t").collect()}
    assert len(after) == len(before)  # one added, one dropped
    values = {r.region for r in spark.table(f"{schema}.t").select("region").distinct().collect()}
    assert "new/one" in values and "it's" not in values and "plain" in values
    # the new partition and the one already registered carry their files' statistics
    stats = metastore_params(spark, schema, "t")[0]
    for part in ("region=plain", new_dir):
        files = [f for f in index.values() if f.partition == part]
        assert stats[part] == {"numFiles": len(files), "totalSize": sum(f.bytes for f in files)}


def _list_by_dirs(fs, path):
    """The reference listing: one listStatus per directory, each attribute asked for."""
    jvm_path = fs._path(path)
    out = []
    for st in fs._fs(jvm_path).listStatus(jvm_path):
        status = HadoopFS._status_by_calls(st)
        if status.name.startswith(".") or (status.name.startswith("_") and "=" not in status.name):
            continue  # Spark's rule: _x=1 is a partition directory, not hidden
        out += _list_by_dirs(fs, status.path) if status.is_dir else [status]
    return out


def test_list_files_by_level_matches_listing_each_directory(spark, schema):
    # Two partition levels with awkward values, plus what a table holds besides data: Spark's
    # _SUCCESS, our .sized metadata with files and directories below it, a hidden directory
    # inside a partition.
    spark.sql(f"CREATE TABLE {schema}.t2 (id bigint, region string, day string) USING parquet "
              f"PARTITIONED BY (region, day)")
    rows = [(i, AWKWARD[i % len(AWKWARD)], f"d{i % 3}") for i in range(60)]
    spark.createDataFrame(rows, "id bigint, region string, day string").repartition(2) \
        .write.insertInto(f"{schema}.t2")
    fs = HadoopFS(spark)
    location = fs.qualify(describe_table(spark, TableRef(schema, "t2")).location)
    for hidden in [".sized/timeline/1.commit", ".sized/staging/1/data/region=a/day=b/f.parquet",
                   "_SUCCESS", "region=plain/.hidden/f.parquet", "region=plain/_tmp/x"]:
        fs.write_bytes(f"{location}/{hidden}", b"x", overwrite=True)

    listed = fs.list_files(location)
    reference = sorted(_list_by_dirs(fs, location), key=lambda s: s.path)
    assert [(s.path, s.size, s.modified_ms, s.is_dir) for s in listed] == \
        [(s.path, s.size, s.modified_ms, s.is_dir) for s in reference]
    assert len(listed) >= len(AWKWARD) and all(s.name.endswith(".parquet") for s in listed)
    # The staging area is listed from its own root, hidden parents of the root not held
    # against it; an upsert's slot directories (_x=1) are partition-like, not hidden.
    fs.write_bytes(f"{location}/.sized/staging/1/data/region=a/__sized_slot=3/g.parquet", b"x",
                   overwrite=True)
    staged = fs.list_files(f"{location}/.sized/staging/1/data")
    assert [s.path.rsplit("/", 3)[1:] for s in staged] == [
        ["region=a", "__sized_slot=3", "g.parquet"], ["region=a", "day=b", "f.parquet"]]
    assert fs.list_files(f"{location}/no_such_dir") == []


def test_local_table_keeps_types_and_awkward_values(spark):
    import datetime
    import decimal
    rows = [(1, "it's \\ x", datetime.date(2025, 1, 2), decimal.Decimal("12.50"), True, 0.1),
            (-7, "é \\u0041 '' `", datetime.date(1900, 12, 31), decimal.Decimal("-0.01"), False,
             float("-inf")),
            (None, None, None, None, None, None)]
    columns = [("n", "bigint"), ("s", "string"), ("d", "date"), ("m", "decimal(10,2)"),
               ("b", "boolean"), ("x", "double")]
    for escaped in ("false", "true"):  # the text must not depend on the parser's escaping
        spark.conf.set("spark.sql.parser.escapedStringLiterals", escaped)
        try:
            df = local_table(spark, columns, rows)
            got = [tuple(r) for r in df.collect()]
        finally:
            spark.conf.unset("spark.sql.parser.escapedStringLiterals")
        assert [f.dataType.simpleString() for f in df.schema.fields] == [t for _, t in columns]
        assert got == rows
