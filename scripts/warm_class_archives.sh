#!/usr/bin/env bash
# The JVM class archives the suite's Spark processes start from (python_adapter/io/
# jvm_startup.py), one per key the suite uses: the test sessions' (the checkout's helper jar:
# benchmarks/lib/session.py) and, on pyspark 4, a dbt profile's (the installed package's jar;
# its copy runs from /, away from the checkout). Without them the first dbt command would
# start a warm-up at its exit, beside the tests, and the Spark processes before it finished
# would start slower; test sessions never start one. The warm-ups (python_adapter/io/
# class_warmup.py) run side by side, in about a minute, each printing a line of what it
# wrote; an archive already there is kept, and a failed one costs only speed.
# In the venv scripts/setup.sh made for PYSPARK / DBT_CORE (scripts/test.sh's).
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=.venv${PYSPARK:+-pyspark$PYSPARK}${DBT_CORE:+-dbt$DBT_CORE}
. "$VENV/bin/activate"
export SPARK_LOCAL_IP=127.0.0.1
(PYTHONPATH=. timeout 900 python -m python_adapter.io.class_warmup) &
sessions=$!
if [ -z "${PYSPARK:-}" ]; then
  (cd / && timeout 900 python -m python_adapter.io.class_warmup) || true
fi
wait "$sessions" || true
