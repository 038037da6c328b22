/* MPI_Bcast: the library default and its mock-ups (see ../core/pgmpitune_core.h). */
#include "pgmpitune_core.h"

typedef int (*bcast_fn)(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm);

static const pgmpi_alg_t bcast_algs[] = {
    {"default", NULL, NULL, NULL},
};

const pgmpi_coll_desc_t pgmpi_desc_BCAST = {
    PGMPI_COLL_BCAST, bcast_algs, (int)(sizeof bcast_algs / sizeof bcast_algs[0])
};

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    size_t elem = pgmpi_type_bytes(dt), n = (size_t)(count > 0 ? count : 0) * elem;
    int alg = pgmpi_begin(PGMPI_COLL_BCAST, comm, n, elem);
    if (alg > 0) {
        int rc_ = ((bcast_fn)bcast_algs[alg].fn)(buf, count, dt, root, comm);
        if (rc_ != PGMPI_FALLBACK) { pgmpi_end(PGMPI_COLL_BCAST, n, alg, 0); return rc_; }
        pgmpi_end(PGMPI_COLL_BCAST, n, alg, 1);
    } else pgmpi_end(PGMPI_COLL_BCAST, n, 0, 0);
    return PMPI_Bcast(buf, count, dt, root, comm);
}
