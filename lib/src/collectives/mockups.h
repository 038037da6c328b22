/* Small helpers shared by the mock-up files of lib/src/collectives/ (header only, static inline).
 * The rules they serve are in ../core/pgmpitune_core.h. */
#ifndef PGMPI_MOCKUPS_H
#define PGMPI_MOCKUPS_H

#include "pgmpitune_core.h"
#include <limits.h>
#include <string.h>
#ifdef PGMPI_DEBUG_ALIAS
#include <stdio.h>
#include <stdlib.h>
#endif

/* The MPI_<Collective> entry point's body (rules in ../core/pgmpitune_core.h): ask the core, run the
 * mock-up it names, and run the library's default PMPI call when it names none or the mock-up declines.
 * ARGS is the parenthesised argument list, the same for the mock-up and the default. */
#define PGMPI_DISPATCH(ID, algs, fn_type, comm, n, elem, pmpi_call, ARGS)                      \
    do {                                                                                       \
        uint64_t pm_t0_ = 0;                                                                   \
        if (__builtin_expect(pgmpi_fast.usage, 0) && --pgmpi_usage_left <= 0)                  \
            pm_t0_ = pgmpi_usage_start();                                                      \
        int pm_alg_ = pgmpi_begin(PGMPI_COLL_##ID, (comm), (n), (elem)), pm_rc_;               \
        if (pm_alg_ > 0) {                                                                     \
            pm_rc_ = ((fn_type)(algs)[pm_alg_].fn) ARGS;                                       \
            pgmpi_end(PGMPI_COLL_##ID, (n), pm_alg_, pm_rc_ == PGMPI_FALLBACK);                \
            if (pm_rc_ == PGMPI_FALLBACK) { pm_alg_ = 0; pm_rc_ = pmpi_call ARGS; }            \
        } else {                                                                               \
            pgmpi_end(PGMPI_COLL_##ID, (n), 0, 0);                                             \
            pm_rc_ = pmpi_call ARGS;                                                           \
        }                                                                                      \
        if (__builtin_expect(pm_t0_ != 0, 0))                                                  \
            pgmpi_usage_stop(PGMPI_COLL_##ID, (comm), (n), pm_alg_, pm_t0_);                   \
        return pm_rc_;                                                                         \
    } while (0)

/* Return the first MPI error code of a composition (rule 6). */
#define PM_TRY(call)                                   \
    do {                                               \
        int pm_rc_ = (call);                           \
        if (pm_rc_ != MPI_SUCCESS) return pm_rc_;      \
    } while (0)

/* Tag for local (MPI_COMM_SELF) typed copies. */
#define PM_SELF_TAG 0x5047

/* Chunk (bytes) of the Reduce_scatter based mock-ups (PGMPITuneLib's chunk size C, paper appendix A,
 * GL7/GL16): the reduced vector is dealt out to the ranks in blocks that are whole chunks, so that no
 * rank receives a handful of bytes. */
#define PM_CHUNK_BYTES 64u

static inline size_t pm_ceil_div(size_t a, size_t b) { return b ? (a + b - 1) / b : 0; }

/* Elements per chunk for an element of elem bytes. */
static inline size_t pm_chunk_elems(size_t elem)
{
    if (elem == 0 || elem >= PM_CHUNK_BYTES) return 1;
    return PM_CHUNK_BYTES / elem;
}

/* Deal count elements to p ranks in chunks of C elements, lowest ranks first, one contiguous range per
 * rank (rank order = vector order, so non-commutative reductions keep their order). Fills counts[p] and
 * displs[p] when they are not NULL; returns the largest block (elements). */
static inline size_t pm_chunked_split(size_t count, size_t elem, int p, int *counts, int *displs)
{
    size_t C = pm_chunk_elems(elem);
    size_t nchunks = pm_ceil_div(count, C);
    size_t per = nchunks / (size_t)p, extra = nchunks % (size_t)p;
    size_t maxblk = 0, off = 0;
    for (int i = 0; i < p; i++) {
        size_t c = (per + ((size_t)i < extra ? 1 : 0)) * C;
        if (off + c > count) c = count > off ? count - off : 0;
        if (counts) counts[i] = (int)c;
        if (displs) displs[i] = (int)off;
        off += c;
        if (c > maxblk) maxblk = c;
    }
    return maxblk;
}

/* Contiguous and starting at the buffer address: byte copies and byte offsets are valid. */
static inline int pm_contig(MPI_Datatype t) { return pgmpi_type_is_contiguous(t); }

static inline int pm_size(MPI_Comm comm) { int p = 1; PMPI_Comm_size(comm, &p); return p; }
static inline int pm_rank(MPI_Comm comm) { int r = 0; PMPI_Comm_rank(comm, &r); return r; }

static inline MPI_Aint pm_extent(MPI_Datatype t)
{
    MPI_Aint lb = 0, ext = 0;
    PMPI_Type_get_extent(t, &lb, &ext);
    return ext;
}

/* Typed local copy src(sc, st) -> dst(rc, rt): memcpy when both are contiguous, else through
 * MPI_COMM_SELF (any datatypes, no scratch memory). */
static inline int pm_local_copy(const void *src, int sc, MPI_Datatype st, void *dst, int rc, MPI_Datatype rt)
{
    if (sc == 0 && rc == 0) return MPI_SUCCESS;
    if (pm_contig(st) && pm_contig(rt)) {
        size_t nb = (size_t)sc * pgmpi_type_bytes(st);
        if (src != dst && nb) memmove(dst, src, nb);
        return MPI_SUCCESS;
    }
    if (src == dst) return MPI_SUCCESS;
    return PMPI_Sendrecv(src, sc, st, 0, PM_SELF_TAG, dst, rc, rt, 0, PM_SELF_TAG, MPI_COMM_SELF,
                         MPI_STATUS_IGNORE);
}

/* Widest unsigned integer MPI type whose size divides nbytes (bitwise-or tricks work on raw bytes; the
 * width only depends on a byte count all ranks agree on). */
static inline MPI_Datatype pm_bor_type(size_t nbytes, size_t *width)
{
    if (nbytes % 8 == 0) { *width = 8; return MPI_UINT64_T; }
    if (nbytes % 4 == 0) { *width = 4; return MPI_UINT32_T; }
    if (nbytes % 2 == 0) { *width = 2; return MPI_UINT16_T; }
    *width = 1;
    return MPI_UINT8_T;
}

/* Receive buffer of an empty block (rule 5): a pointer into a user buffer could equal the send buffer
 * (the end of one array is often the start of the next), which MPICH refuses as aliasing. */
static char pm_nowhere[16] __attribute__((aligned(16), unused));
static inline void *pm_block(void *p, size_t count) { return count ? p : (void *)pm_nowhere; }

#ifdef PGMPI_DEBUG_ALIAS
/* Debug builds: an inner call whose send and receive buffers alias is a bug of the mock-up. Pointer
 * equality always counts (what MPICH checks); byte spans are checked when both are given (> 0). */
static inline void pm_noalias(const char *where, int line, const void *s, size_t sn, const void *r, size_t rn)
{
    if (s == MPI_IN_PLACE || r == MPI_IN_PLACE || !s || !r) return;
    const char *a = s, *b = r;
    if (a == b || (sn && rn && a < b + rn && b < a + sn)) {
        fprintf(stderr, "pgmpitune: debug: aliased buffers in %s (line %d): send %p+%zu recv %p+%zu\n", where,
                line, s, sn, r, rn);
        fflush(stderr);
        abort();
    }
}
#define PM_NOALIAS(s, sn, r, rn) pm_noalias(__func__, __LINE__, (s), (sn), (r), (rn))
/* Every inner call with a send and a receive buffer is checked (a function-like macro does not expand
 * again inside its own expansion, so these still call the PMPI functions). */
#define PM_CHECKED2(fn, s, r, ...) (PM_NOALIAS((s), 0, (r), 0), fn((s), (r), __VA_ARGS__))
#define PMPI_Allreduce(s, r, ...) PM_CHECKED2(PMPI_Allreduce, s, r, __VA_ARGS__)
#define PMPI_Reduce(s, r, ...) PM_CHECKED2(PMPI_Reduce, s, r, __VA_ARGS__)
#define PMPI_Reduce_scatter(s, r, ...) PM_CHECKED2(PMPI_Reduce_scatter, s, r, __VA_ARGS__)
#define PMPI_Reduce_scatter_block(s, r, ...) PM_CHECKED2(PMPI_Reduce_scatter_block, s, r, __VA_ARGS__)
#define PMPI_Exscan(s, r, ...) PM_CHECKED2(PMPI_Exscan, s, r, __VA_ARGS__)
#define PM_CHECKED4(fn, s, a, b, r, ...) (PM_NOALIAS((s), 0, (r), 0), fn((s), (a), (b), (r), __VA_ARGS__))
#define PMPI_Allgather(s, a, b, r, ...) PM_CHECKED4(PMPI_Allgather, s, a, b, r, __VA_ARGS__)
#define PMPI_Allgatherv(s, a, b, r, ...) PM_CHECKED4(PMPI_Allgatherv, s, a, b, r, __VA_ARGS__)
#define PMPI_Alltoall(s, a, b, r, ...) PM_CHECKED4(PMPI_Alltoall, s, a, b, r, __VA_ARGS__)
#define PMPI_Gather(s, a, b, r, ...) PM_CHECKED4(PMPI_Gather, s, a, b, r, __VA_ARGS__)
#define PMPI_Gatherv(s, a, b, r, ...) PM_CHECKED4(PMPI_Gatherv, s, a, b, r, __VA_ARGS__)
#define PMPI_Scatter(s, a, b, r, ...) PM_CHECKED4(PMPI_Scatter, s, a, b, r, __VA_ARGS__)
#define PM_CHECKED5(fn, s, a, b, c, r, ...) (PM_NOALIAS((s), 0, (r), 0), fn((s), (a), (b), (c), (r), __VA_ARGS__))
#define PMPI_Alltoallv(s, a, b, c, r, ...) PM_CHECKED5(PMPI_Alltoallv, s, a, b, c, r, __VA_ARGS__)
#define PMPI_Scatterv(s, a, b, c, r, ...) PM_CHECKED5(PMPI_Scatterv, s, a, b, c, r, __VA_ARGS__)
#else
#define PM_NOALIAS(s, sn, r, rn) ((void)0)
#endif

/* Rule 3: a rank's own datatype layout is handled locally. Typed buffer <-> the signature's n raw bytes
 * (memmove when the type is contiguous, else MPI_Pack / MPI_Unpack, valid as raw bytes when
 * pgmpi_pack_is_raw()). n must fit an int (the callers check n x p). */
static inline int pm_pack(const void *src, int count, MPI_Datatype t, void *dst, size_t n, MPI_Comm comm)
{
    if (n == 0) return MPI_SUCCESS;
    if (pgmpi_type_is_contiguous(t)) {
        if (src != dst) memmove(dst, src, n);
        return MPI_SUCCESS;
    }
    int pos = 0;
    return PMPI_Pack(src, count, t, dst, (int)n, &pos, comm);
}
static inline int pm_unpack(const void *src, size_t n, void *dst, int count, MPI_Datatype t, MPI_Comm comm)
{
    if (n == 0) return MPI_SUCCESS;
    if (pgmpi_type_is_contiguous(t)) {
        if (src != dst) memmove(dst, src, n);
        return MPI_SUCCESS;
    }
    int pos = 0;
    return PMPI_Unpack(src, (int)n, &pos, dst, count, t, comm);
}

/* The bytes of a typed buffer, for sending: the buffer itself when its type is contiguous, else packed
 * into area (pool memory of n bytes). */
static inline int pm_send_bytes(const void *buf, int count, MPI_Datatype t, char *area, size_t n, MPI_Comm comm,
                                const void **out)
{
    if (pm_contig(t)) { *out = buf; return MPI_SUCCESS; }
    *out = area;
    return pm_pack(buf, count, t, area, n, comm);
}
/* Where n bytes meant for a typed buffer land: the buffer itself when its type is contiguous, else
 * staging (pool memory; pm_unpack afterwards). */
static inline char *pm_landing(void *buf, MPI_Datatype t, char *staging) { return pm_contig(t) ? buf : staging; }

/* Rule 7: predefined reduction operations (zero padding is harmless to them; user functions may not
 * be defined on made-up elements). */
static inline int pm_op_is_predefined(MPI_Op op)
{
    return op == MPI_SUM || op == MPI_PROD || op == MPI_MAX || op == MPI_MIN || op == MPI_LAND ||
           op == MPI_LOR || op == MPI_LXOR || op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR ||
           op == MPI_MAXLOC || op == MPI_MINLOC;
}

/* Common early checks: intercommunicators always go to the default. */
static inline int pm_inter(MPI_Comm comm) { return pgmpi_comm_is_inter(comm); }

/* The node structure for a node-aware mock-up, or NULL when it must fall back: an intercommunicator, one
 * node (nothing to gain), or a non-commutative op on ranks that are not numbered node by node (then no
 * hierarchical order is the rank order). All of it is the same on every rank (rule 3); the first call on
 * a communicator builds the structure collectively, which every rank reaches alike because nothing
 * before this point differs between ranks. op == MPI_OP_NULL for data movement. */
static inline const pgmpi_nodes_t *pm_nodes(MPI_Comm comm, MPI_Op op)
{
    if (pm_inter(comm)) return NULL;
    const pgmpi_nodes_t *N = pgmpi_nodes(comm);
    if (!N || N->nnodes < 2) return NULL;
    if (op != MPI_OP_NULL && !N->contiguous) {
        int commute = 0;
        PMPI_Op_commutative(op, &commute);
        if (!commute) return NULL;
    }
    return N;
}

/* Tag of the node-aware mock-ups' point-to-point steps on their node communicator (private to the
 * library: nobody else sends there). */
#define PM_NODE_TAG 0x5048

/* Pool needs several mock-ups share (pgmpi_alg_t.msg_need / int_need, the maximum over ranks): n message
 * bytes, p ranks; the special ones (padding, chunked blocks) stay in their collective's file. */
static inline size_t pm_need_n(size_t n, size_t e, int p) { (void)e; (void)p; return n; }
static inline size_t pm_need_2n(size_t n, size_t e, int p) { (void)e; (void)p; return 2 * n; }
static inline size_t pm_need_pn(size_t n, size_t e, int p) { (void)e; return n * (size_t)p; }
static inline size_t pm_need_2pn(size_t n, size_t e, int p) { (void)e; return 2 * n * (size_t)p; }
static inline size_t pm_need_n_pn(size_t n, size_t e, int p) { (void)e; return n + n * (size_t)p; }
static inline size_t pm_need_p_ints(size_t n, size_t e, int p) { (void)n; (void)e; return (size_t)p * sizeof(int); }
static inline size_t pm_need_2p_ints(size_t n, size_t e, int p) { (void)n; (void)e; return 2 * (size_t)p * sizeof(int); }

static inline int pm_fits_int(size_t v) { return v <= (size_t)INT_MAX; }

#endif
