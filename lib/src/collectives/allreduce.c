/* MPI_Allreduce: the library default and its mock-ups (GL5-GL7; rules in ../core/pgmpitune_core.h).
 * n = count x size(datatype) bytes. Count, datatype and op are the same on all ranks (MPI standard). */
#include "mockups.h"

typedef int (*allreduce_fn)(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);

/* GL5: Reduce to rank 0, then Bcast. Any datatype and op (rank order is kept); no scratch memory. */
static int allreduce_as_reduce_bcast(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op,
                                     MPI_Comm comm)
{
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    int r = pm_rank(comm);
    if (sb == MPI_IN_PLACE) {
        if (r == 0) PM_TRY(PMPI_Reduce(MPI_IN_PLACE, rb, count, dt, op, 0, comm));
        else PM_TRY(PMPI_Reduce(rb, NULL, count, dt, op, 0, comm));
    } else {
        PM_TRY(PMPI_Reduce(sb, rb, count, dt, op, 0, comm));
    }
    return PMPI_Bcast(rb, count, dt, 0, comm);
}

/* GL6: Reduce_scatter_block of ceil(count/p)-element blocks, then Allgather in place. When p does not
 * divide count the vector is padded with zero elements in the message pool (paper appendix A); the
 * padding is reduced but never copied out, and only predefined ops see it (rule 7). Contiguous
 * datatypes only (byte moves; the datatype is the same on every rank for a reduction). */
static int allreduce_as_reducescatterblock_allgather(const void *sb, void *rb, int count, MPI_Datatype dt,
                                                     MPI_Op op, MPI_Comm comm)
{
    if (pm_inter(comm) || !pm_contig(dt)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    size_t E = pgmpi_type_bytes(dt), blk = pm_ceil_div((size_t)count, (size_t)p);
    if (!pm_fits_int(blk)) return PGMPI_FALLBACK;
    if (blk * (size_t)p != (size_t)count && !pm_op_is_predefined(op)) return PGMPI_FALLBACK;
    const void *in = sb == MPI_IN_PLACE ? rb : sb;
    char *v = rb;
    if (blk * (size_t)p != (size_t)count) {               /* padded copy in the pool */
        v = pgmpi_pool_msg();
        memcpy(v, in, (size_t)count * E);
        memset(v + (size_t)count * E, 0, (blk * (size_t)p - (size_t)count) * E);
        in = MPI_IN_PLACE;
    } else if (sb == MPI_IN_PLACE) {
        in = MPI_IN_PLACE;
    }
    char *mine = v + (size_t)r * blk * E;
    if (in == MPI_IN_PLACE) {
        PM_TRY(PMPI_Reduce_scatter_block(MPI_IN_PLACE, v, (int)blk, dt, op, comm));
        if (r && blk) memmove(mine, v, blk * E);
    } else {
        PM_NOALIAS(in, (size_t)count * E, pm_block(mine, blk), blk * E);
        PM_TRY(PMPI_Reduce_scatter_block(in, pm_block(mine, blk), (int)blk, dt, op, comm));
    }
    PM_TRY(PMPI_Allgather(MPI_IN_PLACE, 0, dt, v, (int)blk, dt, comm));
    if (v != (char *)rb) memcpy(rb, v, (size_t)count * E);
    return MPI_SUCCESS;
}

/* GL7: Reduce_scatter over whole chunks dealt out in rank order, then Allgatherv in place in the
 * receive buffer (counts/displacements from the int pool). Any datatype when not in place; in place
 * the own block is moved with memmove, so the datatype must be contiguous. */
static int allreduce_as_reducescatter_allgatherv(const void *sb, void *rb, int count, MPI_Datatype dt,
                                                 MPI_Op op, MPI_Comm comm)
{
    if (pm_inter(comm) || (sb == MPI_IN_PLACE && !pm_contig(dt))) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    int *counts = pgmpi_pool_int(), *displs = counts + p;
    pm_chunked_split((size_t)count, pgmpi_type_bytes(dt), p, counts, displs);
    MPI_Aint ext = pm_extent(dt);
    char *mine = (char *)rb + (MPI_Aint)displs[r] * ext;
    if (sb == MPI_IN_PLACE) {
        PM_TRY(PMPI_Reduce_scatter(MPI_IN_PLACE, rb, counts, dt, op, comm));
        if (mine != (char *)rb && counts[r]) memmove(mine, rb, (size_t)counts[r] * pgmpi_type_bytes(dt));
    } else {
        void *dst = pm_block(mine, (size_t)counts[r]);   /* an empty block at rb's end may be sb */
        PM_TRY(PMPI_Reduce_scatter(sb, dst, counts, dt, op, comm));
    }
    return PMPI_Allgatherv(MPI_IN_PLACE, 0, dt, rb, counts, displs, dt, comm);
}

/* Node-aware: Reduce to the first rank of every node, Allreduce among those leaders, Bcast within
 * every node. Typed calls with the user's datatype and op (the same on all ranks), no scratch memory;
 * rank order is kept when ranks are numbered node by node, otherwise only commutative ops (pm_nodes). */
static int allreduce_as_nodereduce_leaderallreduce_nodebcast(const void *sb, void *rb, int count,
                                                             MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    const pgmpi_nodes_t *N = pm_nodes(comm, op);
    if (!N) return PGMPI_FALLBACK;
    const void *in = sb == MPI_IN_PLACE ? rb : sb;
    if (N->lrank == 0)
        PM_TRY(PMPI_Reduce(sb == MPI_IN_PLACE ? MPI_IN_PLACE : sb, rb, count, dt, op, 0, N->node_comm));
    else
        PM_TRY(PMPI_Reduce(in, NULL, count, dt, op, 0, N->node_comm));
    if (N->leaders != MPI_COMM_NULL) PM_TRY(PMPI_Allreduce(MPI_IN_PLACE, rb, count, dt, op, N->leaders));
    return PMPI_Bcast(rb, count, dt, 0, N->node_comm);
}

/* Padded vector of GL6 when p does not divide the count. */
static size_t need_padded(size_t n, size_t e, int p)
{
    if (e == 0) return 0;
    size_t count = n / e, blk = pm_ceil_div(count, (size_t)p);
    return blk * (size_t)p == count ? 0 : blk * (size_t)p * e;
}

static const pgmpi_alg_t allreduce_algs[] = {
    {"default", NULL, NULL, NULL, 0},
    {"allreduce_as_reduce_bcast", (void (*)(void))allreduce_as_reduce_bcast, NULL, NULL, 0},
    {"allreduce_as_reducescatterblock_allgather", (void (*)(void))allreduce_as_reducescatterblock_allgather,
     need_padded, NULL, 0},
    {"allreduce_as_reducescatter_allgatherv", (void (*)(void))allreduce_as_reducescatter_allgatherv, NULL,
     pm_need_2p_ints, 0},
    {"allreduce_as_nodereduce_leaderallreduce_nodebcast",
     (void (*)(void))allreduce_as_nodereduce_leaderallreduce_nodebcast, NULL, NULL, 1},
};

const pgmpi_coll_desc_t pgmpi_desc_ALLREDUCE = {
    PGMPI_COLL_ALLREDUCE, allreduce_algs, (int)(sizeof allreduce_algs / sizeof allreduce_algs[0])
};

int MPI_Allreduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    size_t elem = pgmpi_type_bytes(dt), n = (size_t)(count > 0 ? count : 0) * elem;
    PGMPI_DISPATCH(ALLREDUCE, allreduce_algs, allreduce_fn, comm, n, elem, PMPI_Allreduce,
                   (sb, rb, count, dt, op, comm));
}
