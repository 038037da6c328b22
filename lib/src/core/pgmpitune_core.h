/* libpgmpitune core <-> collective files contract.
 *
 * One collective = one file lib/src/collectives/<key>.c holding
 *   - its mock-ups as small static functions with the collective's own C signature,
 *   - a descriptor table (data) naming them, with their memory needs,
 *   - the MPI_<Collective> entry point, which asks the core which algorithm to use.
 * Adding a mock-up = one function + one table row in that file (pool needs: the shared pm_need_* of
 * mockups.h or a static function next to it); outside the library, its name in lib/docs/mockup-names.md
 * and the check test's plan, and needs_contig of the correctness matrix when it needs contiguous types.
 * Adding a collective = one row of collectives.def, that file, lib/bench/calls/<key>.c (how pgmpi-bench
 * sizes, calls and checks it) and one FCOLL line in ../fortran/pgmpi_fortran.c (the build stops without
 * either). Full lists, checked by a worked example: lib/docs/extending.md.
 *
 * RULES every mock-up (1-7) and the run time (8) follow (correctness first: a hang or a changed result in a user's job is the one
 * thing the library must never cause):
 *  1. Same result as the library's default, bit-exact for integers; for floating point
 *     identical on all ranks (within reduction-order tolerance of the default).
 *  2. If it cannot keep the semantics for the given arguments it returns PGMPI_FALLBACK
 *     BEFORE any communication; the caller then runs the library's default.
 *  3. The path a call takes -- mock-up or fallback, and which communication pattern -- may depend
 *     ONLY on what all ranks provably share: the communicator (size, inter/intra), root, op, the
 *     message size n in bytes (count x type size of the signature, collectives.def), what the standard
 *     requires to be equal on all ranks (count and datatype of the reductions, MPI_IN_PLACE where it
 *     must be used by all ranks), the agreed pool capacities (maximum need over all ranks, from
 *     pgmpi_alg_t.msg_need / int_need) and pgmpi_pack_is_raw(). Everything rank-local -- the layout
 *     and contiguity of THIS rank's datatype in data-movement collectives (MPI only requires matching
 *     type signatures: one rank may send ints that another receives through a vector type),
 *     MPI_IN_PLACE at a root, buffer addresses -- is handled locally: pack into / unpack from the pool
 *     around one communication pattern in MPI_BYTE that every rank runs (pm_pack / pm_unpack), or never
 *     influences the decision. A mock-up that cannot keep this rule for a case is not offered for it.
 *     Data-movement need functions therefore never look at the element size (the entry points pass 1).
 *  4. No malloc: scratch memory comes from pgmpi_pool_msg()/pgmpi_pool_int(), which
 *     the core reserves for the call before the mock-up runs (need <= capacity was
 *     checked by the core, consistently on all ranks).
 *  5. Inner calls use PMPI_* so they are not intercepted again. No inner call gets aliased send and
 *     receive buffers (MPICH refuses them; a debug build checks every one: PM_NOALIAS, built with
 *     -DPGMPI_DEBUG_ALIAS). An empty block's buffer is pm_nowhere, never a pointer into a user buffer.
 *  6. Return the MPI error code of the inner calls (first non-success).
 *  7. A user-defined operation only ever sees elements the application provided: no zero padding
 *     for it (padded decompositions fall back unless the op is predefined, pm_op_is_predefined).
 *  8. A setting of the MPI library's own (Intel MPI's I_MPI_ADJUST_<COLL> of a published native.impi,
 *     native_env.c) reaches it only in a job whose size lies in the file's process ranges, with only those
 *     ranges, set without their process range (Intel MPI 2021.13 matches no message range carrying one):
 *     once set, Intel MPI runs another algorithm even outside every range, so a job of another size
 *     runs with the variable unset (the library's default).  A file that does not read or a launcher that
 *     gives no job size sets nothing; a variable the user set is never overwritten.
 */
#ifndef PGMPITUNE_CORE_H
#define PGMPITUNE_CORE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
#define PGMPI_COLLECTIVE(ID, key, mpi_name, rule) PGMPI_COLL_##ID,
#include "collectives.def"
#undef PGMPI_COLLECTIVE
    PGMPI_NCOLL
} pgmpi_coll_t;

/* Returned by a mock-up that must not run for these arguments (rule 2). Outside the
 * range of MPI error classes/codes. */
#define PGMPI_FALLBACK (-0x5047)

/* Memory a mock-up needs, in bytes: the MAXIMUM over all ranks of a call, as a
 * function of the message size n (bytes, see collectives.def), the per-element
 * extent and p.  NULL = needs nothing. */
typedef size_t (*pgmpi_need_fn)(size_t n_bytes, size_t elem_bytes, int p);

typedef struct pgmpi_alg {
    const char   *name;     /* "<collective>_as_<parts>"; row 0 is "default" */
    void        (*fn)(void);/* the mock-up, cast to the collective's signature; NULL for default */
    pgmpi_need_fn msg_need; /* message-buffer pool bytes */
    pgmpi_need_fn int_need; /* int/count pool bytes (counts, displacements) */
    int           node_aware; /* 1: decomposes by nodes (pm_nodes), falls back on one node */
} pgmpi_alg_t;

typedef struct pgmpi_coll_desc {
    pgmpi_coll_t       id;
    const pgmpi_alg_t *algs;
    int                nalgs;
} pgmpi_coll_desc_t;

/* Each collective file defines exactly one descriptor named pgmpi_desc_<key>. */
#define PGMPI_COLLECTIVE(ID, key, mpi_name, rule) extern const pgmpi_coll_desc_t pgmpi_desc_##ID;
#include "collectives.def"
#undef PGMPI_COLLECTIVE

#if defined(__GNUC__)
#define PGMPI_INTERNAL __attribute__((visibility("hidden")))
#else
#define PGMPI_INTERNAL
#endif

/* Read-only after MPI_Init (runtime.c): what the inline fast path below needs. mode[c] == 0 means
 * "nothing to decide for c" (no forced selection, no profile, before MPI_Init, after MPI_Finalize,
 * PGMPITUNE_DISABLE): the call costs two loads and two branches before the MPI library runs. */
typedef struct {
    int mode[PGMPI_NCOLL];
    int verbose;
    int any;        /* some mode[c] != 0 or verbose: the library has something to do at all */
    int dt_live;    /* some committed type has a replacement (datatypes.c) */
    int usage;      /* usage records on (usage.c): the entry points sample calls */
} pgmpi_fast_t;
extern PGMPI_INTERNAL pgmpi_fast_t pgmpi_fast;
PGMPI_INTERNAL int  pgmpi_begin_slow(pgmpi_coll_t c, MPI_Comm comm, size_t n_bytes, size_t elem_bytes);
PGMPI_INTERNAL void pgmpi_end_slow(pgmpi_coll_t c, size_t n_bytes, int alg, int fell_back);

/* Hot path.  Returns the algorithm index to use (0 = default) for this call; never
 * allocates, no I/O, no strings: O(1) collective lookup + O(log M) range search.
 * Also consults forced selections (benchmark mode), the disable switch, MPI_Init state.
 * When it returns a > 0 the core has already checked msg_need/int_need against the pools
 * and reserved them for this thread; the caller MUST call pgmpi_end() afterwards. */
static inline int pgmpi_begin(pgmpi_coll_t c, MPI_Comm comm, size_t n_bytes, size_t elem_bytes)
{
    if (__builtin_expect(pgmpi_fast.mode[c] == 0, 1)) return 0;
    return pgmpi_begin_slow(c, comm, n_bytes, elem_bytes);
}
/* Ends a call begun with pgmpi_begin: releases pools, accounts (alg actually used,
 * fell_back) for the #@pgmpi report.  Pass alg = 0 for calls that used the default. */
static inline void pgmpi_end(pgmpi_coll_t c, size_t n_bytes, int alg, int fell_back)
{
    if (__builtin_expect(alg == 0 && !pgmpi_fast.verbose, 1)) return;
    pgmpi_end_slow(c, n_bytes, alg, fell_back);
}

/* Usage records (usage.c). While pgmpi_fast.usage is set, each entry point counts its thread's
 * pgmpi_usage_left down and, when it reaches 0, times that one call: pgmpi_usage_start() before the
 * dispatch (returns 0 when it does not sample), pgmpi_usage_stop() after it. Off: one load and branch. */
extern PGMPI_INTERNAL __thread int pgmpi_usage_left __attribute__((tls_model("initial-exec")));
PGMPI_INTERNAL uint64_t pgmpi_usage_start(void);
PGMPI_INTERNAL void pgmpi_usage_stop(pgmpi_coll_t c, MPI_Comm comm, size_t n_bytes, int alg, uint64_t t0);

/* GL4 of the datatype guidelines (datatypes.c): the datatype a wrapped call communicates with -- the
 * user's, or the faster description of the identical type map that a datatype profile named for it at
 * MPI_Type_commit. One load and branch while no type has a replacement; then a 256-bit filter of the
 * replaced handles, so that only a replaced handle (or a rare filter collision) takes the locked lookup. */
extern PGMPI_INTERNAL uint64_t pgmpi_dt_filter[4];
PGMPI_INTERNAL MPI_Datatype pgmpi_type_for_call_slow(MPI_Datatype t);
static inline unsigned pgmpi_dt_hash8(MPI_Datatype t)
{
    uint64_t k = 0;
    __builtin_memcpy(&k, &t, sizeof t < sizeof k ? sizeof t : sizeof k);
    return (unsigned)((k * 0x9E3779B97F4A7C15ull) >> 56);
}
static inline MPI_Datatype pgmpi_type_for_call(MPI_Datatype t)
{
    if (__builtin_expect(!pgmpi_fast.dt_live, 1)) return t;
    unsigned b = pgmpi_dt_hash8(t);
    if (!((__atomic_load_n(&pgmpi_dt_filter[b >> 6], __ATOMIC_RELAXED) >> (b & 63)) & 1)) return t;
    return pgmpi_type_for_call_slow(t);
}

/* Scratch memory reserved by pgmpi_begin for the running mock-up (rule 4). */
PGMPI_INTERNAL void *pgmpi_pool_msg(void);
PGMPI_INTERNAL int  *pgmpi_pool_int(void);

/* Helpers for mock-ups and entry points. */
PGMPI_INTERNAL size_t pgmpi_type_bytes_exact(MPI_Datatype t);    /* MPI_Type_size as size_t */
/* MPI_Type_size as size_t -- except while the library is idle (nothing forced, no profile, no report):
 * then it returns 0 without asking MPI, because the only users on that path are the entry points'
 * n for pgmpi_begin/pgmpi_end, which ignore it when idle. Mock-ups only run when not idle. This keeps
 * the default path free of an MPI call (MPI_Type_size costs more than the rest of the wrapper).
 * Usage records need the size only of the call they sample: the one whose countdown (PGMPI_DISPATCH
 * decrements it after the entry point computed n) is about to reach 0. */
static inline size_t pgmpi_type_bytes(MPI_Datatype t)
{
    if (__builtin_expect(!pgmpi_fast.any, 1)) {
        if (__builtin_expect(pgmpi_fast.usage, 0) && pgmpi_usage_left <= 1) return pgmpi_type_bytes_exact(t);
        return 0;
    }
    return pgmpi_type_bytes_exact(t);
}
PGMPI_INTERNAL int    pgmpi_type_is_contiguous(MPI_Datatype t);  /* size == true extent and lb == 0 */
PGMPI_INTERNAL int    pgmpi_comm_is_inter(MPI_Comm comm);
/* 1 when MPI_Pack of any datatype yields exactly the raw bytes of its signature (native, homogeneous
 * MPI: both Debian builds), agreed by all ranks at MPI_Init: then a rank may pack its own layout into
 * bytes and another unpack them with its own (rule 3). 0 = mock-ups that need it fall back everywhere. */
PGMPI_INTERNAL int    pgmpi_pack_is_raw(void);

/* The node structure of an intracommunicator (nodes.c), the same knowledge on every rank: built
 * collectively (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), one Allgather) by the first call on the
 * communicator that asks for it, then cached on it as an attribute (freed with it), never per call.
 * Nodes are numbered by their lowest rank; within a node ranks keep the communicator's order. Since
 * building it is collective, a mock-up asks for it only where every rank of the communicator is in the
 * same call and reaches the same point (rule 3 makes that so: ask before any rank-local decision). */
typedef struct {
    int nnodes;
    int node, lrank, lsize;  /* this rank's node, its rank and the rank count there */
    int contiguous;          /* every node holds consecutive ranks: node-major order = rank order */
    MPI_Comm node_comm;      /* the ranks of this node */
    MPI_Comm leaders;        /* lrank 0 of every node, in node order; MPI_COMM_NULL elsewhere */
    int *node_of, *lrank_of; /* [p] */
    int *first, *count;      /* [nnodes]: node-major position of a node's first rank, its rank count */
    int *order;              /* [p]: the rank at node-major position j */
} pgmpi_nodes_t;
/* NULL when the structure cannot be built (the caller falls back; it failed on every rank alike). */
PGMPI_INTERNAL const pgmpi_nodes_t *pgmpi_nodes(MPI_Comm comm);

/* Every collective file's MPI_<Collective> entry point is one PGMPI_DISPATCH (../collectives/mockups.h):
 * ask the core which algorithm serves (n, p), run it, and run the library's default when it is the
 * default or the mock-up declines (PGMPI_FALLBACK). */

#ifdef __cplusplus
}
#endif
#endif
