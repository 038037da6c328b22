/* Range lookup against a linear scan. Writes one profile per layout, each for its own collective:
 *   dense   MPI_Allreduce  10,000 ranges of 1-40 bytes with gaps of 0-49 bytes (the benchmark's shape)
 *   octaves MPI_Bcast      10,000 ranges spread over 1 B .. 2^44 B with growing gaps (log-linear buckets
 *                          of every width are used)
 *   cluster MPI_Reduce     10,000 ranges packed just above 2^50 (all in one bucket: the search inside a
 *                          bucket does all the work) and one range ending at 2^63-1
 *   tiny    MPI_Alltoall   3 ranges at power-of-two bounds (a site's usual profile)
 * ranges in random file order, ids alternating default / mock-up; points PGMPITUNE_PROFILE_DIR at them
 * and after MPI_Init compares pgmpitune_selected() with a linear scan for every range edge (lo-1, lo,
 * hi, hi+1) and 100,000 random sizes per layout. Prints "lookup_check: OK" on success. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pgmpitune.h"

#define M 10000
typedef struct {
    const char *name, *coll, *mpi_name, *mockup;
    int n;
    unsigned long long lo[M], hi[M], span;
    int id[M];
} layout_t;

static layout_t L[4] = {
    {"dense", "allreduce", "MPI_Allreduce", "allreduce_as_reduce_bcast", 0, {0}, {0}, 0, {0}},
    {"octaves", "bcast", "MPI_Bcast", "bcast_as_scatter_allgather", 0, {0}, {0}, 0, {0}},
    {"cluster", "reduce", "MPI_Reduce", "reduce_as_allreduce", 0, {0}, {0}, 0, {0}},
    {"tiny", "alltoall", "MPI_Alltoall", "alltoall_as_alltoallv", 0, {0}, {0}, 0, {0}},
};

static unsigned long long rng = 0x2545F4914F6CDD1DULL;
static unsigned long long next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }

static void add(layout_t *l, unsigned long long lo, unsigned long long hi)
{
    l->lo[l->n] = lo; l->hi[l->n] = hi; l->id[l->n] = 1 + (int)(next() % 2); l->n++;
    if (hi > l->span) l->span = hi;
}

static void generate(void)
{
    unsigned long long at = 0;
    for (int i = 0; i < M; i++) {                                   /* dense */
        at += next() % 50;
        unsigned long long lo = at;
        at += next() % 3 == 0 ? 0 : next() % 40;
        add(&L[0], lo, at);
        at += 1;
    }
    at = 1;                                                         /* octaves: gaps grow with the size */
    for (int i = 0; i < M; i++) {
        unsigned long long step = at / 600 + 1;
        at += next() % step;
        unsigned long long lo = at;
        at += next() % step;
        add(&L[1], lo, at);
        at += 1;
    }
    at = 1ULL << 50;                                                /* cluster */
    for (int i = 0; i < M - 1; i++) {
        at += next() % 60;
        unsigned long long lo = at;
        at += next() % 30;
        add(&L[2], lo, at);
        at += 1;
    }
    add(&L[2], 1ULL << 62, 9223372036854775807ULL);
    add(&L[3], 0, 1023);                                            /* tiny */
    add(&L[3], 1024, 65535);
    add(&L[3], 1048576, 16777215);
}

static int linear(const layout_t *l, unsigned long long n, int mock)
{
    for (int i = 0; i < l->n; i++)
        if (l->lo[i] <= n && n <= l->hi[i]) return l->id[i] == 2 ? mock : 0;
    return 0;
}

int main(int argc, char **argv)
{
    int p = 1;
    char dir[] = "/tmp/pgmpi-lookup-XXXXXX", path[256];
    generate();   /* all ranks generate the same ranges; rank 0's files are what the library reads */
    const char *np = getenv("OMPI_COMM_WORLD_SIZE") ? getenv("OMPI_COMM_WORLD_SIZE") : getenv("PMI_SIZE");
    if (np) p = atoi(np);
    if (!mkdtemp(dir)) return 2;
    for (int k = 0; k < 4; k++) {
        const layout_t *l = &L[k];
        snprintf(path, sizeof path, "%s/%s_p%d.prf", dir, l->coll, p);
        FILE *f = fopen(path, "w");
        if (!f) return 2;
        fprintf(f, "# pgtune profile\n#@pgmpi profile_version 1\n%s\n%d\n2\n1 default\n2 %s\n%d\n", l->mpi_name, p,
                l->mockup, l->n);
        for (int i = l->n - 1; i >= 0; i--) fprintf(f, "%llu %llu %d\n", l->lo[i], l->hi[i], l->id[i]);   /* unsorted */
        fclose(f);
    }
    setenv("PGMPITUNE_PROFILE_DIR", dir, 1);
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    long bad_all = 0, checked_all = 0;
    for (int k = 0; k < 4; k++) {
        const layout_t *l = &L[k];
        int c = pgmpitune_collective_lookup(l->coll);
        int mock = pgmpitune_algorithm_lookup(c, l->mockup);
        long bad = 0, checked = 0;
        for (int i = 0; i < l->n; i++) {
            unsigned long long e[4] = {l->lo[i] ? l->lo[i] - 1 : 0, l->lo[i], l->hi[i], l->hi[i] + 1};
            for (int j = 0; j < 4; j++, checked++)
                if (pgmpitune_selected(c, (size_t)e[j], p) != linear(l, e[j], mock)) bad++;
        }
        for (int i = 0; i < 100000; i++, checked++) {
            /* uniform over the span, and log-uniform (small sizes are where most calls are) */
            unsigned long long n = i % 2 ? next() % (l->span + 100) : next() >> (next() % 64);
            if (pgmpitune_selected(c, (size_t)n, p) != linear(l, n, mock)) bad++;
        }
        if (pgmpitune_selected(c, 8, p + 1) != 0) bad++;            /* other communicator size: default */
        if (rank == 0) printf("lookup_check: %-8s %5d ranges up to %llu: %ld of %ld wrong\n", l->name, l->n, l->span,
                              bad, checked);
        bad_all += bad; checked_all += checked;
        snprintf(path, sizeof path, "%s/%s_p%d.prf", dir, l->coll, p);
        unlink(path);          /* every rank wrote its own directory */
    }
    rmdir(dir);
    if (rank == 0) printf(bad_all ? "lookup_check: FAILED %ld of %ld\n" : "lookup_check: OK (%ld of %ld wrong)\n",
                          bad_all, checked_all);
    MPI_Finalize();
    return bad_all ? 1 : 0;
}
