/* pgmpi-bench's MPI_Bcast (bench_call.h): the root's n bytes land in every rank's one buffer. */
#include "bench_call.h"

static int plan(cplan_t *cp, size_t elem, size_t p)
{
    (void)p;
    cp->sbytes = cp->n; cp->rbytes = 0; cp->count = cp->n / elem;
    return 1;
}

static int call(const bench_args_t *a)
{
    return MPI_Bcast(a->sbuf, a->count, a->dt, a->root, a->comm);
}

static size_t expected(const cplan_t *cp, int r, int p, int root, char *exp, int *in_sbuf)
{
    (void)r; (void)p; *in_sbuf = 1;
    return bench_expect_bytes(exp, root, 0, cp->n);
}

const bench_call_t bench_call_BCAST = {BC_REPROMPI_WRITES | BC_INOUT, plan, call, expected, NULL};
