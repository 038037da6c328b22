/* One collective by name (allreduce, allgather, else bcast) on MPI_COMM_WORLD in bytes, through MPI_
 * (whatever is preloaded: libpgmpitune's path) or straight to PMPI_: the call the standalone bench programs
 * (loop_features.c, window_wait.c) time. */
#ifndef PGMPI_BENCH_CALL_BY_NAME_H
#define PGMPI_BENCH_CALL_BY_NAME_H
#include <mpi.h>
#include <string.h>

static inline int call_by_name(const char *name, int direct, void *s, void *r, int n)
{
    if (!strcmp(name, "allreduce"))
        return direct ? PMPI_Allreduce(s, r, n, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD)
                      : MPI_Allreduce(s, r, n, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD);
    if (!strcmp(name, "allgather"))
        return direct ? PMPI_Allgather(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD)
                      : MPI_Allgather(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD);
    return direct ? PMPI_Bcast(s, n, MPI_BYTE, 0, MPI_COMM_WORLD) : MPI_Bcast(s, n, MPI_BYTE, 0, MPI_COMM_WORLD);
}
#endif
