"""A sized model's config typo (or bad value) fails `dbt parse` / `dbt compile` / the start of
`dbt run` at once, with the materialization's own message, before a JVM starts (the plugin
checks the parsed project in set_macro_resolver): not after the Spark session's start.

The commands run through dbtRunner in one process of their own, which then says whether
pyspark ever launched its JVM."""
import json
import os
import subprocess
import sys
import textwrap

PROFILE = """
typo:
  target: dev
  outputs:
    dev:
      type: sized_spark
      method: session
      host: localhost
      schema: typo
      server_side_parameters:
        spark.master: "local[1]"
        spark.driver.host: "127.0.0.1"
        spark.ui.enabled: "false"
"""
GOOD = ("{{ config(materialized='sized_incremental', partition_by=['d'], "
        "target_file_size='1MB') }}\nselect 1 as id, 2 as d\n")
TYPO = "{{ config(materialized='table', target_filesize='1MB') }}\nselect 1 as id\n"
BAD_VALUE = ("{{ config(materialized='incremental', unique_key='id', "
             "target_file_size='12 parsecs') }}\nselect 1 as id\n")
OPTED_OUT = "{{ config(materialized='table', sized=false, target_filesize='1MB') }}\nselect 1\n"

# each step: [dbt arguments, a model file to write first or None]; prints one JSON line
RUNNER = textwrap.dedent("""
    import json, os, sys, time
    from dbt.cli.main import dbtRunner
    for args, write in json.loads(sys.argv[1]):
        if write:
            with open(write[0], "w") as fh:
                fh.write(write[1])
        start = time.monotonic()
        res = dbtRunner().invoke(args)
        from pyspark import SparkContext
        print(json.dumps({"success": res.success, "error": str(res.exception or ""),
                          "seconds": time.monotonic() - start,
                          "jvm": SparkContext._gateway is not None}), flush=True)
""")


def _steps(project, steps):
    flags = ["--project-dir", str(project), "--profiles-dir", str(project)]
    plan = [[[*args, *flags], [str(project / "models" / name), text] if name else None]
            for args, name, text in steps]
    out = subprocess.run([sys.executable, "-c", RUNNER, json.dumps(plan)], cwd=project,
                         capture_output=True, text=True, timeout=600,
                         env={**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"})
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == len(steps), out.stdout[-3000:] + out.stderr[-3000:]
    return lines





def test_a_config_typo_fails_compile_before_spark_starts(tmp_path):
    project = tmp_path / "typo"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(
        "name: typo\nversion: '1.0'\nconfig-version: 2\nprofile: typo\n")
    (project / "profiles.yml").write_text(PROFILE)
    (project / "models" / "good.sql").write_text(GOOD)
    typo, parse, value, run, fixed, opted = _steps(project, [
        (["compile"], "bad.sql", TYPO),
        (["parse"], None, None),
        (["compile"], "bad.sql", BAD_VALUE),
        (["run"], None, None),
        (["compile", "--no-populate-cache"], "bad.sql", GOOD),
        (["parse"], "bad.sql", OPTED_OUT),  # dbt-spark's table: not ours to check
    ])
    assert not typo["success"] and not typo["jvm"] and typo["seconds"] < 20, typo
    assert typo["error"].endswith(
        "table model typo.bad: target_filesize: not a config key of the sized_spark adapter, "
        "dbt or dbt-spark; did you mean `target_file_size`? Nothing was written"), typo
    assert not parse["success"] and "target_filesize" in parse["error"], parse
    assert not value["success"] and "incremental model typo.bad: target_file_size: cannot " \
        "read '12 parsecs' as a size" in value["error"], value
    assert not run["success"] and "12 parsecs" in run["error"] and not run["jvm"], run
    assert fixed["success"] and not fixed["jvm"], fixed
    assert opted["success"] and not opted["jvm"], opted
