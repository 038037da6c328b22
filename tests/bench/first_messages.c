/* Does what a job sends first change how fast its later small collectives run?  Plain MPI, no
 * libpgmpitune: optionally WARM=N barriers, then one early collective (FIRST=gather: a rooted MPI_Gather to rank 0;
 * FIRST=bcast: a small MPI_Bcast from rank 0; FIRST=allreduce), then NREP rounds of MPI_Allgather of
 * SIZE bytes, called alternately as MPI_ and PMPI_ (so a library preloaded in front of MPI shows both its
 * per-call cost, MPI_ against PMPI_, and any cost its MPI_Init left behind, PMPI_ against a run without
 * it).  Prints the two medians of the maximum over ranks, in us.
 *   mpirun -np 2 first_messages NREP SIZE          (tests/bench/lib_init_cost.sh runs it) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (argc != 3) {
        if (!rank) fprintf(stderr, "usage: first_messages NREP SIZE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *first = getenv("FIRST") ? getenv("FIRST") : "";
    int v = rank, w = 0, *all = calloc((size_t)p, sizeof *all);
    for (int i = 0, warm = getenv("WARM") ? atoi(getenv("WARM")) : 0; i < warm; i++) PMPI_Barrier(MPI_COMM_WORLD);
    for (int q = 0, nq = getenv("NFIRST") ? atoi(getenv("NFIRST")) : 1; q < nq; q++) {
    if (!strcmp(first, "gather")) PMPI_Gather(&v, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    else if (!strcmp(first, "bcast")) PMPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
    else if (!strcmp(first, "allreduce")) PMPI_Allreduce(&v, &w, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    }
    int nrep = atoi(argv[1]), n = atoi(argv[2]);
    char *s = calloc((size_t)n + 1, 1), *r = calloc((size_t)n * (size_t)p + 1, 1);
    double *t[2], *m[2];
    for (int k = 0; k < 2; k++) { t[k] = malloc((size_t)nrep * sizeof(double)); m[k] = malloc((size_t)nrep * sizeof(double)); }
    for (int i = 0; i < nrep; i++)
        for (int j = 0; j < 2; j++) {
            int k = (i + j) % 2;
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (k) PMPI_Allgather(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD);
            else MPI_Allgather(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD);
            t[k][i] = MPI_Wtime() - t0;
        }
    for (int k = 0; k < 2; k++) MPI_Reduce(t[k], m[k], nrep, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (!rank) {
        for (int k = 0; k < 2; k++) qsort(m[k], (size_t)nrep, sizeof(double), cmp);
        printf("MPI_ %.3f PMPI_ %.3f\n", m[0][nrep / 2] * 1e6, m[1][nrep / 2] * 1e6);
    }
    MPI_Finalize();
    return 0;
}
