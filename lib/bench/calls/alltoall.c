/* pgmpi-bench's MPI_Alltoall (bench_call.h): block r of rank q's send buffer to block q of rank r. */
#include "bench_call.h"

static int plan(cplan_t *cp, size_t elem, size_t p)
{
    cp->sbytes = cp->n * p; cp->rbytes = cp->n * p; cp->count = cp->n / elem;
    return 1;
}

static int call(const bench_args_t *a)
{
    return MPI_Alltoall(a->sbuf, a->count, a->dt, a->rbuf, a->count, a->dt, a->comm);
}

static size_t expected(const cplan_t *cp, int r, int p, int root, char *exp, int *in_sbuf)
{
    (void)root; *in_sbuf = 0;
    for (int q = 0; q < p; q++) bench_expect_bytes(exp + (size_t)q * cp->n, q, (size_t)r * cp->n, cp->n);
    return cp->n * (size_t)p;
}

const bench_call_t bench_call_ALLTOALL = {0, plan, call, expected, NULL};
