/* pgmpi-bench's MPI_Reduce (bench_call.h): the reduction lands at the root. */
#include "bench_call.h"

static int call(const bench_args_t *a)
{
    return MPI_Reduce(a->sbuf, a->rbuf, a->count, a->dt, a->op, a->root, a->comm);
}

static int span(int r, int p, int root, int *lo, int *hi)
{
    *lo = 0; *hi = p - 1;
    return r == root;
}

static size_t expected(const cplan_t *cp, int r, int p, int root, char *exp, int *in_sbuf)
{
    *in_sbuf = 0;
    return r == root ? bench_expect_folded(exp, cp->count, 0, p - 1, 0) : 0;
}

const bench_call_t bench_call_REDUCE = {BC_REDUCTION | BC_ORDERED | BC_FINGERPRINT | BC_REPROMPI_WRITES,
                                        bench_plan_n_n, call, expected, span};
