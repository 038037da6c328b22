/* pgmpi-bench -- reproducible run-time measurements of the MPI collectives that libpgmpitune
 * dispatches, of their mock-ups, and of MPI_Barrier, in ReproMPI's raw text format
 * (see --help and lib/bench/README.md).
 *
 * Method (ReproMPI / PGMPI / PGMPITuneLib papers):
 *  - before every single measurement the processes synchronise with a dissemination barrier
 *    (--proc-sync= chooses: dissem, mpi_barrier, window, roundtime); each rank times the call with MPI_Wtime;
 *  - the run-time of a measurement is the MAXIMUM over ranks of the local times (window and
 *    round-time: max global end - min global start on the clock of bench_clock.c).  Local times are
 *    collected in memory and reduced with one PMPI_Allreduce(MAX) per batch of rounds, outside
 *    every timed region: the values are exactly the per-measurement maxima of the datatype paper
 *    (sect. 2.3), no reduction runs between two measurements, and all ranks see the global
 *    run-times, which the NREP stopping rules need to stop on every rank at the same repetition;
 *  - one (call, size) cell at a time (--interleave=size: every call of a size); the algorithms of a
 *    cell are interleaved: every round measures each still active algorithm once, in a seeded
 *    random order (or a rotating round-robin), all on the same buffers;
 *  - before a cell is timed, a check round runs each algorithm once and compares its result
 *    (bench_check.c); one that fails is not timed;
 *  - repetitions: fixed nrep, a time budget per (call, size), NREP prediction with the RSE /
 *    COV-of-means / COV-of-medians rules of the PGMPI paper (combinable: stop when all pass), or
 *    the time-based rule of the PGMPITuneLib paper (t_nrep1 at 1 byte, batches b1/b2, bound K).
 * All internal communication uses PMPI_ so it neither goes through libpgmpitune's dispatch nor
 * shows up in its #@pgmpi report.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pgmpitune.h"
#include "bench.h"

static void pool_and_nrep_checks(void)
{
    check_pools();
    check_nrep_from();
}

int main(int argc, char **argv)
{
    g_print = rank_guess_before_init() == 0;
    parse_args(argc, argv);
    reserve_pools();
    time_t start_wall = bench_mpi_init(&argc, &argv);
    if (O.list_native) {
        if (g_rank == 0) native_print_listing(stdout);
        fflush(stdout);
        native_finish();
        int fd = open("/dev/null", O_WRONLY);   /* keep the library's report out of the listing */
        if (fd >= 0) { dup2(fd, 1); close(fd); }
        MPI_Finalize();
        return 0;
    }
    if (O.root >= g_size) die_usage("--root=%d but there are only %d ranks", O.root, g_size);
    layout_t L = layout();
    /* Node-aware mock-ups fall back on one node: their rows would carry the default's timings under
     * their names. Not measured there (named in the header). */
    if (L.nodes == 1)
        for (int i = 0; i < O.ncalls; i++) {
            call_t *c = &O.calls[i];
            int k = 0;
            for (int a = 0; a < c->nalg; a++) {
                if (c->alg[a] != ALG_TUNED && c->coll >= 0 && pgmpitune_algorithm_node_aware(c->coll, c->alg[a])) {
                    size_t o = strlen(L.skipped);
                    snprintf(L.skipped + o, sizeof L.skipped - o, "%s%s", o ? "," : "",
                             pgmpitune_algorithm_name(c->coll, c->alg[a]));
                    continue;
                }
                c->alg[k++] = c->alg[a];
            }
            c->nalg = k;
        }
    /* ---- after bench_start: MPI communication (all checks passed) */
    unsigned long long seed;
    int rc = bench_start(pool_and_nrep_checks, &seed);
    if (rc >= 0) return rc;
    {   /* a launcher that did not make the requested layout is an error of this run, not a relabel */
        char why[1024] = "";
        unsigned long long bad = g_rank == 0 ? (unsigned long long)layout_mismatch(&L, why, sizeof why) : 0;
        share_from_rank0(&bad, 1);
        if (bad) {
            if (g_rank == 0) fprintf(stderr, "pgmpi-bench: error: layout: %s\n", why);
            bench_quiet_finalize();
            return 3;
        }
    }
    g_dt = dtype_handle(O.dt);
    g_op = op_handle(O.op);
    { int sz; MPI_Type_size(g_dt, &sz);
      if ((size_t)sz != dtypes[O.dt].size) { if (!g_rank) fprintf(stderr, "pgmpi-bench: error: %s has %d bytes here, expected %zu\n", dtypes[O.dt].name, sz, dtypes[O.dt].size); MPI_Abort(MPI_COMM_WORLD, 1); } }
    alloc_buffers();
    native_setup();
    if (g_rank == 0) write_header(argc, argv, start_wall, seed, &L);
    if (O.serve) serve_all();
    else measure_all();
    native_finish();
    write_footer(start_wall);
    finish_output();
    free_buffers();
    return 0;
}
