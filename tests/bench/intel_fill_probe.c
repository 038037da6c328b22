/* Whether Intel MPI presets that share the default's fingerprint give the default's result bits on other data
 * (tests/bench/intel_fill_probe.py; scheduler/README.md, "Filling the default's sizes").  Per size, two
 * MPI_Allreduce(MPI_SUM, MPI_DOUBLE) calls:
 *   fp   the fingerprint input of lib/bench/bench_check.c: quiet NaNs whose payload is (rank + 1, element), so
 *        which rank's payload survives where follows the algorithm's operand order and split;
 *   bits doubles of mixed signs and exponents (2^-20..2^20), whose sum depends on the association order.
 * Each prints the FNV-1a 64 hash of every rank's whole result (gathered to rank 0) and whether the ranks
 * agree with each other:  "<bytes> fp=<hash> bits=<hash> ranks_agree=<0|1>".
 *   mpirun -np P intel_fill_probe <bytes> [<bytes> ...] */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33;
    return x;
}

/* FNV-1a 64 over every rank's result, and whether all ranks hold the same bytes (rank 0's answer). */
static uint64_t all_hash(const void *r, size_t n, int rank, int size, int *agree)
{
    unsigned char *all = rank == 0 ? malloc(n * (size_t)size) : NULL;
    MPI_Gather(r, (int)n, MPI_BYTE, all, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
    uint64_t h = 1469598103934665603ULL;
    if (rank == 0) {
        *agree = 1;
        for (size_t i = 0; i < n * (size_t)size; i++) h = (h ^ all[i]) * 1099511628211ULL;
        for (int q = 1; q < size; q++) if (memcmp(all, all + n * (size_t)q, n) != 0) *agree = 0;
        free(all);
    }
    return h;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int a = 1; a < argc; a++) {
        size_t n = strtoull(argv[a], NULL, 10), nd = n / sizeof(double);
        if (nd == 0) continue;
        double *s = malloc(nd * sizeof *s), *r = malloc(nd * sizeof *r);
        for (size_t e = 0; e < nd; e++) {
            uint64_t b = 0x7ff8000000000000ULL | ((uint64_t)(rank + 1) << 32) | (uint64_t)(e & 0xffffffffu);
            memcpy(&s[e], &b, sizeof b);
        }
        int agree_fp = 1, agree_bits = 1;
        MPI_Allreduce(s, r, (int)nd, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        uint64_t fp = all_hash(r, nd * sizeof *r, rank, size, &agree_fp);
        for (size_t e = 0; e < nd; e++) {
            uint64_t x = mix(((uint64_t)rank << 40) ^ e ^ 0x9e3779b97f4a7c15ULL);
            s[e] = ldexp(1.0 + (double)(x >> 12) / 4503599627370496.0, (int)(x % 41) - 20) * ((x >> 8) & 1 ? -1 : 1);
        }
        MPI_Allreduce(s, r, (int)nd, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        uint64_t bits = all_hash(r, nd * sizeof *r, rank, size, &agree_bits);
        if (rank == 0) printf("%zu fp=%016llx bits=%016llx ranks_agree=%d\n", n, (unsigned long long)fp,
                              (unsigned long long)bits, agree_bits);
        free(s);
        free(r);
    }
    MPI_Finalize();
    return 0;
}
