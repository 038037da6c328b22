/* pgmpi-bench's MPI_Scatter (bench_call.h): block r of the root's send buffer to rank r. */
#include "bench_call.h"

static int plan(cplan_t *cp, size_t elem, size_t p)
{
    cp->sbytes = cp->n * p; cp->rbytes = cp->n; cp->count = cp->n / elem;
    return 1;
}

static int call(const bench_args_t *a)
{
    return MPI_Scatter(a->sbuf, a->count, a->dt, a->rbuf, a->count, a->dt, a->root, a->comm);
}

static size_t expected(const cplan_t *cp, int r, int p, int root, char *exp, int *in_sbuf)
{
    (void)p; *in_sbuf = 0;
    return bench_expect_bytes(exp, root, (size_t)r * cp->n, cp->n);
}

const bench_call_t bench_call_SCATTER = {0, plan, call, expected, NULL};
