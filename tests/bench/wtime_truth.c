/* LD_PRELOAD shim for tests/bench/reprompi_compare.py (the `clock` control of window and round-time):
 * the true offset between the ranks' MPI_Wtime clocks, against which both tools' fitted global clocks are
 * judged.  On one node every rank reads the same CLOCK_MONOTONIC, and MPI_Wtime is that clock minus a
 * per-process origin (Open MPI 4.1: ompi_wtime_time_origin; constant to 0.1 us over a run here), so
 * rank r's MPI_Wtime - CLOCK_MONOTONIC is a constant d_r and rank 0's clock is rank r's plus d_0 - d_r:
 * exact, with no message between the ranks.  At MPI_Finalize each rank takes d_r from the tightest of 50
 * bracketed reads and rank 0 writes "rank d_r" lines to $WTIME_TRUTH_FILE.  Only MPI_Finalize is wrapped
 * (chained with dlsym, so libpgmpitune's own wrapper still runs): nothing is added to a measurement.
 * Valid for ranks on one node only (another node has another CLOCK_MONOTONIC).
 *   mpicc -O2 -shared -fPIC -o libwtime_truth.so tests/bench/wtime_truth.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int MPI_Finalize(void)
{
    int (*next)(void) = (int (*)(void))dlsym(RTLD_NEXT, "MPI_Finalize");
    const char *path = getenv("WTIME_TRUTH_FILE");
    if (path && *path) {
        double best = 1e9, d = 0;
        for (int i = 0; i < 50; i++) {
            double m0 = mono(), w = PMPI_Wtime(), m1 = mono();
            if (m1 - m0 < best) { best = m1 - m0; d = w - 0.5 * (m0 + m1); }
        }
        int rank = 0, size = 1;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        PMPI_Comm_size(MPI_COMM_WORLD, &size);
        double *all = rank == 0 ? malloc((size_t)size * sizeof *all) : NULL;
        PMPI_Gather(&d, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        if (rank == 0 && all) {
            FILE *f = fopen(path, "w");
            if (f) {
                for (int r = 0; r < size; r++) fprintf(f, "%d %.9f\n", r, all[r]);
                fclose(f);
            }
        }
        free(all);
    }
    return next ? next() : PMPI_Finalize();
}
