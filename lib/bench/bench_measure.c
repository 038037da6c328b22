/* pgmpi-bench: the measurement -- synchronisation, the calls, interleaved rounds, the nrep
 * policies' phases (see bench.h for the split). */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "pgmpitune.h"
#include "bench.h"
#include "bench_call.h"

/* ------------------------------------------------------------------ PRNG (same sequence on all ranks) */
uint64_t rng_state;
static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ------------------------------------------------------------------ synchronisation and calls */
static void dissem_barrier(void)
{
    char s = 0, r;
    for (int d = 1; d < g_size; d <<= 1)
        PMPI_Sendrecv(&s, 1, MPI_CHAR, (g_rank + d) % g_size, 0x5047,
                      &r, 1, MPI_CHAR, (g_rank - d + g_size) % g_size, 0x5047, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* Rank 0's values travel as MAX over zeros, never by a rooted collective: with Open MPI 4.1 on shared
 * memory an odd number of one-way messages between two ranks left every later small collective 20-80 %
 * slower (see even_out_runs below; tests/bench/lib_init_cost.sh). */
void share_from_rank0(unsigned long long *v, int n)
{
    unsigned long long in[8] = {0};
    if (g_rank == 0) memcpy(in, v, (size_t)n * sizeof *v);
    PMPI_Allreduce(in, v, n, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
}

static void sync_procs(void)
{
    /* the clock-based methods synchronise untimed calls (check round, evened-out runs) with MPI_Barrier */
    if (O.proc_sync == SYNC_DISSEM) dissem_barrier();
    else PMPI_Barrier(MPI_COMM_WORLD);
}

/* Makes the next call of c run algorithm a: the library's forced mock-up (or none), a native
 * variant's communicator, a datatype description. Returns the communicator to call on. */
static MPI_Comm select_algorithm(const call_t *c, int a)
{
    MPI_Comm comm = MPI_COMM_WORLD;
    if (c->coll >= 0) {
        if (c->alg[a] == ALG_TUNED) pgmpitune_unforce(c->coll);
        else pgmpitune_force(c->coll, c->alg[a] == ALG_CONTROL || c->alg[a] <= ALG_NATIVE0 ? 0 : c->alg[a]);
        comm = native_select(c, c->alg[a]);
    }
    if (c->kind == K_DT) dt_select(c, c->alg[a]);
    return comm;
}

static char *g_sbuf, *g_rbuf;
static int *g_rcounts;
MPI_Datatype g_dt;
MPI_Op g_op;

int run_call_on(const call_t *c, const cplan_t *cp, char *sbuf, char *rbuf, MPI_Comm w)
{
    if (c->kind == K_DT) return dt_run(c, sbuf, rbuf);   /* dt_select() chose the description */
    bench_args_t a = {sbuf, rbuf, (int)cp->count, g_rcounts, g_dt, g_op, O.root, w};   /* fill_rcounts() */
    return bench_call_of(c->kind)->call(&a);
}

static int run_call(const call_t *c, const cplan_t *cp, MPI_Comm comm) { return run_call_on(c, cp, g_sbuf, g_rbuf, comm); }

/* Per-rank counts (MPI_Reduce_scatter's recvcounts): count elements in blocks, the first count % p ranks
 * get one more. Called whenever a plan is installed (outside timed regions); one call per size uses them. */
void fill_rcounts(const call_t *c, const cplan_t *cp)
{
    const bench_call_t *b = bench_call_of(c->kind);
    if (!b || !(b->flags & BC_RCOUNTS)) return;
    size_t q = cp->count / (size_t)g_size, r = cp->count % (size_t)g_size;
    for (int i = 0; i < g_size; i++) g_rcounts[i] = (int)(q + ((size_t)i < r ? 1 : 0));
}


/* ------------------------------------------------------------------ the measurement engine */

static double *g_loc, *g_glob;
static int *g_jobcall, *g_jobalg;
static size_t g_bufcap;
static long g_round_counter;

static int rules_pass(const cstate_t *cs, const phase_t *ph, char *why, size_t len)
{
    double worst_rse = 0, worst_cm = 0, worst_cd = 0;
    int pass = 1;
    for (int a = 0; a < cs->call->nalg; a++) {
        if (cs->skip[a]) continue;
        const series_t *s = &cs->s[a];
        if (ph->rules & R_RSE) { double v = series_rse(s); if (v > worst_rse) worst_rse = v; if (!(v < ph->thr_rse)) pass = 0; }
        if (ph->rules & R_COVMEAN) { double v = series_cov_means(s, (size_t)ph->w_covmean); if (v > worst_cm) worst_cm = v; if (!(v < ph->thr_covmean)) pass = 0; }
        if (ph->rules & R_COVMEDIAN) { double v = series_cov_medians(s, (size_t)ph->w_covmedian); if (v > worst_cd) worst_cd = v; if (!(v < ph->thr_covmedian)) pass = 0; }
    }
    size_t o = snprintf(why, len, "rules");
    if (ph->rules & R_RSE) o += snprintf(why + o, len - o, " rse=%.4g", worst_rse);
    if (ph->rules & R_COVMEAN) o += snprintf(why + o, len - o, " covmean=%.4g", worst_cm);
    if (ph->rules & R_COVMEDIAN) snprintf(why + o, len - o, " covmedian=%.4g", worst_cd);
    return pass;
}

/* n: measurements of a batch plus the calls' elapsed times; on the global clock the batch needs two
 * more values per measurement (minus the global start, late flag) */
static void ensure_buf(size_t n)
{
    if (SYNC_ON_CLOCK(O.proc_sync)) n *= 3;
    if (n <= g_bufcap) return;
    size_t cap = n * 2;
    g_loc = realloc(g_loc, cap * sizeof *g_loc);
    g_glob = realloc(g_glob, cap * sizeof *g_glob);
    g_jobcall = realloc(g_jobcall, cap * sizeof *g_jobcall);
    g_jobalg = realloc(g_jobalg, cap * sizeof *g_jobalg);
    if (!g_loc || !g_glob || !g_jobcall || !g_jobalg) {
        fprintf(stderr, "pgmpi-bench: error: out of memory for the time buffers\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    g_bufcap = cap;
}

/* Runs rounds over the calls cs[0..nc) that have active=1 until each stops (target reached, rules
 * passed, budget spent).  Every round measures each active (call, algorithm) once, in a new order. */
void run_phase(cstate_t *cs, int nc, const phase_t *ph, char (*why)[256])
{
    /* Every call below is a measurement: it takes the path an application takes, libpgmpitune's report
     * off (with it on, each call of the default asked MPI_Type_size and counted itself: 2.04-3.22x PMPI
     * against 1.07-1.60x after a 200 us wait, lib/bench/README.md). The report's alg/count lines come
     * from the untimed calls: the check round and the evened-out runs. */
    int was_suspended = pgmpitune_report_suspend(1);
    for (int i = 0; i < nc; i++) {
        cs[i].done = 0; cs[i].elapsed = 0; cs[i].stop = NULL; why[i][0] = 0;
        memset(cs[i].invalid, 0, sizeof cs[i].invalid);
        for (int a = 0; a < cs[i].call->nalg; a++) series_clear(&cs[i].s[a]);
        if (cs[i].target <= 0) cs[i].active = 0;
        int timed = 0;
        for (int a = 0; a < cs[i].call->nalg; a++) timed += !cs[i].skip[a];
        if (!timed && cs[i].active) { cs[i].active = 0; cs[i].stop = "check"; }
    }
    int jc[MAXCALLS * MAXALGS], ja[MAXCALLS * MAXALGS];
    for (;;) {
        int nj = 0;
        long B = LONG_MAX;
        for (int i = 0; i < nc; i++) {
            if (!cs[i].active) continue;
            for (int a = 0; a < cs[i].call->nalg; a++) if (!cs[i].skip[a]) { jc[nj] = i; ja[nj] = a; nj++; }
            long next = cs[i].done + ph->step;                       /* next checkpoint */
            if (ph->rules && cs[i].done < ph->min) next = ph->min;
            if (next > cs[i].target) next = cs[i].target;
            if (next - cs[i].done < B) B = next - cs[i].done;
        }
        if (nj == 0) break;
        if (B < 1) B = 1;
        size_t nmeas = (size_t)B * (size_t)nj;
        ensure_buf(nmeas + (size_t)nc);
        double *el = g_loc + nmeas;                                  /* per-call elapsed of this batch */
        for (int i = 0; i < nc; i++) el[i] = 0;
        /* on the global clock (bench_clock.c): g_loc = global end, nstart = minus global start, late = 1
         * when this rank reached the start after it had passed; one MAX reduction gives all three */
        int clocked = SYNC_ON_CLOCK(O.proc_sync);
        double *nstart = g_loc + nmeas + nc, *late = nstart + nmeas;
        size_t nred = clocked ? 3 * nmeas + (size_t)nc : nmeas + (size_t)nc;
        if (O.proc_sync == SYNC_WINDOW) window_begin();
        size_t k = 0;
        /* Between two measurements only what a plain timing loop does: no clock read before the
         * synchronisation (a batch's elapsed time is counted from the previous measurement's end), and
         * the algorithm switch only when the next measurement needs another one. At 8 bytes under
         * MPI_Barrier one extra MPI_Wtime before the barrier moved Open MPI's Bcast from 0.34 to 0.25 us
         * (tests/bench/round_gap.c): the figure there is the barrier's exit skew, and the work between
         * measurements shifts it. */
        int cur_i = -1, cur_a = -1;
        MPI_Comm comm = MPI_COMM_WORLD;
        double tprev = MPI_Wtime();
        for (long r = 0; r < B; r++, g_round_counter++) {
            int perm[MAXCALLS * MAXALGS];
            for (int j = 0; j < nj; j++) perm[j] = j;
            if (O.order_rr) {
                for (int j = 0; j < nj; j++) perm[j] = (int)((j + g_round_counter) % nj);
            } else {
                for (int j = nj - 1; j > 0; j--) {
                    int q = (int)(rng_next() % (uint64_t)(j + 1));
                    int t = perm[j]; perm[j] = perm[q]; perm[q] = t;
                }
            }
            for (int j = 0; j < nj; j++) {
                int i = jc[perm[j]], a = ja[perm[j]];
                const call_t *c = cs[i].call;
                if (i != cur_i || a != cur_a) {
                    comm = select_algorithm(c, a);
                    cur_i = i; cur_a = a;
                }
                int was_late = 0;
                if (O.proc_sync == SYNC_WINDOW) was_late = window_wait((long)k);
                else if (O.proc_sync == SYNC_ROUNDTIME) was_late = roundtime_wait();
                else sync_procs();
                double t0 = MPI_Wtime();
                int rc = run_call(c, &cs[i].plan, comm);
                double t1 = MPI_Wtime();
                cs[i].runs[a]++;
                if (rc != MPI_SUCCESS) {
                    char msg[MPI_MAX_ERROR_STRING]; int len = 0;
                    MPI_Error_string(rc, msg, &len);
                    fprintf(stderr, "pgmpi-bench: error: rank %d: %s %zu B %s returned %s\n", g_rank,
                            c->mpi_name, cs[i].plan.n, alg_label(c, c->alg[a]), msg);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
                if (O.proc_sync == SYNC_WINDOW) was_late |= window_expired((long)k, t1);
                else if (O.proc_sync == SYNC_ROUNDTIME) roundtime_after(was_late);
                if (clocked) {
                    g_loc[k] = global_time(t1); nstart[k] = -global_time(t0); late[k] = was_late;
                } else g_loc[k] = t1 - t0;
                g_jobcall[k] = i; g_jobalg[k] = a;
                el[i] += t1 - tprev;
                tprev = t1;
                k++;
            }
        }
        /* one reduction per batch, outside every timed region: max over ranks */
        PMPI_Allreduce(g_loc, g_glob, (int)nred, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (clocked)   /* run-time = max global end - min global start; a late one is invalid (-1) */
            for (size_t m = 0; m < nmeas; m++)
                g_glob[m] = g_glob[nmeas + nc + nmeas + m] > 0 ? -1 : g_glob[m] + g_glob[nmeas + nc + m];
        long base[MAXCALLS];
        for (int i = 0; i < nc; i++) base[i] = cs[i].done;
        long idx[MAXCALLS][MAXALGS];
        for (int i = 0; i < nc; i++) for (int a = 0; a < MAXALGS; a++) idx[i][a] = cs[i].row0[a] + base[i];
        for (size_t m = 0; m < nmeas; m++) {
            int i = g_jobcall[m], a = g_jobalg[m];
            if (g_glob[m] < 0) { cs[i].invalid[a]++; continue; }
            if (series_push(&cs[i].s[a], g_glob[m])) { fprintf(stderr, "pgmpi-bench: error: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
            if (ph->record && g_rank == 0) {
                const call_t *c = cs[i].call;
                write_row(c, idx[i][a], cs[i].plan.n, g_glob[m], c->alg[a]);
            }
            idx[i][a]++;
        }
        for (int i = 0; i < nc; i++) {
            if (!cs[i].active) continue;
            cs[i].done += B;
            cs[i].elapsed += g_glob[nmeas + (size_t)i];
            if (ph->rules && cs[i].done >= ph->min && rules_pass(&cs[i], ph, why[i], sizeof why[i])) {
                cs[i].active = 0; cs[i].stop = "rules";
            } else if (cs[i].done >= cs[i].target) {
                cs[i].active = 0; cs[i].stop = ph->rules ? "max" : "nrep";
                if (ph->rules) rules_pass(&cs[i], ph, why[i], sizeof why[i]);
            } else if (ph->budget > 0 && cs[i].elapsed >= ph->budget) {
                cs[i].active = 0; cs[i].stop = "budget";
                if (ph->rules) rules_pass(&cs[i], ph, why[i], sizeof why[i]);
            }
        }
    }
    pgmpitune_report_suspend(was_suspended);
}

/* The measured buffers (lib/bench/README.md, "Buffers").  --buffers=once: one send and one receive
 * buffer sized for the largest (call, size), allocated before the header is written and reused by
 * every cell; --buffers=cell: a fresh pair for each (call, size) group, as ReproMPI allocates per job.
 * --buffer-align: malloc (what an application gets from malloc/calloc: 16 bytes, and for blocks above
 * glibc's mmap threshold a page plus 16 bytes) or a power of two (posix_memalign).  --buffer-touch=yes
 * writes every page before measuring, so no page fault falls into a timed region.  The default and
 * every mock-up of a cell run on the same pair. */
static size_t g_sbytes, g_rbytes;

/* An untouched buffer above glibc's initial mmap threshold is mapped here directly, 16 bytes into its first
 * page as calloc places it: glibc raises its threshold when a mapped block is freed, so after the first
 * cell calloc would hand out recycled heap memory it zeroes itself (written pages) instead of a fresh
 * mapping (the kernel's zero page), which is what a program's first large calloc, and ReproMPI's Allgather
 * buffers, get. (mallopt would fix the threshold for the MPI library's own temporary buffers too: Open
 * MPI's 1 MiB Allreduce then mapped and unmapped its scratch in every call, 2.5x slower.) */
enum { FRESH_MAP_MIN = 128 * 1024, MAP_OFFSET = 16 };
static char *g_mapped[2];
static size_t g_mapped_len[2];

static char *alloc_one(size_t n, int touch, int slot)
{
    void *p = NULL;
    if (n == 0) n = 1;
    g_mapped[slot] = NULL;
    if (!touch && O.buf_align == 0 && n >= FRESH_MAP_MIN) {
        size_t len = n + MAP_OFFSET;
        char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return NULL;
        g_mapped[slot] = m; g_mapped_len[slot] = len;
        return m + MAP_OFFSET;
    }
    if (O.buf_align == 0) p = calloc(n, 1);
    else if (posix_memalign(&p, (size_t)O.buf_align, n) != 0) p = NULL;
    else if (!touch) memset(p, 0, 1);
    if (p && touch) memset(p, 0, n);
    return p;
}

static void free_one(char *p, int slot)
{
    if (g_mapped[slot]) munmap(g_mapped[slot], g_mapped_len[slot]);
    else free(p);
    g_mapped[slot] = NULL;
}

static void alloc_pair(size_t sb, size_t rb, int touch)
{
    free_one(g_sbuf, 0); free_one(g_rbuf, 1);
    g_sbuf = alloc_one(sb, touch, 0);
    g_rbuf = alloc_one(rb, touch, 1);
    g_sbytes = sb; g_rbytes = rb;
    if (!g_sbuf || !g_rbuf) {
        fprintf(stderr, "pgmpi-bench: error: rank %d: cannot allocate %zu + %zu buffer bytes\n", g_rank, sb, rb);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* ReproMPI writes zeros into the buffers of the calls it initialises by default (Allreduce, Bcast,
 * Reduce, Scan, Barrier) and leaves calloc's pages to the others (Allgather, Alltoall, Gather, Scatter,
 * Reduce_scatter): a large send buffer nobody wrote is backed by the kernel's one zero page, which
 * every read finds in the cache (Allgather 1 MiB measured 15-20 % faster so; lib/bench/README.md). */
static int reprompi_writes_buffers(int k)
{
    const bench_call_t *b = bench_call_of(k);
    return b && (b->flags & BC_REPROMPI_WRITES);
}

void alloc_buffers(void)
{
    g_rcounts = calloc((size_t)g_size, sizeof *g_rcounts);
    if (!g_rcounts) { fprintf(stderr, "pgmpi-bench: error: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    if (O.buf_cell) return;
    /* buffers for the largest plan; only the root needs the big side of Gather/Scatter, but the
     * memory check assumed the worst rank, so every rank allocates the same */
    size_t sb = 0, rb = 0;
    for (int i = 0; i < O.ncalls; i++) for (int j = 0; j < O.nsizes; j++) {
        if (g_plan[i][j].sbytes > sb) sb = g_plan[i][j].sbytes;
        if (g_plan[i][j].rbytes > rb) rb = g_plan[i][j].rbytes;
    }
    alloc_pair(sb, rb, O.buf_touch != 0);
}

/* Offsets of the measured buffers within their 4 KiB page (4 KiB aliasing between a copy's source
 * and destination depends on their difference); -1 before the first allocation. */
void buffer_page_offsets(long *s, long *r)
{
    *s = g_sbuf ? (long)((uintptr_t)g_sbuf % 4096) : -1;
    *r = g_rbuf ? (long)((uintptr_t)g_rbuf % 4096) : -1;
}

/* Before a group of calls is measured: its buffers (--buffers=cell) and MPI_Reduce_scatter's counts. */
static void install_buffers(cstate_t *cs, int nc)
{
    if (O.buf_cell) {
        size_t sb = 0, rb = 0;
        for (int i = 0; i < nc; i++) {
            if (cs[i].plan.sbytes > sb) sb = cs[i].plan.sbytes;
            if (cs[i].plan.rbytes > rb) rb = cs[i].plan.rbytes;
        }
        int touch = O.buf_touch == 1;
        if (O.buf_touch == BUF_TOUCH_REPROMPI)
            for (int i = 0; i < nc; i++) touch |= reprompi_writes_buffers(cs[i].call->kind);
        alloc_pair(sb, rb, touch);
        for (int i = 0; i < nc; i++)
            footer_add("#@pgmpi buffers %s %zu page_offsets=%ld,%ld touched=%s\n", cs[i].call->mpi_name, cs[i].plan.n,
                       (long)((uintptr_t)g_sbuf % 4096), (long)((uintptr_t)g_rbuf % 4096), touch ? "yes" : "no");
    }
    for (int i = 0; i < nc; i++) fill_rcounts(cs[i].call, &cs[i].plan);
    for (int i = 0; i < nc; i++) if (cs[i].call->kind == K_DT) dt_prepare(cs[i].call, &cs[i].plan);
}

void free_buffers(void)
{
    free_one(g_sbuf, 0); free_one(g_rbuf, 1); g_sbuf = g_rbuf = NULL;
    free(g_rcounts); free(g_loc); free(g_glob); free(g_jobcall); free(g_jobalg);
}

/* One group of calls at one size, interleaved round by round: cs[0..nc) have their plan installed.
 * The nrep policy decides the targets (the time rule's pilots run first, unrecorded). */
static void measure_group(cstate_t *cs, int nc, char (*why)[256], const double *tnrep1)
{
    phase_t ph = {0};
    ph.step = O.pstep; ph.min = O.pmin;
    ph.record = 1; ph.budget = O.budget;
    /* A fixed count needs no checkpoints: one reduction after the cell, as ReproMPI does.  A reduction
     * (and rank 0's row output) every few measurements desynchronises the ranks before the next
     * barrier and moved 8-byte cells by 30-70 % against ReproMPI (lib/bench/README.md). */
    if ((O.policy == P_FIXED || O.policy == P_FROM) && O.budget <= 0) ph.step = FIXED_BATCH_MAX;
    if (O.policy == P_FIXED || O.policy == P_FROM) {
        for (int i = 0; i < nc; i++) {
            cs[i].active = 1;
            cs[i].target = O.policy == P_FIXED ? O.nrep : nrep_lookup(cs[i].call->mpi_name, cs[i].plan.n);
        }
        ph.rules = 0;
    } else if (O.policy == P_PREDICT) {
        ph.rules = O.rules; ph.thr_rse = O.thr_rse; ph.thr_covmean = O.thr_covmean;
        ph.thr_covmedian = O.thr_covmedian; ph.w_covmean = O.w_covmean; ph.w_covmedian = O.w_covmedian;
        for (int i = 0; i < nc; i++) { cs[i].active = 1; cs[i].target = O.pmax; }
    } else {
        /* step (2): pilot batches b1 (+ b2) per call, not recorded */
        double lmin[MAXCALLS][MAXALGS];
        phase_t pil = {0}; pil.step = O.b1;
        for (int i = 0; i < nc; i++) { cs[i].active = 1; cs[i].target = O.b1; }
        run_phase(cs, nc, &pil, why);
        int more = 0;
        for (int i = 0; i < nc; i++) {
            int need = 0;
            for (int a = 0; a < cs[i].call->nalg; a++) {
                lmin[i][a] = series_min(&cs[i].s[a]);
                if (!(series_rse(&cs[i].s[a]) < O.t_rse2)) need = 1;
            }
            cs[i].active = need && O.b2 > 0; cs[i].target = O.b2;
            more |= cs[i].active;
        }
        if (more) {
            pil.step = O.b2;
            run_phase(cs, nc, &pil, why);
            for (int i = 0; i < nc; i++)
                for (int a = 0; a < cs[i].call->nalg; a++)
                    if (cs[i].s[a].n && series_min(&cs[i].s[a]) < lmin[i][a]) lmin[i][a] = series_min(&cs[i].s[a]);
        }
        /* step (3): nrep = max(ceil(t_nrep1 / l_min), K), the largest over the call's algorithms */
        for (int i = 0; i < nc; i++) {
            long nrep = O.K;
            for (int a = 0; a < cs[i].call->nalg; a++) {
                double l = lmin[i][a];
                /* written so that a reader can redo the rule exactly (the pilot rows are not recorded) */
                footer_add("# pilot %s %zu %s latency_min_sec=%.9e\n", cs[i].call->mpi_name, cs[i].plan.n,
                           alg_label(cs[i].call, cs[i].call->alg[a]), l);
                double r = l > 0 ? ceil(tnrep1[i] / l) : (double)O.tmax;
                if (r > (double)O.tmax) r = (double)O.tmax;
                if ((long)r > nrep) nrep = (long)r;
            }
            cs[i].active = 1; cs[i].target = nrep;
        }
        ph.rules = 0;
    }
    run_phase(cs, nc, &ph, why);
}

/* Open MPI 4.1's shared-memory fast boxes carry a state that the parity of the one-way messages between
 * two ranks decides: after an odd number of, say, MPI_Bcast from rank 0 every later small message of the
 * job is slower (8-byte Allgather at 2 ranks: 0.22 against 0.18 us; tests/bench/lib_init_cost.sh).  So
 * that every cell starts in the state the job started in, whatever its nrep and check round, each
 * algorithm of a cell runs an even number of times: an odd count gets one more, untimed, call.
 * Algorithms that failed their check are not called again (their one call stays).
 * The library's report counts untimed calls only (run_phase suspends it): without a check round
 * (--check=no, as --method=reprompi runs) an even count gets two, so the report still says which
 * algorithm the library ran in every cell (the `alg` lines the results reader labels rows with). */
static void even_out_runs(cstate_t *cs, int nc)
{
    for (int i = 0; i < nc; i++) {
        const call_t *c = cs[i].call;
        for (int a = 0; a < c->nalg; a++) {
            if (cs[i].skip[a]) continue;
            int more = cs[i].runs[a] % 2 ? 1 : (O.check ? 0 : 2);
            MPI_Comm comm = select_algorithm(c, a);
            for (int k = 0; k < more; k++) {
                sync_procs();
                (void)run_call(c, &cs[i].plan, comm);
                cs[i].runs[a]++;
            }
        }
    }
}

/* A group of cells at their plans (cs[i].plan): buffers, the check round, the interleaved rounds, the
 * cells' calls evened out. passed[i][a] (when not NULL) = 1 when algorithm a of cell i passed its check
 * (or none ran). */
void measure_cells(cstate_t *cs, int nc, char (*why)[256], const double *tnrep1, int (*passed)[MAXALGS])
{
    install_buffers(cs, nc);
    if (SYNC_ON_CLOCK(O.proc_sync)) clock_prepare();
    for (int i = 0; i < nc; i++) {
        int ok[MAXALGS];
        for (int a = 0; a < MAXALGS; a++) { cs[i].skip[a] = 0; cs[i].runs[a] = 0; ok[a] = 1; }
        int dt = cs[i].call->kind == K_DT;   /* a description that does not exist at this size */
        if (dt) for (int a = 0; a < cs[i].call->nalg; a++) cs[i].skip[a] = !dt_applies(cs[i].call, cs[i].call->alg[a]);
        if (O.check) {
            if (dt) dt_check_cell(cs[i].call, &cs[i].plan, g_sbuf, g_rbuf, ok);
            else check_cell(cs[i].call, &cs[i].plan, g_sbuf, g_rbuf, ok);
            for (int a = 0; a < cs[i].call->nalg; a++) {
                cs[i].runs[a] = !cs[i].skip[a];       /* the check called it once */
                cs[i].skip[a] |= !ok[a];
            }
        }
        if (passed) memcpy(passed[i], ok, sizeof ok);
    }
    measure_group(cs, nc, why, tnrep1);
    if (SYNC_ON_CLOCK(O.proc_sync)) {
        double err = clock_check();
        for (int i = 0; i < nc; i++) {
            footer_add("#@pgmpi clockcheck %s %zu %.3e\n", cs[i].call->mpi_name, cs[i].plan.n, err);
            clock_footer(cs[i].call->mpi_name, cs[i].plan.n);
            for (int a = 0; a < cs[i].call->nalg; a++)
                if (cs[i].invalid[a])
                    footer_add("#@pgmpi invalid %s %zu %s %ld %ld\n", cs[i].call->mpi_name, cs[i].plan.n,
                               alg_label(cs[i].call, cs[i].call->alg[a]), cs[i].invalid[a], cs[i].done);
        }
        if (O.proc_sync == SYNC_ROUNDTIME && roundtime_margin() >= 0)
            footer_add("# roundtime margin %.3e s\n", roundtime_margin());
    }
    even_out_runs(cs, nc);
}

/* Every (call, size) of the plan, sizes ascending.  --interleave=cell (default) measures one call at
 * a time (its algorithms interleaved), as ReproMPI measures one (call, size) job at a time;
 * --interleave=size interleaves every call of a size (each call then runs in the cache and protocol
 * state the other calls leave behind: see lib/bench/README.md).  Rows are written as each batch is
 * reduced; the footer lines are collected for the end. */
void measure_all(void)
{
    cstate_t cs[MAXCALLS];
    memset(cs, 0, sizeof cs);
    char (*why)[256] = calloc(MAXCALLS, sizeof *why);
    int nc = O.ncalls, gstep = O.interleave_size ? nc : 1;
    for (int i = 0; i < nc; i++) { cs[i].call = &O.calls[i]; for (int a = 0; a < MAXALGS; a++) series_init(&cs[i].s[a]); }
    double tnrep1[MAXCALLS];

    if (O.policy == P_TIME) {
        /* step (1): t_nrep1 per call at 1 byte (rounded to one element of the call) */
        for (int i = 0; i < nc; i++) {
            plan_call(&O.calls[i], 1, g_size, &cs[i].plan);
            tnrep1[i] = O.tnrep1_given;
        }
        if (O.tnrep1_given < 0) {
            phase_t cal = {0};
            cal.rules = R_RSE; cal.thr_rse = O.t_rse1; cal.min = O.tmin1; cal.step = O.pstep;
            for (int g = 0; g < nc; g += gstep) {
                int gn = g + gstep > nc ? nc - g : gstep;
                for (int i = g; i < g + gn; i++) { cs[i].active = 1; cs[i].target = O.tmax1; memset(cs[i].skip, 0, sizeof cs[i].skip); }
                install_buffers(cs + g, gn);
                if (SYNC_ON_CLOCK(O.proc_sync)) clock_prepare();
                run_phase(cs + g, gn, &cal, why + g);
            }
            for (int i = 0; i < nc; i++) {
                double t = 0;
                for (int a = 0; a < O.calls[i].nalg; a++) if (cs[i].s[a].sum > t) t = cs[i].s[a].sum;
                tnrep1[i] = t;
                footer_add("#@pgmpi tnrep1 %s %zu %.9f %ld\n", O.calls[i].mpi_name, cs[i].plan.n, t, cs[i].done);
                footer_add("# tnrep1 %s: %ld measurements at %zu B until %s (%s)\n", O.calls[i].mpi_name, cs[i].done,
                           cs[i].plan.n, cs[i].stop, why[i]);
            }
        }
    }

    for (int j = 0; j < O.nsizes; j++) {
        for (int i = 0; i < nc; i++) cs[i].plan = g_plan[i][j];
        for (int g = 0; g < nc; g += gstep) {
            int gn = g + gstep > nc ? nc - g : gstep;
            measure_cells(cs + g, gn, why + g, tnrep1 + g, NULL);
        }
        if (g_rank == 0 && fflush(g_out)) out_fail();   /* a killed job keeps the sizes it finished */
        for (int i = 0; i < nc; i++) {
            footer_add("#@pgmpi nrep %s %zu %ld\n", O.calls[i].mpi_name, cs[i].plan.n, cs[i].done);
            footer_add("# nrep %s %zu %ld stop=%s elapsed_sec=%.6f%s%s\n", O.calls[i].mpi_name, cs[i].plan.n,
                       cs[i].done, cs[i].stop ? cs[i].stop : "none", cs[i].elapsed, why[i][0] ? " " : "", why[i]);
        }
    }

    for (int i = 0; i < nc; i++) for (int a = 0; a < MAXALGS; a++) series_free(&cs[i].s[a]);
    free(why);
}
