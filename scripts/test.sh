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
# The whole suite first writes the JVM class archives its Spark processes start from
# (python_adapter/io/jvm_startup.py): a process that exits normally writes one, and on a fresh
# machine the first to do so came 23 minutes in (crash tests kill theirs), so every dbt and
# crash-chain process before started ~13 s slower. One dbt run and one engine write, side by
# side, write both kinds (a dbt profile's and a test session's) in about two minutes. Their
# output goes through a pipe so the wait lasts until the JVM, which writes the archive after
# Python exits and holds the pipe, is done.
warm_class_archives() {
  local warm; warm=$(mktemp -d)
  (PYTHONPATH=. timeout 600 python tests/functional/crash_chain.py "$warm/chain" '' refresh:A 2>&1 \
    | cat >/dev/null) &
  local chain=$!
  if [ -z "${PYSPARK:-}" ]; then
    cp -r tests/functional/dbt_mini "$warm/mini" && cp integration_tests/profiles.yml "$warm/mini/"
    (cd "$warm/mini" && SIZED_SPARK_HOME="$warm/spark" DBT_SEND_ANONYMOUS_USAGE_STATS=false \
      timeout 600 dbt run --select orders --profiles-dir . --target embedded 2>&1 | cat >/dev/null) || true
  fi
  wait "$chain" || true
  rm -rf "$warm"
}
[ $# -eq 0 ] && warm_class_archives
# Both cores: two pytest-xdist workers (SIZED_TEST_WORKERS=0 runs in this process). Each test
# module stays on one worker, so a module starts its Spark session, cluster or metastore
# service once, and a fixed port (the cluster's 7177, the metastore service's 9183 and 5533)
# is never held by two workers at once. Modules go out in the order of collection (no
# reordering), so each worker runs its modules in the order a serial run would.
WORKERS=(-n "${SIZED_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder)
if [ -n "${PYSPARK:-}" ]; then
  # tests/packaging: the wheel's Java helpers, compiled once against Spark 4, on Spark 3.5
  pytest "${WORKERS[@]}" tests/unit tests/functional tests/packaging --ignore=tests/functional/dbt "$@"
else
  pytest "${WORKERS[@]}" "$@"
fi
