/* The VM's level over time inside one mpirun (issue 34, the `levels` verdict of reprompi_compare.py).
 * Some mpiruns run every small call about 2x slower than others (tests/bench/level_probe.py); this
 * program asks whether the level is set when an mpirun starts or changes while it runs: for SECONDS
 * seconds it times back-to-back PMPI_Barrier calls in slots of SLOT_MS milliseconds and rank 0 prints one
 * line per slot, "<seconds since start> <median barrier us> <calls>".  A level that flips between slots
 * is a state of the machine over time, not of the mpirun or of the tool that runs in it.
 *   mpicc.openmpi -O2 -o level_watch tests/bench/level_watch.c
 *   mpirun.openmpi --allow-run-as-root -np 2 ./level_watch [SECONDS=30] [SLOT_MS=250] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { MAXCALLS = 1 << 20 };

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double seconds = argc > 1 ? atof(argv[1]) : 30, slot = (argc > 2 ? atof(argv[2]) : 250) * 1e-3;
    double *t = malloc(MAXCALLS * sizeof *t);
    if (!t || seconds <= 0 || slot <= 0) MPI_Abort(MPI_COMM_WORLD, 1);
    for (int i = 0; i < 100; i++) PMPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    int done = 0;
    while (!done) {
        int n = 0, stop = 0;
        double end = MPI_Wtime() + slot;
        while (!stop && n < MAXCALLS) {
            double t0 = MPI_Wtime();
            PMPI_Barrier(MPI_COMM_WORLD);
            double t1 = MPI_Wtime();
            t[n++] = t1 - t0;
            /* both ranks leave the slot after the same call: rank 0's clock decides, every 64 calls */
            if (n % 64 == 0) {
                int mine = rank == 0 && t1 >= end;
                PMPI_Allreduce(&mine, &stop, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            }
        }
        qsort(t, (size_t)n, sizeof t[0], cmp_double);
        double now = MPI_Wtime() - start;
        if (rank == 0) printf("%.2f %.3f %d\n", now, t[n / 2] * 1e6, n);
        fflush(stdout);
        int mine = rank == 0 && now >= seconds;
        PMPI_Allreduce(&mine, &done, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    }
    free(t);
    MPI_Finalize();
    return 0;
}
