/* libpgmpitune core <-> collective files contract.
 *
 * One collective = one file lib/src/collectives/<key>.c holding
 *   - its mock-ups as small static functions with the collective's own C signature,
 *   - a descriptor table (data) naming them, with their memory needs,
 *   - the MPI_<Collective> entry point, which asks the core which algorithm to use.
 * Adding a mock-up = one function + one table row in that file.
 *
 * RULES every mock-up follows (correctness first):
 *  1. Same result as the library's default, bit-exact for integers; for floating point
 *     identical on all ranks (within reduction-order tolerance of the default).
 *  2. If it cannot keep the semantics for the given arguments it returns PGMPI_FALLBACK
 *     BEFORE any communication; the caller then runs the library's default.
 *  3. The decision to fall back must be the SAME on every rank of the call: it may only
 *     depend on arguments that all ranks agree on (message bytes, p, root, op, the
 *     communicator kind, datatype contiguity) and on pool capacities computed as the
 *     maximum need over all ranks (pgmpi_alg_t.msg_need / int_need) -- never on
 *     root-only arguments or on per-rank pool contention.
 *  4. No malloc: scratch memory comes from pgmpi_pool_msg()/pgmpi_pool_int(), which
 *     the core reserves for the call before the mock-up runs (need <= capacity was
 *     checked by the core, consistently on all ranks).
 *  5. Inner calls use PMPI_* so they are not intercepted again.
 *  6. Return the MPI error code of the inner calls (first non-success).
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

/* Scratch memory reserved by pgmpi_begin for the running mock-up (rule 4). */
PGMPI_INTERNAL void *pgmpi_pool_msg(void);
PGMPI_INTERNAL int  *pgmpi_pool_int(void);

/* Helpers for mock-ups and entry points. */
PGMPI_INTERNAL size_t pgmpi_type_bytes_exact(MPI_Datatype t);    /* MPI_Type_size as size_t */
/* MPI_Type_size as size_t -- except while the library is idle (nothing forced, no profile, no report):
 * then it returns 0 without asking MPI, because the only users on that path are the entry points'
 * n for pgmpi_begin/pgmpi_end, which ignore it when idle. Mock-ups only run when not idle. This keeps
 * the default path free of an MPI call (MPI_Type_size costs more than the rest of the wrapper). */
static inline size_t pgmpi_type_bytes(MPI_Datatype t)
{
    if (__builtin_expect(!pgmpi_fast.any, 1)) return 0;
    return pgmpi_type_bytes_exact(t);
}
PGMPI_INTERNAL int    pgmpi_type_is_contiguous(MPI_Datatype t);  /* size == true extent and lb == 0 */
PGMPI_INTERNAL int    pgmpi_comm_is_inter(MPI_Comm comm);

/* Standard entry-point shape used by every collective file:
 *
 *   int MPI_Allreduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
 *       size_t elem = pgmpi_type_bytes(dt), n = (size_t)count * elem;
 *       int alg = pgmpi_begin(PGMPI_COLL_ALLREDUCE, comm, n, elem);
 *       if (alg > 0) {
 *           int rc = ((allreduce_fn)allreduce_algs[alg].fn)(sb, rb, count, dt, op, comm);
 *           if (rc != PGMPI_FALLBACK) { pgmpi_end(PGMPI_COLL_ALLREDUCE, n, alg, 0); return rc; }
 *           pgmpi_end(PGMPI_COLL_ALLREDUCE, n, alg, 1);
 *       } else pgmpi_end(PGMPI_COLL_ALLREDUCE, n, 0, 0);
 *       return PMPI_Allreduce(sb, rb, count, dt, op, comm);
 *   }
 */

#ifdef __cplusplus
}
#endif
#endif
