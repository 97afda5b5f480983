#!/usr/bin/env bash
# The demo: a real `dbt build` of integration_tests/ on the embedded Spark session, then an
# incremental run (insert_overwrite of the last week), then the layout of one table.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
export SPARK_LOCAL_IP=127.0.0.1
cd integration_tests
export SIZED_SPARK_HOME=${SIZED_SPARK_HOME:-$PWD/.spark}
if [ -z "${KEEP_STATE:-}" ]; then rm -rf "$SIZED_SPARK_HOME" target; fi
dbt build --profiles-dir . --full-refresh
dbt build --profiles-dir .
dbt run-operation sized_layout --profiles-dir . --args '{relation: sized_it.events_exact}'
