/* MPI_Scan: the library default and its mock-ups (see ../core/pgmpitune_core.h). */
#include "pgmpitune_core.h"

typedef int (*scan_fn)(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);

static const pgmpi_alg_t scan_algs[] = {
    {"default", NULL, NULL, NULL},
};

const pgmpi_coll_desc_t pgmpi_desc_SCAN = {
    PGMPI_COLL_SCAN, scan_algs, (int)(sizeof scan_algs / sizeof scan_algs[0])
};

int MPI_Scan(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    size_t elem = pgmpi_type_bytes(dt), n = (size_t)(count > 0 ? count : 0) * elem;
    int alg = pgmpi_begin(PGMPI_COLL_SCAN, comm, n, elem);
    if (alg > 0) {
        int rc_ = ((scan_fn)scan_algs[alg].fn)(sb, rb, count, dt, op, comm);
        if (rc_ != PGMPI_FALLBACK) { pgmpi_end(PGMPI_COLL_SCAN, n, alg, 0); return rc_; }
        pgmpi_end(PGMPI_COLL_SCAN, n, alg, 1);
    } else pgmpi_end(PGMPI_COLL_SCAN, n, 0, 0);
    return PMPI_Scan(sb, rb, count, dt, op, comm);
}
