/* What the work between two measurements does to a small collective's figure under MPI_Barrier
 * synchronisation. Two loops alternate inside one mpirun, 1,000 measurements each, R rounds:
 *   plain: MPI_Barrier, MPI_Wtime, the call, MPI_Wtime                    (tests/bench/min_loop.c)
 *   gap:   MPI_Wtime, MPI_Barrier, MPI_Wtime, the call, MPI_Wtime           (one clock read more)
 * and prints the median run-time (max over ranks) of each, per round.
 *   mpicc -O2 -o round_gap tests/bench/round_gap.c
 *   mpirun -np 2 ./round_gap [CALL=bcast|allreduce|allgather] [BYTES=8] [ROUNDS=6]
 * lib/bench/README.md (Compared with ReproMPI) quotes its figures. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NREP = 1000 };

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static void call(const char *c, char *s, char *r, int n)
{
    if (!strcmp(c, "allreduce")) MPI_Allreduce(s, r, n, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD);
    else if (!strcmp(c, "allgather")) MPI_Allgather(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD);
    else MPI_Bcast(s, n, MPI_BYTE, 0, MPI_COMM_WORLD);
}

static double median_of_max(double *t, double *tmax, int rank)
{
    MPI_Reduce(t, tmax, NREP, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank) return 0;
    qsort(tmax, NREP, sizeof *tmax, cmp);
    return tmax[NREP / 2] * 1e6;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    const char *c = argc > 1 ? argv[1] : "bcast";
    int n = argc > 2 ? atoi(argv[2]) : 8, rounds = argc > 3 ? atoi(argv[3]) : 6;
    char *s = calloc((size_t)n, 1), *r = calloc((size_t)n * (size_t)p, 1);
    memset(s, 1, (size_t)n);
    memset(r, 1, (size_t)n * (size_t)p);
    double t[NREP], tmax[NREP];
    for (int round = 0; round < rounds; round++) {
        for (int i = 0; i < NREP; i++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            call(c, s, r, n);
            t[i] = MPI_Wtime() - t0;
        }
        double plain = median_of_max(t, tmax, rank);
        for (int i = 0; i < NREP; i++) {
            volatile double ts = MPI_Wtime();
            (void)ts;
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            call(c, s, r, n);
            t[i] = MPI_Wtime() - t0;
        }
        double gap = median_of_max(t, tmax, rank);
        if (!rank) printf("%s %d B round %d: plain %.3f us  gap %.3f us  gap/plain %.2f\n", c, n, round, plain, gap, gap / plain);
    }
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
