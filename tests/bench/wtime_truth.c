/* LD_PRELOAD shim for tests/bench/reprompi_compare.py (the `clock` control of window and round-time):
 * the true offset between the ranks' MPI_Wtime clocks, against which both tools' fitted global clocks are
 * judged.  Ranks that share one kernel and one time namespace read the same CLOCK_MONOTONIC, and MPI_Wtime
 * is that clock minus a per-process origin (Open MPI 4.1: ompi_wtime_time_origin; constant to 0.1 us over
 * a run here), so rank r's MPI_Wtime - CLOCK_MONOTONIC is a constant d_r and rank 0's clock is rank r's
 * plus d_0 - d_r: exact, with no message between the ranks.  That holds on one node and on the virtual
 * cluster's nodes (deploy/cluster.sh: network, UTS and mount namespaces on this one kernel, no time
 * namespace); it does not hold on two real machines.  So each rank also reports what makes the clock one:
 * the kernel's boot_id and its time namespace (the only thing that offsets CLOCK_MONOTONIC within a
 * kernel), and its host name (which node it ran on); the reader (reprompi_compare.true_offsets) refuses
 * the offsets of a rank whose boot_id or time namespace differs from rank 0's.
 * At MPI_Finalize each rank takes d_r from the tightest of 50 bracketed reads and rank 0 writes
 * "rank d_r boot_id timens host" lines to $WTIME_TRUTH_FILE.
 * The mpirun's level (the `levels` verdict of reprompi_compare.py): some mpiruns of this VM run every small
 * call 2x slower than others, barriers included, whichever tool runs (the level flips every 0.3-6 s,
 * tests/bench/level_watch.c, so the probe says where the mpirun was at its end); so before those lines
 * the ranks time PROBE_N back-to-back PMPI_Barrier calls after PROBE_WARM unrecorded ones, and rank 0 writes
 * "probe <median seconds of its barrier calls>": the same probe in every mpirun of both tools, after the
 * tool's own work, whose figure does not come from the cell it classifies.  Only MPI_Finalize is wrapped (chained with
 * dlsym, so libpgmpitune's own wrapper still runs): nothing is added to a measurement.
 *   mpicc -O2 -shared -fPIC -o libwtime_truth.so tests/bench/wtime_truth.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock_identity.h"

enum { REC = 256 };    /* one rank's record: "d boot_id timens host" */
enum { PROBE_WARM = 100, PROBE_N = 1000 };

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median duration of PROBE_N back-to-back barriers on this rank (seconds). */
static double barrier_probe(void)
{
    static double t[PROBE_N];
    for (int i = 0; i < PROBE_WARM; i++) PMPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < PROBE_N; i++) {
        double t0 = PMPI_Wtime();
        PMPI_Barrier(MPI_COMM_WORLD);
        t[i] = PMPI_Wtime() - t0;
    }
    qsort(t, PROBE_N, sizeof t[0], cmp_double);
    return t[PROBE_N / 2];
}

static double mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}


int MPI_Finalize(void)
{
    int (*next)(void) = (int (*)(void))dlsym(RTLD_NEXT, "MPI_Finalize");
    const char *path = getenv("WTIME_TRUTH_FILE");
    if (path && *path) {
        double probe = barrier_probe();
        double best = 1e9, d = 0;
        for (int i = 0; i < 50; i++) {
            double m0 = mono(), w = PMPI_Wtime(), m1 = mono();
            if (m1 - m0 < best) { best = m1 - m0; d = w - 0.5 * (m0 + m1); }
        }
        char who[160], rec[REC];
        clock_identity_text(who, sizeof who);
        memset(rec, 0, sizeof rec);
        snprintf(rec, sizeof rec, "%.9f %s", d, who);
        int rank = 0, size = 1;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        PMPI_Comm_size(MPI_COMM_WORLD, &size);
        char *all = rank == 0 ? malloc((size_t)size * REC) : NULL;
        PMPI_Gather(rec, REC, MPI_CHAR, all, REC, MPI_CHAR, 0, MPI_COMM_WORLD);
        if (rank == 0 && all) {
            FILE *f = fopen(path, "w");
            if (f) {
                fprintf(f, "probe %.9e\n", probe);
                for (int r = 0; r < size; r++) fprintf(f, "%d %.*s\n", r, REC, all + (size_t)r * REC);
                fclose(f);
            }
        }
        free(all);
    }
    return next ? next() : PMPI_Finalize();
}
