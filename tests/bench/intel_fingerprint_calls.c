/* Which algorithm each MPI_Allreduce call of a run used, call by call: MPI_SUM over doubles that are all quiet
 * NaNs, rank r's element e carrying the payload (r + 1, e); which rank's payload survives where follows the
 * algorithm (as lib/bench/bench_check.c's fingerprint).  For tests/bench/intel_tuner_probe.sh: an autotuner
 * that tries presets during a run shows as a change of fingerprint between calls.
 *   mpirun -np 2 intel_fingerprint_calls <bytes> <calls>
 * prints on rank 0 the run-length encoded sequence: "<fingerprint> x<calls>" per line. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 8192, nd = n / sizeof(double);
    int calls = argc > 2 ? atoi(argv[2]) : 400;
    double *s = malloc(n), *r = malloc(n);
    unsigned long long *all = malloc(sizeof *all * (size_t)size), prev = 0;
    for (size_t e = 0; e < nd; e++) {
        uint64_t b = 0x7ff8000000000000ULL | ((uint64_t)(rank + 1) << 32) | (uint64_t)(e & 0xffffffffu);
        memcpy(&s[e], &b, sizeof b);
    }
    int run = 0;
    for (int k = 0; k < calls; k++) {
        MPI_Allreduce(s, r, (int)nd, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        unsigned long long h = 1469598103934665603ULL;
        for (size_t e = 0; e < nd; e++) {
            uint64_t b;
            memcpy(&b, &r[e], sizeof b);
            unsigned who = (b & 0x7ff8000000000000ULL) == 0x7ff8000000000000ULL ? (unsigned)((b >> 32) & 0xffffu) : 0xffffu;
            h = (h ^ who) * 1099511628211ULL;
        }
        MPI_Gather(&h, 1, MPI_UNSIGNED_LONG_LONG, all, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
        unsigned long long x = all[0];
        for (int q = 1; q < size; q++) x = x * 31 ^ all[q];
        if (rank == 0 && k > 0 && x != prev) { printf("%016llx x%d\n", prev, run); run = 0; }
        prev = x;
        run++;
    }
    if (rank == 0) printf("%016llx x%d\n", prev, run);
    free(s); free(r); free(all);
    MPI_Finalize();
    return 0;
}
