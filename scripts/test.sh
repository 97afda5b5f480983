#!/usr/bin/env bash
# The whole suite: unit, functional (real local Spark), dbt end to end, and dbt's peer suite,
# on pyspark 4 and dbt-core 1.12. With PYSPARK=3.5: the engine's tests (the functional tier
# and the unit tier's parts that import dbt or pyspark; not the table services') and the dbt
# end-to-end tests of DBT_ON_BOTH below (Python models, init and debug; not dbt's peer
# suite, nor the Connect, cluster, thrift and kill ones) on pyspark 3.5, in
# .venv-pyspark3.5. DBT_CORE=1.11 runs either on dbt-core 1.11 (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# The whole suite on pyspark 4 fetches the S3A jars (~690 MB) beside its first pytest run,
# which does not need them; tests/functional/s3 wait for the fetch
WHOLE=$([ $# -eq 0 ] && [ -z "${PYSPARK:-}" ] && echo yes || true)
SIZED_S3A_JARS=${WHOLE:+later} bash scripts/setup.sh
VENV=.venv${PYSPARK:+-pyspark$PYSPARK}${DBT_CORE:+-dbt$DBT_CORE}
. "$VENV/bin/activate"
export SPARK_LOCAL_IP=127.0.0.1
# The whole suite first writes the JVM class archives its Spark processes start from
# (scripts/warm_class_archives.sh: in about a minute, in the foreground)
[ $# -eq 0 ] && bash scripts/warm_class_archives.sh
# Both cores: two pytest-xdist workers (SIZED_TEST_WORKERS=0 runs in this process). Each test
# module stays on one worker, so a module starts its Spark session, cluster or metastore
# service once, and a fixed port (the cluster's 7177, the metastore service's 9183 and 5533)
# is never held by two workers at once. Modules go out in the order of collection (no
# reordering), so each worker runs its modules in the order a serial run would.
WORKERS=(-n "${SIZED_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder)
# The tests marked extended (pytest.ini: a path another test runs, repeated on another
# deployment or at more kill points, a benchmark end to end): the whole suite
# and the pyspark 3.5 run leave them out unless SIZED_EXTENDED=1 (CI time); with the
# pyspark 4 venv and arguments (`bash scripts/test.sh tests/...`) they run
TIER=()
[ -z "${SIZED_EXTENDED:-}" ] && TIER=(-m "not extended")
# dbt end to end on pyspark 3.5 and dbt-core 1.11 too: Python models (dbt 1.11 words a
# failure's summary its own way) and `dbt init` / `dbt debug` (1.12's init runs a debug, 1.11's
# does not), whose `dbt run` builds the starter models. The integration project runs on
# pyspark 4 and dbt 1.12 only (CI time: 1.11 leaves dbt's support on 2026-12-19, and the
# engine's own tests cover pyspark 3.5)
DBT_ON_BOTH=(tests/functional/dbt/test_python_models.py tests/functional/dbt/test_init_and_debug.py)
if [ -n "${PYSPARK:-}" ]; then
  # tests/packaging: the wheel's Java helpers, compiled once against Spark 4, on Spark 3.5.
  # Of tests/functional/dbt the modules in DBT_ON_BOTH (the others are ignored one by one:
  # pytest drops a file named on the command line when its directory is --ignore'd)
  IGNORED=()
  for module in tests/functional/dbt/test_*.py; do
    [[ " ${DBT_ON_BOTH[*]} " == *" $module "* ]] || IGNORED+=(--ignore="$module")
  done
  # Not the table services (tests/functional/spark/services) nor the report: they run on the
  # write path's, the catalog's and the filesystem's Spark calls, which this run covers, and
  # add none of their own (pyspark 4's run keeps them).
  IGNORED+=(--ignore=tests/functional/spark/services --ignore=tests/functional/report)
  # Nor the table layer's commits and locks, a damaged timeline, the writers' locking, the
  # jobs' descriptions and the readers of the files (tests/functional/table, spark/test_{
  # unreadable_timeline,locking,job_descriptions,describes,readers,table_files}.py): what
  # they check is the table layer's, our wording or the files, the same on either Spark,
  # over the write path's Spark calls, which this run covers.
  # Nor, of the write path, the Bloom filters, constraints, definition changes, measuring,
  # encodings and the small-batch plan, nor the metastore's statistics: their Spark calls
  # (DataFrame reads and writes, SQL, Parquet options, the catalog) are those the writer's,
  # the upsert's, the snapshot's, the partition values' and the catalog's tests make here
  IGNORED+=(--ignore=tests/functional/table)
  for module in test_unreadable_timeline test_locking test_job_descriptions test_describes \
      test_readers test_table_files write/test_bloom write/test_constraints \
      write/test_definitions write/test_measure write/test_encodings write/test_small_batch \
      catalog/test_metastore_stats; do
    IGNORED+=(--ignore="tests/functional/spark/$module.py")
  done
  # Nor S3: pyspark 3.5's Hadoop (3.3.4) has no conditional writes, so the engine refuses
  # S3 there (the refusal's wording is a unit test)
  IGNORED+=(--ignore=tests/functional/s3)
  # Nor the crash and kill tests: where a write stops and what recovery does are the table
  # layer's, the same on either Spark (the unit tier's crash matrix and pyspark 4's run kill
  # every point); this run checks the Spark calls that make a write and a read. Of each
  # parametrized test of tests/functional, its first variant (tests/conftest.py): the others
  # vary the data, the plan or the strategy over calls the first or another module's tests
  # make (those marked every_variant vary types or kinds Spark versions treat apart, and
  # keep them all). Of the unit tier, the parts that import dbt, pyspark or Spark Connect's
  # client (dbt/, io/, cli/); the rest is pure planning (tests/unit/test_architecture.py)
  pytest "${WORKERS[@]}" tests/unit/dbt tests/unit/io tests/unit/cli tests/functional \
    tests/packaging "${IGNORED[@]}" --first-variant-under tests/functional \
    -k "not (crash or killed or kill or died or dies)" "${TIER[@]}" "$@"
elif [ $# -gt 0 ]; then
  pytest "${WORKERS[@]}" "$@"
else
  # tests/functional/s3 in a pytest process of their own: their Spark sessions need the S3A
  # jars on the JVM's launch, and another module's session would have launched it without
  sized-spark jars s3a >"$VENV/s3a-jars.log" 2>&1 &
  jars=$!
  pytest "${WORKERS[@]}" --ignore=tests/functional/s3 "${TIER[@]}"
  wait "$jars" || { cat "$VENV/s3a-jars.log"; exit 1; }
  # Their modules longest first (~390, ~145 and ~115 s of module fixtures and tests in a
  # local run; test_dbt_recovery_on_s3.py's are extended), so the two workers end close
  # together. A module not named here runs after them
  S3=(tests/functional/s3/test_table_on_s3.py tests/functional/s3/test_dbt_on_s3.py
      tests/functional/s3/test_crashes_on_s3.py)
  for module in tests/functional/s3/test_*.py; do
    [[ " ${S3[*]} " == *" $module "* ]] || S3+=("$module")
  done
  pytest "${WORKERS[@]}" "${S3[@]}" "${TIER[@]}"
fi
