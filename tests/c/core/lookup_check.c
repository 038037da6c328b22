/* Range lookup against a linear scan: writes a profile with 10,000 random ranges (gaps, single-byte
 * ranges, alternating default/mock-up ids), points PGMPITUNE_PROFILE_DIR at it, and after MPI_Init
 * compares pgmpitune_selected() with the answer of a linear scan for every range edge (lo-1, lo, hi,
 * hi+1) and 200,000 random sizes. Prints "lookup_check: OK" on success. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pgmpitune.h"

#define M 10000
static unsigned long long lo[M], hi[M];
static int id[M];

static unsigned long long rng = 0x2545F4914F6CDD1DULL;
static unsigned long long next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }

static int linear(unsigned long long n, int mock)
{
    for (int i = 0; i < M; i++)
        if (lo[i] <= n && n <= hi[i]) return id[i] == 2 ? mock : 0;
    return 0;
}

int main(int argc, char **argv)
{
    int p = 1;
    char dir[] = "/tmp/pgmpi-lookup-XXXXXX", path[256];
    /* all ranks generate the same ranges; rank 0's file is what the library reads */
    unsigned long long at = 0;
    for (int i = 0; i < M; i++) {
        at += next() % 50;                  /* gap (possibly 0) */
        lo[i] = at;
        at += next() % 3 == 0 ? 0 : next() % 40;
        hi[i] = at;
        at += 1;
        id[i] = 1 + (int)(next() % 2);
    }
    const char *np = getenv("OMPI_COMM_WORLD_SIZE") ? getenv("OMPI_COMM_WORLD_SIZE") : getenv("PMI_SIZE");
    if (np) p = atoi(np);
    const char *rk = getenv("OMPI_COMM_WORLD_RANK") ? getenv("OMPI_COMM_WORLD_RANK") : getenv("PMI_RANK");
    int wrank = rk ? atoi(rk) : 0;
    if (!mkdtemp(dir)) return 2;
    snprintf(path, sizeof path, "%s/allreduce_p%d.prf", dir, p);
    FILE *f = fopen(path, "w");
    fprintf(f, "# pgtune profile\n#@pgmpi profile_version 1\nMPI_Allreduce\n%d\n2\n1 default\n2 allreduce_as_reduce_bcast\n%d\n", p, M);
    for (int i = M - 1; i >= 0; i--) fprintf(f, "%llu %llu %d\n", lo[i], hi[i], id[i]);   /* unsorted on purpose */
    fclose(f);
    setenv("PGMPITUNE_PROFILE_DIR", dir, 1);
    (void)wrank;
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    int c = pgmpitune_collective_lookup("allreduce");
    int mock = pgmpitune_algorithm_lookup(c, "allreduce_as_reduce_bcast");
    long bad = 0, checked = 0;
    for (int i = 0; i < M; i++) {
        unsigned long long e[4] = {lo[i] ? lo[i] - 1 : 0, lo[i], hi[i], hi[i] + 1};
        for (int k = 0; k < 4; k++, checked++)
            if (pgmpitune_selected(c, (size_t)e[k], p) != linear(e[k], mock)) bad++;
    }
    for (int i = 0; i < 200000; i++, checked++) {
        unsigned long long n = next() % (at + 100);
        if (pgmpitune_selected(c, (size_t)n, p) != linear(n, mock)) bad++;
    }
    if (pgmpitune_selected(c, 8, p + 1) != 0) bad++;            /* other communicator size: default */
    MPI_Barrier(MPI_COMM_WORLD);
    unlink(path);
    rmdir(dir);
    if (rank == 0) printf(bad ? "lookup_check: FAILED %ld of %ld\n" : "lookup_check: OK (%ld of %ld wrong)\n", bad, checked);
    MPI_Finalize();
    return bad ? 1 : 0;
}
