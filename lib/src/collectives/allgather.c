/* MPI_Allgather: the library default and its mock-ups (GL1-GL4; rules in ../core/pgmpitune_core.h).
 * n = recvcount x size(recvtype) bytes, the block every rank contributes. */
#include "mockups.h"

typedef int (*allgather_fn)(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                            MPI_Comm comm);

/* GL1: Gather to rank 0, then Bcast of the whole vector. Any datatypes, no scratch memory. */
static int allgather_as_gather_bcast(const void *sb, int sc, MPI_Datatype st, void *rb, int rc,
                                     MPI_Datatype rt, MPI_Comm comm)
{
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    size_t n = (size_t)rc * pgmpi_type_bytes(rt);
    if (!pm_fits_int(n * (size_t)p) || !pm_fits_int((size_t)rc * (size_t)p)) return PGMPI_FALLBACK;
    if (sb == MPI_IN_PLACE) {
        if (r == 0) PM_TRY(PMPI_Gather(MPI_IN_PLACE, 0, rt, rb, rc, rt, 0, comm));
        else PM_TRY(PMPI_Gather((char *)rb + (MPI_Aint)r * rc * pm_extent(rt), rc, rt, NULL, 0, rt, 0, comm));
    } else {
        PM_TRY(PMPI_Gather(sb, sc, st, rb, rc, rt, 0, comm));
    }
    return PMPI_Bcast(rb, rc * p, rt, 0, comm);
}

/* GL2: every rank sends p copies of its block with Alltoall. The copies live in the message pool;
 * the own block's type must be contiguous (byte copies). */
static int allgather_as_alltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc,
                                 MPI_Datatype rt, MPI_Comm comm)
{
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    const void *own = sb;
    if (sb == MPI_IN_PLACE) { own = (char *)rb + (MPI_Aint)r * rc * pm_extent(rt); sc = rc; st = rt; }
    if (!pm_contig(st)) return PGMPI_FALLBACK;
    size_t n = (size_t)sc * pgmpi_type_bytes(st);
    if (!pm_fits_int(n * (size_t)p)) return PGMPI_FALLBACK;
    char *copies = pgmpi_pool_msg();
    for (int i = 0; i < p; i++) if (n) memcpy(copies + (size_t)i * n, own, n);
    return PMPI_Alltoall(copies, sc, st, rb, rc, rt, comm);
}

/* GL3: zeroed p-block vector with the own block at its place, combined with a bitwise or; exact for
 * every datatype because it works on raw bytes (integer words whose width divides p*n). Done in place
 * in the receive buffer, so it needs no scratch memory; the types must be contiguous. */
static int allgather_as_allreduce(const void *sb, int sc, MPI_Datatype st, void *rb, int rc,
                                  MPI_Datatype rt, MPI_Comm comm)
{
    (void)sc; /* sc x size(st) == rc x size(rt) = n */
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    if (!pm_contig(rt) || (sb != MPI_IN_PLACE && !pm_contig(st))) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    size_t n = (size_t)rc * pgmpi_type_bytes(rt), total = n * (size_t)p, w;
    MPI_Datatype wt = pm_bor_type(total, &w);
    if (!pm_fits_int(total / w)) return PGMPI_FALLBACK;
    char *v = rb, *mine = v + (size_t)r * n;
    if (sb != MPI_IN_PLACE && n) memcpy(mine, sb, n);
    if (n) {
        memset(v, 0, (size_t)r * n);
        memset(mine + n, 0, total - (size_t)(r + 1) * n);
    }
    return PMPI_Allreduce(MPI_IN_PLACE, v, (int)(total / w), wt, MPI_BOR, comm);
}

/* GL4: Allgatherv with equal counts (count/displacement vectors from the int pool). */
static int allgather_as_allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, int rc,
                                   MPI_Datatype rt, MPI_Comm comm)
{
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    int p = pm_size(comm);
    size_t n = (size_t)rc * pgmpi_type_bytes(rt);
    if (!pm_fits_int(n * (size_t)p) || !pm_fits_int((size_t)rc * (size_t)p)) return PGMPI_FALLBACK;
    int *counts = pgmpi_pool_int(), *displs = counts + p;
    for (int i = 0; i < p; i++) { counts[i] = rc; displs[i] = i * rc; }
    return PMPI_Allgatherv(sb, sc, st, rb, counts, displs, rt, comm);
}

static size_t need_pn(size_t n, size_t e, int p) { (void)e; return n * (size_t)p; }
static size_t need_2p_ints(size_t n, size_t e, int p) { (void)n; (void)e; return 2 * (size_t)p * sizeof(int); }

static const pgmpi_alg_t allgather_algs[] = {
    {"default", NULL, NULL, NULL},
    {"allgather_as_gather_bcast", (void (*)(void))allgather_as_gather_bcast, NULL, NULL},
    {"allgather_as_alltoall", (void (*)(void))allgather_as_alltoall, need_pn, NULL},
    {"allgather_as_allreduce", (void (*)(void))allgather_as_allreduce, NULL, NULL},
    {"allgather_as_allgatherv", (void (*)(void))allgather_as_allgatherv, NULL, need_2p_ints},
};

const pgmpi_coll_desc_t pgmpi_desc_ALLGATHER = {
    PGMPI_COLL_ALLGATHER, allgather_algs, (int)(sizeof allgather_algs / sizeof allgather_algs[0])
};

int MPI_Allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm)
{
    size_t elem = pgmpi_type_bytes(rt), n = (size_t)(rc > 0 ? rc : 0) * elem;
    int alg = pgmpi_begin(PGMPI_COLL_ALLGATHER, comm, n, elem);
    if (alg > 0) {
        int rc_ = ((allgather_fn)allgather_algs[alg].fn)(sb, sc, st, rb, rc, rt, comm);
        if (rc_ != PGMPI_FALLBACK) { pgmpi_end(PGMPI_COLL_ALLGATHER, n, alg, 0); return rc_; }
        pgmpi_end(PGMPI_COLL_ALLGATHER, n, alg, 1);
    } else pgmpi_end(PGMPI_COLL_ALLGATHER, n, 0, 0);
    return PMPI_Allgather(sb, sc, st, rb, rc, rt, comm);
}
