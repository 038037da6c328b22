/* libpgmpitune public API (for pgmpi-bench and tools; applications need none of it:
 * they call MPI as usual and get tuned through PMPI interposition). */
#ifndef PGMPITUNE_H
#define PGMPITUNE_H

#include <mpi.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

int         pgmpitune_ncollectives(void);
const char *pgmpitune_collective_key(int c);        /* "allreduce" */
const char *pgmpitune_collective_mpi_name(int c);   /* "MPI_Allreduce" */
const char *pgmpitune_collective_size_rule(int c);  /* "BLOCK" or "VECTOR" (collectives.def) */
/* Our key, the MPI name or PGMPITuneLib's CLI prefix, case-insensitive; -1 if unknown. */
int         pgmpitune_collective_lookup(const char *key_or_mpi_name);
int         pgmpitune_nalgorithms(int c);           /* including "default" at index 0 */
const char *pgmpitune_algorithm_name(int c, int a);
int         pgmpitune_algorithm_lookup(int c, const char *name);      /* -1 if unknown */
/* 1 when algorithm a decomposes by nodes: on a communicator of one node it falls back to the default. */
int         pgmpitune_algorithm_node_aware(int c, int a);
/* Memory (bytes) algorithm a needs at most on any rank for n message bytes, p ranks:
 * message pool + int pool, and each pool separately. */
size_t      pgmpitune_algorithm_memory(int c, int a, size_t n_bytes, size_t elem_bytes, int p);
size_t      pgmpitune_algorithm_msg_memory(int c, int a, size_t n_bytes, size_t elem_bytes, int p);
size_t      pgmpitune_algorithm_int_memory(int c, int a, size_t n_bytes, size_t elem_bytes, int p);

/* Benchmark mode: force algorithm a (0 = default) for collective c in this process,
 * overriding profiles. Returns 0, or -1 for an invalid c/a. Call after MPI_Init, on every rank
 * alike, while no collective of this process is running. No effect with PGMPITUNE_DISABLE. */
int         pgmpitune_force(int c, int a);
/* Undo pgmpitune_force / --module for c: back to the profiles (or the default). */
int         pgmpitune_unforce(int c);
/* Algorithm the library would select for c, n bytes, p ranks now (before pool/fallback checks). */
int         pgmpitune_selected(int c, size_t n_bytes, int p);
/* Usable pool capacity in bytes (0 = message pool, 1 = int pool), agreed over all ranks. */
size_t      pgmpitune_pool_bytes(int which);

/* Writes the #@pgmpi report (config lines, then alg/count/fallback lines) to out on rank 0 of
 * MPI_COMM_WORLD; no-op elsewhere. With PGMPITUNE_VERBOSE=1 the library prints it to stdout at
 * MPI_Finalize itself; alg/count lines exist only with PGMPITUNE_VERBOSE=1, and they count the calls
 * made while the report was not suspended. */
void        pgmpitune_report(FILE *out);
/* Benchmark mode: suspend (1) or resume (0) the report's accounting in this process. While suspended
 * the wrapped calls take the path they take with the report off, as in an application (a call of the
 * default asks MPI for nothing, no call is counted); what was counted stays, and the report is still
 * printed at MPI_Finalize. Returns the previous state. Call on every rank alike, while no collective
 * of this process is running (as pgmpitune_force). */
int         pgmpitune_report_suspend(int suspend);

/* Layout signature of a datatype (lib/docs/profile-format.md, "Datatype profiles"): 16 lowercase hex
 * digits of FNV-1a 64 over "v1;<base>;<extent>;<disp>+<len>,..." for `count` consecutive elements (1: the
 * type's own signature, cached per committed handle; c: that of contiguous(c, t), the whole message).
 * hex gets 17 bytes; text, when not NULL, the canonical text (truncated to cap). 0, or -1 when the
 * type cannot be flattened. Needs MPI_Init. */
int         pgmpitune_type_signature(MPI_Datatype t, int count, char hex[17], char *text, size_t cap);
/* The description this process communicates t with in the wrapped calls (a datatype profile's GL4
 * replacement, made at MPI_Type_commit), or NULL when it uses t itself. */
const char *pgmpitune_type_replacement(MPI_Datatype t);

/* Validates profile files and directories (*.prf and *.dtprf) exactly as the library reads them at
 * MPI_Init (same parser). Messages "path:line: ..." go to out (notes too when verbose). Returns the
 * number of errors (0 = all valid). Needs no MPI_Init. */
int         pgmpitune_check_paths(int npaths, const char *const *paths, FILE *out, int verbose);

#ifdef __cplusplus
}
#endif
#endif
