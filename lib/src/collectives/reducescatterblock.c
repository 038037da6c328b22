/* MPI_Reduce_scatter_block: the library default and its mock-ups (GL17-GL19; rules in
 * ../core/pgmpitune_core.h). n = recvcount x p x size(datatype) bytes, the whole reduced vector. */
#include "mockups.h"

typedef int (*reducescatterblock_fn)(const void *sb, void *rb, int rc, MPI_Datatype dt, MPI_Op op,
                                     MPI_Comm comm);

/* GL17: Reduce of the whole vector to rank 0, then Scatter. In place it works in the receive buffer
 * (root 0 only, which MPICH 4.0.2 handles); otherwise rank 0 reduces into the message pool. */
static int reducescatterblock_as_reduce_scatter(const void *sb, void *rb, int rc, MPI_Datatype dt, MPI_Op op,
                                                MPI_Comm comm)
{
    if (pm_inter(comm) || !pm_contig(dt)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    if (!pm_fits_int((size_t)rc * (size_t)p)) return PGMPI_FALLBACK;
    int total = rc * p;
    if (sb == MPI_IN_PLACE) {
        if (r == 0) {
            PM_TRY(PMPI_Reduce(MPI_IN_PLACE, rb, total, dt, op, 0, comm));
            return PMPI_Scatter(rb, rc, dt, MPI_IN_PLACE, rc, dt, 0, comm);
        }
        PM_TRY(PMPI_Reduce(rb, NULL, total, dt, op, 0, comm));
        return PMPI_Scatter(NULL, rc, dt, rb, rc, dt, 0, comm);
    }
    void *full = r == 0 ? pgmpi_pool_msg() : NULL;
    PM_TRY(PMPI_Reduce(sb, full, total, dt, op, 0, comm));
    return PMPI_Scatter(full, rc, dt, rb, rc, dt, 0, comm);
}

/* GL18: Reduce_scatter with equal counts (vector from the int pool). Any datatype. */
static int reducescatterblock_as_reducescatter(const void *sb, void *rb, int rc, MPI_Datatype dt, MPI_Op op,
                                               MPI_Comm comm)
{
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    int p = pm_size(comm);
    int *counts = pgmpi_pool_int();
    for (int i = 0; i < p; i++) counts[i] = rc;
    return PMPI_Reduce_scatter(sb, rb, counts, dt, op, comm);
}

/* GL19: Allreduce of the whole vector, then each rank keeps its block. In place it reduces in the
 * receive buffer; otherwise into the message pool. Contiguous datatypes. */
static int reducescatterblock_as_allreduce(const void *sb, void *rb, int rc, MPI_Datatype dt, MPI_Op op,
                                           MPI_Comm comm)
{
    if (pm_inter(comm) || !pm_contig(dt)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    if (!pm_fits_int((size_t)rc * (size_t)p)) return PGMPI_FALLBACK;
    size_t blk = (size_t)rc * pgmpi_type_bytes(dt);
    char *full = sb == MPI_IN_PLACE ? rb : pgmpi_pool_msg();
    PM_TRY(PMPI_Allreduce(sb, full, rc * p, dt, op, comm));
    if (blk && (r || full != (char *)rb)) memmove(rb, full + (size_t)r * blk, blk);
    return MPI_SUCCESS;
}


static const pgmpi_alg_t reducescatterblock_algs[] = {
    {"default", NULL, NULL, NULL, 0},
    {"reducescatterblock_as_reduce_scatter", (void (*)(void))reducescatterblock_as_reduce_scatter, pm_need_n, NULL, 0},
    {"reducescatterblock_as_reducescatter", (void (*)(void))reducescatterblock_as_reducescatter, NULL,
     pm_need_p_ints, 0},
    {"reducescatterblock_as_allreduce", (void (*)(void))reducescatterblock_as_allreduce, pm_need_n, NULL, 0},
};

const pgmpi_coll_desc_t pgmpi_desc_REDUCE_SCATTER_BLOCK = {
    PGMPI_COLL_REDUCE_SCATTER_BLOCK, reducescatterblock_algs,
    (int)(sizeof reducescatterblock_algs / sizeof reducescatterblock_algs[0])
};

int MPI_Reduce_scatter_block(const void *sb, void *rb, int rc, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    int p = 1;
    PMPI_Comm_size(comm, &p);
    size_t elem = pgmpi_type_bytes(dt), n = (size_t)(rc > 0 ? rc : 0) * (size_t)p * elem;
    PGMPI_DISPATCH(REDUCE_SCATTER_BLOCK, reducescatterblock_algs, reducescatterblock_fn, comm, n, elem,
                   PMPI_Reduce_scatter_block, (sb, rb, rc, dt, op, comm));
}
