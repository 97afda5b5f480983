#!/usr/bin/env bash
# A Hive metastore service on 127.0.0.1 backed by a PostgreSQL server of its own: the
# package's `sized-spark serve metastore` (python_adapter/cli/metastore.py says what it starts
# and which SIZED_METASTORE_* settings it reads), run by this clone's Python.
#   bash scripts/metastore.sh start|stop|status
# `start` prints the service's thrift URI as its last line; `stop` stops the two processes
# it started. PYTHON: the Python whose pyspark runs it (default: the clone's .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-$PWD/.venv/bin/python}" -m python_adapter.cli serve metastore "${1:-status}"
