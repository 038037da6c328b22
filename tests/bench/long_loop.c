/* A timing independent of any synchronisation method: each rank runs the call L times back to back and
 * divides its own elapsed time by L; the figure of a block is the maximum over ranks (reduced after the
 * block), BLOCKS blocks per (call, size).  No barrier, window or clock enters a timed region, and the one
 * barrier before a block is spread over L calls.  Back-to-back calls may overlap (a Bcast root can run
 * ahead of its receivers by the library's eager buffering), so for rooted calls this is a throughput
 * figure, a lower bound of the latency one synchronised call has (tests/bench/sync_methods.py).
 *   mpirun -np 2 long_loop L BLOCKS CALL[,CALL...] SIZE[,SIZE...]     (CALL: allreduce, bcast, allgather)
 * Output rows as ReproMPI's: `<MPI_Name> <block> <bytes> <seconds per call>`. MPI_BYTE, MPI_BOR, root 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *run(const char *c, char *s, char *r, int n)
{
    if (strcmp(c, "allreduce") == 0) { MPI_Allreduce(s, r, n, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD); return "MPI_Allreduce"; }
    if (strcmp(c, "bcast") == 0) { MPI_Bcast(s, n, MPI_BYTE, 0, MPI_COMM_WORLD); return "MPI_Bcast"; }
    if (strcmp(c, "allgather") == 0) { MPI_Allgather(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD); return "MPI_Allgather"; }
    fprintf(stderr, "long_loop: unknown call %s\n", c);
    MPI_Abort(MPI_COMM_WORLD, 2);
    return NULL;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (argc != 5) {
        if (!rank) fprintf(stderr, "usage: long_loop L BLOCKS CALLS SIZES\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int L = atoi(argv[1]), blocks = atoi(argv[2]);
    char sizes[4096];
    snprintf(sizes, sizeof sizes, "%s", argv[4]);
    for (char *ss, *sp = strtok_r(sizes, ",", &ss); sp; sp = strtok_r(NULL, ",", &ss)) {
        int n = atoi(sp);
        char calls[4096];
        snprintf(calls, sizeof calls, "%s", argv[3]);
        for (char *cs, *c = strtok_r(calls, ",", &cs); c; c = strtok_r(NULL, ",", &cs)) {
            size_t sb = (size_t)n, rb = (size_t)n * (size_t)p;
            char *s = malloc(sb), *r = malloc(rb);
            memset(s, 1, sb);                 /* written: no zero page, no page fault while timed */
            memset(r, 1, rb);
            const char *name = NULL;
            for (int w = 0; w < 10; w++) name = run(c, s, r, n);
            for (int b = 0; b < blocks; b++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                for (int i = 0; i < L; i++) run(c, s, r, n);
                double t = (MPI_Wtime() - t0) / L, tmax;
                MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                if (!rank) printf("%s %d %d %.10f\n", name, b, n, tmax);
            }
            free(s);
            free(r);
        }
    }
    MPI_Finalize();
    return 0;
}
