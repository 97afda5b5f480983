"""Spark-friendly stand-ins for the Postgres SQL of dbt-tests-adapter's snapshot suites.

Spark's Parquet tables support neither UPDATE nor DELETE, so the suites' edits of their
source (and expected) tables are done as Spark can: read the table with the change
applied, materialize it, overwrite the table. The suites' snapshots and assertions stay
theirs.
"""
import re

from dbt.tests.util import generate_update_clause, relation_from_name


def _session():
    from pyspark.sql import SparkSession
    return SparkSession.getActiveSession() or SparkSession._instantiatedSession


def rewrite_table(name, changes, where=None):
    """Overwrite table `name` (schema.table) with `changes` ({column: SQL expression}) applied
    to the rows `where` holds (all rows without it), or, with changes None, without those
    rows (a DELETE). The new rows are checkpointed first: Spark refuses to overwrite a
    table from a plan that reads it."""
    from pyspark.sql import functions as F
    spark = _session()
    df = spark.table(name)
    changes = None if changes is None else {k.lower(): v for k, v in changes.items()}
    cond = F.expr(where) if where else F.lit(True)
    if changes is None:
        out = df.where(~cond)
    else:
        out = df.select(*[F.when(cond, F.expr(changes[c.name.lower()]).cast(c.dataType))
                           .otherwise(F.col(c.name)).alias(c.name)
                          if c.name.lower() in changes else F.col(c.name) for c in df.schema.fields])
    out.localCheckpoint().write.insertInto(name, overwrite=True)
    spark.catalog.refreshTable(name)


def spark_update_rows(adapter, update_rows_config):
    """dbt.tests.util.update_rows for Parquet tables: the same clause (dbt's
    generate_update_clause), applied by rewrite_table."""
    relation = relation_from_name(adapter, update_rows_config["name"])
    clause = generate_update_clause(adapter, update_rows_config["clause"])
    rewrite_table(f"{relation.schema}.{relation.identifier}",
                  {update_rows_config["dst_col"]: clause}, update_rows_config.get("where"))


def spark_sql(sql):
    """A Postgres fixture statement in Spark's dialect: Parquet tables, `::type` casts with
    Spark's type names, timestamp literals typed (Spark will not cast a string on insert)."""
    sql = re.sub(r"\bTEXT\b", "STRING", sql)
    sql = re.sub(r"::text\b", "::string", sql)
    sql = re.sub(r"'(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)'", r"timestamp'\1'", sql)
    sql = re.sub(r"(create table [^(]+\((?:[^;])*?\))\s*;", r"\1 using parquet;", sql,
                 flags=re.IGNORECASE | re.DOTALL)
    return sql.replace("{database}.{schema}", "{schema}")


_UPDATE = re.compile(r"^update\s+(\S+)\s+set\s+(.*?)(?:\s+where\s+(.*))?$", re.I | re.S)
_DELETE = re.compile(r"^delete\s+from\s+(\S+)(?:\s+where\s+(.*))?$", re.I | re.S)


def _without_comments(sql):
    return "\n".join(line for line in sql.splitlines() if not line.strip().startswith("--")).strip()


def spark_run_sql(run_sql, schema):
    """project.run_sql for the suites' Postgres fixtures: statement by statement, in
    Spark's dialect; UPDATE and DELETE done by rewrite_table."""
    def run(sql, fetch=None):
        result = None
        for statement in filter(None, map(_without_comments, spark_sql(sql).split(";"))):
            statement = statement.replace("{schema}", schema)
            update, delete = _UPDATE.match(statement), _DELETE.match(statement)
            if update:
                sets = re.split(r",\s*(?=\w+\s*=)", update.group(2))
                changes = {k.strip(): v.strip() for k, v in (s.split("=", 1) for s in sets)}
                rewrite_table(update.group(1), changes, update.group(3))
                run_sql(f"refresh table {update.group(1)}")  # dbt's session's cached listing
            elif delete:
                rewrite_table(delete.group(1), None, delete.group(2))
                run_sql(f"refresh table {delete.group(1)}")
            else:
                result = run_sql(statement, fetch=fetch)
        return result
    return run
