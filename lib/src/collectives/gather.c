/* MPI_Gather: the library default and its mock-ups (GL11-GL13; rules in ../core/pgmpitune_core.h).
 * n = the per-rank block in bytes (sendcount x size(sendtype); at an MPI_IN_PLACE root the recv side). */
#include "mockups.h"

typedef int (*gather_fn)(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
                         MPI_Comm comm);

/* Own block of a Gather: at an MPI_IN_PLACE root it is in the receive buffer. */
static const void *gather_own(const void *sb, int *sc, MPI_Datatype *st, void *rb, int rc, MPI_Datatype rt,
                              int r)
{
    if (sb != MPI_IN_PLACE) return sb;
    *sc = rc;
    *st = rt;
    return (char *)rb + (MPI_Aint)r * rc * pm_extent(rt);
}

/* GL11: Allgather of the n-byte blocks; the non-roots receive the whole vector into the message pool
 * and drop it. Bytes on every rank (rule 3): a rank packs its own block into the pool unless it can
 * send it as it is (contiguous, and not inside the receive buffer of an MPI_IN_PLACE root); the root
 * receives straight into a contiguous receive buffer, otherwise into the pool and unpacks. */
static int gather_as_allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                               int root, MPI_Comm comm)
{
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    if (root < 0 || root >= p) return PGMPI_FALLBACK;
    size_t n = sb == MPI_IN_PLACE ? (size_t)rc * pgmpi_type_bytes(rt) : (size_t)sc * pgmpi_type_bytes(st);
    size_t all = n * (size_t)p;                              /* n is the same on every rank */
    if (n == 0) return MPI_SUCCESS;
    if (!pm_fits_int(all) || !pgmpi_pack_is_raw()) return PGMPI_FALLBACK;
    char *mine = pgmpi_pool_msg(), *staging = mine + n;
    int in_place = sb == MPI_IN_PLACE;
    const void *own = gather_own(sb, &sc, &st, rb, rc, rt, r);
    const void *send = own;
    if (in_place || !pm_contig(st)) {
        PM_TRY(pm_pack(own, sc, st, mine, n, comm));
        send = mine;
    }
    int direct = r == root && pm_contig(rt);
    char *dst = direct ? rb : staging;
    PM_NOALIAS(send, n, dst, all);
    PM_TRY(PMPI_Allgather(send, (int)n, MPI_BYTE, dst, (int)n, MPI_BYTE, comm));
    if (r == root && !direct) return pm_unpack(staging, all, rb, rc * p, rt, comm);
    return MPI_SUCCESS;
}

/* GL12: Gatherv with equal byte counts (vectors from the int pool, root only), in bytes on every rank
 * (rule 3): a non-root sends its block as it is when contiguous, else packed into the pool; the root
 * puts its own block at its place of V (the receive buffer when contiguous, else the pool) and gathers
 * in place, then unpacks. */
static int gather_as_gatherv(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                             int root, MPI_Comm comm)
{
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    if (root < 0 || root >= p) return PGMPI_FALLBACK;
    size_t n = sb == MPI_IN_PLACE ? (size_t)rc * pgmpi_type_bytes(rt) : (size_t)sc * pgmpi_type_bytes(st);
    size_t all = n * (size_t)p;                               /* n: the same on every rank */
    if (n == 0) return MPI_SUCCESS;
    if (!pm_fits_int(all) || !pgmpi_pack_is_raw()) return PGMPI_FALLBACK;
    char *pool = pgmpi_pool_msg();
    if (r != root) {
        const void *send;
        PM_TRY(pm_send_bytes(sb, sc, st, pool, n, comm, &send));
        return PMPI_Gatherv(send, (int)n, MPI_BYTE, NULL, NULL, NULL, MPI_BYTE, root, comm);
    }
    char *V = pm_landing(rb, rt, pool);
    const void *own = gather_own(sb, &sc, &st, rb, rc, rt, r);
    if (!(sb == MPI_IN_PLACE && V == (char *)rb)) PM_TRY(pm_pack(own, sc, st, V + (size_t)r * n, n, comm));
    int *counts = pgmpi_pool_int(), *displs = counts + p;
    for (int i = 0; i < p; i++) { counts[i] = (int)n; displs[i] = i * (int)n; }
    PM_TRY(PMPI_Gatherv(MPI_IN_PLACE, 0, MPI_BYTE, V, counts, displs, MPI_BYTE, root, comm));
    return V == (char *)rb ? MPI_SUCCESS : pm_unpack(V, all, rb, rc * p, rt, comm);
}

/* GL13: each rank packs its block at its place in a zeroed p-block byte vector (message pool); a Reduce
 * with bitwise or on integer words (width divides p*n) assembles the vector at the root, straight into a
 * contiguous receive buffer or into the pool's second half, then unpacked. Exact for every datatype
 * (raw bytes), the same pattern whatever each rank's layout (rule 3). The root reduces from the pool
 * too: no MPI_IN_PLACE Reduce, which avoids MPICH 4.0.2's in-place Reduce defect at roots other than 0. */
static int gather_as_reduce(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                            int root, MPI_Comm comm)
{
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    if (root < 0 || root >= p) return PGMPI_FALLBACK;
    size_t n = sb == MPI_IN_PLACE ? (size_t)rc * pgmpi_type_bytes(rt) : (size_t)sc * pgmpi_type_bytes(st);
    size_t total = n * (size_t)p, w;
    if (n == 0) return MPI_SUCCESS;
    MPI_Datatype wt = pm_bor_type(total, &w);
    if (!pm_fits_int(total) || !pgmpi_pack_is_raw()) return PGMPI_FALLBACK;
    char *v = pgmpi_pool_msg(), *staging = v + total;
    const void *own = gather_own(sb, &sc, &st, rb, rc, rt, r);
    memset(v, 0, total);
    PM_TRY(pm_pack(own, sc, st, v + (size_t)r * n, n, comm));
    if (r != root) return PMPI_Reduce(v, NULL, (int)(total / w), wt, MPI_BOR, root, comm);
    int direct = pm_contig(rt);
    char *dst = direct ? rb : staging;
    PM_NOALIAS(v, total, dst, total);
    PM_TRY(PMPI_Reduce(v, dst, (int)(total / w), wt, MPI_BOR, root, comm));
    return direct ? MPI_SUCCESS : pm_unpack(staging, total, rb, rc * p, rt, comm);
}


static const pgmpi_alg_t gather_algs[] = {
    {"default", NULL, NULL, NULL, 0},
    {"gather_as_allgather", (void (*)(void))gather_as_allgather, pm_need_n_pn, NULL, 0},
    {"gather_as_gatherv", (void (*)(void))gather_as_gatherv, pm_need_pn, pm_need_2p_ints, 0},
    {"gather_as_reduce", (void (*)(void))gather_as_reduce, pm_need_2pn, NULL, 0},
};

const pgmpi_coll_desc_t pgmpi_desc_GATHER = {
    PGMPI_COLL_GATHER, gather_algs, (int)(sizeof gather_algs / sizeof gather_algs[0])
};

int MPI_Gather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
               MPI_Comm comm)
{
    int in_place = sb == MPI_IN_PLACE, cnt = in_place ? rc : sc;
    size_t n = (size_t)(cnt > 0 ? cnt : 0) * pgmpi_type_bytes(in_place ? rt : st);
    PGMPI_DISPATCH(GATHER, gather_algs, gather_fn, comm, n, 1, PMPI_Gather, (sb, sc, st, rb, rc, rt, root, comm));
}
