#!/usr/bin/env bash
# A Spark Connect server on 127.0.0.1 with dbt-sized-spark's server extension: the package's
# `sized-spark serve connect` (python_adapter/cli/connect_server.py says what it starts and
# which SIZED_CONNECT_* settings it reads), run by this clone's Python.
#   bash scripts/connect_server.sh start|stop|status [--s3]
# `start` prints the server's sc:// URL as its last line; `stop` stops the pid it started.
# PYTHON: the Python whose pyspark runs the server (default: the clone's .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-$PWD/.venv/bin/python}" -m python_adapter.cli serve connect "${1:-status}" "${@:2}"
