/* pgmpi-bench -- reproducible run-time measurements of the MPI collectives that libpgmpitune
 * dispatches, of their mock-ups, and of MPI_Barrier, in ReproMPI's raw text format
 * (see --help, /work/shared/DESIGN.md contract 3 and lib/bench/README.md).
 *
 * Method (ReproMPI / PGMPI / PGMPITuneLib papers):
 *  - before every single measurement the processes synchronise with a dissemination barrier
 *    (or MPI_Barrier with --sync=mpi_barrier); each rank times the call locally with MPI_Wtime;
 *  - the run-time of a measurement is the MAXIMUM over ranks of the local times.  Local times are
 *    collected in memory and reduced with one PMPI_Allreduce(MAX) per batch of rounds, outside
 *    every timed region: the values are exactly the per-measurement maxima of the datatype paper
 *    (sect. 2.3), no reduction runs between two measurements, and all ranks see the global
 *    run-times, which the NREP stopping rules need to stop on every rank at the same repetition;
 *  - the algorithms (and calls) of one message size are interleaved: every round measures each
 *    still active (call, algorithm) once, in a seeded random order (or a rotating round-robin);
 *  - repetitions: fixed nrep, a time budget per (call, size), NREP prediction with the RSE /
 *    COV-of-means / COV-of-medians rules of the PGMPI paper (combinable: stop when all pass), or
 *    the time-based rule of the PGMPITuneLib paper (t_nrep1 at 1 byte, batches b1/b2, bound K).
 * All internal communication uses PMPI_ so it neither goes through libpgmpitune's dispatch nor
 * shows up in its #@pgmpi report.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "pgmpitune.h"
#include "bench_stats.h"

#define BENCH_VERSION "1.0"
#define MAXCALLS 64
#define MAXALGS 32
#define MAXSIZES 256

/* ------------------------------------------------------------------ the calls */
enum kind { K_ALLGATHER, K_ALLREDUCE, K_ALLTOALL, K_BCAST, K_GATHER, K_REDUCE, K_RSB, K_RS, K_SCAN,
            K_SCATTER, K_BARRIER, K_UNKNOWN };
static const char *kind_keys[] = {"allgather", "allreduce", "alltoall", "bcast", "gather", "reduce",
                                  "reducescatterblock", "reducescatter", "scan", "scatter", "barrier"};
static int kind_is_reduction(int k) { return k == K_ALLREDUCE || k == K_REDUCE || k == K_RSB || k == K_RS || k == K_SCAN; }

typedef struct {
    int coll;                 /* library collective index; -1 for MPI_Barrier */
    int kind;
    const char *mpi_name;
    int nalg;
    int alg[MAXALGS];         /* selected algorithm indices of the library (0 = default) */
} call_t;

/* ------------------------------------------------------------------ datatypes and ops */
typedef struct { const char *name; size_t size; int cls; } dtinfo_t;   /* cls: 0 byte, 1 char, 2 int, 3 float */
static const dtinfo_t dtypes[] = {
    {"MPI_BYTE", 1, 0}, {"MPI_CHAR", 1, 1}, {"MPI_SIGNED_CHAR", 1, 2}, {"MPI_UNSIGNED_CHAR", 1, 2},
    {"MPI_SHORT", sizeof(short), 2}, {"MPI_INT", sizeof(int), 2}, {"MPI_UNSIGNED", sizeof(unsigned), 2},
    {"MPI_LONG", sizeof(long), 2}, {"MPI_LONG_LONG", sizeof(long long), 2},
    {"MPI_FLOAT", sizeof(float), 3}, {"MPI_DOUBLE", sizeof(double), 3},
};
#define NDTYPES ((int)(sizeof dtypes / sizeof dtypes[0]))
static MPI_Datatype dtype_handle(int i)
{
    switch (i) {
    case 0: return MPI_BYTE; case 1: return MPI_CHAR; case 2: return MPI_SIGNED_CHAR;
    case 3: return MPI_UNSIGNED_CHAR; case 4: return MPI_SHORT; case 5: return MPI_INT;
    case 6: return MPI_UNSIGNED; case 7: return MPI_LONG; case 8: return MPI_LONG_LONG;
    case 9: return MPI_FLOAT; default: return MPI_DOUBLE;
    }
}
static const char *opnames[] = {"MPI_BOR", "MPI_BAND", "MPI_BXOR", "MPI_SUM", "MPI_PROD", "MPI_MAX", "MPI_MIN"};
#define NOPS 7
static MPI_Op op_handle(int i)
{
    switch (i) {
    case 0: return MPI_BOR; case 1: return MPI_BAND; case 2: return MPI_BXOR; case 3: return MPI_SUM;
    case 4: return MPI_PROD; case 5: return MPI_MAX; default: return MPI_MIN;
    }
}
/* MPI-3.1 sect. 5.9.2: bitwise ops on C integers and MPI_BYTE; arithmetic/min/max on integers and
 * floating point; MPI_CHAR is a character type, valid for no reduction. */
static int op_valid(int op, int dt)
{
    int cls = dtypes[dt].cls;
    if (cls == 1) return 0;
    if (op <= 2) return cls == 0 || cls == 2;
    return cls == 2 || cls == 3;
}

/* ------------------------------------------------------------------ options */
enum policy { P_FIXED, P_PREDICT, P_TIME, P_FROM };
enum { R_RSE = 1, R_COVMEAN = 2, R_COVMEDIAN = 4 };

typedef struct {
    /* what */
    call_t calls[MAXCALLS]; int ncalls;
    size_t req_sizes[MAXSIZES]; int nsizes;
    int barrier_rows;
    /* how many */
    int policy;
    long nrep;
    double budget;                 /* seconds per (call, size); 0 = none */
    int rules;                     /* R_* mask */
    double thr_rse, thr_covmean, thr_covmedian;
    long w_covmean, w_covmedian;
    long pmin, pmax, pstep;
    double t_rse1, t_rse2; long b1, b2, K, tmax, tmin1, tmax1; double tnrep1_given;
    const char *nrep_from;         /* --nrep-from files */
    /* how */
    int sync_mpi_barrier;
    int order_rr;
    unsigned long long seed; int seed_given;
    int dt, op, root;
    /* output and metadata */
    const char *output;
    const char *machine, *module_name, *campaign;
    long mpirun_index;
    double mem_limit;              /* bytes per rank; 0 = MemAvailable / local ranks */
    int dry_run;
    /* for the header */
    char calls_arg[4096], algs_arg[4096], sizes_arg[4096];
} opts_t;

static opts_t O;
static int g_rank = 0, g_size = 1;
static int g_print = 1;            /* this process prints messages (rank 0, or before MPI_Init a guess) */

static void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int g_mpi_up = 0;
static void die_usage(const char *fmt, ...)
{
    if (g_print) {
        va_list ap; va_start(ap, fmt);
        fprintf(stderr, "pgmpi-bench: error: ");
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\n(pgmpi-bench --help explains all options)\n");
        va_end(ap);
        fflush(stderr);
    }
    if (g_mpi_up) {
        /* no MPI communication happened; keep the library's report out of stdout */
        fflush(stdout);
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) { dup2(fd, 1); close(fd); }
        MPI_Finalize();
    }
    exit(2);
}

static void usage(FILE *f)
{
    fprintf(f,
"Usage: mpirun -np P pgmpi-bench [OPTIONS]\n"
"\n"
"Measures MPI collectives, the mock-ups of libpgmpitune and MPI_Barrier, and writes one line per\n"
"measurement in ReproMPI's text format (header '#@key=value', column line\n"
"'test nrep msize runtime_sec algorithm', rows, '#@pgmpi ...' footer).  Run-time of a measurement =\n"
"maximum over all ranks.  Nothing is measured before every argument has been checked.\n"
"\n"
"WHAT TO MEASURE\n"
"  --calls=LIST          comma list of calls: all (default), or names like allreduce, MPI_Bcast,\n"
"                        barrier.  'all' = every collective libpgmpitune dispatches + MPI_Barrier.\n"
"  --sizes=LIST          message sizes in bytes (per lib/src/core/collectives.def: the per-process\n"
"                        block; for MPI_Reduce_scatter(_block) the whole vector).  Items: 8, 1K or\n"
"                        1KiB (=1024), 64KiB, 1M, 1MiB, 1G, and ranges A..B (powers of two from A to\n"
"                        B, e.g. 8..1M).  Default: 8,1K,64K,1M.  A size that is not a multiple of\n"
"                        the datatype (x P for MPI_Reduce_scatter_block) is rounded down (at least\n"
"                        one element) and the header says so in #@msize_rounding.\n"
"  --algorithms=LIST     all (default: 'default' and every mock-up of each call), default, tuned\n"
"                        (nothing forced: the library follows PGMPITUNE_PROFILE_DIR, as users get it), or\n"
"                        names such as allreduce_as_reduce_bcast.  A name applies to the call it\n"
"                        belongs to; 'default' to every call.\n"
"  --no-barrier-rows     do not add the MPI_Barrier rows measured next to every size (the\n"
"                        analysis uses them to warn when a call is as fast as a barrier).\n"
"  --datatype=NAME       MPI_BYTE (default), MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR,\n"
"                        MPI_SHORT, MPI_INT, MPI_UNSIGNED, MPI_LONG, MPI_LONG_LONG, MPI_FLOAT,\n"
"                        MPI_DOUBLE\n"
"  --operation=NAME      reduction operation: MPI_BOR (default), MPI_BAND, MPI_BXOR, MPI_SUM,\n"
"                        MPI_PROD, MPI_MAX, MPI_MIN (must suit the datatype)\n"
"  --root=R              root of Bcast/Gather/Reduce/Scatter (default 0)\n"
"\n"
"HOW MANY REPETITIONS (one policy; --time-budget combines with each)\n"
"  --nrep=N              fixed: N measurements per (call, size, algorithm).  Default policy, N=100.\n"
"  --predict=RULES       NREP prediction (PGMPI paper): RULES is a comma list of rse, covmean,\n"
"                        covmedian; a (call, size) stops when ALL rules pass for ALL its algorithms\n"
"                        (checked after min, then every step measurements) or at max.\n"
"     --rse-thres=X         relative standard error of the mean below X      (default 0.025)\n"
"     --covmean-thres=X     COV of the last W running means below X          (default 0.01)\n"
"     --covmean-window=W                                                      (default 20)\n"
"     --covmedian-thres=X   COV of the last W running medians below X        (default 0.01)\n"
"     --covmedian-window=W                                                    (default 20)\n"
"     --pred-params=min=20,max=1000,step=10   (alias --rep-prediction)\n"
"  --time-rule[=PARAMS]  time-based rule (PGMPITuneLib paper, sect. 4.2): per call, measure at\n"
"                        1 byte until RSE < rse1 (between min1 and max1 repetitions); t_nrep1 = the\n"
"                        time those measurements took (sum of run-times; slowest algorithm).  Per\n"
"                        size: b1 pilot measurements, b2 more if their RSE >= rse2, l = their minimum,\n"
"                        nrep = max(ceil(t_nrep1 / l), K) (at most max).  Pilots are not written.\n"
"                        PARAMS: rse1=0.01,rse2=0.05,b1=5,b2=5,K=10,max=10000,min1=10,max1=1000,\n"
"                        tnrep1=SECONDS (skip the 1-byte step; e.g. the maximum over earlier runs)\n"
"  --nrep-from=FILES     the repetitions per (call, size) from the '#@pgmpi nrep' lines of earlier\n"
"                        pgmpi-bench outputs (comma list; the maximum over the files), e.g. of\n"
"                        --predict runs: predict once, then measure many mpiruns with those counts\n"
"  --time-budget=SEC     stop a (call, size) once its measurements (with synchronisation) took SEC\n"
"                        seconds, whatever the policy says\n"
"\n"
"HOW TO MEASURE\n"
"  --sync=dissem|mpi_barrier   synchronisation before every measurement (default dissem:\n"
"                        dissemination barrier with PMPI_Sendrecv; processes leave it nearly together)\n"
"  --order=shuffle|roundrobin  order of the (call, algorithm) pairs of one size in each round\n"
"                        (default shuffle: a new random permutation every round)\n"
"  --seed=N              seed of the shuffle (default: drawn on rank 0); written to #@seed\n"
"\n"
"OUTPUT AND METADATA\n"
"  --output=FILE         write the results to FILE (new or empty; default stdout).  libpgmpitune's\n"
"                        #@pgmpi report (printed at MPI_Finalize, PGMPITUNE_VERBOSE=1 is set by\n"
"                        pgmpi-bench) is appended to the same file.\n"
"  --machine=NAME        #@machine (default $PGMPI_MACHINE, else the host name)\n"
"  --module-name=NAME    #@module (default $PGMPI_MODULE, else $LOADEDMODULES)\n"
"  --mpirun-index=I      #@mpirun_index, the index of this mpirun in a series (default 0)\n"
"  --campaign=NAME       #@campaign\n"
"  --mem-limit=BYTES     memory per rank the buffers may use (default: MemAvailable of\n"
"                        /proc/meminfo divided by the ranks on this node); sizes accept K/M/G\n"
"  --dry-run             print the plan (calls x sizes x algorithms, nrep policy, buffer memory)\n"
"                        and exit without measuring\n"
"  --help                this text\n"
"  --config=FILE, --ppath=DIR   libpgmpitune's own options (pool sizes, profile directory); they\n"
"                        are left to the library.  Its --module= forcing is refused: use --algorithms.\n"
"\n"
"EXAMPLES\n"
"  mpirun -np 4 pgmpi-bench --calls=allreduce,bcast --sizes=8,1K,64K,1M --nrep=1000 --output=r0.txt\n"
"  srun pgmpi-bench --predict=rse,covmedian --sizes=1..1M --mpirun-index=3 --campaign=nightly\n"
"  mpirun -np 2 pgmpi-bench --calls=allreduce --algorithms=all --time-rule=b1=5,b2=5,K=20\n"
"\n"
"Exit status: 0 ok, 2 bad arguments or a plan that does not fit in memory (nothing measured),\n"
"1 an MPI or I/O error during the run.\n");
}

/* ------------------------------------------------------------------ parsing helpers */
static int streq_ci(const char *a, const char *b) { return strcasecmp(a, b) == 0; }

static int parse_bytes(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || v < 0) return -1;
    double mult = 1;
    if (*end) {
        if (streq_ci(end, "k") || streq_ci(end, "kib") || streq_ci(end, "kb")) mult = 1024.0;
        else if (streq_ci(end, "m") || streq_ci(end, "mib") || streq_ci(end, "mb")) mult = 1024.0 * 1024;
        else if (streq_ci(end, "g") || streq_ci(end, "gib") || streq_ci(end, "gb")) mult = 1024.0 * 1024 * 1024;
        else if (streq_ci(end, "t") || streq_ci(end, "tib") || streq_ci(end, "tb")) mult = 1024.0 * 1024 * 1024 * 1024;
        else if (streq_ci(end, "b")) mult = 1;
        else return -1;
    }
    v *= mult;
    if (v != floor(v) || v > 9.0e18) return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_long(const char *s, long *out, long lo)
{
    char *end; errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo) return -1;
    *out = v; return 0;
}

static int parse_double(const char *s, double *out, double lo)
{
    char *end; errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !(v >= lo) || !isfinite(v)) return -1;
    *out = v; return 0;
}

static void fmt_bytes(double b, char *buf, size_t len)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int i = 0;
    while (b >= 1024.0 && i < 5) { b /= 1024.0; i++; }
    if (i == 0) snprintf(buf, len, "%.0f B", b);
    else snprintf(buf, len, "%.1f %s", b, u[i]);
}

/* all valid call names, for messages */
static void list_calls(char *buf, size_t len)
{
    size_t o = 0;
    o += snprintf(buf + o, len - o, "all");
    for (int c = 0; c < pgmpitune_ncollectives() && o < len; c++)
        o += snprintf(buf + o, len - o, ", %s (%s)", pgmpitune_collective_key(c), pgmpitune_collective_mpi_name(c));
    if (o < len) snprintf(buf + o, len - o, ", barrier (MPI_Barrier)");
}

static int kind_of_key(const char *key)
{
    for (int k = 0; k < K_UNKNOWN; k++) if (strcmp(kind_keys[k], key) == 0) return k;
    return K_UNKNOWN;
}

static void add_call(int coll)
{
    for (int i = 0; i < O.ncalls; i++) if (O.calls[i].coll == coll) return;
    if (O.ncalls >= MAXCALLS) die_usage("too many calls");
    call_t *c = &O.calls[O.ncalls++];
    memset(c, 0, sizeof *c);
    c->coll = coll;
    if (coll < 0) { c->kind = K_BARRIER; c->mpi_name = "MPI_Barrier"; }
    else {
        c->kind = kind_of_key(pgmpitune_collective_key(coll));
        c->mpi_name = pgmpitune_collective_mpi_name(coll);
        if (c->kind == K_UNKNOWN)
            die_usage("libpgmpitune dispatches %s, which this pgmpi-bench does not know how to call; "
                      "update lib/bench/pgmpi_bench.c", c->mpi_name);
    }
}

static int barrier_explicit = 0;
static void parse_calls(const char *arg)
{
    char *dup = strdup(arg), *save = NULL;
    O.ncalls = 0;
    for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*t)) t++;
        if (!*t) continue;
        if (streq_ci(t, "all")) {
            for (int c = 0; c < pgmpitune_ncollectives(); c++) add_call(c);
            add_call(-1);
            continue;
        }
        if (streq_ci(t, "barrier") || streq_ci(t, "MPI_Barrier")) { add_call(-1); barrier_explicit = 1; continue; }
        int c = pgmpitune_collective_lookup(t);
        if (c < 0) {   /* accept any capitalisation of the MPI name */
            for (int i = 0; i < pgmpitune_ncollectives(); i++)
                if (streq_ci(t, pgmpitune_collective_mpi_name(i)) || streq_ci(t, pgmpitune_collective_key(i))) c = i;
        }
        if (c < 0) {
            char valid[4096]; list_calls(valid, sizeof valid);
            die_usage("--calls: unknown call '%s'; valid: %s", t, valid);
        }
        add_call(c);
    }
    free(dup);
    if (O.ncalls == 0) die_usage("--calls: empty list");
}

static void list_algs(char *buf, size_t len)
{
    size_t o = 0;
    o += snprintf(buf + o, len - o, "all, default");
    for (int i = 0; i < O.ncalls && o < len; i++) {
        int c = O.calls[i].coll;
        if (c < 0) continue;
        for (int a = 1; a < pgmpitune_nalgorithms(c) && o < len; a++)
            o += snprintf(buf + o, len - o, ", %s", pgmpitune_algorithm_name(c, a));
    }
}

/* Pseudo-algorithm "tuned": nothing forced, the library follows its profiles
 * (PGMPITUNE_PROFILE_DIR) -- what a user gets; validation jobs measure it against "default". */
#define ALG_TUNED (-1)

static const char *alg_label(const call_t *c, int a)
{
    if (c->coll < 0) return "default";
    if (a == ALG_TUNED) return "tuned";
    return pgmpitune_algorithm_name(c->coll, a);
}

static void parse_algs(const char *arg)
{
    int any_named[MAXCALLS] = {0};
    for (int i = 0; i < O.ncalls; i++) O.calls[i].nalg = 0;
    char *dup = strdup(arg), *save = NULL;
    for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*t)) t++;
        if (!*t) continue;
        int all = streq_ci(t, "all"), matched = 0;
        if (streq_ci(t, "tuned")) {
            for (int i = 0; i < O.ncalls; i++) {
                call_t *c = &O.calls[i];
                if (c->coll < 0) continue;
                int dupl = 0;
                for (int k = 0; k < c->nalg; k++) if (c->alg[k] == ALG_TUNED) dupl = 1;
                if (!dupl) {
                    if (c->nalg >= MAXALGS) die_usage("too many algorithms for %s", c->mpi_name);
                    c->alg[c->nalg++] = ALG_TUNED;
                }
                any_named[i] = 1;
            }
            continue;
        }
        for (int i = 0; i < O.ncalls; i++) {
            call_t *c = &O.calls[i];
            int na = c->coll < 0 ? 1 : pgmpitune_nalgorithms(c->coll);
            for (int a = 0; a < na; a++) {
                const char *name = c->coll < 0 ? "default" : pgmpitune_algorithm_name(c->coll, a);
                if (all || strcmp(name, t) == 0) {
                    int dupl = 0;
                    for (int k = 0; k < c->nalg; k++) if (c->alg[k] == a) dupl = 1;
                    if (!dupl) {
                        if (c->nalg >= MAXALGS) die_usage("too many algorithms for %s", c->mpi_name);
                        c->alg[c->nalg++] = a;
                    }
                    matched = 1;
                    any_named[i] = 1;
                }
            }
        }
        if (!matched) {
            char valid[8192]; list_algs(valid, sizeof valid);
            /* say which call a known name belongs to when that call was not selected */
            for (int c = 0; c < pgmpitune_ncollectives(); c++)
                if (pgmpitune_algorithm_lookup(c, t) > 0)
                    die_usage("--algorithms: '%s' is a mock-up of %s, which is not in --calls; "
                              "valid for the selected calls: %s", t, pgmpitune_collective_mpi_name(c), valid);
            die_usage("--algorithms: unknown algorithm '%s'; valid for the selected calls: %s", t, valid);
        }
    }
    free(dup);
    /* a call none of whose algorithms was named is measured with nothing: drop it, but keep at least one */
    int k = 0;
    for (int i = 0; i < O.ncalls; i++) if (any_named[i] && O.calls[i].nalg > 0) O.calls[k++] = O.calls[i];
    if (k == 0) die_usage("--algorithms: nothing to measure");
    O.ncalls = k;
}

static void add_size(size_t n)
{
    for (int i = 0; i < O.nsizes; i++) if (O.req_sizes[i] == n) return;
    if (O.nsizes >= MAXSIZES) die_usage("--sizes: more than %d sizes", MAXSIZES);
    O.req_sizes[O.nsizes++] = n;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static void parse_sizes(const char *arg)
{
    char *dup = strdup(arg), *save = NULL;
    O.nsizes = 0;
    for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*t)) t++;
        if (!*t) continue;
        char *dots = strstr(t, "..");
        if (dots) {
            *dots = 0;
            size_t a, b;
            if (parse_bytes(t, &a) || parse_bytes(dots + 2, &b) || a == 0 || b < a)
                die_usage("--sizes: bad range '%s..%s' (expected A..B with 0 < A <= B, e.g. 8..1M)", t, dots + 2);
            for (size_t s = a; s <= b; s *= 2) { add_size(s); if (s > SIZE_MAX / 2) break; }
        } else {
            size_t n;
            if (parse_bytes(t, &n))
                die_usage("--sizes: bad size '%s' (expected bytes like 8, 1K, 64KiB, 1M, 2G or a range 8..1M)", t);
            add_size(n);
        }
    }
    free(dup);
    if (O.nsizes == 0) die_usage("--sizes: empty list");
    qsort(O.req_sizes, (size_t)O.nsizes, sizeof O.req_sizes[0], cmp_size);
}

/* key=value,key=value parameter lists */
typedef struct { const char *key; char type; void *dst; double lo; } param_t;
static void parse_params(const char *opt, const char *arg, param_t *ps, int np)
{
    char *dup = strdup(arg), *save = NULL;
    for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        if (!eq) die_usage("%s: expected key=value, got '%s'", opt, t);
        *eq = 0;
        int found = 0;
        for (int i = 0; i < np; i++) {
            if (strcmp(ps[i].key, t) != 0) continue;
            found = 1;
            int bad = ps[i].type == 'l' ? parse_long(eq + 1, ps[i].dst, (long)ps[i].lo)
                                        : parse_double(eq + 1, ps[i].dst, ps[i].lo);
            if (bad) die_usage("%s: bad value '%s' for %s (%s >= %g)", opt, eq + 1, t,
                               ps[i].type == 'l' ? "integer" : "number", ps[i].lo);
        }
        if (!found) {
            char valid[512]; size_t o = 0;
            for (int i = 0; i < np; i++) o += snprintf(valid + o, sizeof valid - o, "%s%s", i ? ", " : "", ps[i].key);
            die_usage("%s: unknown parameter '%s'; valid: %s", opt, t, valid);
        }
    }
    free(dup);
}

static void parse_rules(const char *arg)
{
    char *dup = strdup(arg), *save = NULL;
    O.rules = 0;
    for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (streq_ci(t, "rse")) O.rules |= R_RSE;
        else if (streq_ci(t, "covmean") || streq_ci(t, "cov_mean")) O.rules |= R_COVMEAN;
        else if (streq_ci(t, "covmedian") || streq_ci(t, "cov_median")) O.rules |= R_COVMEDIAN;
        else die_usage("--predict: unknown rule '%s'; valid: rse, covmean, covmedian (comma list)", t);
    }
    free(dup);
    if (!O.rules) die_usage("--predict: no rule given; valid: rse, covmean, covmedian");
}

/* --nrep-from: '#@pgmpi nrep <MPI_Name> <bytes> <n>' lines of earlier runs (PGMPI's Step NREP ->
 * Step MEASURE); several files: the maximum per (call, size), as the PGMPI paper does over 3 predictions. */
typedef struct { char name[64]; size_t bytes; long n; } nrepent_t;
static nrepent_t *g_nt; static int g_nnt;
static void load_nrep_files(const char *arg)
{
    char *dup = strdup(arg), *save = NULL;
    for (char *f = strtok_r(dup, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
        FILE *in = fopen(f, "r");
        if (!in) die_usage("--nrep-from: cannot read %s: %s", f, strerror(errno));
        char line[1024]; int lineno = 0, found = 0;
        while (fgets(line, sizeof line, in)) {
            lineno++;
            if (strncmp(line, "#@pgmpi nrep ", 13) != 0) continue;
            char name[64]; unsigned long long b; long n;
            if (sscanf(line + 13, "%63s %llu %ld", name, &b, &n) != 3 || n < 1)
                die_usage("--nrep-from: %s:%d: expected '#@pgmpi nrep <MPI_Name> <bytes> <n>', got '%.*s'", f, lineno,
                          (int)strcspn(line, "\n"), line);
            found = 1;
            int k;
            for (k = 0; k < g_nnt; k++) if (strcmp(g_nt[k].name, name) == 0 && g_nt[k].bytes == (size_t)b) break;
            if (k == g_nnt) {
                g_nt = realloc(g_nt, (size_t)(g_nnt + 1) * sizeof *g_nt);
                snprintf(g_nt[k].name, sizeof g_nt[k].name, "%s", name);
                g_nt[k].bytes = (size_t)b; g_nt[k].n = 0; g_nnt++;
            }
            if (n > g_nt[k].n) g_nt[k].n = n;
        }
        fclose(in);
        if (!found) die_usage("--nrep-from: %s has no '#@pgmpi nrep' lines (is it pgmpi-bench output?)", f);
    }
    free(dup);
}
static long nrep_lookup(const char *name, size_t bytes)
{
    for (int k = 0; k < g_nnt; k++) if (strcmp(g_nt[k].name, name) == 0 && g_nt[k].bytes == bytes) return g_nt[k].n;
    return -1;
}

static int rank_guess_before_init(void)
{
    const char *v[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"};
    for (int i = 0; i < 4; i++) { const char *s = getenv(v[i]); if (s && *s) return atoi(s); }
    return 0;
}

static void parse_args(int argc, char **argv)
{
    memset(&O, 0, sizeof O);
    O.barrier_rows = 1; O.policy = P_FIXED; O.nrep = 100;
    O.thr_rse = 0.025; O.thr_covmean = 0.01; O.thr_covmedian = 0.01; O.w_covmean = 20; O.w_covmedian = 20;
    O.pmin = 20; O.pmax = 1000; O.pstep = 10;
    O.t_rse1 = 0.01; O.t_rse2 = 0.05; O.b1 = 5; O.b2 = 5; O.K = 10; O.tmax = 10000; O.tmin1 = 10; O.tmax1 = 1000;
    O.dt = 0; O.op = 0; O.root = 0;
    const char *calls = "all", *algs = "all", *sizes = "8,1K,64K,1M", *predict = NULL, *time_rule = NULL;
    const char *pred_params = NULL, *rse = NULL, *cm = NULL, *cmw = NULL, *cd = NULL, *cdw = NULL;
    int nrep_given = 0;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (strncmp(a, "--", 2) != 0) die_usage("unexpected argument '%s'", a);
        char key[128]; const char *val = NULL;
        const char *eq = strchr(a, '=');
        if (eq) { snprintf(key, sizeof key, "%.*s", (int)(eq - a), a); val = eq + 1; }
        else snprintf(key, sizeof key, "%s", a);
#define FLAG(name) (strcmp(key, name) == 0)
#define NEEDVAL() do { if (!val) { if (i + 1 >= argc) die_usage("%s needs a value", key); val = argv[++i]; } } while (0)
        if (FLAG("--help") || FLAG("-h")) { if (g_print) usage(stdout); exit(0); }
        else if (FLAG("--dry-run")) O.dry_run = 1;
        else if (FLAG("--no-barrier-rows")) O.barrier_rows = 0;
        else if (FLAG("--calls") || FLAG("--calls-list")) { NEEDVAL(); calls = val; }
        else if (FLAG("--sizes") || FLAG("--msizes-list")) { NEEDVAL(); sizes = val; }
        else if (FLAG("--algorithms") || FLAG("--algs")) { NEEDVAL(); algs = val; }
        else if (FLAG("--nrep") || FLAG("--nrep-fixed")) {
            NEEDVAL(); if (parse_long(val, &O.nrep, 1)) die_usage("--nrep: bad value '%s' (integer >= 1)", val);
            nrep_given = 1;
        }
        else if (FLAG("--nrep-from")) { NEEDVAL(); O.nrep_from = val; }
        else if (FLAG("--time-budget")) {
            NEEDVAL(); if (parse_double(val, &O.budget, 0) || O.budget <= 0)
                die_usage("--time-budget: bad value '%s' (seconds > 0)", val);
        }
        else if (FLAG("--predict") || FLAG("--pred-method")) { NEEDVAL(); predict = val; }
        else if (FLAG("--pred-params") || FLAG("--rep-prediction")) { NEEDVAL(); pred_params = val; }
        else if (FLAG("--rse-thres") || FLAG("--var-thres")) { NEEDVAL(); rse = val; }
        else if (FLAG("--covmean-thres")) { NEEDVAL(); cm = val; }
        else if (FLAG("--covmean-window")) { NEEDVAL(); cmw = val; }
        else if (FLAG("--covmedian-thres")) { NEEDVAL(); cd = val; }
        else if (FLAG("--covmedian-window")) { NEEDVAL(); cdw = val; }
        else if (FLAG("--time-rule")) time_rule = val ? val : "";
        else if (FLAG("--sync") || FLAG("--proc-sync")) {
            NEEDVAL();
            if (streq_ci(val, "dissem") || streq_ci(val, "dissem_barrier") || streq_ci(val, "dissemination")) O.sync_mpi_barrier = 0;
            else if (streq_ci(val, "mpi_barrier") || streq_ci(val, "MPI_Barrier") || streq_ci(val, "barrier")) O.sync_mpi_barrier = 1;
            else die_usage("--sync: unknown method '%s'; valid: dissem, mpi_barrier", val);
        }
        else if (FLAG("--order")) {
            NEEDVAL();
            if (streq_ci(val, "shuffle") || streq_ci(val, "random")) O.order_rr = 0;
            else if (streq_ci(val, "roundrobin") || streq_ci(val, "round-robin")) O.order_rr = 1;
            else die_usage("--order: unknown order '%s'; valid: shuffle, roundrobin", val);
        }
        else if (FLAG("--seed")) {
            NEEDVAL(); char *end; errno = 0; O.seed = strtoull(val, &end, 10);
            if (end == val || *end || errno) die_usage("--seed: bad value '%s' (non-negative integer)", val);
            O.seed_given = 1;
        }
        else if (FLAG("--datatype")) {
            NEEDVAL(); O.dt = -1;
            for (int d = 0; d < NDTYPES; d++)
                if (streq_ci(val, dtypes[d].name) || streq_ci(val, dtypes[d].name + 4)) O.dt = d;
            if (O.dt < 0) {
                char valid[512]; size_t o = 0;
                for (int d = 0; d < NDTYPES; d++) o += snprintf(valid + o, sizeof valid - o, "%s%s", d ? ", " : "", dtypes[d].name);
                die_usage("--datatype: unknown datatype '%s'; valid: %s", val, valid);
            }
        }
        else if (FLAG("--operation") || FLAG("--op")) {
            NEEDVAL(); O.op = -1;
            for (int k = 0; k < NOPS; k++) if (streq_ci(val, opnames[k]) || streq_ci(val, opnames[k] + 4)) O.op = k;
            if (O.op < 0) die_usage("--operation: unknown operation '%s'; valid: MPI_BOR, MPI_BAND, MPI_BXOR, "
                                    "MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN", val);
        }
        else if (FLAG("--root") || FLAG("--root-proc")) {
            NEEDVAL(); long r; if (parse_long(val, &r, 0) || r > INT_MAX) die_usage("--root: bad value '%s'", val);
            O.root = (int)r;
        }
        else if (FLAG("--output")) { NEEDVAL(); O.output = val; }
        else if (FLAG("--machine")) { NEEDVAL(); O.machine = val; }
        else if (FLAG("--module-name")) { NEEDVAL(); O.module_name = val; }
        else if (FLAG("--module")) die_usage("--module=... is libpgmpitune's forcing syntax; pgmpi-bench selects "
                                             "algorithms with --algorithms (and records the module with --module-name)");
        else if (FLAG("--ppath") || FLAG("--config")) { if (!val) die_usage("%s=VALUE is passed to libpgmpitune and needs '='", key); }
        else if (FLAG("--campaign")) { NEEDVAL(); O.campaign = val; }
        else if (FLAG("--mpirun-index")) {
            NEEDVAL(); if (parse_long(val, &O.mpirun_index, 0)) die_usage("--mpirun-index: bad value '%s' (integer >= 0)", val);
        }
        else if (FLAG("--mem-limit")) {
            NEEDVAL(); size_t b; if (parse_bytes(val, &b) || b == 0) die_usage("--mem-limit: bad value '%s' (bytes, e.g. 512M)", val);
            O.mem_limit = (double)b;
        }
        else die_usage("unknown option '%s' (see --help)", key);
#undef FLAG
#undef NEEDVAL
    }
    snprintf(O.calls_arg, sizeof O.calls_arg, "%s", calls);
    snprintf(O.algs_arg, sizeof O.algs_arg, "%s", algs);
    snprintf(O.sizes_arg, sizeof O.sizes_arg, "%s", sizes);
    parse_calls(calls);
    parse_algs(algs);
    if (O.barrier_rows) {   /* MPI_Barrier rows next to every size, whatever --algorithms says */
        add_call(-1);
        for (int i = 0; i < O.ncalls; i++) if (O.calls[i].coll < 0) { O.calls[i].nalg = 1; O.calls[i].alg[0] = 0; }
    } else if (!barrier_explicit) {
        int k = 0;
        for (int i = 0; i < O.ncalls; i++) if (O.calls[i].coll >= 0) O.calls[k++] = O.calls[i];
        if (k == 0) die_usage("--no-barrier-rows leaves nothing to measure");
        O.ncalls = k;
    }
    parse_sizes(sizes);
    if (predict && time_rule) die_usage("--predict and --time-rule are two nrep policies; choose one");
    if ((predict || time_rule) && nrep_given) die_usage("--nrep fixes the repetitions; do not combine it with --predict or --time-rule");
    if (O.nrep_from && (predict || time_rule || nrep_given))
        die_usage("--nrep-from takes the repetitions from earlier runs; do not combine it with --nrep, --predict or --time-rule");
    if (O.nrep_from) { O.policy = P_FROM; load_nrep_files(O.nrep_from); }
    if (!predict && (pred_params || rse || cm || cmw || cd || cdw))
        die_usage("--pred-params/--rse-thres/--covmean-*/--covmedian-* need --predict=RULES");
    if (predict) {
        O.policy = P_PREDICT;
        parse_rules(predict);
        if (pred_params) {
            param_t ps[] = {{"min", 'l', &O.pmin, 1}, {"max", 'l', &O.pmax, 1}, {"step", 'l', &O.pstep, 1}};
            parse_params("--pred-params", pred_params, ps, 3);
        }
        if (rse && parse_double(rse, &O.thr_rse, 0)) die_usage("--rse-thres: bad value '%s'", rse);
        if (cm && parse_double(cm, &O.thr_covmean, 0)) die_usage("--covmean-thres: bad value '%s'", cm);
        if (cd && parse_double(cd, &O.thr_covmedian, 0)) die_usage("--covmedian-thres: bad value '%s'", cd);
        if (cmw && parse_long(cmw, &O.w_covmean, 2)) die_usage("--covmean-window: bad value '%s' (integer >= 2)", cmw);
        if (cdw && parse_long(cdw, &O.w_covmedian, 2)) die_usage("--covmedian-window: bad value '%s' (integer >= 2)", cdw);
        if (O.pmin > O.pmax) die_usage("--pred-params: min=%ld > max=%ld", O.pmin, O.pmax);
    }
    if (time_rule) {
        O.policy = P_TIME;
        O.tnrep1_given = -1;
        param_t ps[] = {{"rse1", 'd', &O.t_rse1, 0}, {"rse2", 'd', &O.t_rse2, 0}, {"b1", 'l', &O.b1, 1},
                        {"b2", 'l', &O.b2, 0}, {"K", 'l', &O.K, 1}, {"max", 'l', &O.tmax, 1},
                        {"min1", 'l', &O.tmin1, 2}, {"max1", 'l', &O.tmax1, 2}, {"tnrep1", 'd', &O.tnrep1_given, 0}};
        if (*time_rule) parse_params("--time-rule", time_rule, ps, 9);
        if (O.K > O.tmax) die_usage("--time-rule: K=%ld > max=%ld", O.K, O.tmax);
        if (O.tmin1 > O.tmax1) die_usage("--time-rule: min1=%ld > max1=%ld", O.tmin1, O.tmax1);
    }
    /* with libpgmpitune disabled pgmpitune_force does nothing: mock-up rows would measure the default */
    const char *dis = getenv("PGMPITUNE_DISABLE");
    if (dis && *dis && strcmp(dis, "0") && strcasecmp(dis, "no") && strcasecmp(dis, "false") && strcasecmp(dis, "off"))
        for (int i = 0; i < O.ncalls; i++)
            for (int a = 0; a < O.calls[i].nalg; a++)
                if (O.calls[i].alg[a] != 0)
                    die_usage("PGMPITUNE_DISABLE=%s switches libpgmpitune off, so %s would run the default; unset it "
                              "or use --algorithms=default", dis, alg_label(&O.calls[i], O.calls[i].alg[a]));
    /* datatype / operation suit the reductions? */
    for (int i = 0; i < O.ncalls; i++)
        if (kind_is_reduction(O.calls[i].kind) && !op_valid(O.op, O.dt))
            die_usage("%s with %s on %s is not valid MPI (bitwise ops need an integer type or MPI_BYTE, "
                      "arithmetic ops an integer or floating type; MPI_CHAR suits no reduction); choose "
                      "another --datatype or --operation", O.calls[i].mpi_name, opnames[O.op], dtypes[O.dt].name);
}

/* ------------------------------------------------------------------ per (call, size) plan */
typedef struct {
    size_t req, n;        /* requested and actual message bytes (collectives.def) */
    size_t count;         /* element count handed to the call (per block / per rank / whole) */
    size_t sbytes, rbytes;/* send / receive buffer bytes, maximum over ranks */
    size_t scratch;       /* mock-up scratch memory, maximum over the selected algorithms */
    int ok;               /* 0: does not fit an int count */
} cplan_t;

static int mul_ok(size_t a, size_t b, size_t *r)
{
    if (a && b > SIZE_MAX / a) return 0;
    *r = a * b; return 1;
}

/* the collective's buffers for n bytes on p ranks (maximum over ranks) */
static void plan_call(const call_t *c, size_t req, int p, cplan_t *cp)
{
    size_t elem = dtypes[O.dt].size, P = (size_t)p, unit = elem;
    memset(cp, 0, sizeof *cp);
    cp->req = req; cp->ok = 1;
    if (c->kind == K_BARRIER) { cp->n = req; return; }
    if (c->kind == K_RSB) unit = elem * P;
    size_t n = (req / unit) * unit;
    if (req > 0 && n == 0) n = unit;
    cp->n = n;
    size_t cnt = n / elem, np_ = 0, blk;
    int fits = mul_ok(n, P, &np_);
    switch (c->kind) {
    case K_ALLGATHER: cp->sbytes = n; cp->rbytes = np_; cp->count = cnt; break;
    case K_ALLTOALL:  cp->sbytes = np_; cp->rbytes = np_; cp->count = cnt; break;
    case K_ALLREDUCE: case K_REDUCE: case K_SCAN: cp->sbytes = n; cp->rbytes = n; cp->count = cnt; break;
    case K_BCAST:     cp->sbytes = n; cp->rbytes = 0; cp->count = cnt; break;
    case K_GATHER:    cp->sbytes = n; cp->rbytes = np_; cp->count = cnt; break;
    case K_SCATTER:   cp->sbytes = np_; cp->rbytes = n; cp->count = cnt; break;
    case K_RSB:       cp->count = cnt / P; cp->sbytes = n; cp->rbytes = cp->count * elem; break;
    case K_RS:        blk = (cnt + P - 1) / P; cp->count = cnt; cp->sbytes = n; cp->rbytes = blk * elem; break;
    default: break;
    }
    if (!fits || cp->count > INT_MAX || (c->kind == K_RS && (cnt + P - 1) / P > INT_MAX)) cp->ok = 0;
    for (int k = 0; k < c->nalg; k++) {
        if (c->alg[k] == ALG_TUNED) continue;   /* the library checks its pools itself */
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

/* ------------------------------------------------------------------ PRNG (same sequence on all ranks) */
static uint64_t rng_state;
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

static void sync_procs(void)
{
    if (O.sync_mpi_barrier) PMPI_Barrier(MPI_COMM_WORLD);
    else dissem_barrier();
}

static char *g_sbuf, *g_rbuf;
static int *g_rcounts;
static MPI_Datatype g_dt;
static MPI_Op g_op;

static int run_call(const call_t *c, const cplan_t *cp)
{
    int cnt = (int)cp->count;
    MPI_Comm w = MPI_COMM_WORLD;
    switch (c->kind) {
    case K_ALLGATHER: return MPI_Allgather(g_sbuf, cnt, g_dt, g_rbuf, cnt, g_dt, w);
    case K_ALLREDUCE: return MPI_Allreduce(g_sbuf, g_rbuf, cnt, g_dt, g_op, w);
    case K_ALLTOALL:  return MPI_Alltoall(g_sbuf, cnt, g_dt, g_rbuf, cnt, g_dt, w);
    case K_BCAST:     return MPI_Bcast(g_sbuf, cnt, g_dt, O.root, w);
    case K_GATHER:    return MPI_Gather(g_sbuf, cnt, g_dt, g_rbuf, cnt, g_dt, O.root, w);
    case K_REDUCE:    return MPI_Reduce(g_sbuf, g_rbuf, cnt, g_dt, g_op, O.root, w);
    case K_RSB:       return MPI_Reduce_scatter_block(g_sbuf, g_rbuf, cnt, g_dt, g_op, w);
    case K_RS:        return MPI_Reduce_scatter(g_sbuf, g_rbuf, g_rcounts, g_dt, g_op, w);   /* fill_rcounts() */
    case K_SCAN:      return MPI_Scan(g_sbuf, g_rbuf, cnt, g_dt, g_op, w);
    case K_SCATTER:   return MPI_Scatter(g_sbuf, cnt, g_dt, g_rbuf, cnt, g_dt, O.root, w);
    case K_BARRIER:   return MPI_Barrier(w);
    default: return MPI_ERR_OTHER;
    }
}

/* MPI_Reduce_scatter's recvcounts: count elements in blocks, the first count % p ranks get one more.
 * Called whenever a plan is installed (outside timed regions); only one Reduce_scatter per size. */
static void fill_rcounts(const call_t *c, const cplan_t *cp)
{
    if (c->kind != K_RS) return;
    size_t q = cp->count / (size_t)g_size, r = cp->count % (size_t)g_size;
    for (int i = 0; i < g_size; i++) g_rcounts[i] = (int)(q + ((size_t)i < r ? 1 : 0));
}

/* ------------------------------------------------------------------ output */
static FILE *g_out;
static void out_fail(void)
{
    fprintf(stderr, "pgmpi-bench: error: writing %s failed: %s\n", O.output ? O.output : "stdout", strerror(errno));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* ------------------------------------------------------------------ the measurement engine */
typedef struct {
    const call_t *call;
    cplan_t plan;
    int active;
    long done, target;           /* measurements per algorithm so far / at most */
    double elapsed;              /* global (max over ranks) seconds spent incl. synchronisation */
    const char *stop;            /* why it stopped */
    series_t s[MAXALGS];
    long nrep_final;
} cstate_t;

typedef struct {
    int record;                  /* write rows */
    int rules;                   /* R_* to check (0: fixed targets) */
    double thr_rse, thr_covmean, thr_covmedian;
    long w_covmean, w_covmedian, min, step;
    double budget;
} phase_t;

static double *g_loc, *g_glob;
static int *g_jobcall, *g_jobalg;
static size_t g_bufcap;
static long g_round_counter;

static int rules_pass(const cstate_t *cs, const phase_t *ph, char *why, size_t len)
{
    double worst_rse = 0, worst_cm = 0, worst_cd = 0;
    int pass = 1;
    for (int a = 0; a < cs->call->nalg; a++) {
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

static void ensure_buf(size_t n)
{
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
static void run_phase(cstate_t *cs, int nc, const phase_t *ph, char (*why)[256])
{
    for (int i = 0; i < nc; i++) {
        cs[i].done = 0; cs[i].elapsed = 0; cs[i].stop = NULL; why[i][0] = 0;
        for (int a = 0; a < cs[i].call->nalg; a++) series_clear(&cs[i].s[a]);
        if (cs[i].target <= 0) cs[i].active = 0;
    }
    int jc[MAXCALLS * MAXALGS], ja[MAXCALLS * MAXALGS];
    for (;;) {
        int nj = 0;
        long B = LONG_MAX;
        for (int i = 0; i < nc; i++) {
            if (!cs[i].active) continue;
            for (int a = 0; a < cs[i].call->nalg; a++) { jc[nj] = i; ja[nj] = a; nj++; }
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
        size_t k = 0;
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
                if (c->coll >= 0) {
                    if (c->alg[a] == ALG_TUNED) pgmpitune_unforce(c->coll);
                    else pgmpitune_force(c->coll, c->alg[a]);
                }
                double ts = MPI_Wtime();
                sync_procs();
                double t0 = MPI_Wtime();
                int rc = run_call(c, &cs[i].plan);
                double t1 = MPI_Wtime();
                if (rc != MPI_SUCCESS) {
                    char msg[MPI_MAX_ERROR_STRING]; int len = 0;
                    MPI_Error_string(rc, msg, &len);
                    fprintf(stderr, "pgmpi-bench: error: rank %d: %s %zu B %s returned %s\n", g_rank,
                            c->mpi_name, cs[i].plan.n, alg_label(c, c->alg[a]), msg);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
                g_loc[k] = t1 - t0;
                g_jobcall[k] = i; g_jobalg[k] = a;
                el[i] += t1 - ts;
                k++;
            }
        }
        /* one reduction per batch, outside every timed region: max over ranks */
        PMPI_Allreduce(g_loc, g_glob, (int)(nmeas + (size_t)nc), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        long base[MAXCALLS];
        for (int i = 0; i < nc; i++) base[i] = cs[i].done;
        long idx[MAXCALLS][MAXALGS];
        for (int i = 0; i < nc; i++) for (int a = 0; a < MAXALGS; a++) idx[i][a] = base[i];
        for (size_t m = 0; m < nmeas; m++) {
            int i = g_jobcall[m], a = g_jobalg[m];
            if (series_push(&cs[i].s[a], g_glob[m])) { fprintf(stderr, "pgmpi-bench: error: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
            if (ph->record && g_rank == 0) {
                const call_t *c = cs[i].call;
                if (fprintf(g_out, "%s %ld %zu %.10f %s\n", c->mpi_name, idx[i][a], cs[i].plan.n, g_glob[m],
                            alg_label(c, c->alg[a])) < 0) out_fail();
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
}

/* ------------------------------------------------------------------ metadata */
static void sanitize(char *s)
{
    for (; *s; s++) if (*s == '\n' || *s == '\r' || *s == '\t') *s = ' ';
}

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) s[--n] = 0;
    size_t i = 0;
    while (isspace((unsigned char)s[i])) i++;
    if (i) memmove(s, s + i, n - i + 1);
}

/* library name and version from MPI_Get_library_version */
static void mpi_identity(char *lib, size_t ll, char *ver, size_t vl, char *full, size_t fl)
{
    char s[MPI_MAX_LIBRARY_VERSION_STRING + 1] = {0};
    int len = 0;
    MPI_Get_library_version(s, &len);
    snprintf(full, fl, "%s", s);
    char *nl = strchr(full, '\n');
    if (nl) *nl = 0;      /* first line only */
    sanitize(full); trim(full);
    const char *p;
    ver[0] = 0;
    if ((p = strstr(s, "Open MPI v"))) {
        snprintf(lib, ll, "openmpi");
        sscanf(p + 10, "%63[^, \n]", ver);
    } else if ((p = strstr(s, "CRAY MPICH version"))) {
        snprintf(lib, ll, "cray-mpich"); sscanf(p + 18, " %63[^ ,\n]", ver);
    } else if ((p = strstr(s, "MVAPICH2 Version:"))) {
        snprintf(lib, ll, "mvapich2"); sscanf(p + 17, " %63s", ver);
    } else if ((p = strstr(s, "Intel(R) MPI Library"))) {
        snprintf(lib, ll, "intelmpi"); sscanf(p + 20, " %63s", ver);
    } else if ((p = strstr(s, "MPICH Version:"))) {
        snprintf(lib, ll, "mpich"); sscanf(p + 14, " %63s", ver);
    } else {
        char w[64] = {0};
        sscanf(s, "%63s", w);
        for (char *q = w; *q; q++) *q = (char)tolower((unsigned char)*q);
        snprintf(lib, ll, "%s", *w ? w : "unknown");
    }
    if (!ver[0]) { int a, b; MPI_Get_version(&a, &b); snprintf(ver, vl, "%d.%d", a, b); }
}

/* The layout as the launcher really made it, measured from inside the run (never copied from the
 * request or from Slurm's variables): nodes = MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) groups, named by
 * their lowest rank's processor name, in that order; placement = each rank's node index, run-length
 * encoded ("0:2,1:2" = ranks 0-1 on node 0, 2-3 on node 1). Collective; the numbers on every rank, the
 * strings on rank 0 only. */
typedef struct { int nodes, ppn, ppn_min; const char *source; char *hosts, *placement; } layout_t;

static layout_t layout(void)
{
    layout_t L = {1, g_size, g_size, "measured", NULL, NULL};
    MPI_Comm node;
    PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node);
    int lrank = 0, first = g_rank;
    PMPI_Comm_rank(node, &lrank);
    PMPI_Allreduce(&g_rank, &first, 1, MPI_INT, MPI_MIN, node);
    PMPI_Comm_free(&node);
    char name[MPI_MAX_PROCESSOR_NAME] = {0};
    int len = 0;
    MPI_Get_processor_name(name, &len);
    int *firsts = g_rank == 0 ? calloc((size_t)g_size, sizeof(int)) : NULL;
    char *names = g_rank == 0 ? calloc((size_t)g_size, MPI_MAX_PROCESSOR_NAME) : NULL;
    PMPI_Gather(&first, 1, MPI_INT, firsts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    PMPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (g_rank != 0) {
        int v[3];
        PMPI_Bcast(v, 3, MPI_INT, 0, MPI_COMM_WORLD);
        L.nodes = v[0]; L.ppn = v[1]; L.ppn_min = v[2];
        return L;
    }
    int *idx = calloc((size_t)g_size, sizeof(int)), *cnt = calloc((size_t)g_size, sizeof(int));
    size_t hl = 1, pl = 1;
    L.nodes = 0;
    for (int i = 0; i < g_size; i++) {          /* node index = order of the nodes' lowest ranks */
        if (firsts[i] == i) { idx[i] = L.nodes++; hl += strlen(names + (size_t)i * MPI_MAX_PROCESSOR_NAME) + 1; }
        else idx[i] = idx[firsts[i]];
        cnt[idx[i]]++;
    }
    L.ppn = 0; L.ppn_min = INT_MAX;
    for (int k = 0; k < L.nodes; k++) { if (cnt[k] > L.ppn) L.ppn = cnt[k]; if (cnt[k] < L.ppn_min) L.ppn_min = cnt[k]; }
    pl = (size_t)g_size * 24 + 1;
    L.hosts = calloc(hl, 1);
    L.placement = calloc(pl, 1);
    for (int i = 0; i < g_size; i++)
        if (firsts[i] == i) {
            if (*L.hosts) strcat(L.hosts, ",");
            strcat(L.hosts, names + (size_t)i * MPI_MAX_PROCESSOR_NAME);
        }
    size_t o = 0;
    for (int i = 0; i < g_size;) {
        int j = i;
        while (j < g_size && idx[j] == idx[i]) j++;
        o += (size_t)snprintf(L.placement + o, pl - o, "%s%d:%d", o ? "," : "", idx[i], j - i);
        i = j;
    }
    free(idx); free(cnt); free(firsts); free(names);
    int v[3] = {L.nodes, L.ppn, L.ppn_min};
    PMPI_Bcast(v, 3, MPI_INT, 0, MPI_COMM_WORLD);
    return L;
}

/* PGMPI_EXPECT_LAYOUT=<nodes>x<ppn> (the scheduler sets it from the request): the measured layout must
 * be exactly that, every node with ppn ranks. Returns 0 when it is, or when nothing is expected. */
static int layout_mismatch(const layout_t *L, char *why, size_t wl)
{
    const char *e = getenv("PGMPI_EXPECT_LAYOUT");
    int en = 0, ep = 0;
    if (!e || !*e) return 0;
    if (sscanf(e, "%dx%d", &en, &ep) != 2 || en < 1 || ep < 1) {
        snprintf(why, wl, "PGMPI_EXPECT_LAYOUT=%s is not <nodes>x<ppn>", e);
        return 1;
    }
    if (L->nodes == en && L->ppn == ep && L->ppn_min == ep) return 0;
    snprintf(why, wl, "requested %dx%d, the launcher made %d node(s) x %d%s ppn (hosts %s, placement %s)", en, ep,
             L->nodes, L->ppn, L->ppn_min != L->ppn ? "(uneven)" : "", L->hosts, L->placement);
    return 1;
}

static char g_policy[512];
static void describe_policy(void)
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

static void put(const char *k, const char *v)
{
    char buf[8192];
    snprintf(buf, sizeof buf, "%s", v ? v : "");
    sanitize(buf);
    if (fprintf(g_out, "#@%s=%s\n", k, buf) < 0) out_fail();
}
static void putl(const char *k, long v) { char b[64]; snprintf(b, sizeof b, "%ld", v); put(k, b); }

/* ------------------------------------------------------------------ footer lines kept until the end */
static char *g_footer; static size_t g_flen, g_fcap;
static void footer_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void footer_add(const char *fmt, ...)
{
    char line[1024];
    va_list ap; va_start(ap, fmt); vsnprintf(line, sizeof line, fmt, ap); va_end(ap);
    size_t n = strlen(line);
    if (g_flen + n + 1 > g_fcap) {
        g_fcap = (g_fcap + n + 1) * 2;
        g_footer = realloc(g_footer, g_fcap);
        if (!g_footer) { fprintf(stderr, "pgmpi-bench: error: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    }
    memcpy(g_footer + g_flen, line, n + 1);
    g_flen += n;
}

/* ------------------------------------------------------------------ main */
/* libpgmpitune reserves its scratch pools at MPI_Init (PGMPITUNE_MSG_POOL_BYTES, default 100 MB); a
 * mock-up whose need exceeds the pool falls back to the default, and its rows would carry the mock-up's
 * name while measuring the default.  Unless the user sized the pool, ask for what the plan needs (p from
 * the launcher's environment; the #@pgmpi fallback lines of the report show any fallback that remains). */
static void reserve_pools(void)
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

static cplan_t g_plan[MAXCALLS][MAXSIZES];

static void check_plan(double *limit_out, size_t *maxs, size_t *maxr, size_t *maxscr, int *worst_size)
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
            if (!cp->ok)
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
static void check_nrep_from(void)
{
    if (O.policy != P_FROM) return;
    for (int i = 0; i < O.ncalls; i++)
        for (int j = 0; j < O.nsizes; j++)
            if (nrep_lookup(O.calls[i].mpi_name, g_plan[i][j].n) < 0)
                die_usage("--nrep-from: no '#@pgmpi nrep %s %zu <n>' line in %s (predict that call and size first, "
                          "with the same number of ranks)", O.calls[i].mpi_name, g_plan[i][j].n, O.nrep_from);
}

static void check_pools(void)
{
    size_t msg = pgmpitune_pool_bytes(0), ints = pgmpitune_pool_bytes(1), elem = dtypes[O.dt].size;
    for (int i = 0; i < O.ncalls; i++) {
        const call_t *c = &O.calls[i];
        if (c->coll < 0) continue;
        for (int j = 0; j < O.nsizes; j++)
            for (int a = 0; a < c->nalg; a++) {
                if (c->alg[a] == ALG_TUNED) continue;   /* a tuned call that does not fit falls back by design */
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

static void rounding_notes(char *buf, size_t len)
{
    size_t o = 0; buf[0] = 0;
    for (int i = 0; i < O.ncalls; i++)
        for (int j = 0; j < O.nsizes; j++) {
            const cplan_t *cp = &g_plan[i][j];
            if (cp->n != cp->req && o < len)
                o += snprintf(buf + o, len - o, "%s%s:%zu->%zu", o ? ";" : "", O.calls[i].mpi_name, cp->req, cp->n);
        }
}

static void dry_run(double limit, size_t ms, size_t mr, size_t msc, int wj)
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
           O.sync_mpi_barrier ? "MPI_Barrier" : "dissemination barrier", O.order_rr ? "roundrobin" : "shuffle",
           O.seed_given ? "given" : "drawn at start", dtypes[O.dt].name, opnames[O.op], O.root);
    char a[32], b[32], c[32], d[32], e[32];
    fmt_bytes((double)ms + (double)mr + (double)msc, a, sizeof a);
    fmt_bytes((double)ms, b, sizeof b); fmt_bytes((double)mr, c, sizeof c); fmt_bytes((double)msc, d, sizeof d);
    fmt_bytes(limit, e, sizeof e);
    printf("estimated buffer memory per rank: %s at %zu B (send %s + receive %s + mock-up scratch %s); "
           "available per rank: %s\n", a, O.req_sizes[wj], b, c, d, e);
    printf("output: %s\n", O.output ? O.output : "stdout");
}

int main(int argc, char **argv)
{
    g_print = rank_guess_before_init() == 0;
    parse_args(argc, argv);
    /* the library's #@pgmpi report at MPI_Finalize belongs in the output */
    setenv("PGMPITUNE_VERBOSE", "1", 1);
    reserve_pools();
    time_t start_wall = time(NULL);
    MPI_Init(&argc, &argv);
    g_mpi_up = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    g_print = g_rank == 0;
    if (O.root >= g_size) die_usage("--root=%d but there are only %d ranks", O.root, g_size);
    layout_t L = layout();
    /* Node-aware mock-ups fall back on one node: their rows would carry the default's timings under
     * their names. Not measured there (named in the header). */
    char skipped[2048] = "";
    if (L.nodes == 1)
        for (int i = 0; i < O.ncalls; i++) {
            call_t *c = &O.calls[i];
            int k = 0;
            for (int a = 0; a < c->nalg; a++) {
                if (c->alg[a] != ALG_TUNED && c->coll >= 0 && pgmpitune_algorithm_node_aware(c->coll, c->alg[a])) {
                    size_t o = strlen(skipped);
                    snprintf(skipped + o, sizeof skipped - o, "%s%s", o ? "," : "",
                             pgmpitune_algorithm_name(c->coll, c->alg[a]));
                    continue;
                }
                c->alg[k++] = c->alg[a];
            }
            c->nalg = k;
        }
    double limit; size_t ms, mr, msc; int wj;
    check_plan(&limit, &ms, &mr, &msc, &wj);
    check_pools();
    check_nrep_from();
    describe_policy();
    if (O.dry_run) {
        dry_run(limit, ms, mr, msc, wj);
        fflush(stdout);
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) { dup2(fd, 1); close(fd); }
        MPI_Finalize();
        return 0;
    }
    /* ---- from here on: MPI communication (all checks passed) */
    int ok = 1;
    unsigned long long seed = O.seed;
    if (g_rank == 0) {
        struct stat st;
        if (O.output && stat(O.output, &st) == 0 && st.st_size > 0) {
            fprintf(stderr, "pgmpi-bench: error: --output %s exists and is not empty; one file per mpirun "
                    "(remove it or choose another name)\n", O.output);
            ok = 0;
        } else if (O.output) {
            g_out = fopen(O.output, "a");
            if (!g_out) { fprintf(stderr, "pgmpi-bench: error: cannot open --output %s: %s\n", O.output, strerror(errno)); ok = 0; }
        } else g_out = stdout;
        if (g_out) setvbuf(g_out, NULL, _IOFBF, 1 << 20);
        if (!O.seed_given) seed = ((unsigned long long)time(NULL) << 20) ^ (unsigned long long)getpid() ^ (unsigned long long)clock();
    }
    unsigned long long hdr[2] = {(unsigned long long)ok, seed};
    PMPI_Bcast(hdr, 2, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    if (!hdr[0]) {   /* keep the library's report out of stdout: nothing was measured */
        fflush(stdout);
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) { dup2(fd, 1); close(fd); }
        MPI_Finalize();
        return 2;
    }
    seed = hdr[1];
    rng_state = seed;
    {   /* a launcher that did not make the requested layout is an error of this run, not a relabel */
        char why[1024] = "";
        int bad = g_rank == 0 ? layout_mismatch(&L, why, sizeof why) : 0;
        PMPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (bad) {
            if (g_rank == 0) fprintf(stderr, "pgmpi-bench: error: layout: %s\n", why);
            fflush(stdout);
            int fd = open("/dev/null", O_WRONLY);
            if (fd >= 0) { dup2(fd, 1); close(fd); }
            MPI_Finalize();
            return 3;
        }
    }
    g_dt = dtype_handle(O.dt);
    g_op = op_handle(O.op);
    { int sz; MPI_Type_size(g_dt, &sz);
      if ((size_t)sz != dtypes[O.dt].size) { if (!g_rank) fprintf(stderr, "pgmpi-bench: error: %s has %d bytes here, expected %zu\n", dtypes[O.dt].name, sz, dtypes[O.dt].size); MPI_Abort(MPI_COMM_WORLD, 1); } }

    /* buffers for the largest plan; only the root needs the big side of Gather/Scatter, but the
     * memory check assumed the worst rank, so every rank allocates the same */
    size_t sb = 0, rb = 0;
    for (int i = 0; i < O.ncalls; i++) for (int j = 0; j < O.nsizes; j++) {
        if (g_plan[i][j].sbytes > sb) sb = g_plan[i][j].sbytes;
        if (g_plan[i][j].rbytes > rb) rb = g_plan[i][j].rbytes;
    }
    g_sbuf = calloc(sb ? sb : 1, 1);
    g_rbuf = calloc(rb ? rb : 1, 1);
    g_rcounts = calloc((size_t)g_size, sizeof *g_rcounts);
    if (!g_sbuf || !g_rbuf || !g_rcounts) {
        fprintf(stderr, "pgmpi-bench: error: rank %d: cannot allocate %zu + %zu buffer bytes\n", g_rank, sb, rb);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(g_sbuf, 0, sb ? sb : 1);   /* touch the pages before measuring */
    memset(g_rbuf, 0, rb ? rb : 1);

    if (g_rank == 0) {
        char lib[64], ver[64], full[MPI_MAX_LIBRARY_VERSION_STRING + 1], host[256] = {0}, tbuf[64], b[256];
        mpi_identity(lib, sizeof lib, ver, sizeof ver, full, sizeof full);
        gethostname(host, sizeof host - 1);
        const char *machine = O.machine ? O.machine : getenv("PGMPI_MACHINE");
        if (!machine || !*machine) machine = host;
        const char *module = O.module_name ? O.module_name : getenv("PGMPI_MODULE");
        if (!module) module = getenv("LOADEDMODULES");
        const char *job = getenv("SLURM_JOB_ID");
        strftime(tbuf, sizeof tbuf, "%Y-%m-%dT%H:%M:%SZ", gmtime(&start_wall));
        put("pgmpi_format", "1");
        put("pgmpi_bench_version", BENCH_VERSION);
        put("machine", machine);
        put("hostname", host);
        put("mpi_library", lib);
        put("mpi_version", ver);
        put("mpi_library_string", full);
        { int a, c; MPI_Get_version(&a, &c); snprintf(b, sizeof b, "%d.%d", a, c); put("mpi_standard", b); }
        put("module", module ? module : "");
        put("loaded_modules", getenv("LOADEDMODULES") ? getenv("LOADEDMODULES") : "");
        putl("nodes", L.nodes);
        putl("ppn", L.ppn);
        if (L.ppn_min != L.ppn) putl("ppn_min", L.ppn_min);
        put("nodes_source", L.source);
        put("hosts", L.hosts);
        put("placement", L.placement);
        if (*skipped) put("skipped_on_one_node", skipped);
        putl("nprocs", g_size);
        putl("mpirun_index", O.mpirun_index);
        put("slurm_job_id", job ? job : "");
        put("campaign", O.campaign ? O.campaign : "");
        put("start_time", tbuf);
        put("clock", "MPI_Wtime");
        put("clocktype", "local");
        snprintf(b, sizeof b, "%.3g", MPI_Wtick()); put("wtick_sec", b);
        put("sync", O.sync_mpi_barrier ? "MPI_Barrier" : "dissem_barrier");
        put("procsync", O.sync_mpi_barrier ? "MPI_Barrier" : "dissem_barrier");
        put("clocksync", "None");
        put("runtime_reduction", "max_over_ranks_per_measurement;reduced_per_batch_after_timing");
        put("nrep_policy", g_policy);
        putl("nrep", O.policy == P_FIXED ? O.nrep : 0);
        if (O.budget > 0) { snprintf(b, sizeof b, "%g", O.budget); put("time_budget_sec", b); }
        put("order", O.order_rr ? "roundrobin" : "shuffle");
        snprintf(b, sizeof b, "%llu", seed); put("seed", b);
        put("datatype", dtypes[O.dt].name);
        putl("datatype_size_bytes", (long)dtypes[O.dt].size);
        put("operation", opnames[O.op]);
        putl("root_proc", O.root);
        put("calls_arg", O.calls_arg);
        put("algorithms_arg", O.algs_arg);
        put("msizes_arg", O.sizes_arg);
        char notes[4096]; rounding_notes(notes, sizeof notes);
        put("msize_rounding", notes);
        char cmd[4096]; size_t o = 0; cmd[0] = 0;
        for (int i = 0; i < argc && o < sizeof cmd; i++) o += snprintf(cmd + o, sizeof cmd - o, "%s%s", i ? " " : "", argv[i]);
        put("command_line", cmd);
        if (fprintf(g_out, "test nrep msize runtime_sec algorithm\n") < 0) out_fail();
        fflush(g_out);
    }

    cstate_t cs[MAXCALLS];
    memset(cs, 0, sizeof cs);
    char (*why)[256] = calloc(MAXCALLS, sizeof *why);
    int nc = O.ncalls;
    for (int i = 0; i < nc; i++) { cs[i].call = &O.calls[i]; for (int a = 0; a < MAXALGS; a++) series_init(&cs[i].s[a]); }
    phase_t ph = {0};
    ph.step = O.pstep; ph.min = O.pmin;
    double tnrep1[MAXCALLS];

    if (O.policy == P_TIME) {
        /* step (1): t_nrep1 per call at 1 byte (rounded to one element of the call) */
        for (int i = 0; i < nc; i++) {
            plan_call(&O.calls[i], 1, g_size, &cs[i].plan);
            fill_rcounts(&O.calls[i], &cs[i].plan);
            cs[i].active = 1; cs[i].target = O.tmax1;
            tnrep1[i] = O.tnrep1_given;
        }
        if (O.tnrep1_given < 0) {
            phase_t cal = {0};
            cal.rules = R_RSE; cal.thr_rse = O.t_rse1; cal.min = O.tmin1; cal.step = O.pstep;
            run_phase(cs, nc, &cal, why);
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
        for (int i = 0; i < nc; i++) { cs[i].plan = g_plan[i][j]; fill_rcounts(&O.calls[i], &cs[i].plan); }
        /* pick the calls measured at this size (MPI_Barrier rows: always, unless --no-barrier-rows and
         * MPI_Barrier was not asked for) */
        int sel[MAXCALLS];
        for (int i = 0; i < nc; i++) sel[i] = 1;
        ph.record = 1; ph.budget = O.budget;
        if (O.policy == P_FIXED || O.policy == P_FROM) {
            for (int i = 0; i < nc; i++) {
                cs[i].active = sel[i];
                cs[i].target = O.policy == P_FIXED ? O.nrep : nrep_lookup(O.calls[i].mpi_name, cs[i].plan.n);
            }
            ph.rules = 0;
        } else if (O.policy == P_PREDICT) {
            ph.rules = O.rules; ph.thr_rse = O.thr_rse; ph.thr_covmean = O.thr_covmean;
            ph.thr_covmedian = O.thr_covmedian; ph.w_covmean = O.w_covmean; ph.w_covmedian = O.w_covmedian;
            for (int i = 0; i < nc; i++) { cs[i].active = sel[i]; cs[i].target = O.pmax; }
        } else {
            /* step (2): pilot batches b1 (+ b2) per call, not recorded */
            double lmin[MAXCALLS][MAXALGS];
            phase_t pil = {0}; pil.step = O.b1;
            for (int i = 0; i < nc; i++) { cs[i].active = sel[i]; cs[i].target = O.b1; }
            run_phase(cs, nc, &pil, why);
            int more = 0;
            for (int i = 0; i < nc; i++) {
                int need = 0;
                for (int a = 0; a < O.calls[i].nalg; a++) {
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
                    for (int a = 0; a < O.calls[i].nalg; a++)
                        if (cs[i].s[a].n && series_min(&cs[i].s[a]) < lmin[i][a]) lmin[i][a] = series_min(&cs[i].s[a]);
            }
            /* step (3): nrep = max(ceil(t_nrep1 / l_min), K), the largest over the call's algorithms */
            for (int i = 0; i < nc; i++) {
                long nrep = O.K;
                for (int a = 0; a < O.calls[i].nalg; a++) {
                    double l = lmin[i][a];
                    double r = l > 0 ? ceil(tnrep1[i] / l) : (double)O.tmax;
                    if (r > (double)O.tmax) r = (double)O.tmax;
                    if ((long)r > nrep) nrep = (long)r;
                }
                cs[i].active = sel[i]; cs[i].target = nrep;
            }
            ph.rules = 0;
        }
        run_phase(cs, nc, &ph, why);
        if (g_rank == 0 && fflush(g_out)) out_fail();   /* a killed job keeps the sizes it finished */
        for (int i = 0; i < nc; i++) {
            footer_add("#@pgmpi nrep %s %zu %ld\n", O.calls[i].mpi_name, cs[i].plan.n, cs[i].done);
            footer_add("# nrep %s %zu %ld stop=%s elapsed_sec=%.6f%s%s\n", O.calls[i].mpi_name, cs[i].plan.n,
                       cs[i].done, cs[i].stop ? cs[i].stop : "none", cs[i].elapsed, why[i][0] ? " " : "", why[i]);
        }
    }

    if (g_rank == 0) {
        if (g_flen && fputs(g_footer, g_out) < 0) out_fail();
        if (fprintf(g_out, "# Execution time: %lds\n", (long)(time(NULL) - start_wall)) < 0) out_fail();
        if (fflush(g_out)) out_fail();
    }
    /* libpgmpitune prints its #@pgmpi report on rank 0's stdout inside MPI_Finalize: point stdout at
     * the output file for that moment */
    int saved = -1;
    if (g_rank == 0 && O.output) {
        fflush(stdout);
        saved = dup(1);
        dup2(fileno(g_out), 1);
    }
    MPI_Finalize();
    if (g_rank == 0) {
        fflush(stdout);
        if (saved >= 0) { dup2(saved, 1); close(saved); }
        if (O.output) fclose(g_out);
    }
    for (int i = 0; i < nc; i++) for (int a = 0; a < MAXALGS; a++) series_free(&cs[i].s[a]);
    free(why); free(g_sbuf); free(g_rbuf); free(g_rcounts); free(g_loc); free(g_glob); free(g_jobcall); free(g_jobalg); free(g_footer);
    return 0;
}
