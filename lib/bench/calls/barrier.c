/* pgmpi-bench's MPI_Barrier (bench_call.h): the benchmark's own call (not dispatched by the library);
 * no data, its rows carry the requested size. */
#include "bench_call.h"

static int plan(cplan_t *cp, size_t elem, size_t p)
{
    (void)cp; (void)elem; (void)p;
    return 1;
}

static int call(const bench_args_t *a) { return MPI_Barrier(a->comm); }

static size_t expected(const cplan_t *cp, int r, int p, int root, char *exp, int *in_sbuf)
{
    (void)cp; (void)r; (void)p; (void)root; (void)exp; *in_sbuf = 0;
    return 0;
}

const bench_call_t bench_call_BARRIER = {BC_REPROMPI_WRITES, plan, call, expected, NULL};
