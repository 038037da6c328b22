/* Shapes several calls of lib/bench/calls/ share (bench_call.h). */
#include "bench_call.h"

int bench_plan_n_n(cplan_t *cp, size_t elem, size_t p)
{
    (void)p;
    cp->sbytes = cp->n; cp->rbytes = cp->n; cp->count = cp->n / elem;
    return 1;
}

int bench_span_all(int r, int p, int root, int *lo, int *hi)
{
    (void)r; (void)root;
    *lo = 0; *hi = p - 1;
    return 1;
}

/* kind -> its description: the collectives of collectives.def in their order, then MPI_Barrier */
#define PGMPI_COLLECTIVE(ID, key, mpi_name, rule) extern const bench_call_t bench_call_##ID;
#include "collectives.def"
#undef PGMPI_COLLECTIVE
extern const bench_call_t bench_call_BARRIER;

static const bench_call_t *const calls[K_UNKNOWN] = {
#define PGMPI_COLLECTIVE(ID, key, mpi_name, rule) [K_##ID] = &bench_call_##ID,
#include "collectives.def"
#undef PGMPI_COLLECTIVE
    [K_BARRIER] = &bench_call_BARRIER,
};

const bench_call_t *bench_call_of(int kind)
{
    return kind >= 0 && kind < K_UNKNOWN ? calls[kind] : NULL;
}
