/* MPI_Scan: the library default and its mock-up (GL20; rules in ../core/pgmpitune_core.h).
 * n = count x size(datatype) bytes. */
#include "mockups.h"

typedef int (*scan_fn)(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);

/* GL20: Exscan into the message pool, then rb = prefix op own contribution with Reduce_local (inbuf =
 * prefix, inoutbuf = own data: the rank order of a non-commutative op is kept). MPI_IN_PLACE works
 * because the Exscan reads rb and writes the pool. Contiguous datatypes. */
static int scan_as_exscan_reducelocal(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op,
                                      MPI_Comm comm)
{
    if (pm_inter(comm) || !pm_contig(dt)) return PGMPI_FALLBACK;
    int r = pm_rank(comm);
    const void *in = sb == MPI_IN_PLACE ? rb : sb;
    char *prefix = pgmpi_pool_msg();
    PM_TRY(PMPI_Exscan(in, prefix, count, dt, op, comm));
    if (in != rb && count > 0) memcpy(rb, in, (size_t)count * pgmpi_type_bytes(dt));
    if (r > 0) PM_TRY(PMPI_Reduce_local(prefix, rb, count, dt, op));
    return MPI_SUCCESS;
}


static const pgmpi_alg_t scan_algs[] = {
    {"default", NULL, NULL, NULL, 0},
    {"scan_as_exscan_reducelocal", (void (*)(void))scan_as_exscan_reducelocal, pm_need_n, NULL, 0},
};

const pgmpi_coll_desc_t pgmpi_desc_SCAN = {
    PGMPI_COLL_SCAN, scan_algs, (int)(sizeof scan_algs / sizeof scan_algs[0])
};

int MPI_Scan(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    size_t elem = pgmpi_type_bytes(dt), n = (size_t)(count > 0 ? count : 0) * elem;
    PGMPI_DISPATCH(SCAN, scan_algs, scan_fn, comm, n, elem, PMPI_Scan, (sb, rb, count, dt, op, comm));
}
