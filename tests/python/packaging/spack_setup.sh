#!/usr/bin/env bash
# spack_setup.sh <dir>: the vendored Spack snapshot unpacked into <dir>/spack (idempotent), run by the project's
# Python (.venv, or $PGMPI_VENV) whose test extras carry clingo, Spack's concretizer (pyproject.toml: a
# clean clone installed it with the rest in deploy/venv.sh instead of a venv of its own, 15 s at load 5);
# prints the two lines the scenario needs:
#   SPACK=<dir>/spack/bin/spack
#   SPACK_PYTHON=<venv>/bin/python
# No package registry carries Spack: the snapshot comes from the shared vendor folder ($PGMPI_VENDOR_DIR, else
# ../shared/vendor or ../../shared/vendor next to the checkout, else /work/shared/vendor where these machines
# keep it, for a checkout anywhere else such as a clean clone in /tmp; see its README). Missing snapshot:
# exit 3 with a message (the test fails on it, it never skips).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
dir=$(mkdir -p "$1" && cd "$1" && pwd)
vendor=
for d in "${PGMPI_VENDOR_DIR:-}" "$top/../shared/vendor" "$top/../../shared/vendor" /work/shared/vendor; do
  [ -n "$d" ] && compgen -G "$d/spack-*.tar.gz" >/dev/null && { vendor=$d; break; }
done
[ -n "$vendor" ] || { echo "spack_setup.sh: no Spack snapshot (spack-*.tar.gz) in \$PGMPI_VENDOR_DIR," \
                           "$top/../shared/vendor, $top/../../shared/vendor or /work/shared/vendor" >&2; exit 3; }
tarball=$(ls "$vendor"/spack-*.tar.gz | sort | tail -n1)
exec 9>"$dir/.setup.lock"; flock 9
if [ "$(cat "$dir/.unpacked" 2>/dev/null)" != "$tarball" ]; then
  rm -rf "$dir/spack"; mkdir -p "$dir/spack"
  tar xzf "$tarball" -C "$dir/spack" --strip-components=1
  echo "$tarball" > "$dir/.unpacked"
fi
python=${PGMPI_VENV:-$top/.venv}/bin/python
"$python" -c 'import clingo' 2>/dev/null || {
  echo "spack_setup.sh: $python cannot import clingo (Spack's concretizer, a test extra of pyproject.toml):" \
       "run deploy/venv.sh" >&2; exit 1; }
echo "SPACK=$dir/spack/bin/spack"
echo "SPACK_PYTHON=$python"
