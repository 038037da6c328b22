#!/usr/bin/env bash
# The module flow of docs/user-guide.md against the modules `make demo` wrote (demo/modules), as root:
#   bash docs/transcripts/module-flow.sh > docs/transcripts/module-flow.txt 2>&1
set -e
top=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
cd "$work"
cat > app.c <<'C'
#include <mpi.h>
#include <stdio.h>
/* MPI_Scan at 8 B, 1 KiB and 128 KiB; MPI_Allreduce at 16 KiB; checks the results */
int main(int argc, char **argv) {
    static int in[32768], out[32768];
    int rank, p, sizes[] = {2, 256, 32768};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    for (int i = 0; i < 32768; i++) in[i] = rank + 1;
    for (int k = 0; k < 3; k++) {
        MPI_Scan(in, out, sizes[k], MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (out[sizes[k] - 1] != (rank + 1) * (rank + 2) / 2) return 1;
    }
    MPI_Allreduce(in, out, 4096, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("app: results correct on %d ranks\n", p);
    MPI_Finalize();
    return 0;
}
C
run() { printf '\n$ %s\n' "$*"; eval "$@"; }
. /usr/share/lmod/lmod/init/bash
echo "# as $(id -un) (uid $(id -u)), in $work"
for mpi in mpich openmpi; do
  run module purge
  run module use "$top/demo/modules"
  run module load pgmpitunelib/$mpi
  run 'echo $PGMPITUNE_PROFILE_DIR; ls $PGMPITUNE_PROFILE_DIR 2>&1 || true'
  run mpicc app.c -o app -lpgmpitune
  run "ldd ./app | grep -E 'pgmpitune|libmpi'"
  run OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PGMPITUNE_VERBOSE=1 mpirun -np 2 ./app
done
rm -rf "$work"
