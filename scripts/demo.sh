#!/usr/bin/env bash
# The demo: sets up what it needs (Java 17, .venv, this package), then in one dbt process
# (scripts/demo.py) builds integration_tests/ on the embedded Spark session, runs it again
# incrementally, and shows the sized tables' files next to dbt-spark's own incremental.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh demo
. .venv/bin/activate
python scripts/demo.py
