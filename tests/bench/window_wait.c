/* What a window's wait does to the next call, and whether the call's path changes that (issue 34: window
 * mode with a 3 ms window, pgmpi-bench 1.35-1.63x ReproMPI at 8 B while each tool against its own repeat is
 * 0.85-1.13; with a 200 us window the two agree).  Inside one mpirun, with no clock model at all: every rank
 * of one kernel reads one CLOCK_MONOTONIC (tests/bench/wtime_truth.c), so it is the exact global clock here.
 * Before measurement k the ranks agree on its start s_k = the latest of their clocks + wait(arm of k) (one
 * Allreduce, then the wait: round-time's schedule with a window's wait, so that a rank descheduled once
 * under load loses that measurement, not every window after it); then, as ReproMPI's window does, each
 * rank spins on the clock until s_k, reads the clock, calls, reads the clock.  A rank already past s_k or a
 * call ending after s_k + SHORT is invalid (ReproMPI's two flags); run-time = max end - min start.
 * Arms, interleaved measurement by measurement (blocks of one per arm, each in a random order), NREP
 * each per round:
 *   lib-L   MPI_<call> after a long wait L (a window of L)      -- with libpgmpitune preloaded, MPI_<call>
 *   pmpi-L  PMPI_<call> after L: the library not in the path      goes through it as in pgmpi-bench
 *   bench-L MPI_<call> through a function pointer with pgmpi-bench's per-measurement stores (run_phase)
 *   pages-L PMPI_<call> after reading one byte of each of 8 pages 2 MiB apart (written at start), inside the
 *           timed region: the positive control of "more distinct pages in the call's path" -- what 8 page
 *           touches cost after a long wait against after a short one
 *   lib-S, pmpi-S, bench-S, pages-S   the same after a short wait S
 * Prints per arm the median over rounds of each round's median of the valid measurements (us), the valid
 * share, and per call path the paired ratio (median over rounds) to pmpi at the same wait: if a longer path
 * costs more after a long wait only, the window's 8-byte cells measure the path, not the method.
 *   mpicc -O2 -o window_wait tests/bench/window_wait.c
 *   LD_PRELOAD=build/install/openmpi/lib/libpgmpitune.so mpirun -np 2 ./window_wait [CALL=bcast] [BYTES=8]
 *       [ROUNDS=10] [NREP=40] [LONG_US=3000] [SHORT_US=200]
 * WINDOW_WAIT_SUSPEND=1 (with PGMPITUNE_VERBOSE=1) suspends libpgmpitune's report after MPI_Init, as
 * pgmpi-bench does inside its timed loops (pgmpitune_report_suspend): then the lib and bench arms should
 * cost what they cost with the report off.
 * Give the load with every figure: a rank descheduled during a long wait makes its measurement invalid. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include "call_by_name.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { LIB, PMPI, BENCH, PAGES, NPATH };
static const char *path_name[NPATH] = {"lib", "pmpi", "bench", "pages"};
enum { NPAGES = 8, PAGE_STRIDE = 2 << 20 };   /* pages arm: 8 pages, each in its own 2 MiB (no shared huge page) */
static volatile char *g_pages;
static unsigned long long g_rng = 42;
static const char *g_call;
static char *g_s, *g_r;
static int g_n;

static double mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int call(int direct) { return call_by_name(g_call, direct, g_s, g_r, g_n); }

/* pgmpi-bench's call: through a table of function pointers (bench_call_of(kind)->call) */
typedef int (*call_fn)(int);
static call_fn volatile g_table[2] = {call, call};

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median(double *v, int n)
{
    if (n == 0) return -1;
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (getenv("WINDOW_WAIT_SUSPEND") && atoi(getenv("WINDOW_WAIT_SUSPEND"))) {
        /* looked up, not linked: the program runs without libpgmpitune too (the preload puts it there) */
        int (*suspend)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "pgmpitune_report_suspend");
        if (!suspend) {
            if (rank == 0) fprintf(stderr, "window_wait: WINDOW_WAIT_SUSPEND=1 needs libpgmpitune preloaded\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        suspend(1);
        if (rank == 0) printf("# libpgmpitune's report suspended (pgmpitune_report_suspend)\n");
    }
    g_call = argc > 1 ? argv[1] : "bcast";
    g_n = argc > 2 ? atoi(argv[2]) : 8;
    int rounds = argc > 3 ? atoi(argv[3]) : 10, nrep = argc > 4 ? atoi(argv[4]) : 40;
    double lw = (argc > 5 ? atof(argv[5]) : 3000) * 1e-6, sw = (argc > 6 ? atof(argv[6]) : 200) * 1e-6;
    int narms = 2 * NPATH, nm = narms * nrep;
    g_s = calloc((size_t)g_n, 1); g_r = calloc((size_t)g_n * (size_t)p, 1);
    memset(g_s, 1, (size_t)g_n); memset(g_r, 1, (size_t)g_n * (size_t)p);
    g_pages = malloc((size_t)NPAGES * PAGE_STRIDE);
    for (int i = 0; i < NPAGES; i++) g_pages[(size_t)i * PAGE_STRIDE] = 1;
    /* per measurement: start, -start, late (MAX-reduced: max end and min start and any late) */
    double *loc = malloc((size_t)nm * 3 * sizeof *loc), *glob = malloc((size_t)nm * 3 * sizeof *glob);
    int big = nm > rounds ? nm : rounds;
    double *el = malloc((size_t)big * sizeof *el), *stores = calloc((size_t)nm * 3, sizeof *stores);
    int *arm_of = malloc((size_t)nm * sizeof *arm_of);
    double *per = malloc((size_t)rounds * narms * sizeof *per), *valid = calloc((size_t)narms, sizeof *valid);
    double *tmp = malloc((size_t)big * sizeof *tmp);
    for (int r = 0; r < rounds; r++) {
        /* blocks of one measurement per arm, each block in a new random order (the same on every rank):
         * no arm always follows the same arm (what the previous measurement waited matters) */
        for (int b = 0; b < nrep; b++) {
            int *blk = arm_of + b * narms;
            for (int a = 0; a < narms; a++) blk[a] = a;
            for (int a = narms - 1; a > 0; a--) {
                g_rng = g_rng * 6364136223846793005ULL + 1442695040888963407ULL;
                int q = (int)((g_rng >> 33) % (unsigned long long)(a + 1)), t = blk[a];
                blk[a] = blk[q]; blk[q] = t;
            }
        }
        for (int k = 0; k < nm; k++) {
            int a = arm_of[k], path = a % NPATH, lng = a < NPATH;
            double mine = mono() + (lng ? lw : sw), s;
            PMPI_Allreduce(&mine, &s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            int late = mono() >= s;
            while (mono() < s) { }
            double x0 = mono();            /* Open MPI's MPI_Wtime is this clock minus an origin */
            if (path == BENCH) g_table[k & 1](0);
            else if (path == PAGES) {
                for (int i = 0; i < NPAGES; i++) (void)g_pages[(size_t)i * PAGE_STRIDE];
                call(1);
            } else call(path == PMPI);
            double x1 = mono();
            if (path == BENCH) { stores[3 * k] = x1; stores[3 * k + 1] = -x0; stores[3 * k + 2] = late; }
            loc[k] = x1; loc[nm + k] = -x0; loc[2 * nm + k] = late || x1 > s + sw;
        }
        PMPI_Allreduce(loc, glob, 3 * nm, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        for (int a = 0; a < narms; a++) {
            int n = 0;
            for (int k = 0; k < nm; k++)
                if (arm_of[k] == a && glob[2 * nm + k] == 0) tmp[n++] = glob[k] + glob[nm + k];
            valid[a] += (double)n / (rounds * (double)nrep);
            per[r * narms + a] = median(tmp, n);
        }
    }
    if (rank == 0) {
        printf("# window_wait %s %d B, %d ranks, %d rounds x %d per arm, long %.0f us, short %.0f us\n", g_call,
               g_n, p, rounds, nrep, lw * 1e6, sw * 1e6);
        printf("%-8s %10s %7s %22s\n", "arm", "median_us", "valid%", "paired/pmpi [range]");
        fflush(stdout);
        for (int a = 0; a < narms; a++) {
            int path = a % NPATH, base = (a / NPATH) * NPATH + PMPI, n = 0, m = 0;
            double lo = 1e9, hi = 0;
            for (int r = 0; r < rounds; r++) {
                double x = per[r * narms + a], y = per[r * narms + base];
                if (x > 0) el[m++] = x;
                if (x > 0 && y > 0) { tmp[n] = x / y; if (tmp[n] < lo) lo = tmp[n]; if (tmp[n] > hi) hi = tmp[n]; n++; }
            }
            double ratio = n ? median(tmp, n) : -1;
            printf("%-5s-%-2s %10.3f %7.1f %10.2f [%.2f-%.2f]\n", path_name[path], a < NPATH ? "L" : "S",
                   m ? median(el, m) * 1e6 : -1.0, 100 * valid[a], ratio, n ? lo : 0, n ? hi : 0);
        }
    }
    MPI_Finalize();
    return 0;
}
