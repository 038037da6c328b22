/* MPI_Scatter: the library default and its mock-ups (see ../core/pgmpitune_core.h). */
#include "pgmpitune_core.h"

typedef int (*scatter_fn)(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm);

static const pgmpi_alg_t scatter_algs[] = {
    {"default", NULL, NULL, NULL},
};

const pgmpi_coll_desc_t pgmpi_desc_SCATTER = {
    PGMPI_COLL_SCATTER, scatter_algs, (int)(sizeof scatter_algs / sizeof scatter_algs[0])
};

int MPI_Scatter(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm)
{
    size_t elem = rb == MPI_IN_PLACE ? pgmpi_type_bytes(st) : pgmpi_type_bytes(rt);
    size_t n = (size_t)((rb == MPI_IN_PLACE ? sc : rc) > 0 ? (rb == MPI_IN_PLACE ? sc : rc) : 0) * elem;
    int alg = pgmpi_begin(PGMPI_COLL_SCATTER, comm, n, elem);
    if (alg > 0) {
        int rc_ = ((scatter_fn)scatter_algs[alg].fn)(sb, sc, st, rb, rc, rt, root, comm);
        if (rc_ != PGMPI_FALLBACK) { pgmpi_end(PGMPI_COLL_SCATTER, n, alg, 0); return rc_; }
        pgmpi_end(PGMPI_COLL_SCATTER, n, alg, 1);
    } else pgmpi_end(PGMPI_COLL_SCATTER, n, 0, 0);
    return PMPI_Scatter(sb, sc, st, rb, rc, rt, root, comm);
}
