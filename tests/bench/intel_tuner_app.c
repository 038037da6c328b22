/* A user's program for tests/bench/intel_tuner_compare.py (not a benchmark of either tuner): an iterative
 * kernel whose every step calls MPI_Allreduce, MPI_Bcast, MPI_Reduce and MPI_Allgather on blocks of a few sizes
 * and folds the results back into its state.  The state holds small integers in doubles (all sums stay far
 * below 2^53), so every algorithm must give bit-identical results whatever its reduction order: the checksum
 * of the final state is the same under every tuning, and rank 0 recomputes the whole run serially to check it.
 *   mpirun -np 2 intel_tuner_app <iterations> <bytes>[,<bytes>...]
 * prints on rank 0, per (collective, bytes): "cell <coll> <bytes> median_us=<t>" (rank 0's own time per call,
 * median over the iterations); per allreduce/reduce size "fingerprint <coll> <bytes> <hex>" (which rank's NaN
 * payload survives MPI_SUM, element by element: the algorithm's fingerprint, as in native_user_app.c); and
 * "checksum=<hex> correct=<yes|no>". */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define M 1021L
#define MAXS 16
enum { AR, BC, RD, AG, NC };
static const char *NAMES[NC] = {"allreduce", "bcast", "reduce", "allgather"};

static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static double mod(long v) { return (double)(((v % M) + M) % M); }

/* one step of the kernel for block size ne, given what the collectives returned (r: allreduce sum, b: the
 * broadcast block, d: the reduce sum, valid on rank 0 only, g: the gathered blocks) */
static void fold(double *x, size_t ne, int rank, int size, int k, const double *r, const double *b, const double *d,
                 const double *g)
{
    for (size_t e = 0; e < ne; e++) {
        long v = (long)x[e] + (long)r[e] + k + 3 * (long)b[e];
        if (rank == 0) v += (long)d[e];
        for (int q = 0; q < size; q++) v += (q + 1) * (long)g[(size_t)q * ne + e];
        x[e] = mod(v);
    }
}

static void init(double *x, size_t n, int rank) { for (size_t e = 0; e < n; e++) x[e] = mod((long)(e * 7 + (size_t)rank * 13 + 1)); }

static unsigned long long fnv(const double *x, size_t n)
{
    unsigned long long h = 1469598103934665603ULL;
    for (size_t e = 0; e < n; e++) h = (h ^ (unsigned long long)(long)x[e]) * 1099511628211ULL;
    return h;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = argc > 1 ? atoi(argv[1]) : 50, ns = 0;
    size_t bytes[MAXS], ne[MAXS], total = 0, maxe = 0;
    char list[512];
    snprintf(list, sizeof list, "%s", argc > 2 ? argv[2] : "8,1024,65536");
    for (char *tok = strtok(list, ","); tok && ns < MAXS; tok = strtok(NULL, ",")) {
        bytes[ns] = strtoull(tok, NULL, 10);
        ne[ns] = bytes[ns] < sizeof(double) ? 1 : bytes[ns] / sizeof(double);
        total += ne[ns];
        if (ne[ns] > maxe) maxe = ne[ns];
        ns++;
    }
    double *x = malloc(sizeof(double) * total), *r = malloc(sizeof(double) * maxe), *b = malloc(sizeof(double) * maxe);
    double *d = malloc(sizeof(double) * maxe), *g = malloc(sizeof(double) * maxe * (size_t)size);
    double *t = malloc(sizeof(double) * (size_t)iters * NC * (size_t)ns);
    init(x, total, rank);
    for (int k = 0; k < iters; k++) {
        double *xs = x;
        for (int s = 0; s < ns; s++) {
            size_t n = ne[s];
            double *ts = &t[((size_t)s * NC) * (size_t)iters + (size_t)k], t0;
            t0 = MPI_Wtime(); MPI_Allreduce(xs, r, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); ts[AR * iters] = MPI_Wtime() - t0;
            if (rank == k % size) memcpy(b, xs, sizeof(double) * n);
            t0 = MPI_Wtime(); MPI_Bcast(b, (int)n, MPI_DOUBLE, k % size, MPI_COMM_WORLD); ts[BC * iters] = MPI_Wtime() - t0;
            t0 = MPI_Wtime(); MPI_Reduce(xs, d, (int)n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD); ts[RD * iters] = MPI_Wtime() - t0;
            t0 = MPI_Wtime(); MPI_Allgather(xs, (int)n, MPI_DOUBLE, g, (int)n, MPI_DOUBLE, MPI_COMM_WORLD); ts[AG * iters] = MPI_Wtime() - t0;
            fold(xs, n, rank, size, k, r, b, d, g);
            xs += n;
        }
    }
    /* the final state of every rank, and rank 0's serial recomputation of the whole run */
    unsigned long long h = fnv(x, total), *hs = malloc(sizeof h * (size_t)size);
    MPI_Gather(&h, 1, MPI_UNSIGNED_LONG_LONG, hs, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    int ok = 1;
    if (rank == 0) {
        double *y = malloc(sizeof(double) * total * (size_t)size);
        for (int q = 0; q < size; q++) init(&y[(size_t)q * total], total, q);
        for (int k = 0; k < iters; k++) {
            size_t off = 0;
            for (int s = 0; s < ns; s++) {
                size_t n = ne[s];
                for (size_t e = 0; e < n; e++) {
                    long sum = 0;
                    for (int q = 0; q < size; q++) {
                        sum += (long)y[(size_t)q * total + off + e];
                        g[(size_t)q * n + e] = y[(size_t)q * total + off + e];
                    }
                    r[e] = d[e] = (double)sum;
                    b[e] = y[(size_t)(k % size) * total + off + e];
                }
                for (int q = 0; q < size; q++) fold(&y[(size_t)q * total + off], n, q, size, k, r, b, d, g);
                off += n;
            }
        }
        for (int q = 0; q < size; q++) ok &= fnv(&y[(size_t)q * total], total) == hs[q];
        free(y);
    }
    /* fingerprints: NaN payload (rank + 1, element) per element under MPI_SUM, per allreduce/reduce size */
    double *ds = malloc(sizeof(double) * maxe), *dr = malloc(sizeof(double) * maxe);
    for (int c = 0; c < 2; c++)
        for (int s = 0; s < ns; s++) {
            size_t n = ne[s];
            for (size_t e = 0; e < n; e++) {
                uint64_t v = 0x7ff8000000000000ULL | ((uint64_t)(rank + 1) << 32) | (uint64_t)(e & 0xffffffffu);
                memcpy(&ds[e], &v, sizeof v);
            }
            if (c == 0) MPI_Allreduce(ds, dr, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            else MPI_Reduce(ds, dr, (int)n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
            if (rank) continue;
            unsigned long long f = 1469598103934665603ULL;
            for (size_t e = 0; e < n; e++) {
                uint64_t v; memcpy(&v, &dr[e], sizeof v);
                unsigned who = ((v & 0x7ff8000000000000ULL) == 0x7ff8000000000000ULL) ? (unsigned)((v >> 32) & 0xffffu) : 0xffffu;
                f = (f ^ who) * 1099511628211ULL;
            }
            printf("fingerprint %s %zu %llx\n", NAMES[c == 0 ? AR : RD], bytes[s], f);
        }
    if (rank == 0) {
        for (int s = 0; s < ns; s++)
            for (int c = 0; c < NC; c++) {
                double *ts = &t[((size_t)s * NC + (size_t)c) * (size_t)iters];
                qsort(ts, (size_t)iters, sizeof(double), cmp);
                printf("cell %s %zu median_us=%.3f\n", NAMES[c], bytes[s], ts[iters / 2] * 1e6);
            }
        unsigned long long all = 1469598103934665603ULL;
        for (int q = 0; q < size; q++) all = (all ^ hs[q]) * 1099511628211ULL;
        printf("checksum=%llx correct=%s\n", all, ok ? "yes" : "no");
    }
    free(x); free(r); free(b); free(d); free(g); free(t); free(hs); free(ds); free(dr);
    MPI_Finalize();
    return 0;
}
