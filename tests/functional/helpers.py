"""Assertions shared by the functional tests: what a table holds and how its files look."""
from collections import defaultdict
from typing import Any, List, Sequence

import pytest

from python_adapter.spark.catalog.tables import TableRef
from python_adapter.spark.services.describe import read_layout

# The JIT's first tier only, for the Spark processes tests start (dbt commands, crash
# chains): each lives for seconds on a few thousand rows, where C2 compiling costs more
# CPU than it saves on 2 cores (test_dbt_project's microbatch test: 134 s -> 105 s). It
# does not change what runs. Not for the pytest process's own session: a test module runs
# long enough for C2 to pay (two modules with it took longer than 12 min against 8).
SHORT_JVM = {"JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1"}


# A write's steps, each a point its crash matrix stops at (table/commit.py: publish:N is after
# the N-th move), and those CI crosses (crash_points)
WRITE_POINTS = ("requested", "inflight", "publish:1", "publish:3", "published", "synced",
                "completed", "cleanup")
WRITE_POINTS_IN_CI = ("inflight", "publish:1", "completed")


def crash_points(points: Sequence[Any], ci: Sequence[Any]) -> List[Any]:
    """An operation's crash matrix as parameters: the points in `ci` run in every CI, the
    others are marked extended (scripts/test.sh runs them with SIZED_EXTENDED=1). `ci` holds
    one point before the operation's files are published, one in the middle of the publish
    and one after it completed, so each way a recovery goes (the commit undone, its moves
    undone, the commit kept) is crossed in CI; every point of the table layer itself runs in
    CI in tests/unit/table/test_crash_matrix.py and tests/functional/table/test_commit.py."""
    unknown = [point for point in ci if point not in points]
    assert not unknown, f"not points of the matrix: {unknown}"
    return [point if point in ci else pytest.param(
        *(point if isinstance(point, tuple) else (point,)), marks=pytest.mark.extended)
        for point in points]


def rows_of(spark, schema, name, cols="id, tag"):
    """The table's rows as a sorted list (a multiset check: duplicates and losses both show)."""
    return sorted(tuple(r) for r in spark.sql(f"select {cols} from {schema}.{name}").collect())


def rows_of_df(df, cols=("id", "tag")):
    return sorted(tuple(r) for r in df.select(*cols).collect())


def layout(spark, schema, name):
    return read_layout(spark, TableRef(schema, name))


def files_by_partition(spark, schema, name):
    out = {}
    for f in layout(spark, schema, name).files:
        out.setdefault(f.partition, []).append(f)
    return out


STATS = ("numFiles", "totalSize", "numRows")


def metastore_params(spark, schema, name, keys=STATS):
    """({partition name: {key: value}}, {key: value} of the table) of integer parameters
    (the statistics unless told) from the metastore's database (the embedded Derby of the
    test session), as a Hive client reads them."""
    # the metastore the JVM's Hive client opened (a later test module's session shares the
    # first one's JVM, and its own conf would name another directory)
    client = spark._jsparkSession.sharedState().externalCatalog().unwrapped().client()
    url = client.getConf("javax.jdo.option.ConnectionURL", "").replace(";create=true", "")
    conn = spark._jvm.java.sql.DriverManager.getConnection(url)
    try:
        wanted = ", ".join(f"'{k}'" for k in keys)
        where = f"d.NAME = '{schema}' AND t.TBL_NAME = '{name}' AND x.PARAM_KEY IN ({wanted})"
        parts, table = defaultdict(dict), {}
        rs = conn.createStatement().executeQuery(
            "SELECT p.PART_NAME, x.PARAM_KEY, x.PARAM_VALUE FROM PARTITION_PARAMS x "
            "JOIN PARTITIONS p ON p.PART_ID = x.PART_ID JOIN TBLS t ON t.TBL_ID = p.TBL_ID "
            f"JOIN DBS d ON d.DB_ID = t.DB_ID WHERE {where}")
        while rs.next():
            parts[rs.getString(1)][rs.getString(2)] = int(rs.getString(3))
        rs = conn.createStatement().executeQuery(
            "SELECT x.PARAM_KEY, x.PARAM_VALUE FROM TABLE_PARAMS x JOIN TBLS t ON "
            f"t.TBL_ID = x.TBL_ID JOIN DBS d ON d.DB_ID = t.DB_ID WHERE {where}")
        while rs.next():
            table[rs.getString(1)] = int(rs.getString(2))
        return dict(parts), table
    finally:
        conn.close()
