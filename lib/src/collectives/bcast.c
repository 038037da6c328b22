/* MPI_Bcast: the library default and its mock-ups (GL9, GL10; rules in ../core/pgmpitune_core.h).
 * n = count x size(datatype) bytes. */
#include "mockups.h"

typedef int (*bcast_fn)(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm);

/* The n bytes of a Bcast as one byte vector V that every rank communicates (rule 3): the buffer itself
 * when its type is contiguous, else the message pool, which the root packs into here and the others
 * unpack with bcast_bytes_done. PGMPI_FALLBACK (before any communication) for an intercommunicator, a bad
 * root, a vector too long for an int count, or packing that is not raw bytes; *n = 0: nothing moves. */
static int bcast_bytes(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, char **V, size_t *n)
{
    *n = 0;
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    if (root < 0 || root >= pm_size(comm)) return PGMPI_FALLBACK;
    *n = (size_t)count * pgmpi_type_bytes(dt);                  /* the same on every rank */
    if (*n == 0) return MPI_SUCCESS;
    if (!pm_fits_int(*n) || !pgmpi_pack_is_raw()) return PGMPI_FALLBACK;
    *V = pm_landing(buf, dt, pgmpi_pool_msg());
    if (pm_rank(comm) == root && *V != (char *)buf) return pm_pack(buf, count, dt, *V, *n, comm);
    return MPI_SUCCESS;
}
static int bcast_bytes_done(const char *V, size_t n, void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    if (pm_rank(comm) != root && V != (char *)buf) return pm_unpack(V, n, buf, count, dt, comm);
    return MPI_SUCCESS;
}

/* GL9: Allgatherv in place where only the root contributes its n bytes, in bytes on every rank (rule 3):
 * on the buffer itself when its type is contiguous, else on a packed copy in the message pool that the
 * root packs into and the others unpack from. */
static int bcast_as_allgatherv(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    char *V = NULL;
    size_t n;
    int rc = bcast_bytes(buf, count, dt, root, comm, &V, &n);
    if (rc != MPI_SUCCESS || n == 0) return rc;
    int p = pm_size(comm);
    int *counts = pgmpi_pool_int(), *displs = counts + p;
    for (int i = 0; i < p; i++) { counts[i] = 0; displs[i] = 0; }
    counts[root] = (int)n;
    PM_TRY(PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_BYTE, V, counts, displs, MPI_BYTE, comm));
    return bcast_bytes_done(V, n, buf, count, dt, root, comm);
}

/* GL10 (van de Geijn): Scatter of p byte blocks from the root, then Allgather in place, on the n bytes
 * of the signature. Ranks may describe the data with different datatypes (rule 3), so every rank runs
 * the same byte pattern: in its own buffer when its type is contiguous and p divides n, otherwise on a
 * padded vector in the message pool that the root packs into and the others unpack from. */
static int bcast_as_scatter_allgather(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    int p = pm_size(comm), r = pm_rank(comm);
    if (root < 0 || root >= p) return PGMPI_FALLBACK;
    size_t n = (size_t)count * pgmpi_type_bytes(dt), blk = pm_ceil_div(n, (size_t)p);
    if (n == 0) return MPI_SUCCESS;
    if (!pm_fits_int(blk * (size_t)p) || !pgmpi_pack_is_raw()) return PGMPI_FALLBACK;
    char *v = (pm_contig(dt) && blk * (size_t)p == n) ? buf : pgmpi_pool_msg();
    if (r == root && v != (char *)buf) PM_TRY(pm_pack(buf, count, dt, v, n, comm));
    if (r == root) PM_TRY(PMPI_Scatter(v, (int)blk, MPI_BYTE, MPI_IN_PLACE, (int)blk, MPI_BYTE, root, comm));
    else PM_TRY(PMPI_Scatter(NULL, (int)blk, MPI_BYTE, v + (size_t)r * blk, (int)blk, MPI_BYTE, root, comm));
    PM_TRY(PMPI_Allgather(MPI_IN_PLACE, 0, MPI_BYTE, v, (int)blk, MPI_BYTE, comm));
    if (r != root && v != (char *)buf) return pm_unpack(v, n, buf, count, dt, comm);
    return MPI_SUCCESS;
}

/* Node-aware: the root hands its n bytes to the first rank of its node (when it is not that rank),
 * Bcast among the nodes' first ranks, Bcast within every node; in bytes on every rank (rule 3), on the
 * buffer itself when its type is contiguous, else on a packed copy in the message pool. */
static int bcast_as_leaderbcast_nodebcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    int r = pm_rank(comm);
    if (root < 0 || root >= pm_size(comm)) return PGMPI_FALLBACK;
    const pgmpi_nodes_t *N = pm_nodes(comm, MPI_OP_NULL);   /* collective: before anything rank-local */
    if (!N) return PGMPI_FALLBACK;
    char *V = NULL;
    size_t n;
    int rc = bcast_bytes(buf, count, dt, root, comm, &V, &n);
    if (rc != MPI_SUCCESS || n == 0) return rc;
    int K = N->node_of[root];
    if (N->lrank_of[root] != 0 && N->node == K) {
        if (r == root) PM_TRY(PMPI_Send(V, (int)n, MPI_BYTE, 0, PM_NODE_TAG, N->node_comm));
        else if (N->lrank == 0)
            PM_TRY(PMPI_Recv(V, (int)n, MPI_BYTE, N->lrank_of[root], PM_NODE_TAG, N->node_comm, MPI_STATUS_IGNORE));
    }
    if (N->leaders != MPI_COMM_NULL) PM_TRY(PMPI_Bcast(V, (int)n, MPI_BYTE, K, N->leaders));
    PM_TRY(PMPI_Bcast(V, (int)n, MPI_BYTE, 0, N->node_comm));
    return bcast_bytes_done(V, n, buf, count, dt, root, comm);
}

/* Datatype repair (GL2/GL3 of the datatype guidelines; pgmpi-dtbench, lib/bench/README.md): the library's
 * own Bcast on the n packed bytes, for a library whose Bcast of a non-contiguous type is slower than
 * packing by hand. The root packs into the message pool, every rank broadcasts n MPI_BYTEs, the others
 * unpack; a contiguous type communicates from its own buffer (rule 3: the same pattern on every rank). */
static int bcast_as_packed_bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    char *V = NULL;
    size_t n;
    int rc = bcast_bytes(buf, count, dt, root, comm, &V, &n);
    if (rc != MPI_SUCCESS || n == 0) return rc;
    PM_TRY(PMPI_Bcast(V, (int)n, MPI_BYTE, root, comm));
    return bcast_bytes_done(V, n, buf, count, dt, root, comm);
}

/* Any rank may need the padded vector (its own type may not be contiguous): the need is the same for all. */
static size_t need_padded_bytes(size_t n, size_t e, int p)
{
    (void)e;
    return pm_ceil_div(n, (size_t)p) * (size_t)p;
}

static const pgmpi_alg_t bcast_algs[] = {
    {"default", NULL, NULL, NULL, 0},
    {"bcast_as_allgatherv", (void (*)(void))bcast_as_allgatherv, pm_need_n, pm_need_2p_ints, 0},
    {"bcast_as_scatter_allgather", (void (*)(void))bcast_as_scatter_allgather, need_padded_bytes, NULL, 0},
    {"bcast_as_leaderbcast_nodebcast", (void (*)(void))bcast_as_leaderbcast_nodebcast, pm_need_n, NULL, 1},
    {"bcast_as_packed_bcast", (void (*)(void))bcast_as_packed_bcast, pm_need_n, NULL, 0},
};

const pgmpi_coll_desc_t pgmpi_desc_BCAST = {
    PGMPI_COLL_BCAST, bcast_algs, (int)(sizeof bcast_algs / sizeof bcast_algs[0])
};

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    dt = pgmpi_type_for_call(dt);   /* GL4: a faster description of the same type map, if any */
    size_t n = (size_t)(count > 0 ? count : 0) * pgmpi_type_bytes(dt);
    PGMPI_DISPATCH(BCAST, bcast_algs, bcast_fn, comm, n, 1, PMPI_Bcast, (buf, count, dt, root, comm));
}
