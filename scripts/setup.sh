#!/usr/bin/env bash
# Sets up what a fresh machine lacks: Java 17 (Spark needs it) and a venv with this package.
# The JDK, not only the JRE: its javac builds the embedded session's local filesystem
# (python_adapter/fast_local_fs.py), which writes files without a chmod process per file.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! java -version 2>&1 | grep -q 'version "17' || ! command -v javac >/dev/null; then
  echo "installing Java 17 (JDK)"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq openjdk-17-jdk-headless >/dev/null
fi
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
# non-editable: the build copies macros/ into the package (dbt/include/sized_spark/macros)
python -m pip install -q ".[test,bench]"
