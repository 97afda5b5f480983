"""Getting started runs as written: its blocks shown as files (```yaml title="profiles.yml",
```sql title="models/events.sql") are written into an empty folder as shown, and the `dbt`
lines of its bash blocks run there in order, as a user would copy them (one process,
dbtRunner: the embedded Spark starts once). Every command succeeds, and the table is what
the page says: the generated rows, in 30 daily partitions, read by DuckDB as plain Parquet
under the project's .spark/warehouse."""
import os
import subprocess
import sys
from pathlib import Path

import duckdb

from tests.docs.test_examples import ROOT, blocks_of

PAGE = ROOT / "docs" / "getting-started.md"
# the commands a new project runs; the install and the existing project's diff are not its
RUNS = ("dbt run", "dbt test", "dbt run-operation", "dbt debug", "dbt build")
RUNNER = """
import shlex, sys
from dbt.cli.main import dbtRunner
runner = dbtRunner()
for line in sys.argv[1:]:
    args = shlex.split(line)[1:]
    result = runner.invoke(args)
    print(f"=== {line}: {'ok' if result.success else 'FAILED'}", flush=True)
    if not result.success:
        sys.exit(1)
"""


def _files_and_commands():
    files, commands = {}, []
    for block in blocks_of(PAGE):
        if block.title:
            files[block.title] = block.text
        elif block.lang == "bash":
            for line in block.text.splitlines():
                command = line.split("#", 1)[0].strip()
                if command.startswith(RUNS):
                    commands.append(command)
    return files, commands


def test_the_page_shows_a_project_and_its_commands():
    files, commands = _files_and_commands()
    assert {"dbt_project.yml", "profiles.yml", "models/stg_events.sql",
            "models/events.sql"} <= set(files), sorted(files)
    assert commands[:3] == ["dbt run", "dbt run", "dbt test"], commands


def test_the_project_runs_as_written(tmp_path):
    files, commands = _files_and_commands()
    project = tmp_path / "my_project"
    for name, text in files.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", DBT_SEND_ANONYMOUS_USAGE_STATS="false")
    proc = subprocess.run([sys.executable, "-c", RUNNER, *commands], cwd=project, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert proc.stdout.count(": ok") == len(commands)
    print("\n".join(line for line in proc.stdout.splitlines() if " OK " in line or "===" in line))
    warehouse = project / ".spark" / "warehouse" / "analytics.db" / "events"
    rows, days = duckdb.sql(
        f"select count(*), count(distinct event_date) from "
        f"read_parquet('{warehouse}/**/*.parquet', hive_partitioning = true)").fetchall()[0]
    assert (rows, days) == (200_000, 30)
    assert (project / ".spark" / "metastore_db").is_dir()
    assert not (project / "spark-warehouse").exists() and not (project / "metastore_db").exists()
