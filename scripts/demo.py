"""The demo, in one dbt process (dbtRunner): a full build of integration_tests/ on the
embedded Spark session, an incremental run (the last week again), and the files of the
sized tables next to dbt-spark's own `incremental` on the same rows.

    python scripts/demo.py            # from the repository, after scripts/setup.sh
"""
import os
import shutil
import sys
import time
from pathlib import Path

from dbt.cli.main import dbtRunner

PROJECT = Path(__file__).resolve().parents[1] / "integration_tests"
STEPS = [
    ("a full build of every model, seed and test", ["build", "--full-refresh"]),
    ("an incremental run: the last week's partitions again", ["build"]),
    ("the files of the tables", ["run-operation", "demo_summary"]),
]


def main() -> int:
    os.chdir(PROJECT)
    os.environ.setdefault("SIZED_SPARK_HOME", str(PROJECT / ".spark"))
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if not os.environ.get("KEEP_STATE"):
        shutil.rmtree(os.environ["SIZED_SPARK_HOME"], ignore_errors=True)
        shutil.rmtree(PROJECT / "target", ignore_errors=True)
    started = time.monotonic()
    runner = dbtRunner()
    for i, (what, args) in enumerate(STEPS, 1):
        print(f"\n=== demo step {i} of {len(STEPS)}: {what} (dbt {' '.join(args)})", flush=True)
        if not runner.invoke([*args, "--profiles-dir", str(PROJECT)]).success:
            print(f"demo step {i} failed", file=sys.stderr)
            return 1
    print(f"\ndemo done in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
