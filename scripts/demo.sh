#!/usr/bin/env bash
# The demo: sets up what it needs (Java 17, .venv, this package), then in one dbt process
# (scripts/demo.py) builds integration_tests/ on the embedded Spark session, runs it again
# incrementally, and shows the sized tables' files next to dbt-spark's own incremental.
#   bash scripts/demo.sh       # the warehouse on local disk
#   bash scripts/demo.sh s3    # the warehouse on a local S3 server (SeaweedFS, Linux x86_64),
#                              # reached through S3A (its jars fetched once by Maven)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh demo ${1:-}
. .venv/bin/activate
python scripts/demo.py ${1:-}
