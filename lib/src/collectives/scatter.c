/* MPI_Scatter: the library default and its mock-ups (GL21, GL22; rules in ../core/pgmpitune_core.h).
 * n = the per-rank block in bytes (recvcount x size(recvtype); at an MPI_IN_PLACE root the send side). */
#include "mockups.h"

typedef int (*scatter_fn)(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
                          MPI_Comm comm);

/* GL21: Bcast of the root's whole send vector; the non-roots receive it into the message pool and keep
 * their block. The root copies its own block locally (any datatypes); the non-roots' receive type must
 * be contiguous. */
static int scatter_as_bcast(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                            int root, MPI_Comm comm)
{
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    if (root < 0 || root >= p) return PGMPI_FALLBACK;
    size_t n = rb == MPI_IN_PLACE ? (size_t)sc * pgmpi_type_bytes(st) : (size_t)rc * pgmpi_type_bytes(rt);
    if (!pm_fits_int(n * (size_t)p)) return PGMPI_FALLBACK;   /* same n on all ranks */
    if (r == root) {
        /* the root checks the receive side as the others do, so that ranks using one datatype agree */
        if (!pm_contig(rb == MPI_IN_PLACE ? st : rt)) return PGMPI_FALLBACK;
        PM_TRY(PMPI_Bcast((void *)sb, sc * p, st, root, comm));
        if (rb == MPI_IN_PLACE) return MPI_SUCCESS;
        return pm_local_copy((const char *)sb + (MPI_Aint)r * sc * pm_extent(st), sc, st, rb, rc, rt);
    }
    if (!pm_contig(rt)) return PGMPI_FALLBACK;
    char *full = pgmpi_pool_msg();
    PM_TRY(PMPI_Bcast(full, rc * p, rt, root, comm));
    if (n) memcpy(rb, full + (size_t)r * n, n);
    return MPI_SUCCESS;
}

/* GL22: Scatterv with equal counts (vectors from the int pool, root only). Any datatypes. */
static int scatter_as_scatterv(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                               int root, MPI_Comm comm)
{
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    if (root < 0 || root >= p) return PGMPI_FALLBACK;
    size_t n = rb == MPI_IN_PLACE ? (size_t)sc * pgmpi_type_bytes(st) : (size_t)rc * pgmpi_type_bytes(rt);
    if (!pm_fits_int(n * (size_t)p)) return PGMPI_FALLBACK;   /* same n on all ranks */
    if (r != root) return PMPI_Scatterv(NULL, NULL, NULL, st, rb, rc, rt, root, comm);
    int *counts = pgmpi_pool_int(), *displs = counts + p;
    for (int i = 0; i < p; i++) { counts[i] = sc; displs[i] = i * sc; }
    return PMPI_Scatterv(sb, counts, displs, st, rb, rc, rt, root, comm);
}

static size_t need_pn(size_t n, size_t e, int p) { (void)e; return n * (size_t)p; }
static size_t need_2p_ints(size_t n, size_t e, int p) { (void)n; (void)e; return 2 * (size_t)p * sizeof(int); }

static const pgmpi_alg_t scatter_algs[] = {
    {"default", NULL, NULL, NULL},
    {"scatter_as_bcast", (void (*)(void))scatter_as_bcast, need_pn, NULL},
    {"scatter_as_scatterv", (void (*)(void))scatter_as_scatterv, NULL, need_2p_ints},
};

const pgmpi_coll_desc_t pgmpi_desc_SCATTER = {
    PGMPI_COLL_SCATTER, scatter_algs, (int)(sizeof scatter_algs / sizeof scatter_algs[0])
};

int MPI_Scatter(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
                MPI_Comm comm)
{
    int in_place = rb == MPI_IN_PLACE, cnt = in_place ? sc : rc;
    size_t elem = pgmpi_type_bytes(in_place ? st : rt), n = (size_t)(cnt > 0 ? cnt : 0) * elem;
    int alg = pgmpi_begin(PGMPI_COLL_SCATTER, comm, n, elem);
    if (alg > 0) {
        int rc_ = ((scatter_fn)scatter_algs[alg].fn)(sb, sc, st, rb, rc, rt, root, comm);
        if (rc_ != PGMPI_FALLBACK) { pgmpi_end(PGMPI_COLL_SCATTER, n, alg, 0); return rc_; }
        pgmpi_end(PGMPI_COLL_SCATTER, n, alg, 1);
    } else pgmpi_end(PGMPI_COLL_SCATTER, n, 0, 0);
    return PMPI_Scatter(sb, sc, st, rb, rc, rt, root, comm);
}
