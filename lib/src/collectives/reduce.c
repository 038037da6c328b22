/* MPI_Reduce: the library default and its mock-ups (GL14-GL16; rules in ../core/pgmpitune_core.h).
 * n = count x size(datatype) bytes. Count, datatype, op and root are the same on all ranks. */
#include "mockups.h"

typedef int (*reduce_fn)(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, int root,
                         MPI_Comm comm);

/* GL14: Allreduce; the non-roots receive into the message pool and drop the result. An MPI_IN_PLACE
 * root sends a pool copy of its buffer (Allreduce cannot mix in-place ranks). Contiguous datatypes. */
static int reduce_as_allreduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, int root,
                               MPI_Comm comm)
{
    if (pm_inter(comm) || !pm_contig(dt)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    if (root < 0 || root >= p) return PGMPI_FALLBACK;
    char *pool = pgmpi_pool_msg();
    if (r != root) return PMPI_Allreduce(sb, pool, count, dt, op, comm);
    if (sb != MPI_IN_PLACE) return PMPI_Allreduce(sb, rb, count, dt, op, comm);
    size_t n = (size_t)count * pgmpi_type_bytes(dt);
    if (n) memcpy(pool, rb, n);
    return PMPI_Allreduce(pool, rb, count, dt, op, comm);
}

/* GL15: Reduce_scatter_block of ceil(count/p)-element blocks into the pool, then Gather at the root.
 * When p does not divide count the input is zero-padded in the pool (paper appendix A), for predefined
 * ops only (rule 7: a user function, such as a matrix product that handles one element per call when
 * the application reduces one, must not see made-up elements). */
static int reduce_as_reducescatterblock_gather(const void *sb, void *rb, int count, MPI_Datatype dt,
                                               MPI_Op op, int root, MPI_Comm comm)
{
    if (pm_inter(comm) || !pm_contig(dt)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    if (root < 0 || root >= p) return PGMPI_FALLBACK;
    size_t E = pgmpi_type_bytes(dt), blk = pm_ceil_div((size_t)count, (size_t)p), P = blk * (size_t)p;
    if (!pm_fits_int(P)) return PGMPI_FALLBACK;
    if (P != (size_t)count && !pm_op_is_predefined(op)) return PGMPI_FALLBACK;
    const void *in = (r == root && sb == MPI_IN_PLACE) ? rb : sb;
    char *blkbuf = pgmpi_pool_msg(), *padded = blkbuf + blk * E;
    void *dest = rb;
    if (P != (size_t)count) {
        memcpy(padded, in, (size_t)count * E);
        memset(padded + (size_t)count * E, 0, (P - (size_t)count) * E);
        in = padded;
        dest = padded;
    }
    PM_NOALIAS(in, (size_t)count * E, blkbuf, blk * E);
    PM_TRY(PMPI_Reduce_scatter_block(in, blkbuf, (int)blk, dt, op, comm));
    PM_TRY(PMPI_Gather(blkbuf, (int)blk, dt, r == root ? dest : NULL, (int)blk, dt, root, comm));
    if (r == root && dest != rb) memcpy(rb, dest, (size_t)count * E);
    return MPI_SUCCESS;
}

/* GL16: Reduce_scatter over whole chunks dealt out in rank order, then Gatherv at the root (counts and
 * displacements from the int pool; the non-roots' blocks in the message pool). */
static int reduce_as_reducescatter_gatherv(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op,
                                           int root, MPI_Comm comm)
{
    if (pm_inter(comm) || !pm_contig(dt)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    if (root < 0 || root >= p) return PGMPI_FALLBACK;
    size_t E = pgmpi_type_bytes(dt);
    int *counts = pgmpi_pool_int(), *displs = counts + p;
    pm_chunked_split((size_t)count, E, p, counts, displs);
    char *blkbuf = pgmpi_pool_msg();
    if (r != root) {
        PM_TRY(PMPI_Reduce_scatter(sb, blkbuf, counts, dt, op, comm));
        return PMPI_Gatherv(blkbuf, counts[r], dt, NULL, NULL, NULL, dt, root, comm);
    }
    if (sb == MPI_IN_PLACE) {                       /* the input stays in rb until the Gatherv */
        PM_TRY(PMPI_Reduce_scatter(rb, blkbuf, counts, dt, op, comm));
        return PMPI_Gatherv(blkbuf, counts[r], dt, rb, counts, displs, dt, root, comm);
    }
    void *dst = pm_block((char *)rb + (size_t)displs[r] * E, (size_t)counts[r]);   /* rb's end may be sb */
    PM_TRY(PMPI_Reduce_scatter(sb, dst, counts, dt, op, comm));
    return PMPI_Gatherv(MPI_IN_PLACE, 0, dt, rb, counts, displs, dt, root, comm);
}

/* Node-aware: Reduce to the first rank of every node (into the message pool), Reduce among those
 * leaders to the leader of the root's node, which passes the result on to the root when it is not the
 * root itself. No MPI_IN_PLACE in any inner call (the root's input is its own send buffer; MPICH 4.0.2's
 * in-place Reduce at a root other than 0 crashes), no aliasing: the leader's node result and the
 * leaders' result are two pool blocks. Contiguous datatypes (byte-sized pool blocks; the datatype is the
 * same on all ranks). Rank order as allreduce_as_nodereduce_leaderallreduce_nodebcast. */
static int reduce_as_nodereduce_leaderreduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op,
                                             int root, MPI_Comm comm)
{
    if (pm_inter(comm) || !pm_contig(dt)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    if (root < 0 || root >= p) return PGMPI_FALLBACK;
    const pgmpi_nodes_t *N = pm_nodes(comm, op);
    if (!N) return PGMPI_FALLBACK;
    size_t n = (size_t)count * pgmpi_type_bytes(dt);
    if (n == 0) return MPI_SUCCESS;
    const void *in = (r == root && sb == MPI_IN_PLACE) ? rb : sb;
    char *nodesum = pgmpi_pool_msg(), *total = nodesum + n;
    int K = N->node_of[root], root_leads = N->lrank_of[root] == 0;
    PM_NOALIAS(in, n, nodesum, n);
    PM_TRY(PMPI_Reduce(in, N->lrank == 0 ? nodesum : NULL, count, dt, op, 0, N->node_comm));
    if (N->leaders != MPI_COMM_NULL) {
        void *dst = N->node == K ? (r == root ? rb : total) : NULL;
        PM_TRY(PMPI_Reduce(nodesum, dst, count, dt, op, K, N->leaders));
    }
    if (root_leads || N->node != K) return MPI_SUCCESS;
    if (N->lrank == 0)
        return PMPI_Send(total, count, dt, N->lrank_of[root], PM_NODE_TAG, N->node_comm);
    if (r == root) return PMPI_Recv(rb, count, dt, 0, PM_NODE_TAG, N->node_comm, MPI_STATUS_IGNORE);
    return MPI_SUCCESS;
}

static size_t need_rsb_gather(size_t n, size_t e, int p)
{
    if (e == 0) return 0;
    size_t count = n / e, blk = pm_ceil_div(count, (size_t)p), P = blk * (size_t)p;
    return blk * e + (P == count ? 0 : P * e);
}
static size_t need_rs_block(size_t n, size_t e, int p)
{
    if (e == 0) return 0;
    return pm_chunked_split(n / e, e, p, NULL, NULL) * e;
}

static const pgmpi_alg_t reduce_algs[] = {
    {"default", NULL, NULL, NULL, 0},
    {"reduce_as_allreduce", (void (*)(void))reduce_as_allreduce, pm_need_n, NULL, 0},
    {"reduce_as_reducescatterblock_gather", (void (*)(void))reduce_as_reducescatterblock_gather,
     need_rsb_gather, NULL, 0},
    {"reduce_as_reducescatter_gatherv", (void (*)(void))reduce_as_reducescatter_gatherv, need_rs_block,
     pm_need_2p_ints, 0},
    {"reduce_as_nodereduce_leaderreduce", (void (*)(void))reduce_as_nodereduce_leaderreduce, pm_need_2n, NULL, 1},
};

const pgmpi_coll_desc_t pgmpi_desc_REDUCE = {
    PGMPI_COLL_REDUCE, reduce_algs, (int)(sizeof reduce_algs / sizeof reduce_algs[0])
};

int MPI_Reduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    size_t elem = pgmpi_type_bytes(dt), n = (size_t)(count > 0 ? count : 0) * elem;
    PGMPI_DISPATCH(REDUCE, reduce_algs, reduce_fn, comm, n, elem, PMPI_Reduce, (sb, rb, count, dt, op, root, comm));
}
