/* MPI_Alltoall: the library default and its mock-ups (see ../core/pgmpitune_core.h). */
#include "pgmpitune_core.h"

typedef int (*alltoall_fn)(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm);

static const pgmpi_alg_t alltoall_algs[] = {
    {"default", NULL, NULL, NULL},
};

const pgmpi_coll_desc_t pgmpi_desc_ALLTOALL = {
    PGMPI_COLL_ALLTOALL, alltoall_algs, (int)(sizeof alltoall_algs / sizeof alltoall_algs[0])
};

int MPI_Alltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm)
{
    size_t elem = pgmpi_type_bytes(rt), n = (size_t)(rc > 0 ? rc : 0) * elem;
    int alg = pgmpi_begin(PGMPI_COLL_ALLTOALL, comm, n, elem);
    if (alg > 0) {
        int rc_ = ((alltoall_fn)alltoall_algs[alg].fn)(sb, sc, st, rb, rc, rt, comm);
        if (rc_ != PGMPI_FALLBACK) { pgmpi_end(PGMPI_COLL_ALLTOALL, n, alg, 0); return rc_; }
        pgmpi_end(PGMPI_COLL_ALLTOALL, n, alg, 1);
    } else pgmpi_end(PGMPI_COLL_ALLTOALL, n, 0, 0);
    return PMPI_Alltoall(sb, sc, st, rb, rc, rt, comm);
}
