#!/usr/bin/env bash
# The one test command: installs the package with its test-only peers, then lints, type-checks
# and runs the whole test suite. README.md and .ci/run both call this script.
#
# bash scripts/test.sh --quick [pytest args]: the quick loop for an installed checkout (under a
# minute on 2 cores): ruff, then every subpackage's tests except those marked slow (over about
# 0.3 s of one core), spark or postgres (each starts a JVM or a database cluster), hypothesis
# with fewer examples (profile "quick"); no install, type check, docs or notebooks.
set -euo pipefail
cd "$(dirname "$0")/.."
# Keep bytecode: pytest caches its rewritten test modules as bytecode (without it every run
# rewrites ~600 modules, half of the quick tier's collection), and each CLI test's subprocess
# would compile the package again.
unset PYTHONDONTWRITEBYTECODE
if [ "${1:-}" = "--quick" ]; then
  shift
  echo "== ruff"; python3 -m ruff check . && python3 -m ruff format --check .
  echo "== pytest (quick)"
  HYPOTHESIS_PROFILE=quick exec python3 -m pytest -n auto --dist worksteal -q \
    -m "not slow and not spark and not postgres" "$@"
fi
python3 -m pip install --quiet --disable-pip-version-check -e ".[test,docs,spark,notebooks,postgres]"
# Opacus' accountants are checked against infodp's (tests/accounting/interop): they need only
# numpy and scipy, so Opacus comes without its torch dependency (several GB of CUDA wheels).
python3 -m pip install --quiet --disable-pip-version-check --no-deps "opacus>=1.5,<2"
echo "== ruff"; python3 -m ruff check . && python3 -m ruff format --check .
echo "== mypy"; python3 -m mypy
# The HTML report tests open the report in headless Chromium (Debian's package).
if ! command -v chromium >/dev/null; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium
fi
# The Spark backend's tests run Spark in local mode: pyspark 4 needs a Java 17+ runtime.
if ! command -v java >/dev/null && [ -z "${JAVA_HOME:-}" ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends default-jre-headless
fi
# The PostgreSQL ledger's tests start a throw-away cluster (tests/_postgres.py: initdb and
# pg_ctl as the unprivileged user "postgres", on a loopback port): Debian's server package.
if ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends postgresql
fi
# docs/deployment.md's nginx configuration is tested on loopback (tests/server/test_nginx.py).
if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends nginx-light
fi
# The site build also executes the notebooks in examples/ (mkdocs-jupyter, allow_errors: false:
# a failing cell fails the build), so pytest does not run them a second time.
echo "== docs"; NO_MKDOCS_2_WARNING=1 python3 -m mkdocs build --strict
# tests/test_docs_site.py checks this build instead of making its own.
export INFODP_BUILT_SITE="$PWD/build/site"
# In parallel on every core (-n auto, work stealing so the long hypothesis tests do not leave
# a core idle; tests that use files or ports use tmp_path and free ports). For a quick local
# loop: bash scripts/test.sh --quick.
# The 25 slowest tests are listed at the end (what a faster full run would start from).
echo "== pytest"; python3 -m pytest -n auto --dist worksteal --durations=25 "$@"
