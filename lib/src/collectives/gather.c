/* MPI_Gather: the library default and its mock-ups (see ../core/pgmpitune_core.h). */
#include "pgmpitune_core.h"

typedef int (*gather_fn)(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm);

static const pgmpi_alg_t gather_algs[] = {
    {"default", NULL, NULL, NULL},
};

const pgmpi_coll_desc_t pgmpi_desc_GATHER = {
    PGMPI_COLL_GATHER, gather_algs, (int)(sizeof gather_algs / sizeof gather_algs[0])
};

int MPI_Gather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm)
{
    size_t elem = sb == MPI_IN_PLACE ? pgmpi_type_bytes(rt) : pgmpi_type_bytes(st);
    size_t n = (size_t)((sb == MPI_IN_PLACE ? rc : sc) > 0 ? (sb == MPI_IN_PLACE ? rc : sc) : 0) * elem;
    int alg = pgmpi_begin(PGMPI_COLL_GATHER, comm, n, elem);
    if (alg > 0) {
        int rc_ = ((gather_fn)gather_algs[alg].fn)(sb, sc, st, rb, rc, rt, root, comm);
        if (rc_ != PGMPI_FALLBACK) { pgmpi_end(PGMPI_COLL_GATHER, n, alg, 0); return rc_; }
        pgmpi_end(PGMPI_COLL_GATHER, n, alg, 1);
    } else pgmpi_end(PGMPI_COLL_GATHER, n, 0, 0);
    return PMPI_Gather(sb, sc, st, rb, rc, rt, root, comm);
}
