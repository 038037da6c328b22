#!/usr/bin/env bash
# Build and install libpgmpitune, pgmpi-bench and pgmpitune-check once per MPI library
# (Debian's Open MPI and MPICH side by side; always the suffixed compiler names, since
# the unsuffixed ones follow Debian's alternatives). Incremental and idempotent.
#   deploy/build-lib.sh [openmpi|mpich|all]     -> build/<mpi>/, installed into build/install/<mpi>/
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
which_mpis=${1:-all}
[ "$which_mpis" = all ] && which_mpis="openmpi mpich"
jobs=$(nproc 2>/dev/null || echo 2)
# Serialise concurrent builds of the same tree (tests, helpers, make targets).
mkdir -p "$top/build"; exec 9>"$top/build/.build-lib.lock"; flock 9
for mpi in $which_mpis; do
  case $mpi in
    openmpi|mpich) ;;
    *) echo "build-lib.sh: unknown MPI '$mpi' (valid: openmpi, mpich, all)" >&2; exit 2 ;;
  esac
  command -v "mpicc.$mpi" >/dev/null || { echo "build-lib.sh: mpicc.$mpi missing (deploy/install-packages.sh base)" >&2; exit 1; }
  bdir=$top/build/$mpi
  if [ ! -f "$bdir/CMakeCache.txt" ]; then
    cmake -S "$top/lib" -B "$bdir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_INSTALL_PREFIX="$top/build/install/$mpi" \
      -DMPI_C_COMPILER="mpicc.$mpi" -DMPI_Fortran_COMPILER="mpif90.$mpi" \
      -DMPIEXEC_EXECUTABLE="/usr/bin/mpiexec.$mpi" -DPGMPITUNE_MPI_FLAVOR="$mpi" \
      -DPGMPITUNE_BUILD_TESTS=ON >"$bdir.configure.log" 2>&1 \
      || { mkdir -p "$bdir"; cat "$bdir.configure.log" >&2; exit 1; }
  fi
  cmake --build "$bdir" -j "$jobs" >"$bdir.build.log" 2>&1 || { tail -n 40 "$bdir.build.log" >&2; exit 1; }
  cmake --install "$bdir" >/dev/null
  echo "build-lib.sh: $mpi built in build/$mpi, installed in build/install/$mpi"
done
