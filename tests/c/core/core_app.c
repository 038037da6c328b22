/* Test application for libpgmpitune's core: calls the ten collectives on MPI_COMM_WORLD (and on a
 * split communicator) with int data whose results are known in closed form, checks them on every
 * rank, prints its argv (to test argument removal) and "core_app: OK" on rank 0.
 *   core_app [--counts=1,7,300] [--thread-multiple] [--sub] [--inter] [other args are echoed]
 * --inter also runs MPI_Allreduce and MPI_Bcast on an intercommunicator (even | odd world ranks). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails = 0;
#define CHECK(cond, ...) do { if (!(cond)) { fails++; if (fails < 10) { fprintf(stderr, "core_app: rank %d: ", rank); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } } while (0)

static int rank;

static void run(MPI_Comm comm, int count)
{
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    size_t n = (size_t)count, np = n * (size_t)p;
    int *a = malloc((np + 1) * sizeof(int)), *b = malloc((np + 1) * sizeof(int));
    int *rc = malloc((size_t)p * sizeof(int));
    int rcsum = 0;

    for (size_t i = 0; i < n; i++) a[i] = r + (int)i;
    CHECK(MPI_Allreduce(a, b, count, MPI_INT, MPI_SUM, comm) == MPI_SUCCESS, "allreduce rc");
    for (size_t i = 0; i < n; i++) CHECK(b[i] == p * (int)i + p * (p - 1) / 2, "allreduce[%zu]=%d", i, b[i]);

    for (size_t i = 0; i < n; i++) b[i] = r + (int)i;
    CHECK(MPI_Allreduce(MPI_IN_PLACE, b, count, MPI_INT, MPI_MAX, comm) == MPI_SUCCESS, "allreduce in place rc");
    for (size_t i = 0; i < n; i++) CHECK(b[i] == p - 1 + (int)i, "allreduce in place[%zu]=%d", i, b[i]);

    for (size_t i = 0; i < n; i++) a[i] = r == p - 1 ? (int)i + 7 : -1;
    CHECK(MPI_Bcast(a, count, MPI_INT, p - 1, comm) == MPI_SUCCESS, "bcast rc");
    for (size_t i = 0; i < n; i++) CHECK(a[i] == (int)i + 7, "bcast[%zu]=%d", i, a[i]);

    for (size_t i = 0; i < np; i++) a[i] = (int)i;
    CHECK(MPI_Scatter(a, count, MPI_INT, b, count, MPI_INT, 0, comm) == MPI_SUCCESS, "scatter rc");
    for (size_t i = 0; i < n; i++) CHECK(b[i] == r * count + (int)i, "scatter[%zu]=%d", i, b[i]);

    for (size_t i = 0; i < n; i++) a[i] = r * count + (int)i;
    CHECK(MPI_Gather(a, count, MPI_INT, b, count, MPI_INT, 0, comm) == MPI_SUCCESS, "gather rc");
    if (r == 0) for (size_t i = 0; i < np; i++) CHECK(b[i] == (int)i, "gather[%zu]=%d", i, b[i]);

    CHECK(MPI_Allgather(a, count, MPI_INT, b, count, MPI_INT, comm) == MPI_SUCCESS, "allgather rc");
    for (size_t i = 0; i < np; i++) CHECK(b[i] == (int)i, "allgather[%zu]=%d", i, b[i]);

    for (size_t i = 0; i < n; i++) a[i] = r + 2 * (int)i;
    CHECK(MPI_Reduce(a, b, count, MPI_INT, MPI_SUM, 0, comm) == MPI_SUCCESS, "reduce rc");
    if (r == 0) for (size_t i = 0; i < n; i++) CHECK(b[i] == 2 * p * (int)i + p * (p - 1) / 2, "reduce[%zu]=%d", i, b[i]);

    for (size_t i = 0; i < np; i++) a[i] = r * 1000 + (int)i;   /* block j goes to rank j */
    CHECK(MPI_Alltoall(a, count, MPI_INT, b, count, MPI_INT, comm) == MPI_SUCCESS, "alltoall rc");
    for (int s = 0; s < p; s++)
        for (size_t i = 0; i < n; i++)
            CHECK(b[(size_t)s * n + i] == s * 1000 + r * count + (int)i, "alltoall[%d][%zu]=%d", s, i, b[(size_t)s * n + i]);

    for (size_t i = 0; i < np; i++) a[i] = (int)i + r;
    CHECK(MPI_Reduce_scatter_block(a, b, count, MPI_INT, MPI_SUM, comm) == MPI_SUCCESS, "rsb rc");
    for (size_t i = 0; i < n; i++) CHECK(b[i] == p * (r * count + (int)i) + p * (p - 1) / 2, "rsb[%zu]=%d", i, b[i]);

    for (int j = 0; j < p; j++) { rc[j] = count + j; rcsum += rc[j]; }
    int *c = malloc((size_t)rcsum * sizeof(int) + 1), *d = malloc((size_t)rc[r] * sizeof(int) + 1);
    for (int i = 0; i < rcsum; i++) c[i] = i - r;
    CHECK(MPI_Reduce_scatter(c, d, rc, MPI_INT, MPI_SUM, comm) == MPI_SUCCESS, "rs rc");
    int off = 0;
    for (int j = 0; j < r; j++) off += rc[j];
    for (int i = 0; i < rc[r]; i++) CHECK(d[i] == p * (off + i) - p * (p - 1) / 2, "rs[%d]=%d", i, d[i]);
    free(c);
    free(d);

    for (size_t i = 0; i < n; i++) a[i] = r + 1 + (int)i;
    CHECK(MPI_Scan(a, b, count, MPI_INT, MPI_SUM, comm) == MPI_SUCCESS, "scan rc");
    for (size_t i = 0; i < n; i++) CHECK(b[i] == (r + 1) * (r + 2) / 2 + (r + 1) * (int)i, "scan[%zu]=%d", i, b[i]);
    free(a);
    free(b);
    free(rc);
}

int main(int argc, char **argv)
{
    int counts[64] = {1, 7, 300}, ncounts = 3, tm = 0, sub = 0, inter = 0;
    for (int i = 1; i < argc; i++) if (!strcmp(argv[i], "--thread-multiple")) tm = 1;
    if (tm) {
        int prov;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &prov);
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        printf("core_app: argc=%d argv:", argc);
        for (int i = 1; i < argc; i++) printf(" %s", argv[i]);
        printf("\n");
    }
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--counts=", 9)) {
            ncounts = 0;
            for (char *s = argv[i] + 9; *s && ncounts < 64;) {
                counts[ncounts++] = atoi(s);
                s = strchr(s, ',');
                if (!s) break;
                s++;
            }
        } else if (!strcmp(argv[i], "--sub")) sub = 1;
        else if (!strcmp(argv[i], "--inter")) inter = 1;
        else if (!strncmp(argv[i], "--module", 8) || !strncmp(argv[i], "--ppath", 7) || !strncmp(argv[i], "--config", 8))
            CHECK(0, "library argument %s reached the application", argv[i]);
    }
    for (int k = 0; k < ncounts; k++) run(MPI_COMM_WORLD, counts[k]);
    if (sub) {
        MPI_Comm half;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        for (int k = 0; k < ncounts; k++) run(half, counts[k]);
        MPI_Comm_free(&half);
    }
    if (inter) {
        int wp, color = rank % 2;
        MPI_Comm_size(MPI_COMM_WORLD, &wp);
        MPI_Comm half, ic;
        MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - color, 7, &ic);
        int remote = 0, x = rank + 1, y = -1, expect = 0;
        MPI_Comm_remote_size(ic, &remote);
        for (int r = 1 - color; r < wp; r += 2) expect += r + 1;     /* sum over the other group */
        CHECK(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, ic) == MPI_SUCCESS, "inter allreduce rc");
        CHECK(y == expect, "inter allreduce=%d expected %d", y, expect);
        int hr;
        MPI_Comm_rank(half, &hr);
        int v = color == 0 ? 99 : -1;                              /* group 0's rank 0 broadcasts */
        int root = color == 0 ? (hr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        CHECK(MPI_Bcast(&v, 1, MPI_INT, root, ic) == MPI_SUCCESS, "inter bcast rc");
        if (color == 1) CHECK(v == 99, "inter bcast=%d", v);
        MPI_Comm_free(&ic);
        MPI_Comm_free(&half);
    }
    int all = 0;
    PMPI_Allreduce(&fails, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf(all ? "core_app: FAILED (%d errors)\n" : "core_app: OK\n", all);
    fflush(stdout);
    MPI_Finalize();
    return all ? 1 : 0;
}
