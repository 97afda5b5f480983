#!/usr/bin/env bash
# The whole suite: unit, functional (real local Spark), dbt end to end, and dbt's peer suite,
# on pyspark 4. With PYSPARK=3.5: the engine's tests (unit and functional, not the dbt
# processes) on pyspark 3.5, in .venv-pyspark3.5.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV=.venv${PYSPARK:+-pyspark$PYSPARK}
. "$VENV/bin/activate"
export SPARK_LOCAL_IP=127.0.0.1
if [ -n "${PYSPARK:-}" ]; then
  pytest tests/unit tests/functional --ignore=tests/functional/dbt "$@"
else
  pytest "$@"
fi
