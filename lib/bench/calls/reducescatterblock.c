/* pgmpi-bench's MPI_Reduce_scatter_block (bench_call.h): n is the whole reduced vector; rank r gets
 * its block r of count elements. */
#include "bench_call.h"

static int plan(cplan_t *cp, size_t elem, size_t p)
{
    cp->count = cp->n / elem / p; cp->sbytes = cp->n; cp->rbytes = cp->count * elem;
    return 1;
}

static int call(const bench_args_t *a)
{
    return MPI_Reduce_scatter_block(a->sbuf, a->rbuf, a->count, a->dt, a->op, a->comm);
}

static size_t expected(const cplan_t *cp, int r, int p, int root, char *exp, int *in_sbuf)
{
    (void)root; *in_sbuf = 0;
    return bench_expect_folded(exp, cp->count, 0, p - 1, (size_t)r * cp->count);
}

const bench_call_t bench_call_REDUCE_SCATTER_BLOCK = {BC_REDUCTION | BC_UNIT_P, plan, call, expected, NULL};
