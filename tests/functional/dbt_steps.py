"""Run several dbt commands in one process (dbtRunner), as an orchestrator would: the JVM
and the Spark session start once instead of once per command.

    python dbt_steps.py '<json list of argument lists>'

Each step's output is framed by marker lines, so the caller can split it per step. A step
["!sh", "<command>"] runs a shell command between dbt commands (a test damaging a table);
["!env", "<name>", "<value>"] sets an environment variable for the commands after it, and
["!env", "<name>"] removes it (a model reading env_var)."""
import json
import os
import subprocess
import sys

from dbt.cli.main import dbtRunner

BEGIN, END = "=== sized-dbt-step", "=== sized-dbt-end"


def main():
    steps = json.loads(sys.argv[1])
    failed = False
    for i, args in enumerate(steps):
        print(f"{BEGIN} {i}", flush=True)
        if args[0] == "!sh":
            success = subprocess.run(args[1], shell=True).returncode == 0
        elif args[0] == "!env":
            success = True
            if len(args) > 2:
                os.environ[args[1]] = args[2]
            else:
                os.environ.pop(args[1], None)
        else:
            success = bool(dbtRunner().invoke(args).success)
        print(f"{END} {i} success={success}", flush=True)
        failed = failed or not success
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
