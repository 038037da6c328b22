#!/usr/bin/env bash
# The cost of a usage record at MPI_Finalize (prints figures; not a test): wall time of MPI_Finalize in a
# program that made 10,000 collective calls over a mix of cells, with PGMPITUNE_USAGE_DIR set and without,
# p = 2, 4, 8 (more ranks than cores from 4 on: those figures are upper bounds); RUNS pairs of mpiruns, the
# two arms interleaved (which goes first alternates), the median of each arm and of the paired differences.
# Timed with clock_gettime(CLOCK_MONOTONIC) on rank 0: MPI_Wtime after MPI_Finalize is refused by MPICH.
# CALLS (default 10000) collective calls before it, PERIOD (default 64) the usage sampling period: the record
# holds the cells its samples hit (10,000 calls at 64: 38 cells; 300 calls at 1: the same 38). MPICH's ranks poll
# while they wait, so with more ranks than cores on a loaded machine 10,000 calls take minutes per mpirun:
# CALLS=300 PERIOD=1 gives the same record in a second.
# SPOOL_PARENT (default the work directory, on the disk of $TMPDIR): where the spool is made, e.g. /dev/shm to
# see what the record's fsync costs on the disk.
# Goal: <= 5 ms more than without.   [CALLS=N] [SPOOL_PARENT=DIR] tests/bench/usage_finalize.sh [openmpi|mpich|all]
set -euo pipefail
. "$(dirname "$0")/overhead_common.bash"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
CALLS=${CALLS:-10000}
spool=$(mktemp -d -p "${SPOOL_PARENT:-$work}"); trap 'rm -rf "$work" "$spool"' EXIT
echo "spool: $spool ($(df --output=fstype "$spool" | tail -1)); $CALLS calls before MPI_Finalize, usage period ${PERIOD:-64}"
cat >"$work/fin.c" <<'C'
#include <mpi.h>
#include <stdio.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
#include <stdlib.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int calls = argc > 1 ? atoi(argv[1]) : 10000;
    int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);
    static char buf[1 << 16], out[1 << 16];
    for (int i = 0; i < calls; i++) {
        int n = 1 << (i % 14);   /* 14 size buckets, three collectives */
        MPI_Allreduce(buf, out, n / 4 + 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (i % 3 == 0) MPI_Bcast(buf, n, MPI_BYTE, 0, MPI_COMM_WORLD);
        if (i % 5 == 0) MPI_Reduce(buf, out, n / 4 + 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    MPI_Finalize();
    double t1 = now();         /* not MPI_Wtime: MPICH refuses any MPI call after MPI_Finalize */
    if (r == 0) printf("finalize_ms=%.3f\n", (t1 - t0) * 1e3);
    return 0;
}
C
for mpi in $mpis; do
  overhead_build "$mpi"
  "mpicc.$mpi" -O2 -o "$work/fin.$mpi" "$work/fin.c" -L"$prefix/lib" -Wl,--no-as-needed -lpgmpitune -Wl,-rpath,"$prefix/lib"
  for np in ${NPS:-2 4 8}; do
    : >"$work/off"; : >"$work/on"; : >"$work/diff"
    for r in $(seq "$RUNS"); do
      if [ $((r % 2)) = 1 ]; then order="off on"; else order="on off"; fi
      for mode in $order; do
        rm -rf "$spool"; mkdir -p "$spool"
        if [ $mode = on ]; then
          PGMPITUNE_USAGE_DIR="$spool" PGMPITUNE_USAGE_PERIOD="${PERIOD:-64}" "${run[@]}" -np $np "$work/fin.$mpi" "$CALLS" >"$work/one"
          cells=$(grep -vc '^#' "$spool"/*.pgmpi-usage 2>/dev/null || echo 0)
        else
          env -u PGMPITUNE_USAGE_DIR "${run[@]}" -np $np "$work/fin.$mpi" "$CALLS" >"$work/one"
        fi
        sed -n 's/finalize_ms=//p' "$work/one" >>"$work/$mode"
      done
      paste "$work/on" "$work/off" | tail -1 | awk '{printf "%.3f\n", $1 - $2}' >>"$work/diff"
    done
    printf '%-8s p=%d  MPI_Finalize %7s ms without, %7s ms with the usage record; paired difference median %s ms (min %s, max %s; %s pairs; %s lines in the record)\n' \
      "$mpi" $np "$(median <"$work/off")" "$(median <"$work/on")" "$(median <"$work/diff")" \
      "$(sort -g "$work/diff" | head -1)" "$(sort -g "$work/diff" | tail -1)" "$RUNS" "$cells"
  done
done
echo "load before: $load0; after: $(cut -d' ' -f1-3 /proc/loadavg)"
