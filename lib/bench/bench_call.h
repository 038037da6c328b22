/* What pgmpi-bench knows about one call: how to size its buffers, call it, and check its result.
 * One file per collective of collectives.def, lib/bench/calls/<key>.c, defines bench_call_<ID>
 * (calls/barrier.c: MPI_Barrier, the benchmark's own); bench_call_of() finds them through the
 * table, so a collective without its file does not link. The rest of pgmpi-bench never names a
 * collective. */
#ifndef PGMPI_BENCH_CALL_H
#define PGMPI_BENCH_CALL_H
#include <mpi.h>
#include <stddef.h>

#include "bench.h"

/* The arguments of one call: the benchmark's buffers, the count of cplan_t, per-rank counts
 * (count split in blocks, the first count % p ranks one more: Reduce_scatter's recvcounts). */
typedef struct {
    char *sbuf, *rbuf;
    int count;
    const int *rcounts;
    MPI_Datatype dt;
    MPI_Op op;
    int root;
    MPI_Comm comm;
} bench_args_t;

enum {
    BC_REDUCTION = 1,        /* takes an op: the send data are reduction values (bench_check.c) */
    BC_ORDERED = 2,          /* its result follows the operand order: native variants get the
                                non-commutative check (span() says which ranks' operands) */
    BC_FINGERPRINT = 4,      /* native variants get the NaN fingerprint of the algorithm that ran */
    BC_REPROMPI_WRITES = 8,  /* ReproMPI writes its buffers (--buffer-touch=reprompi) */
    BC_UNIT_P = 16,          /* the message is a multiple of p elements (n = the whole reduced vector) */
    BC_INOUT = 32,           /* one buffer: the send buffer receives on every rank but the root */
    BC_RCOUNTS = 64,         /* takes the per-rank counts (rcounts) of the installed plan */
};

typedef struct {
    unsigned flags;                 /* BC_* */
    /* sbytes, rbytes (maximum over ranks) and count for n bytes (a multiple of the unit) of elem-byte
     * elements on p ranks; returns 0 when a count the call takes does not fit an int */
    int (*plan)(cplan_t *cp, size_t elem, size_t p);
    int (*call)(const bench_args_t *a);
    /* This rank's output (bytes) into exp as the check computes it from the deterministic data of
     * bench_check.c; 0 when it has none. *in_sbuf = 1 when it lands in the send buffer. */
    size_t (*expected)(const cplan_t *cp, int r, int p, int root, char *exp, int *in_sbuf);
    /* BC_ORDERED: the ranks lo..hi whose operands rank r's output folds, in rank order; 0 when r has
     * no output */
    int (*span)(int r, int p, int root, int *lo, int *hi);
} bench_call_t;

/* kind -> its description (K_DT: NULL) */
const bench_call_t *bench_call_of(int kind);

/* bench_check.c: the check round's deterministic data, for the expected() functions */
/* exp[k] = byte first + k of rank from's send buffer, k < n; returns n */
size_t bench_expect_bytes(char *exp, int from, size_t first, size_t n);
/* element e of exp = the reduction over ranks lo..hi of their elements first + e, e < ne; returns the bytes */
size_t bench_expect_folded(char *exp, size_t ne, int lo, int hi, size_t first);

/* calls/common.c: shapes several calls share */
int bench_plan_n_n(cplan_t *cp, size_t elem, size_t p);      /* send n, receive n, count n / elem */
int bench_span_all(int r, int p, int root, int *lo, int *hi); /* every rank folds 0..p-1 */
#endif
