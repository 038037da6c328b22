/* A send buffer nobody wrote: calloc's pages above glibc's mmap threshold all map the kernel's one zero
 * page until written, so every read of them hits the same 4 KiB, hot in the cache. ReproMPI leaves
 * MPI_Allgather's buffers so (it writes zeros only for the calls it initialises by default); an
 * application's send buffer holds its data. Alternates, inside one mpirun, MPI_Allgather from
 *   untouched: calloc(n), never written         written: calloc(n), every byte written once
 * (both receive buffers written), 1,000 measurements each per round, and prints the medians (max over
 * ranks) and how many distinct physical pages back each send buffer (/proc/self/pagemap, as root).
 *   mpicc -O2 -o zero_page tests/bench/zero_page.c
 *   mpirun -np 2 ./zero_page [BYTES=1048576] [ROUNDS=4]
 * lib/bench/README.md (Compared with ReproMPI) quotes its figures. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <unistd.h>

enum { NREP = 1000 };

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median_allgather(char *s, char *r, int n, int rank)
{
    static double t[NREP], tmax[NREP];
    for (int i = 0; i < NREP; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Allgather(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD);
        t[i] = MPI_Wtime() - t0;
    }
    MPI_Reduce(t, tmax, NREP, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank) return 0;
    qsort(tmax, NREP, sizeof *tmax, cmp);
    return tmax[NREP / 2] * 1e6;
}

/* distinct physical pages behind [p, p + n) (/proc/self/pagemap, needs root for the frame numbers):
 * 1 when every page maps the kernel's zero page; -1 when the frame numbers cannot be read */
static long distinct_frames(char *p, size_t n)
{
    long pg = sysconf(_SC_PAGESIZE), distinct = 0;
    FILE *f = fopen("/proc/self/pagemap", "rb");
    if (!f) return -1;
    uint64_t prev = 0;
    for (char *a = (char *)((uintptr_t)p & ~(uintptr_t)(pg - 1)); a < p + n; a += pg) {
        uint64_t e = 0;
        if (fseek(f, (long)((uintptr_t)a / (uintptr_t)pg * 8), SEEK_SET) || fread(&e, 8, 1, f) != 1) { fclose(f); return -1; }
        uint64_t pfn = e & ((1ULL << 55) - 1);
        if (!(e >> 63) || pfn == 0) { fclose(f); return -1; }
        if (pfn != prev) distinct++;
        prev = pfn;
    }
    fclose(f);
    return distinct;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    int n = argc > 1 ? atoi(argv[1]) : 1048576, rounds = argc > 2 ? atoi(argv[2]) : 4;
    char *untouched = calloc((size_t)n, 1), *written = calloc((size_t)n, 1);
    char *r1 = calloc((size_t)n * (size_t)p, 1), *r2 = calloc((size_t)n * (size_t)p, 1);
    memset(written, 1 + rank, (size_t)n);
    memset(r1, 1, (size_t)n * (size_t)p);
    memset(r2, 1, (size_t)n * (size_t)p);
    for (int round = 0; round < rounds; round++) {
        double u = median_allgather(untouched, r1, n, rank);
        double w = median_allgather(written, r2, n, rank);
        if (!rank)
            printf("Allgather %d B round %d: untouched send buffer %.2f us (%ld physical pages)  written %.2f us "
                   "(%ld)  untouched/written %.2f\n", n, round, u, distinct_frames(untouched, (size_t)n), w,
                   distinct_frames(written, (size_t)n), u / w);
    }
    free(untouched); free(written); free(r1); free(r2);
    MPI_Finalize();
    return 0;
}
