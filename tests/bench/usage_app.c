/* A small "user application" with a known collective mix, for the usage demonstration of issue 33
 * (tests/bench/usage_demo.py, tests/python/scheduler/test_usage_demo.py).
 *
 *   usage_app <name> <iterations> <collective>:<bytes>:<calls per iteration> [...]
 *   collective: allreduce | bcast | reduce | allgather   (MPI_BYTE; allreduce/reduce with MPI_BOR)
 *
 * Every call gets new data (from the rank, the iteration and the call), and every result buffer a rank
 * receives is folded into a 64-bit FNV-1a checksum, so a redirected collective that changed one bit of one
 * result changes the checksum. Rank 0 prints
 *   usage_app <name> seconds=<MPI_Wtime of the loop> checksum=<hex of all ranks' checksums>
 * The loop's time comes from MPI_Wtime (the library's clock, or the virtual clock of the test interposer). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ALLREDUCE, BCAST, REDUCE, ALLGATHER };
static const char *NAMES[] = {"allreduce", "bcast", "reduce", "allgather"};

struct part { int coll; int bytes; int calls; };

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 1099511628211ULL; }
    return h;
}

static int parse(const char *s, struct part *p)
{
    char name[32];
    if (sscanf(s, "%31[a-z]:%d:%d", name, &p->bytes, &p->calls) != 3 || p->bytes < 1 || p->calls < 1) return -1;
    for (int c = 0; c < 4; c++)
        if (strcmp(name, NAMES[c]) == 0) { p->coll = c; return 0; }
    return -1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 4) {
        if (rank == 0) fprintf(stderr, "usage: usage_app <name> <iterations> <collective>:<bytes>:<calls> ...\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int iters = atoi(argv[2]), nparts = argc - 3, maxb = 1;
    struct part *parts = calloc((size_t)nparts, sizeof *parts);
    for (int i = 0; i < nparts; i++) {
        if (parse(argv[3 + i], &parts[i]) != 0) {
            if (rank == 0) fprintf(stderr, "usage_app: '%s': expected <allreduce|bcast|reduce|allgather>:<bytes>:<calls>\n", argv[3 + i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if (parts[i].bytes > maxb) maxb = parts[i].bytes;
    }
    unsigned char *s = malloc((size_t)maxb), *r = malloc((size_t)maxb * (size_t)size);
    uint64_t h = 1469598103934665603ULL;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        for (int i = 0; i < nparts; i++) {
            const struct part *p = &parts[i];
            for (int c = 0; c < p->calls; c++) {
                for (int b = 0; b < p->bytes; b++)
                    s[b] = (unsigned char)(1u << ((unsigned)(b + it * 7 + c * 3 + rank * 5) % 8));
                switch (p->coll) {
                case ALLREDUCE:
                    MPI_Allreduce(s, r, p->bytes, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD);
                    h = fnv(h, r, (size_t)p->bytes);
                    break;
                case BCAST:
                    if (rank == 0) memcpy(r, s, (size_t)p->bytes);
                    MPI_Bcast(r, p->bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
                    h = fnv(h, r, (size_t)p->bytes);
                    break;
                case REDUCE:
                    MPI_Reduce(s, r, p->bytes, MPI_BYTE, MPI_BOR, 0, MPI_COMM_WORLD);
                    if (rank == 0) h = fnv(h, r, (size_t)p->bytes);
                    break;
                case ALLGATHER:
                    MPI_Allgather(s, p->bytes, MPI_BYTE, r, p->bytes, MPI_BYTE, MPI_COMM_WORLD);
                    h = fnv(h, r, (size_t)p->bytes * (size_t)size);
                    break;
                }
            }
        }
    }
    double t = MPI_Wtime() - t0;
    uint64_t *all = rank == 0 ? malloc(sizeof h * (size_t)size) : NULL;
    MPI_Gather(&h, 8, MPI_BYTE, all, 8, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        uint64_t g = fnv(1469598103934665603ULL, (const unsigned char *)all, sizeof h * (size_t)size);
        printf("usage_app %s seconds=%.9f checksum=%016llx\n", argv[1], t, (unsigned long long)g);
        free(all);
    }
    free(s); free(r); free(parts);
    MPI_Finalize();
    return 0;
}
