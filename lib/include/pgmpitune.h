/* libpgmpitune public API (for pgmpi-bench and tools; applications need none of it:
 * they call MPI as usual and get tuned through PMPI interposition). */
#ifndef PGMPITUNE_H
#define PGMPITUNE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

int         pgmpitune_ncollectives(void);
const char *pgmpitune_collective_key(int c);        /* "allreduce" */
const char *pgmpitune_collective_mpi_name(int c);   /* "MPI_Allreduce" */
int         pgmpitune_collective_lookup(const char *key_or_mpi_name); /* -1 if unknown */
int         pgmpitune_nalgorithms(int c);           /* including "default" at index 0 */
const char *pgmpitune_algorithm_name(int c, int a);
int         pgmpitune_algorithm_lookup(int c, const char *name);      /* -1 if unknown */
/* Memory (bytes) algorithm a needs at most on any rank for n message bytes, p ranks. */
size_t      pgmpitune_algorithm_memory(int c, int a, size_t n_bytes, size_t elem_bytes, int p);

/* Benchmark mode: force algorithm a (0 = default) for collective c in this process,
 * overriding profiles. Returns 0, or -1 for an invalid c/a. Call after MPI_Init. */
int         pgmpitune_force(int c, int a);

#ifdef __cplusplus
}
#endif
#endif
