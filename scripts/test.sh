#!/usr/bin/env bash
# The one test command: installs the package with its test-only peers, then lints, type-checks
# and runs the whole test suite. README.md and .ci/run both call this script.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e ".[test]"
echo "== ruff"; python3 -m ruff check . && python3 -m ruff format --check .
echo "== mypy"; python3 -m mypy
echo "== pytest"; python3 -m pytest "$@"
