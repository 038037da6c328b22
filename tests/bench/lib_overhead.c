/* Per-call cost of libpgmpitune on the default path, measured in one process against the bare
 * library: blocks of ITER calls of MPI_Allreduce (through the wrapper) and PMPI_Allreduce (the MPI
 * library itself), 8 bytes (1 double), interleaved (ABBA) so drifts cancel; prints per-call medians.
 * With LOOKUP=1 it also times pgmpitune_selected() over pseudo-random message sizes (pure lookup:
 * O(1) collective + profile index + O(log M) range search).
 * Times are thread CPU time (CLOCK_THREAD_CPUTIME_ID), so preemption by other jobs is not counted.
 * With OP=bcast the calls are an 8-byte MPI_Bcast instead, with OP=send a ping-pong MPI_Send + MPI_Recv of
 * 8 bytes between ranks 0 and 1 (p >= 2) (its wrapper checks the datatype for a GL4
 * replacement, lib/src/core/datatypes.c); DT_SIGNATURE=1 prints the layout signature of the vector type
 * below and exits; DT_KEEP=1 commits that type first and keeps it alive, so that with a datatype profile
 * naming its signature a replacement exists and every call takes the filter of the datatype check.
 *   lib_overhead ITER BLOCKS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pgmpitune.h"

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmpd);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Thread CPU time: on a machine shared by several jobs, wall-clock time mostly measures the
 * scheduler; the overhead we want is CPU work of this process. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int g_bcast, g_send, g_self;

static double loop(int wrapped, long iter)
{
    double x = 1.0, y = 0.0;
    double t0 = now();
    if (g_send && wrapped)   /* ping-pong of ranks 0 and 1 (a send to oneself may block in MPICH) */
        for (long i = 0; i < iter; i++) {
            if (g_self == 0) { MPI_Send(&x, 1, MPI_DOUBLE, 1, 5, MPI_COMM_WORLD); MPI_Recv(&y, 1, MPI_DOUBLE, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
            else if (g_self == 1) { MPI_Recv(&y, 1, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(&x, 1, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD); }
        }
    else if (g_send)
        for (long i = 0; i < iter; i++) {
            if (g_self == 0) { PMPI_Send(&x, 1, MPI_DOUBLE, 1, 5, MPI_COMM_WORLD); PMPI_Recv(&y, 1, MPI_DOUBLE, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
            else if (g_self == 1) { PMPI_Recv(&y, 1, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE); PMPI_Send(&x, 1, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD); }
        }
    else if (g_bcast && wrapped)
        for (long i = 0; i < iter; i++) MPI_Bcast(&x, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    else if (g_bcast)
        for (long i = 0; i < iter; i++) PMPI_Bcast(&x, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    else if (wrapped)
        for (long i = 0; i < iter; i++) MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    else
        for (long i = 0; i < iter; i++) PMPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return (now() - t0) / (double)iter * 1e9;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    long iter = argc > 1 ? atol(argv[1]) : 100000;
    int blocks = argc > 2 ? atoi(argv[2]) : 21, rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    g_bcast = getenv("OP") && getenv("OP")[0] == 'b';
    g_send = getenv("OP") && getenv("OP")[0] == 's';
    g_self = rank;
    MPI_Datatype kept = MPI_DATATYPE_NULL;
    if (getenv("DT_SIGNATURE") || getenv("DT_KEEP")) {
        MPI_Type_vector(4, 2, 3, MPI_DOUBLE, &kept);
        MPI_Type_commit(&kept);
        if (getenv("DT_SIGNATURE")) {
            char hex[17] = "";
            pgmpitune_type_signature(kept, 1, hex, NULL, 0);
            if (rank == 0) printf("%s\n", hex);
            MPI_Type_free(&kept);
            MPI_Finalize();
            return 0;
        }
    }
    double *w = malloc(sizeof(double) * (size_t)blocks), *b = malloc(sizeof(double) * (size_t)blocks);
    double *d = malloc(sizeof(double) * (size_t)blocks);
    loop(1, iter / 10 + 1);
    loop(0, iter / 10 + 1);
    for (int k = 0; k < blocks; k++) {
        if (k % 2) { b[k] = loop(0, iter); w[k] = loop(1, iter); }
        else { w[k] = loop(1, iter); b[k] = loop(0, iter); }
        d[k] = w[k] - b[k];
    }
    double lookup = -1;
    if (getenv("LOOKUP")) {
        int c = pgmpitune_collective_lookup("allreduce");
        long n = 20000000;
        volatile int sink = 0;
        unsigned long long h = 88172645463325252ULL;
        double t0 = now();
        for (long i = 0; i < n; i++) {
            h ^= h << 13; h ^= h >> 7; h ^= h << 17;              /* xorshift: sizes across all ranges */
            sink += pgmpitune_selected(c, (size_t)(h % 160000), p);
        }
        lookup = (now() - t0) / (double)n * 1e9;
        (void)sink;
    }
    if (rank == 0) {
        double mo = median(d, blocks);
        printf("p=%d wrapped_ns=%.2f bare_ns=%.2f overhead_ns=%.2f", p, median(w, blocks), median(b, blocks), mo);
        if (lookup >= 0) printf(" lookup_ns=%.2f", lookup);
        if (kept != MPI_DATATYPE_NULL) printf(" kept_type_replaced=%s", pgmpitune_type_replacement(kept) ? "yes" : "no");
        printf("\n");
    }
    if (kept != MPI_DATATYPE_NULL) MPI_Type_free(&kept);
    MPI_Finalize();
    return 0;
}
