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
# Both cores: two pytest-xdist workers (SIZED_TEST_WORKERS=0 runs in this process). Each test
# module stays on one worker, so a module starts its Spark session, cluster or metastore
# service once, and a fixed port (the cluster's 7177, the metastore service's 9183 and 5533)
# is never held by two workers at once. Modules go out in the order of collection (no
# reordering), so each worker runs its modules in the order a serial run would.
WORKERS=(-n "${SIZED_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder)
if [ -n "${PYSPARK:-}" ]; then
  pytest "${WORKERS[@]}" tests/unit tests/functional --ignore=tests/functional/dbt "$@"
else
  pytest "${WORKERS[@]}" "$@"
fi
