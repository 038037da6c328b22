# The opening the per-call overhead benchmarks share, sourced by tests/bench/lib_overhead.sh and
# tests/bench/dt_overhead.sh after `set -euo pipefail` (their first argument is openmpi|mpich|all; not a
# *.sh, since `make bench` runs those):
# top, mpis, RUNS (mpiruns per figure, default 5), a work directory removed on exit, median and field to
# read the benchmark's key=value lines, and overhead_build MPI, which compiles lib_overhead.c against
# the installed library of that MPI ($INSTALL_ROOT, default build/install; built if missing) into
# $work/ovh.MPI and sets run=(the mpirun of that MPI).
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mpis=${1:-all}; [ "$mpis" = all ] && mpis="openmpi mpich"
RUNS=${RUNS:-5}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

median() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else printf "%.2f\n", (v[NR/2]+v[NR/2+1])/2}'; }
field() { sed -n "s/.* $1=\([-0-9.a-z]*\).*/\1/p"; }

overhead_build() {
  local mpi=$1
  prefix=${INSTALL_ROOT:-$top/build/install}/$mpi
  [ -f "$prefix/lib/libpgmpitune.so" ] || "$top/deploy/build-lib.sh" "$mpi" >/dev/null
  "mpicc.$mpi" -O2 -o "$work/ovh.$mpi" "$top/tests/bench/lib_overhead.c" -I"$prefix/include" \
      -L"$prefix/lib" -Wl,--no-as-needed -lpgmpitune -Wl,-rpath,"$prefix/lib"
  if [ "$mpi" = openmpi ]; then run=(mpirun.openmpi --allow-run-as-root --oversubscribe --bind-to none); else run=(mpirun.mpich); fi
}
