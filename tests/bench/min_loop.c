/* The smallest honest timing loop, independent of pgmpi-bench's code: for each size (ascending) and
 * each call, a fresh send/receive pair from calloc, written once (non-zero), then N times: MPI_Barrier, MPI_Wtime,
 * the call, MPI_Wtime.  Run-time of a measurement = maximum over ranks (reduced once at the end).
 * Output: ReproMPI's row layout, `<MPI_Name> <i> <bytes> <seconds>`, so tests/bench/reprompi_compare.py
 * and tests/python/bench/test_bench_vs_min_loop.py read it like ReproMPI's.
 *   mpirun -np 2 min_loop NREP CALL[,CALL...] SIZE[,SIZE...]     (CALL: allreduce, bcast, allgather)
 * MPI_BYTE, MPI_BOR, root 0: pgmpi-bench's defaults.
 * Controls for tests/bench/bench_vs_loop.py (off unless compiled in; each adds one thing pgmpi-bench's
 * process does before its cells): -DDELAY_MS=N starts measuring N ms after MPI_Init; -DPRINT_BYTES=N has
 * rank 0 write N bytes to stdout first (the launcher forwards them while the first cell runs);
 * -DSPLIT_START runs pgmpi-bench's start-up traffic (a node communicator, an Allgather, Allreduces). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (argc != 4) {
        if (!rank) fprintf(stderr, "usage: min_loop NREP CALLS SIZES\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int nrep = atoi(argv[1]);
#ifdef DELAY_MS
    for (double t0 = MPI_Wtime(); MPI_Wtime() - t0 < DELAY_MS * 1e-3;) continue;
#endif
#ifdef PRINT_BYTES
    if (!rank) {
        for (int i = 0; i < PRINT_BYTES / 40; i++) printf("# %036d\n", i);
        fflush(stdout);
    }
#endif
#ifdef SPLIT_START
    {
        MPI_Comm node;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        MPI_Comm_free(&node);
        char mine[128] = {0}, all[256];
        MPI_Allgather(mine, 128, MPI_CHAR, all, 128, MPI_CHAR, MPI_COMM_WORLD);
        unsigned long long v[8] = {0}, w[8];
        for (int i = 0; i < 4; i++) MPI_Allreduce(v, w, 8, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    }
#endif
    double *t = malloc((size_t)nrep * sizeof *t), *tmax = malloc((size_t)nrep * sizeof *tmax);
    char sizes[4096];
    snprintf(sizes, sizeof sizes, "%s", argv[3]);
    for (char *ss, *sp = strtok_r(sizes, ",", &ss); sp; sp = strtok_r(NULL, ",", &ss)) {
        int n = atoi(sp);
        char calls[4096];
        snprintf(calls, sizeof calls, "%s", argv[2]);
        for (char *cs, *c = strtok_r(calls, ",", &cs); c; c = strtok_r(NULL, ",", &cs)) {
            size_t sb = (size_t)n, rb = strcmp(c, "allgather") == 0 ? (size_t)n * (size_t)p : (size_t)n;
            char *s = calloc(sb, 1), *r = calloc(rb, 1);
            /* non-zero: GCC drops a memset of zeros after calloc, and a send buffer nobody wrote maps the
             * kernel's zero page (tests/bench/zero_page.c) */
            memset(s, 1, sb);
            memset(r, 1, rb);
            const char *name = NULL;
            for (int i = 0; i < nrep; i++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                if (strcmp(c, "allreduce") == 0) { name = "MPI_Allreduce"; MPI_Allreduce(s, r, n, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD); }
                else if (strcmp(c, "bcast") == 0) { name = "MPI_Bcast"; MPI_Bcast(s, n, MPI_BYTE, 0, MPI_COMM_WORLD); }
                else if (strcmp(c, "allgather") == 0) { name = "MPI_Allgather"; MPI_Allgather(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD); }
                else { if (!rank) fprintf(stderr, "min_loop: unknown call %s\n", c); MPI_Abort(MPI_COMM_WORLD, 2); }
                t[i] = MPI_Wtime() - t0;
            }
            MPI_Reduce(t, tmax, nrep, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (!rank)
                for (int i = 0; i < nrep; i++) printf("%s %d %d %.10f\n", name, i, n, tmax[i]);
            free(s);
            free(r);
        }
    }
    free(t);
    free(tmax);
    MPI_Finalize();
    return 0;
}
