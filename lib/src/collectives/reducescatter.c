/* MPI_Reduce_scatter: the library default and its mock-ups (see ../core/pgmpitune_core.h). */
#include "pgmpitune_core.h"

typedef int (*reducescatter_fn)(const void *sb, void *rb, const int rcs[], MPI_Datatype dt, MPI_Op op, MPI_Comm comm);

static const pgmpi_alg_t reducescatter_algs[] = {
    {"default", NULL, NULL, NULL},
};

const pgmpi_coll_desc_t pgmpi_desc_REDUCE_SCATTER = {
    PGMPI_COLL_REDUCE_SCATTER, reducescatter_algs, (int)(sizeof reducescatter_algs / sizeof reducescatter_algs[0])
};

int MPI_Reduce_scatter(const void *sb, void *rb, const int rcs[], MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    int p = 1; PMPI_Comm_size(comm, &p);
    size_t tot = 0; for (int i = 0; i < p; i++) tot += rcs[i] > 0 ? (size_t)rcs[i] : 0;
    size_t elem = pgmpi_type_bytes(dt), n = tot * elem;
    int alg = pgmpi_begin(PGMPI_COLL_REDUCE_SCATTER, comm, n, elem);
    if (alg > 0) {
        int rc_ = ((reducescatter_fn)reducescatter_algs[alg].fn)(sb, rb, rcs, dt, op, comm);
        if (rc_ != PGMPI_FALLBACK) { pgmpi_end(PGMPI_COLL_REDUCE_SCATTER, n, alg, 0); return rc_; }
        pgmpi_end(PGMPI_COLL_REDUCE_SCATTER, n, alg, 1);
    } else pgmpi_end(PGMPI_COLL_REDUCE_SCATTER, n, 0, 0);
    return PMPI_Reduce_scatter(sb, rb, rcs, dt, op, comm);
}
