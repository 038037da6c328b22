/* MPI_Scatter: the library default and its mock-ups (GL21, GL22; rules in ../core/pgmpitune_core.h).
 * n = the per-rank block in bytes (recvcount x size(recvtype); at an MPI_IN_PLACE root the send side). */
#include "mockups.h"

typedef int (*scatter_fn)(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
                          MPI_Comm comm);

/* GL21: Bcast of the root's whole send vector as n x p bytes; the non-roots receive it into the message
 * pool and unpack their block. The same byte pattern on every rank whatever its datatype (rule 3): the
 * root sends its buffer as it is when its send type is contiguous, else packs it into the pool first;
 * it copies its own block locally (any datatypes). */
static int scatter_as_bcast(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                            int root, MPI_Comm comm)
{
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    if (root < 0 || root >= p) return PGMPI_FALLBACK;
    size_t n = rb == MPI_IN_PLACE ? (size_t)sc * pgmpi_type_bytes(st) : (size_t)rc * pgmpi_type_bytes(rt);
    size_t all = n * (size_t)p;                               /* n is the same on every rank */
    if (n == 0) return MPI_SUCCESS;
    if (!pm_fits_int(all) || !pgmpi_pack_is_raw()) return PGMPI_FALLBACK;
    char *full = pgmpi_pool_msg();
    if (r == root) {
        const void *send = sb;
        if (!pm_contig(st)) {
            PM_TRY(pm_pack(sb, sc * p, st, full, all, comm));
            send = full;
        }
        PM_TRY(PMPI_Bcast((void *)send, (int)all, MPI_BYTE, root, comm));
        if (rb == MPI_IN_PLACE) return MPI_SUCCESS;
        return pm_local_copy((const char *)sb + (MPI_Aint)r * sc * pm_extent(st), sc, st, rb, rc, rt);
    }
    PM_TRY(PMPI_Bcast(full, (int)all, MPI_BYTE, root, comm));
    return pm_unpack(full + (size_t)r * n, n, rb, rc, rt, comm);
}

/* GL22: Scatterv with equal byte counts (vectors from the int pool, root only), in bytes on every rank
 * (rule 3): the root sends its buffer as it is when contiguous, else a packed copy in the pool, keeps
 * its own block with a local typed copy (Scatterv in place); a non-root receives straight into a
 * contiguous receive buffer, else into the pool and unpacks. */
static int scatter_as_scatterv(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                               int root, MPI_Comm comm)
{
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    if (root < 0 || root >= p) return PGMPI_FALLBACK;
    size_t n = rb == MPI_IN_PLACE ? (size_t)sc * pgmpi_type_bytes(st) : (size_t)rc * pgmpi_type_bytes(rt);
    size_t all = n * (size_t)p;                               /* n: the same on every rank */
    if (n == 0) return MPI_SUCCESS;
    if (!pm_fits_int(all) || !pgmpi_pack_is_raw()) return PGMPI_FALLBACK;
    char *pool = pgmpi_pool_msg();
    if (r != root) {
        char *V = pm_landing(rb, rt, pool);
        PM_TRY(PMPI_Scatterv(NULL, NULL, NULL, MPI_BYTE, V, (int)n, MPI_BYTE, root, comm));
        return V == (char *)rb ? MPI_SUCCESS : pm_unpack(V, n, rb, rc, rt, comm);
    }
    const void *send;
    PM_TRY(pm_send_bytes(sb, sc * p, st, pool, all, comm, &send));
    int *counts = pgmpi_pool_int(), *displs = counts + p;
    for (int i = 0; i < p; i++) { counts[i] = (int)n; displs[i] = i * (int)n; }
    PM_TRY(PMPI_Scatterv(send, counts, displs, MPI_BYTE, MPI_IN_PLACE, (int)n, MPI_BYTE, root, comm));
    if (rb == MPI_IN_PLACE) return MPI_SUCCESS;
    return pm_local_copy((const char *)sb + (MPI_Aint)r * sc * pm_extent(st), sc, st, rb, rc, rt);
}


static const pgmpi_alg_t scatter_algs[] = {
    {"default", NULL, NULL, NULL, 0},
    {"scatter_as_bcast", (void (*)(void))scatter_as_bcast, pm_need_pn, NULL, 0},
    {"scatter_as_scatterv", (void (*)(void))scatter_as_scatterv, pm_need_pn, pm_need_2p_ints, 0},
};

const pgmpi_coll_desc_t pgmpi_desc_SCATTER = {
    PGMPI_COLL_SCATTER, scatter_algs, (int)(sizeof scatter_algs / sizeof scatter_algs[0])
};

int MPI_Scatter(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
                MPI_Comm comm)
{
    int in_place = rb == MPI_IN_PLACE, cnt = in_place ? sc : rc;
    size_t n = (size_t)(cnt > 0 ? cnt : 0) * pgmpi_type_bytes(in_place ? st : rt);
    PGMPI_DISPATCH(SCATTER, scatter_algs, scatter_fn, comm, n, 1, PMPI_Scatter, (sb, sc, st, rb, rc, rt, root, comm));
}
