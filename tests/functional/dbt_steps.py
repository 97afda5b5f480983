"""Run several dbt commands in one process (dbtRunner), as an orchestrator would: the JVM
and the Spark session start once instead of once per command.

    python dbt_steps.py '<json list of argument lists>'

Each step's output is framed by marker lines, so the caller can split it per step."""
import json
import sys

from dbt.cli.main import dbtRunner

BEGIN, END = "=== sized-dbt-step", "=== sized-dbt-end"


def main():
    steps = json.loads(sys.argv[1])
    failed = False
    for i, args in enumerate(steps):
        print(f"{BEGIN} {i}", flush=True)
        result = dbtRunner().invoke(args)
        print(f"{END} {i} success={bool(result.success)}", flush=True)
        failed = failed or not result.success
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
