"""The HTML report of a real table on a local Spark, written through the Hadoop FileSystem."""
import re

from python_adapter.spark.catalog.tables import TableRef
from python_adapter.spark.services.cluster_exec import run_clustering
from python_adapter.core.config import parse_config
from python_adapter.report import write_report
from python_adapter.api import write_dataframe

QUIET = dict(log=lambda m: None)


def cfg(**kw):
    base = {"partition_by": ["day"], "incremental_strategy": "insert_overwrite",
            "target_file_size": 16_000, "distribution": "exact"}
    base.update(kw)
    return parse_config(base)


def test_report_of_a_real_table(spark, schema, events, tmp_path):
    table = TableRef(schema, "rep")
    write_dataframe(spark, events(days=4), table, cfg(), **QUIET)
    # a naive rewrite of two days leaves Spark's task files; a clustering plan waits
    write_dataframe(spark, events(days=4, tag="v2").where("day >= date'2025-01-03'"), table,
                    cfg(distribution="none"), **QUIET)
    run_clustering(spark, table, ["id"], schedule_only=True, **QUIET)

    logs = []
    written = write_report(spark, table, str(tmp_path / "out" / "report.html"), log=logs.append)
    path = tmp_path / "out" / "report.html"
    assert path.exists() and written.startswith("file:") and written.endswith("/report.html")
    assert any(written in m for m in logs)
    page = path.read_text(encoding="utf-8")
    assert f"{schema}.rep" in page
    for day in ("2025-01-01", "2025-01-02", "2025-01-03", "2025-01-04"):
        assert f"day={day}" in page
    assert "full_refresh" in page and "insert_overwrite" in page
    assert "Pending plans (1)" in page
    assert "http://" not in page and "https://" not in page
    files = re.search(r'<div class="label">Files</div><div class="value">([\d,]+)</div>', page)
    assert int(files.group(1).replace(",", "")) > 4

    # a file:// URI and a string table name work too, and the report is overwritten
    uri = (tmp_path / "out" / "again.html").as_uri()
    assert write_report(spark, f"{schema}.rep", uri, **QUIET).endswith("/again.html")
    assert write_report(spark, f"{schema}.rep", uri, **QUIET)
    assert "day=2025-01-04" in (tmp_path / "out" / "again.html").read_text(encoding="utf-8")
