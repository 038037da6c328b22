/* MPI_Bcast: the library default and its mock-ups (GL9, GL10; rules in ../core/pgmpitune_core.h).
 * n = count x size(datatype) bytes. */
#include "mockups.h"

typedef int (*bcast_fn)(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm);

/* GL9: Allgatherv in place where only the root contributes (its whole buffer); every rank describes
 * the root's block with its own count, so signature-compatible datatypes that differ per rank work. */
static int bcast_as_allgatherv(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    int p = pm_size(comm);
    if (root < 0 || root >= p) return PGMPI_FALLBACK;
    int *counts = pgmpi_pool_int(), *displs = counts + p;
    for (int i = 0; i < p; i++) { counts[i] = 0; displs[i] = 0; }
    counts[root] = count;
    return PMPI_Allgatherv(MPI_IN_PLACE, 0, dt, buf, counts, displs, dt, comm);
}

/* GL10 (van de Geijn): Scatter of p byte blocks from the root, then Allgather in place. Split on
 * bytes, so ranks may use different (contiguous) datatypes of the same signature. When p divides n
 * it runs in the user's buffer; otherwise on a padded copy in the message pool. */
static int bcast_as_scatter_allgather(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    if (pm_inter(comm) || !pm_contig(dt)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    if (root < 0 || root >= p) return PGMPI_FALLBACK;
    size_t n = (size_t)count * pgmpi_type_bytes(dt), blk = pm_ceil_div(n, (size_t)p);
    if (!pm_fits_int(blk)) return PGMPI_FALLBACK;
    char *v = buf;
    if (blk * (size_t)p != n) {
        v = pgmpi_pool_msg();
        if (r == root && n) memcpy(v, buf, n);
    }
    if (r == root) PM_TRY(PMPI_Scatter(v, (int)blk, MPI_BYTE, MPI_IN_PLACE, (int)blk, MPI_BYTE, root, comm));
    else PM_TRY(PMPI_Scatter(NULL, (int)blk, MPI_BYTE, v + (size_t)r * blk, (int)blk, MPI_BYTE, root, comm));
    PM_TRY(PMPI_Allgather(MPI_IN_PLACE, 0, MPI_BYTE, v, (int)blk, MPI_BYTE, comm));
    if (v != (char *)buf && r != root && n) memcpy(buf, v, n);
    return MPI_SUCCESS;
}

static size_t need_2p_ints(size_t n, size_t e, int p) { (void)n; (void)e; return 2 * (size_t)p * sizeof(int); }
static size_t need_padded_bytes(size_t n, size_t e, int p)
{
    (void)e;
    size_t blk = pm_ceil_div(n, (size_t)p);
    return blk * (size_t)p == n ? 0 : blk * (size_t)p;
}

static const pgmpi_alg_t bcast_algs[] = {
    {"default", NULL, NULL, NULL},
    {"bcast_as_allgatherv", (void (*)(void))bcast_as_allgatherv, NULL, need_2p_ints},
    {"bcast_as_scatter_allgather", (void (*)(void))bcast_as_scatter_allgather, need_padded_bytes, NULL},
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
