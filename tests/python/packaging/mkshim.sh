#!/usr/bin/env bash
# mkshim.sh <dir> <openmpi|mpich>: a prefix whose bin/ holds the unsuffixed MPI commands of ONE of
# Debian's MPIs (both live in /usr, where the unsuffixed names follow the alternatives: an external
# "mpich" at /usr would silently build against Open MPI). Used by the EasyBuild and Spack tests.
set -euo pipefail
dir=$1 mpi=$2
case $mpi in
  openmpi) tools="mpicc mpicxx mpic++ mpif77 mpif90 mpifort mpirun mpiexec ompi_info orted orterun" ;;
  mpich)   tools="mpicc mpicxx mpif77 mpif90 mpifort mpirun mpiexec mpichversion mpiexec.hydra hydra_pmi_proxy hydra_nameserver hydra_persist" ;;
  *) echo "mkshim.sh: unknown MPI '$mpi' (valid: openmpi, mpich)" >&2; exit 2 ;;
esac
mkdir -p "$dir/bin"
for t in $tools; do
  src=/usr/bin/$t.$mpi
  [ -e "$src" ] || src=/usr/bin/$t
  [ -e "$src" ] || { echo "mkshim.sh: $src missing" >&2; exit 1; }
  ln -sfn "$src" "$dir/bin/$t"
done
# include/ and lib/ too: Spack queries an external's headers and libraries under its prefix.
case $mpi in
  openmpi)
    ln -sfn /usr/lib/x86_64-linux-gnu/openmpi/include "$dir/include"
    ln -sfn /usr/lib/x86_64-linux-gnu/openmpi/lib "$dir/lib" ;;
  mpich)
    ln -sfn /usr/include/x86_64-linux-gnu/mpich "$dir/include"
    mkdir -p "$dir/lib"
    for l in /usr/lib/x86_64-linux-gnu/libmpich*.so*; do ln -sfn "$l" "$dir/lib/"; done ;;
esac
