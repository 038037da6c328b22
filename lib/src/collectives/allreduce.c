/* MPI_Allreduce: the library default and its mock-ups (see ../core/pgmpitune_core.h). */
#include "pgmpitune_core.h"

typedef int (*allreduce_fn)(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);

static const pgmpi_alg_t allreduce_algs[] = {
    {"default", NULL, NULL, NULL},
};

const pgmpi_coll_desc_t pgmpi_desc_ALLREDUCE = {
    PGMPI_COLL_ALLREDUCE, allreduce_algs, (int)(sizeof allreduce_algs / sizeof allreduce_algs[0])
};

int MPI_Allreduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    size_t elem = pgmpi_type_bytes(dt), n = (size_t)(count > 0 ? count : 0) * elem;
    int alg = pgmpi_begin(PGMPI_COLL_ALLREDUCE, comm, n, elem);
    if (alg > 0) {
        int rc_ = ((allreduce_fn)allreduce_algs[alg].fn)(sb, rb, count, dt, op, comm);
        if (rc_ != PGMPI_FALLBACK) { pgmpi_end(PGMPI_COLL_ALLREDUCE, n, alg, 0); return rc_; }
        pgmpi_end(PGMPI_COLL_ALLREDUCE, n, alg, 1);
    } else pgmpi_end(PGMPI_COLL_ALLREDUCE, n, 0, 0);
    return PMPI_Allreduce(sb, rb, count, dt, op, comm);
}
