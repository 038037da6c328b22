/* MPI_Reduce_scatter_block: the library default and its mock-ups (see ../core/pgmpitune_core.h). */
#include "pgmpitune_core.h"

typedef int (*reducescatterblock_fn)(const void *sb, void *rb, int rc, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);

static const pgmpi_alg_t reducescatterblock_algs[] = {
    {"default", NULL, NULL, NULL},
};

const pgmpi_coll_desc_t pgmpi_desc_REDUCE_SCATTER_BLOCK = {
    PGMPI_COLL_REDUCE_SCATTER_BLOCK, reducescatterblock_algs, (int)(sizeof reducescatterblock_algs / sizeof reducescatterblock_algs[0])
};

int MPI_Reduce_scatter_block(const void *sb, void *rb, int rc, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    int p = 1; PMPI_Comm_size(comm, &p);
    size_t elem = pgmpi_type_bytes(dt), n = (size_t)(rc > 0 ? rc : 0) * (size_t)p * elem;
    int alg = pgmpi_begin(PGMPI_COLL_REDUCE_SCATTER_BLOCK, comm, n, elem);
    if (alg > 0) {
        int rc_ = ((reducescatterblock_fn)reducescatterblock_algs[alg].fn)(sb, rb, rc, dt, op, comm);
        if (rc_ != PGMPI_FALLBACK) { pgmpi_end(PGMPI_COLL_REDUCE_SCATTER_BLOCK, n, alg, 0); return rc_; }
        pgmpi_end(PGMPI_COLL_REDUCE_SCATTER_BLOCK, n, alg, 1);
    } else pgmpi_end(PGMPI_COLL_REDUCE_SCATTER_BLOCK, n, 0, 0);
    return PMPI_Reduce_scatter_block(sb, rb, rc, dt, op, comm);
}
