/* pgmpi-bench's measurement loop taken apart, one difference from tests/bench/min_loop.c at a time, all
 * inside one mpirun (issue 34: pgmpi-bench measured 8-byte cells under MPI_Barrier 12-38 % above
 * min_loop.c and ReproMPI). Arms, NREP measurements each, alternating in a rotated order for R rounds:
 *   plain      MPI_Barrier, MPI_Wtime, MPI_<call>, MPI_Wtime                      (min_loop.c)
 *   pmpi       PMPI_Barrier, MPI_Wtime, PMPI_<call>, MPI_Wtime: no libpgmpitune in the call's path
 *   bench      PMPI_Barrier and pgmpi-bench's bookkeeping between measurements (three stores per
 *              measurement into arrays of NREP, an elapsed-time sum, a run counter; run_phase)
 *   check      plain, the cell framed as pgmpi-bench frames it: before it the check round (error handler
 *              set to return, one untimed call, an Allreduce of the verdict, handler restored), after it
 *              the reduction of the times by Allreduce and one untimed call when the count is odd
 *   after-ar   plain, right after an untimed cell of Allreduce (pgmpi-bench measures Allreduce, then Bcast)
 *   wtime-gap  a clock read before the barrier (0b12df1 removed it from pgmpi-bench): the positive
 *              control, Open MPI's 8-byte Bcast 0.71x in tests/bench/round_gap.c
 * Preload libpgmpitune (LD_PRELOAD) so that MPI_<call> goes through it as in pgmpi-bench; `pmpi` then
 * skips it. Prints per round each arm's mean of the middle 80 % of its measurements (max over ranks, us),
 * then per arm the median over rounds and the median of the per-round ratios to `plain` [range].
 *   mpicc -O2 -o loop_features tests/bench/loop_features.c
 *   LD_PRELOAD=build/install/mpich/lib/libpgmpitune.so mpirun -np 2 ./loop_features [CALL=bcast] [BYTES=8]
 *       [ROUNDS=20] [NREP=400] */
#include <mpi.h>
#include "call_by_name.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PLAIN, PMPI, BENCH, CHECK, AFTER_AR, WTIME_GAP, NARMS };
static const char *arm_name[NARMS] = {"plain", "pmpi", "bench", "check", "after-ar", "wtime-gap"};
static const char *g_call;
static char *g_s, *g_r, *g_ar_r;
static int g_n;
static volatile double g_sink;

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static int call(int direct) { return call_by_name(g_call, direct, g_s, g_r, g_n); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    g_call = argc > 1 ? argv[1] : "bcast";
    g_n = argc > 2 ? atoi(argv[2]) : 8;
    int rounds = argc > 3 ? atoi(argv[3]) : 20, nrep = argc > 4 ? atoi(argv[4]) : 400;
    g_s = calloc((size_t)g_n, 1); g_r = calloc((size_t)g_n * (size_t)p, 1); g_ar_r = calloc((size_t)g_n, 1);
    memset(g_s, 1, (size_t)g_n); memset(g_r, 1, (size_t)g_n * (size_t)p);
    double *t = malloc((size_t)nrep * sizeof *t), *tmax = malloc((size_t)nrep * sizeof *tmax);
    double *loc = calloc((size_t)nrep, sizeof *loc);
    int *jc = calloc((size_t)nrep, sizeof *jc), *ja = calloc((size_t)nrep, sizeof *ja);
    double (*med)[NARMS] = calloc((size_t)rounds, sizeof *med);
    long runs = 0;
    for (int r = 0; r < rounds; r++) {
        for (int j = 0; j < NARMS; j++) {
            int arm = (j + r) % NARMS;
            if (arm == CHECK) {
                MPI_Errhandler eh;
                PMPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
                PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
                call(0);
                int ok = 1, all;
                PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
                PMPI_Comm_set_errhandler(MPI_COMM_WORLD, eh);
                PMPI_Errhandler_free(&eh);
            }
            if (arm == AFTER_AR)
                for (int i = 0; i < nrep; i++) {
                    PMPI_Barrier(MPI_COMM_WORLD);
                    MPI_Allreduce(g_s, g_ar_r, g_n, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD);
                }
            double el = 0, tprev = MPI_Wtime();
            for (int i = 0; i < nrep; i++) {
                if (arm == WTIME_GAP) (void)MPI_Wtime();
                if (arm == PMPI || arm == BENCH) PMPI_Barrier(MPI_COMM_WORLD);
                else MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                call(arm == PMPI);
                double t1 = MPI_Wtime();
                if (arm == BENCH) {
                    loc[i] = t1 - t0; jc[i] = 0; ja[i] = arm; runs++;
                    el += t1 - tprev;
                    tprev = t1;
                }
                t[i] = t1 - t0;
            }
            g_sink += el + (double)runs + jc[nrep - 1] + ja[nrep - 1] + loc[nrep - 1];   /* keep the bookkeeping */
            if (arm == CHECK) {
                PMPI_Allreduce(t, tmax, nrep, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                if ((nrep + 1) % 2) { PMPI_Barrier(MPI_COMM_WORLD); call(0); }
            } else MPI_Reduce(t, tmax, nrep, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (!rank) {
                qsort(tmax, (size_t)nrep, sizeof *tmax, cmp);
                /* the mean of the middle 80 %: MPI_Wtime steps by 10 ns here, so a median of 0.2 us
                 * moves in 5 % steps; the trimmed mean resolves a few ns and ignores descheduled outliers */
                double sum = 0;
                int lo = nrep / 10, hi = nrep - nrep / 10;
                for (int i = lo; i < hi; i++) sum += tmax[i];
                med[r][arm] = sum / (hi - lo) * 1e6;
            }
        }
        if (!rank) {
            printf("round %2d:", r + 1);
            for (int a = 0; a < NARMS; a++) printf(" %s %.3f", arm_name[a], med[r][a]);
            printf("\n");
            fflush(stdout);
        }
    }
    if (!rank) {
        printf("%s %d B, %d rounds x %d; arm: median over rounds of the 10-90 %% trimmed mean (us), "
               "median of per-round ratios to plain [min-max]\n",
               g_call, g_n, rounds, nrep);
        for (int a = 0; a < NARMS; a++) {
            double *v = malloc((size_t)rounds * sizeof *v), *q = malloc((size_t)rounds * sizeof *q);
            for (int r = 0; r < rounds; r++) { v[r] = med[r][a]; q[r] = med[r][a] / med[r][PLAIN]; }
            qsort(v, (size_t)rounds, sizeof *v, cmp);
            qsort(q, (size_t)rounds, sizeof *q, cmp);
            printf("  %-10s %.3f  %.3f [%.2f-%.2f]\n", arm_name[a], v[rounds / 2], q[rounds / 2], q[0], q[rounds - 1]);
            free(v); free(q);
        }
    }
    MPI_Finalize();
    return 0;
}
