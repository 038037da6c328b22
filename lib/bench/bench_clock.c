/* pgmpi-bench: the synchronised global clock and the two clock-based process synchronisations
 * (--proc-sync=window, --proc-sync=roundtime; lib/bench/README.md, "Synchronisation").
 *
 * Clock model (HCA's offsets, as ReproMPI's --clock-sync=HCA writes it: #@clocksync=HCA3O, no drift):
 * every rank r > 0 estimates the offset of rank 0's clock against its own at several moments ("fit
 * points"); each fit point is the ping-pong with the smallest round trip among `exchanges` (the offset of
 * that exchange is rank 0's time minus the midpoint of r's send and receive times).  The model is
 *     global(t) = t + a,   a = the median offset of the fit points
 * Rules:
 *   1. Rank 0 is the reference: its a = 0.
 *   2. The ranks are fitted one after the other against rank 0 (HCA merges models along a tree in
 *      log2(p) rounds; at the few ranks measured here the flat order costs (p-1) x fitpoints x exchanges
 *      round trips, a few milliseconds, and has no error propagation).
 *   3. No slope (HCA's line, t + a + b t, was fitted here until 2026-11-26): the fit points span about a
 *      millisecond, over which a real drift of 10 ppm moves the offset by 10 ns, below the 20-50 ns noise
 *      of one fit point, so a fitted slope is noise; the old rule kept one when it passed 2 standard errors,
 *      which noise does in about 1 fit of 20, and extrapolated over the cell it put the model 1-157 us
 *      off in 4 of 96 cells on one node, each with a kept slope (the true offset from one CLOCK_MONOTONIC,
 *      tests/bench/wtime_truth.c; ReproMPI's offsets stayed within 0.09 us).  A median (one ping-pong
 *      delayed by a descheduled rank moves a mean, not a median).  Real drift across nodes builds up only
 *      inside a cell: rule 4 bounds it and clock_check shows it.
 *   5. No rank waits longer than its window (or margin) plus WAIT_SLACK_SEC for a start: beyond that the
 *      model is wrong, and the measurement is invalid rather than the run hung.
 *   4. The model is fitted again before every cell (measure_cells), so it never extrapolates further than
 *      one cell's measurements; after the cell one more fit point checks it (clock_check: the largest
 *      difference over ranks between the model and a fresh offset, written to the footer).
 * Window (ReproMPI's --proc-sync=window): before a batch of measurements the ranks agree on a start time
 * T0 (the latest of their global clocks plus the wait time); measurement k starts on every rank when its
 * global clock reaches T0 + k * window.  A rank that reaches a window after its start is late: the
 * measurement is invalid (ReproMPI's errorcode) and dropped; so is one that ends after its window.
 * Round-time (ReproMPI 1.1's --proc-sync=roundtime): before every measurement the ranks agree on a start
 * time (the latest of their global clocks plus margin = multiplier x the agreement's own run-time, measured
 * once); each waits for it on its global clock; a rank already past it is late and the measurement invalid.
 * The agreement is an MPI_Allreduce(MAX), not ReproMPI's barrier + Bcast from rank 0: one-way messages change
 * the state of Open MPI's shared-memory queues (share_from_rank0 in bench_measure.c).
 * Run-time of a measurement under both: max over ranks of global end - min over ranks of global start.
 * --start-agreement=reprompi (a control for the comparison with ReproMPI, tests/bench/reprompi_compare.py,
 * not a method of its own): the same start times, agreed with ReproMPI's messages instead -- window: rank 0's
 * T0 by MPI_Bcast; round-time: MPI_Barrier, rank 0's start down a binomial tree of sends, after every
 * measurement an exchange of the two flags (late, out of time) by Sendrecv rounds, and the margin =
 * multiplier x the largest over ranks of the mean of 10 (barrier, tree) times.  One-way messages change
 * the state of Open MPI's shared-memory queues (share_from_rank0), which is what the control measures. */
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

static double g_a;                   /* this rank's model: global(t) = t + a (rule 3) */
static double g_T0;                  /* window: start of the batch's first window (global seconds) */
static double g_margin = -1;         /* round-time: the agreement's margin, seconds */
static long g_fits;                  /* models fitted in this run */
static int g_yield = -1;             /* 1: more ranks on this node than its cores (wait_until) */

double global_time(double local) { return local + g_a; }

enum { TAG_PING = 0x5048, TAG_PONG = 0x5049, TAG_START = 0x504a, TAG_FLAGS = 0x504b };
/* The longest a rank waits for a start beyond the window or margin: past it the model is wrong, the
 * measurement is invalid and the rank goes on (the others may be inside the call already). */
#define WAIT_SLACK_SEC 1.0

/* One fit point of rank r against rank 0: (local midpoint, offset) of the fastest of n exchanges.
 * Rank 0 answers each ping with its own clock. */
static void fit_point(int r, int n, double *x, double *off)
{
    double best_rtt = INFINITY;
    for (int e = 0; e < n; e++) {
        double t;
        if (g_rank == 0) {
            PMPI_Recv(&t, 1, MPI_DOUBLE, r, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            t = MPI_Wtime();
            PMPI_Send(&t, 1, MPI_DOUBLE, r, TAG_PONG, MPI_COMM_WORLD);
        } else {
            double ts = MPI_Wtime(), tr, tref;
            PMPI_Send(&ts, 1, MPI_DOUBLE, 0, TAG_PING, MPI_COMM_WORLD);
            PMPI_Recv(&tref, 1, MPI_DOUBLE, 0, TAG_PONG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            tr = MPI_Wtime();
            if (tr - ts < best_rtt) { best_rtt = tr - ts; *x = 0.5 * (ts + tr); *off = tref - *x; }
        }
    }
}

static int cmp_double(const void *p, const void *q)
{
    double a = *(const double *)p, b = *(const double *)q;
    return (a > b) - (a < b);
}

/* Rule 3: the median offset of the fit points. */
static double median_offset(const double *y, int n)
{
    double *ys = malloc((size_t)n * sizeof *ys);
    if (!ys) { fprintf(stderr, "pgmpi-bench: error: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    memcpy(ys, y, (size_t)n * sizeof *ys);
    qsort(ys, (size_t)n, sizeof *ys, cmp_double);
    double a = n % 2 ? ys[n / 2] : 0.5 * (ys[n / 2 - 1] + ys[n / 2]);
    free(ys);
    return a;
}

void clock_sync(void)
{
    int nf = (int)O.fitpoints, ne = (int)O.exchanges;
    double *x = malloc((size_t)nf * sizeof *x), *y = malloc((size_t)nf * sizeof *y);
    if (!x || !y) { fprintf(stderr, "pgmpi-bench: error: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    g_a = 0;
    PMPI_Barrier(MPI_COMM_WORLD);
    for (int r = 1; r < g_size; r++) {
        if (g_rank != 0 && g_rank != r) continue;
        for (int f = 0; f < nf; f++) fit_point(r, ne, &x[f], &y[f]);
        if (g_rank == r) g_a = median_offset(y, nf);
    }
    PMPI_Barrier(MPI_COMM_WORLD);
    free(x); free(y);
    g_fits++;
}

/* The model against one fresh fit point per rank: the largest |model - measured offset| over ranks.
 * Also gathers every rank's model offset (global - local at the check) for clock_footer: on one node a
 * control that knows the true offset (tests/bench/wtime_truth.c) turns it into the model's error. */
static double *g_offsets;            /* the model offsets of ranks 0..p-1 at the last check */
double clock_check(void)
{
    double err = 0, gerr = 0, off_now = 0;
    for (int r = 1; r < g_size; r++) {
        if (g_rank != 0 && g_rank != r) continue;
        double x = 0, off = 0;
        fit_point(r, (int)O.exchanges, &x, &off);
        if (g_rank == r) { err = fabs(g_a - off); off_now = g_a; }
    }
    PMPI_Allreduce(&err, &gerr, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    /* a SUM over each rank's own slot, not a Gather: no one-way message (share_from_rank0, bench_measure.c) */
    double *mine = calloc((size_t)g_size, sizeof *mine);
    if (!g_offsets) g_offsets = calloc((size_t)g_size, sizeof *g_offsets);
    if (!mine || !g_offsets) { fprintf(stderr, "pgmpi-bench: error: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    mine[g_rank] = off_now;
    PMPI_Allreduce(mine, g_offsets, g_size, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    free(mine);
    return gerr;
}

/* "# clockmodel <MPI_Name> <bytes> <offset of rank 1> ... <offset of rank p-1>" (seconds, global - local
 * after the cell): a plain comment, which readers ignore; tests/bench/reprompi_compare.py reads it. */
void clock_footer(const char *mpi_name, size_t n)
{
    if (g_rank != 0 || !g_offsets) return;
    char line[900];
    int o = snprintf(line, sizeof line, "# clockmodel %s %zu", mpi_name, n);
    for (int r = 1; r < g_size && o > 0 && (size_t)o < sizeof line - 24; r++)
        o += snprintf(line + o, sizeof line - (size_t)o, " %.9e", g_offsets[r]);
    footer_add("%s\n", line);
}

/* --start-agreement=reprompi: rank 0's value down a binomial tree of sends (rank r receives from r minus
 * its highest power of two, then sends to r + 2^k for every 2^k above it) */
static void tree_from_rank0(double *v)
{
    int d = 1, up = 0;
    while (g_rank >= d) { up = d; d <<= 1; }
    if (g_rank != 0) PMPI_Recv(v, 1, MPI_DOUBLE, g_rank - up, TAG_START, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (; g_rank + d < g_size; d <<= 1) PMPI_Send(v, 1, MPI_DOUBLE, g_rank + d, TAG_START, MPI_COMM_WORLD);
}

static double agree_later(double margin)
{
    double mine = global_time(MPI_Wtime()) + margin, all;
    PMPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return all;
}

/* Waits until the global clock reaches t; 1 when it had passed t already (late). */
static int wait_until(double t)
{
    double now = global_time(MPI_Wtime());
    if (now >= t) return 1;
    double longest = (O.proc_sync == SYNC_WINDOW ? O.window_sec + O.wait_sec : g_margin) + WAIT_SLACK_SEC;
    if (t - now > longest) return 1;
    /* with more ranks on this node than cores, a waiting rank yields its core so that the others reach
     * their start; with a core each it spins (a yield hands the core to any other process of the machine) */
    if (g_yield) while (global_time(MPI_Wtime()) < t) sched_yield();
    else while (global_time(MPI_Wtime()) < t) { }
    return 0;
}

void window_begin(void)
{
    if (!O.start_reprompi) { g_T0 = agree_later(O.wait_sec); return; }
    if (g_rank == 0) g_T0 = global_time(MPI_Wtime()) + O.wait_sec;
    PMPI_Bcast(&g_T0, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
}
int window_wait(long k) { return wait_until(g_T0 + (double)k * O.window_sec); }
/* 1 when measurement k ended (local time t) after its window: invalid too, as ReproMPI's
 * FLAG_SYNC_WIN_EXPIRED (kept, such a measurement carries the descheduling that made it overrun). */
int window_expired(long k, double t) { return global_time(t) > g_T0 + (double)(k + 1) * O.window_sec; }

/* --start-agreement=reprompi: the margin from the mean of 10 (barrier, tree) times, the largest mean at
 * rank 0 (a reduction to it, as ReproMPI's); the other ranks bound their waits with their own */
static void roundtime_setup_reprompi(void)
{
    double sum = 0, v = 0, mean, worst = 0;
    for (int i = 0; i < 10; i++) {
        PMPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        tree_from_rank0(&v);
        sum += MPI_Wtime() - t0;
    }
    mean = sum / 10;
    PMPI_Reduce(&mean, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    g_margin = O.rt_multiplier * (g_rank == 0 ? worst : mean);
}

/* Round-time's margin: multiplier x the largest over ranks of the slowest of 10 agreements. */
static void roundtime_setup(void)
{
    if (O.start_reprompi) { roundtime_setup_reprompi(); return; }
    double worst = 0, t;
    for (int i = 0; i < 10; i++) {
        double t0 = MPI_Wtime();
        (void)agree_later(0);
        t = MPI_Wtime() - t0;
        if (t > worst) worst = t;
    }
    PMPI_Allreduce(&worst, &g_margin, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    g_margin *= O.rt_multiplier;
}

int roundtime_wait(void)
{
    if (!O.start_reprompi) return wait_until(agree_later(g_margin));
    double start = 0;
    PMPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 0) start = global_time(MPI_Wtime()) + g_margin;
    tree_from_rank0(&start);
    return wait_until(start);
}

/* After a round-time measurement (outside the timed region): with --start-agreement=reprompi the flags'
 * exchange, MAX in Sendrecv rounds with the ranks 1, 2, 4 ... away; nothing with the default agreement. */
void roundtime_after(int late)
{
    if (!O.start_reprompi) return;
    int mine[2] = {late, 0}, got[2];
    for (int d = 1; d < g_size; d <<= 1) {
        PMPI_Sendrecv(mine, 2, MPI_INT, (g_rank + d) % g_size, TAG_FLAGS, got, 2, MPI_INT,
                      (g_rank - d + g_size) % g_size, TAG_FLAGS, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < 2; i++) if (got[i] > mine[i]) mine[i] = got[i];
    }
}

/* Before a cell (or a calibration) measured on the global clock: a fresh model, round-time's margin once. */
void clock_prepare(void)
{
    if (g_yield < 0) {
        MPI_Comm node;
        int local = 1;
        if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
            PMPI_Comm_size(node, &local);
            PMPI_Comm_free(&node);
        }
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        g_yield = cores > 0 && local > cores;
    }
    clock_sync();
    if (O.proc_sync == SYNC_ROUNDTIME && g_margin < 0) roundtime_setup();
}

double roundtime_margin(void) { return g_margin; }
long clock_fits(void) { return g_fits; }
