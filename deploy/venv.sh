#!/usr/bin/env bash
# Create or update the project's virtual environment (.venv) with the Python side
# installed editable.
#   deploy/venv.sh        plus the test extras (make test; what a developer wants)
#   deploy/venv.sh base   without them (make demo: pytest, selenium, EasyBuild, mkdocs and clingo
#                         cost a fresh machine about 15 s it does not need; a later plain run adds them)
# Idempotent: it reinstalls only when pyproject.toml changed since the last successful run, or when
# the test extras are wanted and that run installed the base only.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
venv=${PGMPI_VENV:-$top/.venv}
py=${PYTHON:-python3}
if [ ! -x "$venv/bin/python" ]; then
  echo "venv: creating $venv"
  "$py" -m venv "$venv"
fi
want=${1:-test}
case "$want" in test|base) ;; *) echo "usage: $0 [base]" >&2; exit 2 ;; esac
stamp=$venv/.pgmpi-installed     # holds what the last successful run installed: test or base
if [ -f "$stamp" ] && [ "$stamp" -nt "$top/pyproject.toml" ]; then
  have=$(cat "$stamp")
  if [ "$have" != base ] || [ "$want" = base ]; then    # an older stamp (empty) had the test extras
    echo "venv: up to date ($venv)"
    exit 0
  fi
fi
what=""; [ "$want" = base ] && what=" (without the test extras)"
echo "venv: installing pgmpi-site and its dependencies into $venv$what"
"$venv/bin/pip" install -q --disable-pip-version-check --upgrade pip >/dev/null
if [ "$want" = base ]; then
  "$venv/bin/pip" install -q --disable-pip-version-check -e "$top"
else
  "$venv/bin/pip" install -q --disable-pip-version-check -e "$top[test]"
fi
echo "$want" > "$stamp"
echo "venv: done"
