/* MPI_Allgather: the library default and its mock-ups (GL1-GL4; rules in ../core/pgmpitune_core.h).
 * n = recvcount x size(recvtype) bytes, the block every rank contributes. */
#include "mockups.h"

typedef int (*allgather_fn)(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                            MPI_Comm comm);

/* The own block's n bytes at their place r x n of V (the receive buffer itself or its staging copy). */
static int allgather_place_own(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                               char *V, int r, size_t n, MPI_Comm comm)
{
    if (sb != MPI_IN_PLACE) return pm_pack(sb, sc, st, V + (size_t)r * n, n, comm);
    if (V == (char *)rb) return MPI_SUCCESS;                 /* contiguous: already there */
    return pm_pack((char *)rb + (MPI_Aint)r * rc * pm_extent(rt), rc, rt, V + (size_t)r * n, n, comm);
}

/* The p blocks of n bytes as one byte vector V of p x n bytes that every rank communicates (rule 3): the
 * receive buffer itself when its type is contiguous, else the message pool, with this rank's own block
 * already at its place; allgather_bytes_done unpacks. PGMPI_FALLBACK (before any communication) for an
 * intercommunicator, a vector too long for an int count, or packing that is not raw bytes; *n = 0:
 * nothing moves anywhere. */
static int allgather_bytes(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm,
                           char **V, size_t *n)
{
    *n = 0;
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    int p = pm_size(comm);
    *n = (size_t)rc * pgmpi_type_bytes(rt);                      /* the same on every rank */
    if (*n == 0) return MPI_SUCCESS;
    if (!pm_fits_int(*n * (size_t)p) || !pgmpi_pack_is_raw()) return PGMPI_FALLBACK;
    *V = pm_landing(rb, rt, pgmpi_pool_msg());
    return allgather_place_own(sb, sc, st, rb, rc, rt, *V, pm_rank(comm), *n, comm);
}
static int allgather_bytes_done(const char *V, size_t n, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm)
{
    int p = pm_size(comm);
    return V == (char *)rb ? MPI_SUCCESS : pm_unpack(V, n * (size_t)p, rb, rc * p, rt, comm);
}

/* GL1: Gather to rank 0, then Bcast of the whole vector, in bytes (rule 3): every rank puts its own
 * block at its place of V (the receive buffer when contiguous, else the message pool), rank 0 gathers
 * in place, every rank unpacks V after the Bcast. */
static int allgather_as_gather_bcast(const void *sb, int sc, MPI_Datatype st, void *rb, int rc,
                                     MPI_Datatype rt, MPI_Comm comm)
{
    char *V = NULL;
    size_t n;
    int ret = allgather_bytes(sb, sc, st, rb, rc, rt, comm, &V, &n);
    if (ret != MPI_SUCCESS || n == 0) return ret;
    int p = pm_size(comm), r = pm_rank(comm);
    if (r == 0) PM_TRY(PMPI_Gather(MPI_IN_PLACE, (int)n, MPI_BYTE, V, (int)n, MPI_BYTE, 0, comm));
    else PM_TRY(PMPI_Gather(V + (size_t)r * n, (int)n, MPI_BYTE, NULL, 0, MPI_BYTE, 0, comm));
    PM_TRY(PMPI_Bcast(V, (int)(n * (size_t)p), MPI_BYTE, 0, comm));
    return allgather_bytes_done(V, n, rb, rc, rt, comm);
}

/* GL2: every rank sends p copies of its block with Alltoall, in bytes: the own block is packed into
 * the message pool (first n x p bytes), and received straight into a contiguous receive buffer or
 * into the pool's second half and unpacked (rule 3: the pattern is the same whatever the layouts). */
static int allgather_as_alltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc,
                                 MPI_Datatype rt, MPI_Comm comm)
{
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    size_t n = (size_t)rc * pgmpi_type_bytes(rt), all = n * (size_t)p;
    if (n == 0) return MPI_SUCCESS;
    if (!pm_fits_int(all) || !pgmpi_pack_is_raw()) return PGMPI_FALLBACK;
    char *copies = pgmpi_pool_msg(), *staging = copies + all;
    if (sb == MPI_IN_PLACE)
        PM_TRY(pm_pack((char *)rb + (MPI_Aint)r * rc * pm_extent(rt), rc, rt, copies, n, comm));
    else
        PM_TRY(pm_pack(sb, sc, st, copies, n, comm));
    for (int i = 1; i < p; i++) memcpy(copies + (size_t)i * n, copies, n);
    int direct = pm_contig(rt);
    char *dst = direct ? rb : staging;
    PM_NOALIAS(copies, all, dst, all);
    PM_TRY(PMPI_Alltoall(copies, (int)n, MPI_BYTE, dst, (int)n, MPI_BYTE, comm));
    return direct ? MPI_SUCCESS : pm_unpack(staging, all, rb, rc * p, rt, comm);
}

/* GL3: zeroed p-block vector with the own block at its place, combined with a bitwise or; exact for
 * every datatype because it works on raw bytes (integer words whose width divides p*n). In place in a
 * contiguous receive buffer; otherwise on a packed vector in the message pool, unpacked afterwards. */
static int allgather_as_allreduce(const void *sb, int sc, MPI_Datatype st, void *rb, int rc,
                                  MPI_Datatype rt, MPI_Comm comm)
{
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    size_t n = (size_t)rc * pgmpi_type_bytes(rt), total = n * (size_t)p, w;
    if (n == 0) return MPI_SUCCESS;
    MPI_Datatype wt = pm_bor_type(total, &w);
    if (!pm_fits_int(total) || !pgmpi_pack_is_raw()) return PGMPI_FALLBACK;
    char *v = pm_landing(rb, rt, pgmpi_pool_msg()), *mine = v + (size_t)r * n;
    PM_TRY(allgather_place_own(sb, sc, st, rb, rc, rt, v, r, n, comm));
    memset(v, 0, (size_t)r * n);
    memset(mine + n, 0, total - (size_t)(r + 1) * n);
    PM_TRY(PMPI_Allreduce(MPI_IN_PLACE, v, (int)(total / w), wt, MPI_BOR, comm));
    return v == (char *)rb ? MPI_SUCCESS : pm_unpack(v, total, rb, rc * p, rt, comm);
}

/* GL4: Allgatherv in place with equal byte counts (count/displacement vectors from the int pool), on V
 * as GL1 (rule 3: MPI_BYTE on every rank; Open MPI 4.1's Allgatherv hangs when the ranks pass
 * signature-compatible but different datatypes, measured at p = 3 with 1000 ints). */
static int allgather_as_allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, int rc,
                                   MPI_Datatype rt, MPI_Comm comm)
{
    char *V = NULL;
    size_t n;
    int ret = allgather_bytes(sb, sc, st, rb, rc, rt, comm, &V, &n);
    if (ret != MPI_SUCCESS || n == 0) return ret;
    int p = pm_size(comm);
    int *counts = pgmpi_pool_int(), *displs = counts + p;
    for (int i = 0; i < p; i++) { counts[i] = (int)n; displs[i] = i * (int)n; }
    PM_TRY(PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_BYTE, V, counts, displs, MPI_BYTE, comm));
    return allgather_bytes_done(V, n, rb, rc, rt, comm);
}

/* Node-aware: Gather of the n-byte blocks to the first rank of every node, Allgatherv of the nodes'
 * runs among those leaders, Bcast of the whole vector within every node; in bytes (rule 3). The vector
 * is gathered in node-major order: straight into V (the receive buffer, or its staging copy when the
 * type is not contiguous) when ranks are numbered node by node, else into the pool and put into rank
 * order by every rank afterwards (the order is in the node structure, the same on all ranks). */
static int allgather_as_nodegather_leaderallgatherv_nodebcast(const void *sb, int sc, MPI_Datatype st, void *rb,
                                                             int rc, MPI_Datatype rt, MPI_Comm comm)
{
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    const pgmpi_nodes_t *N = pm_nodes(comm, MPI_OP_NULL);
    if (!N) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    size_t n = (size_t)rc * pgmpi_type_bytes(rt), all = n * (size_t)p;
    if (n == 0) return MPI_SUCCESS;
    if (!pm_fits_int(all) || !pgmpi_pack_is_raw()) return PGMPI_FALLBACK;
    char *pool = pgmpi_pool_msg();
    char *V = pm_landing(rb, rt, pool), *W = N->contiguous ? V : pool + all;
    PM_TRY(allgather_place_own(sb, sc, st, rb, rc, rt, V, r, n, comm));
    char *mine = V + (size_t)r * n, *nodeblk = W + (size_t)N->first[N->node] * n;
    if (N->lrank != 0) {
        PM_TRY(PMPI_Gather(mine, (int)n, MPI_BYTE, NULL, 0, MPI_BYTE, 0, N->node_comm));
    } else if (nodeblk == mine) {
        PM_TRY(PMPI_Gather(MPI_IN_PLACE, (int)n, MPI_BYTE, nodeblk, (int)n, MPI_BYTE, 0, N->node_comm));
    } else {
        PM_NOALIAS(mine, n, nodeblk, n * (size_t)N->lsize);
        PM_TRY(PMPI_Gather(mine, (int)n, MPI_BYTE, nodeblk, (int)n, MPI_BYTE, 0, N->node_comm));
    }
    if (N->leaders != MPI_COMM_NULL) {
        int *counts = pgmpi_pool_int(), *displs = counts + N->nnodes;
        for (int k = 0; k < N->nnodes; k++) { counts[k] = N->count[k] * (int)n; displs[k] = N->first[k] * (int)n; }
        PM_TRY(PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_BYTE, W, counts, displs, MPI_BYTE, N->leaders));
    }
    PM_TRY(PMPI_Bcast(W, (int)all, MPI_BYTE, 0, N->node_comm));
    if (W != V)
        for (int j = 0; j < p; j++) memcpy(V + (size_t)N->order[j] * n, W + (size_t)j * n, n);
    return V == (char *)rb ? MPI_SUCCESS : pm_unpack(V, all, rb, rc * p, rt, comm);
}

/* Datatype repair (GL2/GL3 of the datatype guidelines; pgmpi-dtbench, lib/bench/README.md): the library's
 * own Allgather on the packed bytes, for a library whose Allgather of a non-contiguous type is slower than
 * packing by hand. Every rank puts its own block at its place of V as GL1 does (the receive buffer when
 * contiguous, else the message pool), Allgather in place in MPI_BYTE (rule 3), unpack V. */
static int allgather_as_packed_allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc,
                                         MPI_Datatype rt, MPI_Comm comm)
{
    char *V = NULL;
    size_t n;
    int ret = allgather_bytes(sb, sc, st, rb, rc, rt, comm, &V, &n);
    if (ret != MPI_SUCCESS || n == 0) return ret;
    PM_TRY(PMPI_Allgather(MPI_IN_PLACE, 0, MPI_BYTE, V, (int)n, MPI_BYTE, comm));
    return allgather_bytes_done(V, n, rb, rc, rt, comm);
}


static const pgmpi_alg_t allgather_algs[] = {
    {"default", NULL, NULL, NULL, 0},
    {"allgather_as_gather_bcast", (void (*)(void))allgather_as_gather_bcast, pm_need_pn, NULL, 0},
    {"allgather_as_alltoall", (void (*)(void))allgather_as_alltoall, pm_need_2pn, NULL, 0},
    {"allgather_as_allreduce", (void (*)(void))allgather_as_allreduce, pm_need_pn, NULL, 0},
    {"allgather_as_allgatherv", (void (*)(void))allgather_as_allgatherv, pm_need_pn, pm_need_2p_ints, 0},
    {"allgather_as_nodegather_leaderallgatherv_nodebcast",
     (void (*)(void))allgather_as_nodegather_leaderallgatherv_nodebcast, pm_need_2pn, pm_need_2p_ints, 1},
    {"allgather_as_packed_allgather", (void (*)(void))allgather_as_packed_allgather, pm_need_pn, NULL, 0},
};

const pgmpi_coll_desc_t pgmpi_desc_ALLGATHER = {
    PGMPI_COLL_ALLGATHER, allgather_algs, (int)(sizeof allgather_algs / sizeof allgather_algs[0])
};

int MPI_Allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm)
{
    st = pgmpi_type_for_call(st);   /* GL4: faster descriptions of the same type maps, if any */
    rt = pgmpi_type_for_call(rt);
    size_t n = (size_t)(rc > 0 ? rc : 0) * pgmpi_type_bytes(rt);
    PGMPI_DISPATCH(ALLGATHER, allgather_algs, allgather_fn, comm, n, 1, PMPI_Allgather,
                   (sb, sc, st, rb, rc, rt, comm));
}
