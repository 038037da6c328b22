/* MPI_Reduce: the library default and its mock-ups (see ../core/pgmpitune_core.h). */
#include "pgmpitune_core.h"

typedef int (*reduce_fn)(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm);

static const pgmpi_alg_t reduce_algs[] = {
    {"default", NULL, NULL, NULL},
};

const pgmpi_coll_desc_t pgmpi_desc_REDUCE = {
    PGMPI_COLL_REDUCE, reduce_algs, (int)(sizeof reduce_algs / sizeof reduce_algs[0])
};

int MPI_Reduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    size_t elem = pgmpi_type_bytes(dt), n = (size_t)(count > 0 ? count : 0) * elem;
    int alg = pgmpi_begin(PGMPI_COLL_REDUCE, comm, n, elem);
    if (alg > 0) {
        int rc_ = ((reduce_fn)reduce_algs[alg].fn)(sb, rb, count, dt, op, root, comm);
        if (rc_ != PGMPI_FALLBACK) { pgmpi_end(PGMPI_COLL_REDUCE, n, alg, 0); return rc_; }
        pgmpi_end(PGMPI_COLL_REDUCE, n, alg, 1);
    } else pgmpi_end(PGMPI_COLL_REDUCE, n, 0, 0);
    return PMPI_Reduce(sb, rb, count, dt, op, root, comm);
}
