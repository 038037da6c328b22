/* pgmpi-bench's MPI_Reduce_scatter (bench_call.h): n is the whole reduced vector of count elements,
 * dealt out in blocks (recvcounts: the first count % p ranks one more). */
#include <limits.h>

#include "bench_call.h"

static int plan(cplan_t *cp, size_t elem, size_t p)
{
    size_t blk = (cp->n / elem + p - 1) / p;
    cp->count = cp->n / elem; cp->sbytes = cp->n; cp->rbytes = blk * elem;
    return blk <= INT_MAX;
}

static int call(const bench_args_t *a)
{
    return MPI_Reduce_scatter(a->sbuf, a->rbuf, a->rcounts, a->dt, a->op, a->comm);
}

static size_t expected(const cplan_t *cp, int r, int p, int root, char *exp, int *in_sbuf)
{
    (void)root; *in_sbuf = 0;
    size_t q = cp->count / (size_t)p, rem = cp->count % (size_t)p, off = 0;
    for (int i = 0; i < r; i++) off += q + ((size_t)i < rem ? 1 : 0);
    return bench_expect_folded(exp, q + ((size_t)r < rem ? 1 : 0), 0, p - 1, off);
}

const bench_call_t bench_call_REDUCE_SCATTER = {BC_REDUCTION | BC_RCOUNTS, plan, call, expected, NULL};
