/* pgmpi-bench's MPI_Scan (bench_call.h): rank r gets the reduction over ranks 0..r. */
#include "bench_call.h"

static int call(const bench_args_t *a)
{
    return MPI_Scan(a->sbuf, a->rbuf, a->count, a->dt, a->op, a->comm);
}

static int span(int r, int p, int root, int *lo, int *hi)
{
    (void)p; (void)root;
    *lo = 0; *hi = r;
    return 1;
}

static size_t expected(const cplan_t *cp, int r, int p, int root, char *exp, int *in_sbuf)
{
    (void)p; (void)root; *in_sbuf = 0;
    return bench_expect_folded(exp, cp->count, 0, r, 0);
}

const bench_call_t bench_call_SCAN = {BC_REDUCTION | BC_ORDERED | BC_REPROMPI_WRITES, bench_plan_n_n, call,
                                      expected, span};
