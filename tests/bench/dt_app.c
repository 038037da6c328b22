/* A small application with a GL4-violating layout (tests/bench/dt_app.sh): it exchanges a strided
 * array -- c tiles of A ints, X ints apart -- described as the application naturally writes it,
 * MPI_Type_vector(c, A, X, MPI_INT) resized to the whole extent, in ping-pong between ranks 0 and 1
 * (MPI_Send/MPI_Recv) and in MPI_Allgather over all ranks. It knows nothing of libpgmpitune: linked
 * with it, a datatype profile may replace the type's description at MPI_Type_commit.
 * Prints the median time per iteration of each pattern (seconds, over ITER iterations after a warm-up)
 * and a checksum (FNV-1a 64) of every rank's buffers after the run, which must not depend on the profile.
 *   dt_app C A X ITER */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) { h ^= c[i]; h *= 0x100000001b3ull; }
    return h;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    int c = argc > 1 ? atoi(argv[1]) : 8192, A = argc > 2 ? atoi(argv[2]) : 2, X = argc > 3 ? atoi(argv[3]) : 4;
    int iter = argc > 4 ? atoi(argv[4]) : 200;
    MPI_Datatype v, t;
    MPI_Type_vector(c, A, X, MPI_INT, &v);
    MPI_Type_create_resized(v, 0, (MPI_Aint)c * X * (MPI_Aint)sizeof(int), &t);
    MPI_Type_free(&v);
    MPI_Type_commit(&t);
    size_t E = (size_t)c * (size_t)X;   /* ints of one array */
    int *a = malloc(E * sizeof *a), *b = malloc(E * sizeof *b), *all = malloc(E * (size_t)p * sizeof *all);
    for (size_t i = 0; i < E; i++) { a[i] = (int)(i * 7 + (size_t)rank * 1000003); b[i] = -1; }
    for (size_t i = 0; i < E * (size_t)p; i++) all[i] = -2;
    double *tp = malloc((size_t)iter * sizeof *tp), *ta = malloc((size_t)iter * sizeof *ta);
    for (int it = -5; it < iter; it++) {   /* 5 warm-up iterations */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (rank == 0 && p > 1) {
            MPI_Send(a, 1, t, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(b, 1, t, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(b, 1, t, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(b, 1, t, 0, 1, MPI_COMM_WORLD);
        }
        double t1 = MPI_Wtime();
        MPI_Barrier(MPI_COMM_WORLD);
        double t2 = MPI_Wtime();
        MPI_Allgather(a, 1, t, all, 1, t, MPI_COMM_WORLD);
        double t3 = MPI_Wtime();
        if (it >= 0) { tp[it] = t1 - t0; ta[it] = t3 - t2; }
    }
    /* the slowest rank's time per iteration, then the median over iterations */
    MPI_Allreduce(MPI_IN_PLACE, tp, iter, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, ta, iter, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    qsort(tp, (size_t)iter, sizeof *tp, cmpd);
    qsort(ta, (size_t)iter, sizeof *ta, cmpd);
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv(h, a, E * sizeof *a);
    h = fnv(h, b, E * sizeof *b);
    h = fnv(h, all, E * (size_t)p * sizeof *all);
    unsigned long long hs[64] = {0};
    unsigned long long mine = h;
    MPI_Gather(&mine, 1, MPI_UNSIGNED_LONG_LONG, hs, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        uint64_t H = 0xcbf29ce484222325ull;
        for (int r = 0; r < p && r < 64; r++) H = fnv(H, &hs[r], sizeof hs[r]);
        printf("dt_app p=%d c=%d A=%d X=%d bytes=%zu pingpong_sec=%.9f allgather_sec=%.9f checksum=%016llx\n", p, c, A,
               X, (size_t)c * (size_t)A * sizeof(int), tp[iter / 2], ta[iter / 2], (unsigned long long)H);
    }
    MPI_Type_free(&t);
    free(a); free(b); free(all); free(tp); free(ta);
    MPI_Finalize();
    return 0;
}
