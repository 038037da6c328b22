/* MPI_Gather: the library default and its mock-ups (GL11-GL13; rules in ../core/pgmpitune_core.h).
 * n = the per-rank block in bytes (sendcount x size(sendtype); at an MPI_IN_PLACE root the recv side). */
#include "mockups.h"

typedef int (*gather_fn)(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
                         MPI_Comm comm);

/* GL11: Allgather; the non-roots receive the whole vector into the message pool and drop it. At an
 * MPI_IN_PLACE root the own block is first copied to the pool (Allgather cannot mix in-place ranks). */
static int gather_as_allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                               int root, MPI_Comm comm)
{
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    if (root < 0 || root >= p) return PGMPI_FALLBACK;
    size_t n = sb == MPI_IN_PLACE ? (size_t)rc * pgmpi_type_bytes(rt) : (size_t)sc * pgmpi_type_bytes(st);
    if (!pm_fits_int(n * (size_t)p)) return PGMPI_FALLBACK;   /* same n on all ranks */
    char *pool = pgmpi_pool_msg();
    if (r != root) {
        if (!pm_contig(st)) return PGMPI_FALLBACK;
        return PMPI_Allgather(sb, sc, st, pool, sc, st, comm);
    }
    /* the root checks its own block's type as the others do, so that ranks using one datatype agree */
    if (sb != MPI_IN_PLACE) return pm_contig(st) ? PMPI_Allgather(sb, sc, st, rb, rc, rt, comm) : PGMPI_FALLBACK;
    if (!pm_contig(rt)) return PGMPI_FALLBACK;
    if (n) memcpy(pool, (char *)rb + (size_t)root * n, n);
    return PMPI_Allgather(pool, rc, rt, rb, rc, rt, comm);
}

/* GL12: Gatherv with equal counts (vectors from the int pool, root only). Any datatypes. */
static int gather_as_gatherv(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                             int root, MPI_Comm comm)
{
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    if (root < 0 || root >= p) return PGMPI_FALLBACK;
    size_t n = sb == MPI_IN_PLACE ? (size_t)rc * pgmpi_type_bytes(rt) : (size_t)sc * pgmpi_type_bytes(st);
    if (!pm_fits_int(n * (size_t)p)) return PGMPI_FALLBACK;   /* same n on all ranks */
    if (r != root) return PMPI_Gatherv(sb, sc, st, NULL, NULL, NULL, rt, root, comm);
    int *counts = pgmpi_pool_int(), *displs = counts + p;
    for (int i = 0; i < p; i++) { counts[i] = rc; displs[i] = i * rc; }
    return PMPI_Gatherv(sb, sc, st, rb, counts, displs, rt, root, comm);
}

/* GL13: each rank puts its block at its place in a zeroed p-block vector (message pool); a Reduce
 * with bitwise or on integer words (width divides p*n) assembles the vector at the root. Exact for
 * every datatype (raw bytes); contiguous types only. The root reduces from the pool too: no
 * MPI_IN_PLACE Reduce, which avoids MPICH 4.0.2's in-place Reduce defect at roots other than 0. */
static int gather_as_reduce(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                            int root, MPI_Comm comm)
{
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    if (root < 0 || root >= p) return PGMPI_FALLBACK;
    size_t n;
    const void *own = sb;
    if (r == root) {
        if (!pm_contig(rt)) return PGMPI_FALLBACK;
        n = (size_t)rc * pgmpi_type_bytes(rt);
        if (sb == MPI_IN_PLACE) own = (char *)rb + (size_t)r * n;
        else if (!pm_contig(st)) return PGMPI_FALLBACK;
    } else {
        if (!pm_contig(st)) return PGMPI_FALLBACK;
        n = (size_t)sc * pgmpi_type_bytes(st);
    }
    size_t total = n * (size_t)p, w;
    MPI_Datatype wt = pm_bor_type(total, &w);
    if (!pm_fits_int(total / w)) return PGMPI_FALLBACK;
    char *v = pgmpi_pool_msg();
    if (total) {
        memset(v, 0, total);
        memcpy(v + (size_t)r * n, own, n);
    }
    return PMPI_Reduce(v, r == root ? rb : NULL, (int)(total / w), wt, MPI_BOR, root, comm);
}

static size_t need_pn(size_t n, size_t e, int p) { (void)e; return n * (size_t)p; }
static size_t need_2p_ints(size_t n, size_t e, int p) { (void)n; (void)e; return 2 * (size_t)p * sizeof(int); }

static const pgmpi_alg_t gather_algs[] = {
    {"default", NULL, NULL, NULL},
    {"gather_as_allgather", (void (*)(void))gather_as_allgather, need_pn, NULL},
    {"gather_as_gatherv", (void (*)(void))gather_as_gatherv, NULL, need_2p_ints},
    {"gather_as_reduce", (void (*)(void))gather_as_reduce, need_pn, NULL},
};

const pgmpi_coll_desc_t pgmpi_desc_GATHER = {
    PGMPI_COLL_GATHER, gather_algs, (int)(sizeof gather_algs / sizeof gather_algs[0])
};

int MPI_Gather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
               MPI_Comm comm)
{
    int in_place = sb == MPI_IN_PLACE, cnt = in_place ? rc : sc;
    size_t elem = pgmpi_type_bytes(in_place ? rt : st), n = (size_t)(cnt > 0 ? cnt : 0) * elem;
    int alg = pgmpi_begin(PGMPI_COLL_GATHER, comm, n, elem);
    if (alg > 0) {
        int rc_ = ((gather_fn)gather_algs[alg].fn)(sb, sc, st, rb, rc, rt, root, comm);
        if (rc_ != PGMPI_FALLBACK) { pgmpi_end(PGMPI_COLL_GATHER, n, alg, 0); return rc_; }
        pgmpi_end(PGMPI_COLL_GATHER, n, alg, 1);
    } else pgmpi_end(PGMPI_COLL_GATHER, n, 0, 0);
    return PMPI_Gather(sb, sc, st, rb, rc, rt, root, comm);
}
