#!/usr/bin/env bash
# Print the environment that selects one MPI library of deploy/mpi-libraries.tsv, as shell assignments:
#   eval "$(deploy/mpi-env.sh mpich5)"         (PATH, LD_LIBRARY_PATH, I_MPI_ROOT, MPICC, MPIRUN, ...)
#   deploy/mpi-env.sh --list                   (the ids, one a line)
# The modules (deploy/modules.sh) and lib/python/pgmpi_formats/mpi_libraries.py set the same variables;
# tests/python/packaging/test_mpi_libraries.py checks that all three agree.
# Intel MPI needs its own bin/ first on PATH even when mpirun is called by its full path (hydra starts
# its proxies by name), and I_MPI_ROOT + LD_LIBRARY_PATH + its bundled libfabric set together.
set -euo pipefail
table=$(cd "$(dirname "$0")" && pwd)/mpi-libraries.tsv
rows() { grep -v -e '^#' -e '^$' -e $'^id\tfamily\tversion\tsource\tprefix$' "$table"; }   # data rows only
[ $# = 1 ] || { echo "usage: $0 <id>|--list" >&2; exit 2; }
if [ "$1" = --list ]; then rows | cut -f1; exit 0; fi
row=$(rows | awk -F'\t' -v id="$1" '$1 == id')
[ -n "$row" ] || { echo "mpi-env.sh: unknown MPI id '$1' (valid: $(rows | cut -f1 | paste -sd, | sed 's/,/, /g'))" >&2; exit 2; }
IFS=$'\t' read -r id family version source prefix <<<"$row"
[ -x "$prefix/bin/mpicc" ] || { echo "mpi-env.sh: $id is not installed in $prefix (deploy/install-mpis.sh $id)" >&2; exit 1; }

path=$prefix/bin
libs=
case $source in debian:*) ;; *) libs=$prefix/lib ;; esac     # Debian's libraries are on the default search path
extra=()
if [ "$family" = intelmpi ]; then
  path=$prefix/bin:$prefix/bin/libfabric
  libs=$prefix/lib:$prefix/lib/libfabric
  extra=("I_MPI_ROOT=$prefix" "FI_PROVIDER_PATH=$prefix/lib/libfabric/prov")
fi
q() { printf "%q" "$1"; }
echo "export PATH=$(q "$path")\${PATH:+:\$PATH}"
[ -n "$libs" ] && echo "export LD_LIBRARY_PATH=$(q "$libs")\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
for kv in "${extra[@]}"; do echo "export ${kv%%=*}=$(q "${kv#*=}")"; done
echo "export MPI_ROOT=$(q "$prefix")"
echo "export MPICC=$(q "$prefix/bin/mpicc")"
echo "export MPICXX=$(q "$prefix/bin/mpicxx")"
if [ -e "$prefix/bin/mpif90" ]; then echo "export MPIF90=$(q "$prefix/bin/mpif90")"; else echo "unset MPIF90"; fi
echo "export MPIRUN=$(q "$prefix/bin/mpirun")"
echo "export PGMPI_MPI_ID=$id PGMPI_MPI_FAMILY=$family PGMPI_MPI_VERSION=$version"
