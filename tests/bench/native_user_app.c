/* A user's program (not pgmpi-bench) for tests/bench/native_user_job.py: times MPI_Allreduce of n bytes
 * (MPI_INT, MPI_SUM) or MPI_Bcast of n bytes from rank 0 (new data every repetition) and checks every
 * element; for allreduce it then prints which rank's operand survives under MPI_SUM of NaN payloads (the
 * algorithm's fingerprint, as lib/bench/bench_check.c computes it; "-" for bcast, which has none).
 *   mpirun -np 2 native_user_app <bytes> <repetitions> [allreduce|bcast]
 * prints on rank 0: "bytes=<n> median_us=<t> correct=<yes|no> fingerprint=<hex>:<hex>...|-" */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 65536;
    int reps = argc > 2 ? atoi(argv[2]) : 50;
    int bcast = argc > 3 && strcmp(argv[3], "bcast") == 0;
    size_t ne = n / sizeof(int);
    int *s = malloc(n), *r = malloc(n);
    double *t = malloc(sizeof(double) * (size_t)reps);
    for (size_t e = 0; e < ne; e++) s[e] = (int)((e * 7 + (size_t)rank * 3) % 1000);
    int ok = 1;
    for (int i = 0; i < reps; i++) {
        if (bcast) {                      /* rank 0 sends this repetition's data; the others must get it */
            for (size_t e = 0; e < ne; e++) r[e] = rank == 0 ? (int)((e * 7 + (size_t)i) % 1000) : -1;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (bcast) MPI_Bcast(r, (int)ne, MPI_INT, 0, MPI_COMM_WORLD);
        else MPI_Allreduce(s, r, (int)ne, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        double dt = MPI_Wtime() - t0;
        MPI_Allreduce(&dt, &t[i], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (bcast) {
            for (size_t e = 0; e < ne; e++)
                if (r[e] != (int)((e * 7 + (size_t)i) % 1000)) { ok = 0; break; }
            continue;
        }
        for (size_t e = 0; e < ne; e++) {
            long want = 0;
            for (int q = 0; q < size; q++) want += (long)((e * 7 + (size_t)q * 3) % 1000);
            if (r[e] != want) { ok = 0; break; }
        }
    }
    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    /* fingerprint: NaN payload (rank + 1, element) per element, MPI_SUM over doubles */
    size_t nd = n / sizeof(double);
    double *ds = malloc(n), *dr = malloc(n);
    for (size_t e = 0; e < nd; e++) {
        uint64_t b = 0x7ff8000000000000ULL | ((uint64_t)(rank + 1) << 32) | (uint64_t)(e & 0xffffffffu);
        memcpy(&ds[e], &b, sizeof b);
    }
    MPI_Allreduce(ds, dr, (int)nd, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    unsigned long long h = 1469598103934665603ULL, *hs = malloc(sizeof h * (size_t)size);
    for (size_t e = 0; e < nd; e++) {
        uint64_t b; memcpy(&b, &dr[e], sizeof b);
        unsigned who = ((b & 0x7ff8000000000000ULL) == 0x7ff8000000000000ULL) ? (unsigned)((b >> 32) & 0xffffu) : 0xffffu;
        h = (h ^ who) * 1099511628211ULL;
    }
    MPI_Gather(&h, 1, MPI_UNSIGNED_LONG_LONG, hs, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        qsort(t, (size_t)reps, sizeof(double), cmp);
        printf("bytes=%zu median_us=%.2f correct=%s fingerprint=", n, t[reps / 2] * 1e6, all_ok ? "yes" : "no");
        for (int q = 0; q < size && !bcast; q++) printf("%s%llx", q ? ":" : "", hs[q]);
        printf("%s\n", bcast ? "-" : "");
    }
    free(s); free(r); free(t); free(ds); free(dr); free(hs);
    MPI_Finalize();
    return 0;
}
