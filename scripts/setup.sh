#!/usr/bin/env bash
# Sets up what a fresh machine lacks: Java 17 (Spark needs it) and a venv with this package.
#   bash scripts/setup.sh        # for the tests: .venv, the package with its test and bench extras
#   bash scripts/setup.sh demo   # for the demo: .venv, the package alone
#   PYSPARK=3.5 bash scripts/setup.sh   # .venv-pyspark3.5, the tests' extras on pyspark 3.5
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
VENV=.venv${PYSPARK:+-pyspark$PYSPARK}
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
. "$VENV/bin/activate"
python -m pip install -q --upgrade pip
# non-editable: the build copies macros/ into the package (dbt/include/sized_spark/macros)
if [ "${1:-}" = demo ]; then
  python -m pip install -q .
elif [ -n "${PYSPARK:-}" ]; then
  python -m pip install -q ".[test]" "pyspark==$PYSPARK.*"
else
  python -m pip install -q ".[test,bench,connect]"
fi
