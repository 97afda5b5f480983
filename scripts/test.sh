#!/usr/bin/env bash
# The whole suite: unit, functional (real local Spark), dbt end to end, and dbt's peer suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
export SPARK_LOCAL_IP=127.0.0.1
pytest "$@"
