/* MPI_Allgather: the library default and its mock-ups (see ../core/pgmpitune_core.h). */
#include "pgmpitune_core.h"

typedef int (*allgather_fn)(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm);

static const pgmpi_alg_t allgather_algs[] = {
    {"default", NULL, NULL, NULL},
};

const pgmpi_coll_desc_t pgmpi_desc_ALLGATHER = {
    PGMPI_COLL_ALLGATHER, allgather_algs, (int)(sizeof allgather_algs / sizeof allgather_algs[0])
};

int MPI_Allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm)
{
    size_t elem = pgmpi_type_bytes(rt), n = (size_t)(rc > 0 ? rc : 0) * elem;
    int alg = pgmpi_begin(PGMPI_COLL_ALLGATHER, comm, n, elem);
    if (alg > 0) {
        int rc_ = ((allgather_fn)allgather_algs[alg].fn)(sb, sc, st, rb, rc, rt, comm);
        if (rc_ != PGMPI_FALLBACK) { pgmpi_end(PGMPI_COLL_ALLGATHER, n, alg, 0); return rc_; }
        pgmpi_end(PGMPI_COLL_ALLGATHER, n, alg, 1);
    } else pgmpi_end(PGMPI_COLL_ALLGATHER, n, 0, 0);
    return PMPI_Allgather(sb, sc, st, rb, rc, rt, comm);
}
