/* Where the usage record's MPI_Finalize time goes (prints figures; not a test): the collective steps of
 * lib/src/core/usage.c as it takes them (A: agree, a shared-memory split for the layout, two layout allreduces,
 * gather of the sizes, agree, gatherv of the tables) against a 3-step form (B: gather of the sizes -- the host
 * could ride in each table's trailer --, bcast of rank 0's decision, gatherv), alternating in one mpirun, 15
 * of each, timed on rank 0 with CLOCK_MONOTONIC, a barrier before each. Warm: the first split of a job costs
 * more (MPICH 4.0.2: 0.4 ms cold at p = 2 when both ranks have a core).
 *   mpicc.mpich -O2 -o steps tests/bench/usage_finalize_steps.c && mpirun.mpich -np 2 ./steps */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm c; MPI_Comm_dup(MPI_COMM_WORLD, &c);
    int r, p; MPI_Comm_rank(c, &r); MPI_Comm_size(c, &p);
    static char buf[40 * 32], all[40 * 32 * 64]; int counts[64], displs[64];
    enum { N = 15 }; double ta[N], tb[N];
    for (int it = 0; it < 2 * N; it++) {
        MPI_Barrier(c);
        double t0 = now();
        int ok = 1, x, two[2] = {1, -1}, y[2], bytes = 39 * 32;
        if (it % 2 == 0) {
            MPI_Allreduce(&ok, &x, 1, MPI_INT, MPI_MIN, c);
            MPI_Comm node; MPI_Comm_split_type(c, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node); MPI_Comm_free(&node);
            MPI_Allreduce(&ok, &x, 1, MPI_INT, MPI_SUM, c); MPI_Allreduce(two, y, 2, MPI_INT, MPI_MAX, c);
            MPI_Gather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, c);
            MPI_Allreduce(&ok, &x, 1, MPI_INT, MPI_MIN, c);
        } else {
            MPI_Gather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, c);
            MPI_Bcast(&ok, 1, MPI_INT, 0, c);
        }
        for (int i = 0; i < p; i++) { counts[i] = bytes; displs[i] = i * bytes; }
        MPI_Gatherv(buf, bytes, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, c);
        (it % 2 == 0 ? ta : tb)[it / 2] = (now() - t0) * 1e3;
    }
    if (r == 0) {
        double d[N]; for (int i = 0; i < N; i++) d[i] = ta[i] - tb[i];
        qsort(ta, N, sizeof *ta, cmp); qsort(tb, N, sizeof *tb, cmp); qsort(d, N, sizeof *d, cmp);
        printf("p=%d  steps as now %.3f ms, 3 steps %.3f ms, paired difference %.3f ms (medians of %d)\n", p, ta[N/2], tb[N/2], d[N/2], N);
    }
    MPI_Comm_free(&c);
    MPI_Finalize();
    return 0;
}
