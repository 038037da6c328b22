/* Test-only LD_PRELOAD for MPICH runs with more ranks than cores.
 *
 * MPICH 4.0.2 (ch4:ucx, Debian 12) and 5.0.2 (ch4:ucx+ofi from the Python registry, UCX by default) busy-poll
 * and have no setting that yields (MPIR_CVAR_POLLS_BEFORE_YIELD belongs to ch3): with 4 to 8 ranks on 2 cores a waiting rank keeps its core for a whole time slice, and
 * one MPI_Allreduce takes 6-30 ms instead of microseconds. This wrapper gives the core away when a poll of
 * UCX found nothing to do -- what Open MPI does by itself under --oversubscribe (mpi_yield_when_idle).
 * It changes when ranks are scheduled, never what MPICH or libpgmpitune compute: every message still goes
 * through MPICH's own progress engine. Used by the C tests at p > 2 (tests/c/CMakeLists.txt) and by
 * tests/cluster/node-matrix.sh; never part of the product. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

typedef unsigned (*progress_fn)(void *worker);

unsigned ucp_worker_progress(void *worker)
{
    static progress_fn real;
    if (!real) {
        real = (progress_fn)dlsym(RTLD_NEXT, "ucp_worker_progress");
        if (!real) {
            fprintf(stderr, "yield_when_idle: ucp_worker_progress not found after this library\n");
            abort();
        }
    }
    unsigned events = real(worker);
    if (events == 0) sched_yield();
    return events;
}
