/* pgmpi-bench: the plan of a run -- per (call, size) counts and buffers, memory and pool checks,
 * the nrep policy's description, --dry-run (see bench.h for the split). */
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
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "pgmpitune.h"
#include "bench.h"
#include "bench_call.h"
#include "bench_datatypes.h"

/* ------------------------------------------------------------------ per (call, size) plan */

static int mul_ok(size_t a, size_t b, size_t *r)
{
    if (a && b > SIZE_MAX / a) return 0;
    *r = a * b; return 1;
}

/* the collective's buffers for n bytes on p ranks (maximum over ranks) */
void plan_call(const call_t *c, size_t req, int p, cplan_t *cp)
{
    if (c->kind == K_DT) { dt_plan(c, req, p, cp); return; }
    size_t elem = dtypes[O.dt].size, P = (size_t)p, unit = elem;
    memset(cp, 0, sizeof *cp);
    cp->req = req; cp->ok = 1;
    if (c->kind == K_BARRIER) { cp->n = req; return; }
    const bench_call_t *b = bench_call_of(c->kind);
    if (b->flags & BC_UNIT_P) unit = elem * P;
    size_t n = (req / unit) * unit;
    if (req > 0 && n == 0) n = unit;
    cp->n = n;
    size_t np_ = 0;
    int fits = mul_ok(n, P, &np_);     /* no buffer is larger than n x p */
    if (!fits || !b->plan(cp, elem, P) || cp->count > INT_MAX) cp->ok = 0;
    for (int k = 0; k < c->nalg; k++) {
        if (c->alg[k] < 0) continue;   /* tuned: the library checks its pools itself; control: the default */
        size_t m = pgmpitune_algorithm_memory(c->coll, c->alg[k], n, elem, p);
        if (m > cp->scratch) cp->scratch = m;
    }
}

static double meminfo_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256]; double kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
    fclose(f);
    return kb * 1024.0;
}

/* ranks sharing this node, from the launcher's environment (no communication) */
static int local_ranks_guess(int p)
{
    const char *v[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE"};
    for (int i = 0; i < 4; i++) {
        const char *s = getenv(v[i]);
        if (s && atoi(s) > 0) return atoi(s) < p ? atoi(s) : p;
    }
    return p;   /* conservative: all ranks on this node */
}


char g_policy[512];
void describe_policy(void)
{
    size_t o = 0, len = sizeof g_policy;
    if (O.policy == P_FIXED) o += snprintf(g_policy, len, "fixed:%ld", O.nrep);
    else if (O.policy == P_FROM) o += snprintf(g_policy, len, "from:%s", O.nrep_from);
    else if (O.policy == P_PREDICT) {
        o += snprintf(g_policy, len, "predict:");
        int first = 1;
        if (O.rules & R_RSE) { o += snprintf(g_policy + o, len - o, "rse<%g", O.thr_rse); first = 0; }
        if (O.rules & R_COVMEAN) { o += snprintf(g_policy + o, len - o, "%scovmean<%g/w%ld", first ? "" : "+", O.thr_covmean, O.w_covmean); first = 0; }
        if (O.rules & R_COVMEDIAN) o += snprintf(g_policy + o, len - o, "%scovmedian<%g/w%ld", first ? "" : "+", O.thr_covmedian, O.w_covmedian);
        o += snprintf(g_policy + o, len - o, ";min:%ld;max:%ld;step:%ld", O.pmin, O.pmax, O.pstep);
    } else {
        o += snprintf(g_policy, len, "time:rse1<%g;rse2<%g;b1:%ld;b2:%ld;K:%ld;max:%ld;min1:%ld;max1:%ld",
                      O.t_rse1, O.t_rse2, O.b1, O.b2, O.K, O.tmax, O.tmin1, O.tmax1);
        if (O.tnrep1_given >= 0) o += snprintf(g_policy + o, len - o, ";tnrep1:%g", O.tnrep1_given);
    }
    if (O.budget > 0) snprintf(g_policy + o, len - o, ";budget:%gs", O.budget);
}

/* libpgmpitune reserves its scratch pools at MPI_Init (PGMPITUNE_MSG_POOL_BYTES, default 100 MB); a
 * mock-up whose need exceeds the pool falls back to the default, and its rows would carry the mock-up's
 * name while measuring the default.  Unless the user sized the pool, ask for what the plan needs (p from
 * the launcher's environment; the #@pgmpi fallback lines of the report show any fallback that remains). */
void reserve_pools(void)
{
    if (getenv("PGMPITUNE_MSG_POOL_BYTES") || getenv("PGMPITUNE_CONFIG") || getenv("PGMPI_CONFIG_FILE")) return;
    const char *v[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_NTASKS"};
    int p = 0;
    for (int i = 0; i < 4 && p <= 0; i++) { const char *s = getenv(v[i]); if (s) p = atoi(s); }
    if (p <= 0) return;
    size_t need = 0;
    for (int i = 0; i < O.ncalls; i++)
        for (int j = 0; j < O.nsizes; j++) {
            cplan_t cp; plan_call(&O.calls[i], O.req_sizes[j], p, &cp);
            if (cp.scratch > need) need = cp.scratch;
        }
    if (need > (size_t)100000000) {
        char b[32]; snprintf(b, sizeof b, "%zu", need);
        setenv("PGMPITUNE_MSG_POOL_BYTES", b, 1);
    }
}

cplan_t g_plan[MAXCALLS][MAXSIZES];

void check_plan(double *limit_out, size_t *maxs, size_t *maxr, size_t *maxscr, int *worst_size)
{
    int p = g_size;
    int local = local_ranks_guess(p);
    double limit = O.mem_limit > 0 ? O.mem_limit : meminfo_available() / (double)local;
    *limit_out = limit;
    *maxs = *maxr = *maxscr = 0; *worst_size = 0;
    double worst = -1;
    for (int j = 0; j < O.nsizes; j++) {
        size_t s = 0, r = 0, sc = 0;
        for (int i = 0; i < O.ncalls; i++) {
            cplan_t *cp = &g_plan[i][j];
            plan_call(&O.calls[i], O.req_sizes[j], p, cp);
            if (!cp->ok && O.calls[i].kind != K_DT)   /* a datatype cell that does not exist is skipped */
                die_usage("message size %zu B of %s on %d ranks needs more than INT_MAX (%d) elements of %s "
                          "in one count or buffer; use a smaller size or a larger --datatype",
                          O.req_sizes[j], O.calls[i].mpi_name, p, INT_MAX, dtypes[O.dt].name);
            if (cp->sbytes > s) s = cp->sbytes;
            if (cp->rbytes > r) r = cp->rbytes;
            if (cp->scratch > sc) sc = cp->scratch;
        }
        double need = (double)s + (double)r + (double)sc;
        if (need > worst) { worst = need; *maxs = s; *maxr = r; *maxscr = sc; *worst_size = j; }
        if (limit > 0 && need > limit) {
            /* name the call that needs most */
            int wi = 0; double wn = -1;
            for (int i = 0; i < O.ncalls; i++) {
                double n = (double)g_plan[i][j].sbytes + (double)g_plan[i][j].rbytes + (double)g_plan[i][j].scratch;
                if (n > wn) { wn = n; wi = i; }
            }
            char a[32], b[32], c[32], d[32], e[32];
            fmt_bytes(need, a, sizeof a); fmt_bytes((double)s, b, sizeof b); fmt_bytes((double)r, c, sizeof c);
            fmt_bytes((double)sc, d, sizeof d); fmt_bytes(limit, e, sizeof e);
            die_usage("message size %zu B does not fit in memory: it needs %s per rank (send buffer %s + receive "
                      "buffer %s + mock-up scratch %s; largest: %s) with %d ranks, %d of them on this node; "
                      "available per rank: %s (%s).  Remove the size or use fewer ranks per node.",
                      O.req_sizes[j], a, b, c, d, O.calls[wi].mpi_name, p, local, e,
                      O.mem_limit > 0 ? "--mem-limit" : "MemAvailable of /proc/meminfo / ranks on this node");
        }
    }
}

/* A mock-up whose scratch need exceeds the pool libpgmpitune reserved (agreed over all ranks at
 * MPI_Init) would fall back to the default while its rows carry the mock-up's name: refuse the plan. */
void check_nrep_from(void)
{
    if (O.policy != P_FROM) return;
    for (int i = 0; i < O.ncalls; i++)
        for (int j = 0; j < O.nsizes; j++)
            if (nrep_lookup(O.calls[i].mpi_name, g_plan[i][j].n) < 0)
                die_usage("--nrep-from: no '#@pgmpi nrep %s %zu <n>' line in %s (predict that call and size first, "
                          "with the same number of ranks)", O.calls[i].mpi_name, g_plan[i][j].n, O.nrep_from);
}

void check_pools(void)
{
    size_t msg = pgmpitune_pool_bytes(0), ints = pgmpitune_pool_bytes(1), elem = dtypes[O.dt].size;
    for (int i = 0; i < O.ncalls; i++) {
        const call_t *c = &O.calls[i];
        if (c->coll < 0) continue;
        for (int j = 0; j < O.nsizes; j++)
            for (int a = 0; a < c->nalg; a++) {
                if (c->alg[a] < 0) continue;   /* a tuned call that does not fit falls back by design; control = default */
                size_t n = g_plan[i][j].n;
                size_t m = pgmpitune_algorithm_msg_memory(c->coll, c->alg[a], n, elem, g_size);
                size_t k = pgmpitune_algorithm_int_memory(c->coll, c->alg[a], n, elem, g_size);
                if (m > msg || k > ints)
                    die_usage("%s at %zu B needs %zu B of libpgmpitune's message pool and %zu B of its int pool, "
                              "but only %zu B and %zu B are reserved: it would fall back to the default.  Raise "
                              "PGMPITUNE_MSG_POOL_BYTES / PGMPITUNE_INT_POOL_BYTES (or the config file), or drop the "
                              "size or algorithm", pgmpitune_algorithm_name(c->coll, c->alg[a]), n, m, k, msg, ints);
            }
    }
}

void rounding_notes(char *buf, size_t len)
{
    size_t o = 0; buf[0] = 0;
    for (int i = 0; i < O.ncalls; i++)
        for (int j = 0; j < O.nsizes; j++) {
            const cplan_t *cp = &g_plan[i][j];
            if (cp->n != cp->req && o < len)
                o += snprintf(buf + o, len - o, "%s%s:%zu->%zu", o ? ";" : "", O.calls[i].mpi_name, cp->req, cp->n);
        }
}

void dry_run(double limit, size_t ms, size_t mr, size_t msc, int wj)
{
    if (g_rank != 0) return;
    long triples = 0;
    for (int i = 0; i < O.ncalls; i++) triples += O.calls[i].nalg;
    triples *= O.nsizes;
    printf("pgmpi-bench dry run: nothing is measured.\n");
    printf("ranks: %d; calls: %d; sizes: %d; (call, size, algorithm) triples: %ld%s\n", g_size, O.ncalls,
           O.nsizes, triples, O.barrier_rows ? " (MPI_Barrier rows next to every size included)" : "");
    printf("\n%-28s %s\n", "call", "algorithms");
    for (int i = 0; i < O.ncalls; i++) {
        const call_t *c = &O.calls[i];
        printf("%-28s ", c->mpi_name);
        for (int a = 0; a < c->nalg; a++)
            printf("%s%s", a ? ", " : "", alg_label(c, c->alg[a]));
        printf("\n");
    }
    printf("\nsizes (bytes):");
    for (int j = 0; j < O.nsizes; j++) printf(" %zu", O.req_sizes[j]);
    char notes[4096]; rounding_notes(notes, sizeof notes);
    printf("\nrounded to the datatype: %s\n", notes[0] ? notes : "none");
    describe_policy();
    printf("nrep policy: %s\n", g_policy);
    if (O.policy == P_FIXED) printf("measurements: %ld\n", triples * O.nrep);
    else if (O.policy == P_PREDICT) printf("measurements: between %ld and %ld\n", triples * O.pmin, triples * O.pmax);
    printf("sync: %s; order: %s (seed %s); datatype %s, operation %s, root %d\n",
           sync_names[O.proc_sync], O.order_rr ? "roundrobin" : "shuffle",
           O.seed_given ? "given" : "drawn at start", dtypes[O.dt].name, opnames[O.op], O.root);
    char a[32], b[32], c[32], d[32], e[32];
    fmt_bytes((double)ms + (double)mr + (double)msc, a, sizeof a);
    fmt_bytes((double)ms, b, sizeof b); fmt_bytes((double)mr, c, sizeof c); fmt_bytes((double)msc, d, sizeof d);
    fmt_bytes(limit, e, sizeof e);
    printf("estimated buffer memory per rank: %s at %zu B (send %s + receive %s + mock-up scratch %s); "
           "available per rank: %s\n", a, O.req_sizes[wj], b, c, d, e);
    printf("output: %s\n", O.output ? O.output : "stdout");
}

