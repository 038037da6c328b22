/* pgmpi-bench's MPI_Allreduce (bench_call.h). */
#include "bench_call.h"

static int call(const bench_args_t *a)
{
    return MPI_Allreduce(a->sbuf, a->rbuf, a->count, a->dt, a->op, a->comm);
}

static size_t expected(const cplan_t *cp, int r, int p, int root, char *exp, int *in_sbuf)
{
    (void)r; (void)root; *in_sbuf = 0;
    return bench_expect_folded(exp, cp->count, 0, p - 1, 0);
}

const bench_call_t bench_call_ALLREDUCE = {BC_REDUCTION | BC_ORDERED | BC_FINGERPRINT | BC_REPROMPI_WRITES,
                                           bench_plan_n_n, call, expected, bench_span_all};
