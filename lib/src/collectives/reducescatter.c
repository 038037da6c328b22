/* MPI_Reduce_scatter: the library default and its mock-ups (PGMPI paper: Reduce_scatter <= Allreduce,
 * Reduce_scatter <= Reduce + Scatterv; rules in ../core/pgmpitune_core.h).
 * n = sum(recvcounts) x size(datatype) bytes, the whole reduced vector. */
#include "mockups.h"

typedef int (*reducescatter_fn)(const void *sb, void *rb, const int rcs[], MPI_Datatype dt, MPI_Op op,
                                MPI_Comm comm);

/* Sum of the counts and this rank's offset; 0 when a count is negative or the total does not fit an
 * int count. */
static int rs_layout(const int rcs[], int p, int r, size_t *total, size_t *mine)
{
    size_t t = 0;
    for (int i = 0; i < p; i++) {
        if (rcs[i] < 0) return 0;                   /* the default reports the error */
        if (i == r) *mine = t;
        t += (size_t)rcs[i];
    }
    *total = t;
    return pm_fits_int(t);
}

/* Allreduce of the whole vector, then each rank keeps its block. In place it reduces in the receive
 * buffer (which then holds the whole vector, as MPI requires); otherwise into the message pool. */
static int reducescatter_as_allreduce(const void *sb, void *rb, const int rcs[], MPI_Datatype dt, MPI_Op op,
                                      MPI_Comm comm)
{
    if (pm_inter(comm) || !pm_contig(dt)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    size_t total = 0, off = 0, E = pgmpi_type_bytes(dt);
    if (!rs_layout(rcs, p, r, &total, &off)) return PGMPI_FALLBACK;
    char *full = sb == MPI_IN_PLACE ? rb : pgmpi_pool_msg();
    PM_TRY(PMPI_Allreduce(sb, full, (int)total, dt, op, comm));
    size_t blk = rcs[r] > 0 ? (size_t)rcs[r] * E : 0;
    if (blk && (off || full != (char *)rb)) memmove(rb, full + off * E, blk);
    return MPI_SUCCESS;
}

/* Reduce of the whole vector to rank 0, then Scatterv with the given counts (displacements from the
 * int pool). In place it works in the receive buffer (root 0 only); otherwise rank 0 reduces into the
 * message pool. */
static int reducescatter_as_reduce_scatterv(const void *sb, void *rb, const int rcs[], MPI_Datatype dt,
                                            MPI_Op op, MPI_Comm comm)
{
    if (pm_inter(comm) || !pm_contig(dt)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    size_t total = 0, off = 0;
    if (!rs_layout(rcs, p, r, &total, &off)) return PGMPI_FALLBACK;
    int *displs = pgmpi_pool_int();
    int d = 0;
    for (int i = 0; i < p; i++) { displs[i] = d; d += rcs[i]; }
    if (sb == MPI_IN_PLACE) {
        if (r == 0) {
            PM_TRY(PMPI_Reduce(MPI_IN_PLACE, rb, (int)total, dt, op, 0, comm));
            return PMPI_Scatterv(rb, rcs, displs, dt, MPI_IN_PLACE, rcs[0], dt, 0, comm);
        }
        PM_TRY(PMPI_Reduce(rb, NULL, (int)total, dt, op, 0, comm));
        return PMPI_Scatterv(NULL, NULL, NULL, dt, rb, rcs[r], dt, 0, comm);
    }
    void *full = r == 0 ? pgmpi_pool_msg() : NULL;
    PM_TRY(PMPI_Reduce(sb, full, (int)total, dt, op, 0, comm));
    return PMPI_Scatterv(full, rcs, displs, dt, pm_block(rb, (size_t)rcs[r]), rcs[r], dt, 0, comm);
}


static const pgmpi_alg_t reducescatter_algs[] = {
    {"default", NULL, NULL, NULL, 0},
    {"reducescatter_as_allreduce", (void (*)(void))reducescatter_as_allreduce, pm_need_n, NULL, 0},
    {"reducescatter_as_reduce_scatterv", (void (*)(void))reducescatter_as_reduce_scatterv, pm_need_n, pm_need_p_ints, 0},
};

const pgmpi_coll_desc_t pgmpi_desc_REDUCE_SCATTER = {
    PGMPI_COLL_REDUCE_SCATTER, reducescatter_algs, (int)(sizeof reducescatter_algs / sizeof reducescatter_algs[0])
};

int MPI_Reduce_scatter(const void *sb, void *rb, const int rcs[], MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    int p = 1;
    PMPI_Comm_size(comm, &p);
    size_t tot = 0;
    for (int i = 0; i < p; i++) tot += rcs[i] > 0 ? (size_t)rcs[i] : 0;
    size_t elem = pgmpi_type_bytes(dt), n = tot * elem;
    PGMPI_DISPATCH(REDUCE_SCATTER, reducescatter_algs, reducescatter_fn, comm, n, elem, PMPI_Reduce_scatter,
                   (sb, rb, rcs, dt, op, comm));
}
