#!/usr/bin/env bash
# Create or update the project's virtual environment (.venv) with the Python side
# installed editable plus the test extras. Idempotent: it reinstalls only when
# pyproject.toml changed since the last successful run.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
venv=${PGMPI_VENV:-$top/.venv}
py=${PYTHON:-python3}
if [ ! -x "$venv/bin/python" ]; then
  echo "venv: creating $venv"
  "$py" -m venv "$venv"
fi
stamp=$venv/.pgmpi-installed
if [ -f "$stamp" ] && [ "$stamp" -nt "$top/pyproject.toml" ]; then
  echo "venv: up to date ($venv)"
  exit 0
fi
echo "venv: installing pgmpi-site and its dependencies into $venv"
"$venv/bin/pip" install -q --disable-pip-version-check --upgrade pip >/dev/null
"$venv/bin/pip" install -q --disable-pip-version-check -e "$top[test]"
touch "$stamp"
echo "venv: done"
