/* MPI_Alltoall: the library default and its mock-up (GL8; rules in ../core/pgmpitune_core.h).
 * n = recvcount x size(recvtype) bytes, the block per destination. */
#include "mockups.h"

typedef int (*alltoall_fn)(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                           MPI_Comm comm);

/* GL8: Alltoallv with equal counts (vectors from the int pool). MPI_IN_PLACE passes through, as
 * Alltoallv allows it too. Any datatypes. */
static int alltoall_as_alltoallv(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                                 MPI_Comm comm)
{
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    int p = pm_size(comm);
    size_t n = (size_t)rc * pgmpi_type_bytes(rt);
    if (!pm_fits_int(n * (size_t)p) || !pm_fits_int((size_t)rc * (size_t)p)) return PGMPI_FALLBACK;
    int *rcounts = pgmpi_pool_int(), *rdispls = rcounts + p, *scounts = rcounts + 2 * p,
        *sdispls = rcounts + 3 * p;
    for (int i = 0; i < p; i++) { rcounts[i] = rc; rdispls[i] = i * rc; }
    if (sb == MPI_IN_PLACE) return PMPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, rt, rb, rcounts, rdispls, rt, comm);
    if (!pm_fits_int((size_t)sc * (size_t)p)) return PGMPI_FALLBACK;
    for (int i = 0; i < p; i++) { scounts[i] = sc; sdispls[i] = i * sc; }
    return PMPI_Alltoallv(sb, scounts, sdispls, st, rb, rcounts, rdispls, rt, comm);
}

static size_t need_4p_ints(size_t n, size_t e, int p) { (void)n; (void)e; return 4 * (size_t)p * sizeof(int); }

static const pgmpi_alg_t alltoall_algs[] = {
    {"default", NULL, NULL, NULL},
    {"alltoall_as_alltoallv", (void (*)(void))alltoall_as_alltoallv, NULL, need_4p_ints},
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
