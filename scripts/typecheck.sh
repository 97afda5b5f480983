#!/usr/bin/env bash
# The type checker: mypy over python_adapter/ and dbt/ with pyproject.toml's [tool.mypy]
# (its `files`, and the overrides that say which libraries are let off and why), from the
# repo root, whose directories name the modules (explicit_package_bases). Runs in the venv
# scripts/setup.sh makes (mypy comes with the `typecheck` extra); VENV=<dir> picks another.
# Exits non-zero when mypy reports an error. Extra arguments go to mypy.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
if [ ! -x "$VENV/bin/python" ]; then
  echo "typecheck: no venv at $VENV (bash scripts/setup.sh makes it, or set VENV)" >&2
  exit 2
fi
exec "$VENV/bin/python" -m mypy "$@"
