/* pgmpi-bench: the command line (see bench.h for the split). */
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

int kind_is_reduction(int k) { const bench_call_t *b = bench_call_of(k); return b && (b->flags & BC_REDUCTION); }

/* ------------------------------------------------------------------ datatypes and ops */
const dtinfo_t dtypes[] = {
    {"MPI_BYTE", 1, 0}, {"MPI_CHAR", 1, 1}, {"MPI_SIGNED_CHAR", 1, 2}, {"MPI_UNSIGNED_CHAR", 1, 2},
    {"MPI_SHORT", sizeof(short), 2}, {"MPI_INT", sizeof(int), 2}, {"MPI_UNSIGNED", sizeof(unsigned), 2},
    {"MPI_LONG", sizeof(long), 2}, {"MPI_LONG_LONG", sizeof(long long), 2},
    {"MPI_FLOAT", sizeof(float), 3}, {"MPI_DOUBLE", sizeof(double), 3},
};
const int NDTYPES = (int)(sizeof dtypes / sizeof dtypes[0]);
MPI_Datatype dtype_handle(int i)
{
    switch (i) {
    case 0: return MPI_BYTE; case 1: return MPI_CHAR; case 2: return MPI_SIGNED_CHAR;
    case 3: return MPI_UNSIGNED_CHAR; case 4: return MPI_SHORT; case 5: return MPI_INT;
    case 6: return MPI_UNSIGNED; case 7: return MPI_LONG; case 8: return MPI_LONG_LONG;
    case 9: return MPI_FLOAT; default: return MPI_DOUBLE;
    }
}
const char *opnames[] = {"MPI_BOR", "MPI_BAND", "MPI_BXOR", "MPI_SUM", "MPI_PROD", "MPI_MAX", "MPI_MIN"};
MPI_Op op_handle(int i)
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


opts_t O;
const char *const sync_names[] = {"dissem_barrier", "MPI_Barrier", "window", "roundtime"};
int g_rank = 0, g_size = 1;
int g_print = 1;            /* this process prints messages (rank 0, or before MPI_Init a guess) */

int g_mpi_up = 0;
void die_usage(const char *fmt, ...)
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
"                        belongs to; 'default' to every call.  default_control (reserved label): the\n"
"                        default measured a second time, interleaved like any algorithm (a control\n"
"                        arm).  default,tuned: the profile's choice against the default, interleaved\n"
"                        measurement by measurement in one mpirun (validation).\n"
"                        native:NAME[:seg=BYTES] (native:all for every one): the MPI library's own\n"
"                        algorithm NAME, as the library names it (--list-native), measured next to\n"
"                        the default and the mock-ups in the same rounds; seg= sets Open MPI's\n"
"                        segment size (MPICH has none).  A name applies to every call that has it.\n"
"                        Intel MPI: native:PRESET, alone on its call when the environment forces it\n"
"                        (I_MPI_ADJUST_<COLL>=PRESET, read at MPI_Init); with I_MPI_ADJUST_<COLL>\n"
"                        unset, several presets of a call interleaved, each on a communicator of\n"
"                        its own (comm_id hint, a tuning file written as I_MPI_TUNING), nothing else\n"
"                        on that call (MPI_COMM_WORLD runs the file's last preset).\n"
"  --serve               measure cells on request, one mpirun for a whole search: rank 0 reads lines\n"
"                        'cell <call> <bytes> <label,label,...> [nrep=N]' from standard input (the call, size\n"
"                        and labels among those of --calls, --sizes, --algorithms; default and\n"
"                        default_control always, when given), every rank measures that cell (check\n"
"                        round, interleaved rounds, rows to the output), rank 0 answers on stdout\n"
"                        'result <label> <median> <lower quartile>|failed' (seconds) per label, then\n"
"                        'done'; 'quit' or\n"
"                        end of input ends the run.  Fixed --nrep or --time-budget only.\n"
"  --list-native         print the library's own algorithms per call, as discovered through MPI_T\n"
"                        ('native <mpi> <call> <name> <value> <variable> <segment variable>'), exit.\n"
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
"  --proc-sync=dissem|mpi_barrier|window|roundtime  (alias --sync) synchronisation before every\n"
"                        measurement.  dissem (default): dissemination barrier with PMPI_Sendrecv;\n"
"                        mpi_barrier: MPI_Barrier; both: run-time = max over ranks of the local\n"
"                        durations.  window: ReproMPI's window-based synchronisation on a global clock\n"
"                        (HCA offsets against rank 0, fitted before every cell): measurement k\n"
"                        starts when the global clock reaches T0 + k x window; roundtime: ReproMPI\n"
"                        1.1's round-time synchronisation (a start time agreed before every\n"
"                        measurement).  Both: run-time = max global end - min global start; a\n"
"                        measurement a rank started late is invalid and not written (footer\n"
"                        '#@pgmpi invalid').  lib/bench/README.md says which to choose.\n"
"     --window-size=US   window length in microseconds (default 1000; must exceed the run-time)\n"
"     --wait-time=US     wait before the first window of a batch (default 1000)\n"
"     --fitpoints=N --exchanges=N  clock model: N fit points of the fastest of N ping-pongs\n"
"                        (default 20 and 10)\n"
"     --rt-multiplier=X  round-time margin in run-times of the start-time agreement (default 3)\n"
"     --start-agreement=allreduce|reprompi  how the ranks agree on start times.  allreduce\n"
"                        (default): one MPI_Allreduce(MAX), no one-way message; reprompi: ReproMPI's\n"
"                        messages (window: rank 0's T0 by MPI_Bcast; round-time: MPI_Barrier, rank 0's\n"
"                        start by a binomial tree of sends, a flag exchange after every measurement,\n"
"                        the margin from the mean of 10 barrier+tree runs): a control, not a method\n"
"  --order=shuffle|roundrobin  order of the (call, algorithm) pairs of one size in each round\n"
"                        (default shuffle: a new random permutation every round)\n"
"  --seed=N              seed of the shuffle (default: drawn on rank 0); written to #@seed\n"
"  --interleave=cell|size  cell (default): one (call, size) at a time, its algorithms interleaved;\n"
"                        size: every call of a size interleaved (each call then runs in the cache\n"
"                        state the others leave; measured 1.3-1.8x slower at 64 KiB-1 MiB here)\n"
"  --buffers=cell|once   cell (default): a fresh send and receive pair from calloc for every\n"
"                        (call, size), as an application allocates its arrays and as ReproMPI;\n"
"                        once: one pair for the largest cell, reused by every cell\n"
"  --buffer-align=malloc|page|N  malloc (default: what malloc gives an application), page (4096)\n"
"                        or N bytes (power of two); written to #@buffer_align\n"
"  --buffer-touch=yes|no|reprompi  yes (default): write the buffers before measuring (no page\n"
"                        fault in a timed region, no send buffer backed by the kernel's zero page);\n"
"                        no: as calloc leaves them; reprompi: as ReproMPI (zeros written for\n"
"                        Allreduce, Bcast, Reduce, Scan, Exscan; calloc's pages left for the others)\n"
"  --check=yes|no        yes (default): before timing a cell, run each algorithm once on\n"
"                        deterministic data and compare the result; a wrong result or an error is\n"
"                        written as '#@pgmpi check ... fail ...' and that algorithm is not timed\n"
"  --method=pgmpi|reprompi  reprompi: ReproMPI's method exactly (--interleave=cell --buffers=cell\n"
"                        --buffer-align=malloc --buffer-touch=reprompi --check=no --sync=mpi_barrier);\n"
"                        options after it override\n"
"\n"
"OUTPUT AND METADATA\n"
"  --output=FILE         write the results to FILE (new or empty; default stdout).  libpgmpitune's\n"
"                        #@pgmpi report (printed at MPI_Finalize, PGMPITUNE_VERBOSE=1 is set by\n"
"                        pgmpi-bench) is appended to the same file; it counts the untimed calls\n"
"                        (check round), the report is suspended inside timed loops.\n"
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

void fmt_bytes(double b, char *buf, size_t len)
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

static void add_call(int coll)
{
    for (int i = 0; i < O.ncalls; i++) if (O.calls[i].coll == coll) return;
    if (O.ncalls >= MAXCALLS) die_usage("too many calls");
    call_t *c = &O.calls[O.ncalls++];
    memset(c, 0, sizeof *c);
    c->coll = coll;
    if (coll < 0) { c->kind = K_BARRIER; c->mpi_name = "MPI_Barrier"; }
    else {
        if (coll >= K_BARRIER)    /* a libpgmpitune of another tree than this pgmpi-bench */
            die_usage("libpgmpitune dispatches %s, which this pgmpi-bench was not built with",
                      pgmpitune_collective_mpi_name(coll));
        c->kind = coll;           /* the library's collective index (collectives.def) */
        c->mpi_name = pgmpitune_collective_mpi_name(coll);
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
    o += snprintf(buf + o, len - o, "all, default, default_control, tuned");
    for (int i = 0; i < O.ncalls && o < len; i++) {
        int c = O.calls[i].coll;
        if (c < 0) continue;
        for (int a = 1; a < pgmpitune_nalgorithms(c) && o < len; a++)
            o += snprintf(buf + o, len - o, ", %s", pgmpitune_algorithm_name(c, a));
    }
}


const char *alg_label(const call_t *c, int a)
{
    if (c->kind == K_DT) return dt_alg_label(c, a);
    if (c->coll < 0) return "default";
    if (a <= ALG_NATIVE0) return g_native[ALG_NATIVE0 - a].label;
    if (a == ALG_TUNED) return "tuned";
    if (a == ALG_CONTROL) return "default_control";
    return pgmpitune_algorithm_name(c->coll, a);
}

static void push_alg(call_t *c, int a)
{
    for (int k = 0; k < c->nalg; k++) if (c->alg[k] == a) return;
    if (c->nalg >= MAXALGS) die_usage("too many algorithms for %s (at most %d)", c->mpi_name, MAXALGS);
    c->alg[c->nalg++] = a;
}

/* "native:NAME[:seg=BYTES]" or "native:all" (bench_native.c; discovery ran before). */
static void parse_native(const char *t, int *any_named)
{
    char name[64] = "";
    long seg = -1;
    const char *body = t + 7, *colon = strchr(body, ':');
    snprintf(name, sizeof name, "%.*s", colon ? (int)(colon - body) : (int)strlen(body), body);
    if (colon) {
        size_t b;
        if (strncmp(colon + 1, "seg=", 4) != 0 || parse_bytes(colon + 5, &b) || b > (size_t)1 << 30)
            die_usage("--algorithms: '%s': after the name only ':seg=<bytes>' (e.g. :seg=8K, at most 1G)", t);
        seg = (long)b;
    }
    if (g_native_flavor == NATIVE_NONE)
        die_usage("--algorithms: '%s': this MPI library exposes no algorithm control variables through MPI_T", t);
    if (g_native_flavor == NATIVE_IMPI) {      /* a preset forced at MPI_Init (bench_native.c) */
        if (colon) die_usage("--algorithms: '%s': Intel MPI's presets have no ':seg='", t);
        char why[512] = "";
        int matched = 0;
        for (int i = 0; i < O.ncalls; i++) {
            call_t *c = &O.calls[i];
            if (c->coll < 0) continue;
            int v = native_add_preset(c->kind, name, why, sizeof why);
            if (v < 0) continue;
            push_alg(c, ALG_NATIVE0 - v);
            any_named[i] = 1;
            matched = 1;
        }
        if (!matched) die_usage("--algorithms: '%s': %s", t, why[0] ? why : "no collective of --calls");
        return;
    }
    if (g_native_rules_file[0])
        die_usage("--algorithms: '%s': Open MPI applies the rules file %s (coll_tuned_dynamic_rules_filename) before "
                  "any forced algorithm, on every communicator, and MPI_T cannot set it aside: measure native "
                  "algorithms in an mpirun without the file, the file's choice as 'default' in another", t, g_native_rules_file);
    int matched = 0;
    char valid[8192] = "", one[2048];
    for (int i = 0; i < O.ncalls; i++) {
        call_t *c = &O.calls[i];
        if (c->coll < 0) continue;
        native_list(c->kind, one, sizeof one);
        size_t o = strlen(valid);
        snprintf(valid + o, sizeof valid - o, "%s%s: %s", o ? "; " : "", c->mpi_name, *one ? one : "(none)");
        for (int j = 0; j < native_count(c->kind); j++) {
            if (!streq_ci(name, "all") && strcmp(name, native_name(c->kind, j)) != 0) continue;
            if (seg >= 0 && !native_has_seg(c->kind))
                die_usage("--algorithms: '%s': %s has no segment size in this MPI library; drop ':seg='", t, c->mpi_name);
            int v = native_add(c->kind, native_name(c->kind, j), seg);
            push_alg(c, ALG_NATIVE0 - v);
            any_named[i] = 1;
            matched = 1;
        }
    }
    if (!matched) die_usage("--algorithms: unknown native algorithm '%s'; the library offers %s", t, valid);
}

static void parse_algs(const char *arg)
{
    int any_named[MAXCALLS] = {0};
    for (int i = 0; i < O.ncalls; i++) O.calls[i].nalg = 0;
    char *dup = strdup(arg), *save = NULL;
    for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*t)) t++;
        if (!*t) continue;
        if (strncmp(t, "native:", 7) == 0) { parse_native(t, any_named); continue; }
        int all = streq_ci(t, "all"), matched = 0;
        if (streq_ci(t, "tuned") || streq_ci(t, "default_control")) {
            int pseudo = streq_ci(t, "tuned") ? ALG_TUNED : ALG_CONTROL;
            for (int i = 0; i < O.ncalls; i++) {
                call_t *c = &O.calls[i];
                if (c->coll < 0) continue;
                int dupl = 0;
                for (int k = 0; k < c->nalg; k++) if (c->alg[k] == pseudo) dupl = 1;
                if (!dupl) {
                    if (c->nalg >= MAXALGS) die_usage("too many algorithms for %s", c->mpi_name);
                    c->alg[c->nalg++] = pseudo;
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
long nrep_lookup(const char *name, size_t bytes)
{
    for (int k = 0; k < g_nnt; k++) if (strcmp(g_nt[k].name, name) == 0 && g_nt[k].bytes == bytes) return g_nt[k].n;
    return -1;
}

int rank_guess_before_init(void)
{
    const char *v[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"};
    for (int i = 0; i < 4; i++) { const char *s = getenv(v[i]); if (s && *s) return atoi(s); }
    return 0;
}

void parse_args(int argc, char **argv)
{
    memset(&O, 0, sizeof O);
    O.barrier_rows = 1; O.policy = P_FIXED; O.nrep = 100;
    O.thr_rse = 0.025; O.thr_covmean = 0.01; O.thr_covmedian = 0.01; O.w_covmean = 20; O.w_covmedian = 20;
    O.pmin = 20; O.pmax = 1000; O.pstep = 10;
    O.t_rse1 = 0.01; O.t_rse2 = 0.05; O.b1 = 5; O.b2 = 5; O.K = 10; O.tmax = 10000; O.tmin1 = 10; O.tmax1 = 1000;
    O.dt = 0; O.op = 0; O.root = 0;
    O.buf_touch = 1; O.check = 1; O.buf_cell = 1;
    const char *calls = "all", *algs = "all", *sizes = "8,1K,64K,1M", *predict = NULL, *time_rule = NULL;
    const char *pred_params = NULL, *rse = NULL, *cm = NULL, *cmw = NULL, *cd = NULL, *cdw = NULL;
    int nrep_given = 0, window_given = 0, clock_given = 0, rt_given = 0, start_given = 0;
    /* ReproMPI's defaults: 1 ms windows after 1 ms, 20 fit points of 10 exchanges, margin 3 run-times */
    O.window_sec = 1e-3; O.wait_sec = 1e-3; O.fitpoints = 20; O.exchanges = 10; O.rt_multiplier = 3;
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
        else if (FLAG("--list-native")) O.list_native = 1;
        else if (FLAG("--serve")) O.serve = 1;
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
            if (streq_ci(val, "dissem") || streq_ci(val, "dissem_barrier") || streq_ci(val, "dissemination")) O.proc_sync = SYNC_DISSEM;
            else if (streq_ci(val, "mpi_barrier") || streq_ci(val, "barrier")) O.proc_sync = SYNC_BARRIER;
            else if (streq_ci(val, "window")) O.proc_sync = SYNC_WINDOW;
            else if (streq_ci(val, "roundtime") || streq_ci(val, "round-time")) O.proc_sync = SYNC_ROUNDTIME;
            else die_usage("%s: unknown method '%s'; valid: dissem, mpi_barrier, window, roundtime", key, val);
        }
        else if (FLAG("--window-size")) {
            NEEDVAL(); if (parse_double(val, &O.window_sec, 0) || O.window_sec <= 0)
                die_usage("--window-size: bad value '%s' (microseconds > 0)", val);
            O.window_sec *= 1e-6; window_given = 1;
        }
        else if (FLAG("--wait-time")) {
            NEEDVAL(); if (parse_double(val, &O.wait_sec, 0)) die_usage("--wait-time: bad value '%s' (microseconds >= 0)", val);
            O.wait_sec *= 1e-6; window_given = 1;
        }
        else if (FLAG("--fitpoints")) {
            NEEDVAL(); if (parse_long(val, &O.fitpoints, 3)) die_usage("--fitpoints: bad value '%s' (integer >= 3)", val);
            clock_given = 1;
        }
        else if (FLAG("--exchanges")) {
            NEEDVAL(); if (parse_long(val, &O.exchanges, 1)) die_usage("--exchanges: bad value '%s' (integer >= 1)", val);
            clock_given = 1;
        }
        else if (FLAG("--rt-multiplier")) {
            NEEDVAL(); if (parse_double(val, &O.rt_multiplier, 0) || O.rt_multiplier < 1)
                die_usage("--rt-multiplier: bad value '%s' (number >= 1)", val);
            rt_given = 1;
        }
        else if (FLAG("--start-agreement")) {
            NEEDVAL();
            if (streq_ci(val, "allreduce")) O.start_reprompi = 0;
            else if (streq_ci(val, "reprompi")) O.start_reprompi = 1;
            else die_usage("--start-agreement: unknown value '%s'; valid: allreduce, reprompi", val);
            start_given = 1;
        }
        else if (FLAG("--interleave")) {
            NEEDVAL();
            if (streq_ci(val, "cell")) O.interleave_size = 0;
            else if (streq_ci(val, "size")) O.interleave_size = 1;
            else die_usage("--interleave: unknown value '%s'; valid: cell, size", val);
        }
        else if (FLAG("--buffers")) {
            NEEDVAL();
            if (streq_ci(val, "once")) O.buf_cell = 0;
            else if (streq_ci(val, "cell")) O.buf_cell = 1;
            else die_usage("--buffers: unknown value '%s'; valid: once, cell", val);
        }
        else if (FLAG("--buffer-align")) {
            NEEDVAL();
            size_t b;
            if (streq_ci(val, "malloc")) O.buf_align = 0;
            else if (streq_ci(val, "page")) O.buf_align = 4096;
            else if (parse_bytes(val, &b) == 0 && b >= sizeof(void *) && (b & (b - 1)) == 0 && b <= (1u << 30)) O.buf_align = (long)b;
            else die_usage("--buffer-align: bad value '%s'; valid: malloc, page, or a power of two >= %zu bytes", val, sizeof(void *));
        }
        else if (FLAG("--buffer-touch")) {
            NEEDVAL();
            if (streq_ci(val, "yes")) O.buf_touch = 1;
            else if (streq_ci(val, "no")) O.buf_touch = 0;
            else if (streq_ci(val, "reprompi")) O.buf_touch = BUF_TOUCH_REPROMPI;
            else die_usage("--buffer-touch: unknown value '%s'; valid: yes, no, reprompi", val);
        }
        else if (FLAG("--check")) {
            NEEDVAL();
            if (streq_ci(val, "yes")) O.check = 1;
            else if (streq_ci(val, "no")) O.check = 0;
            else die_usage("--check: unknown value '%s'; valid: yes, no", val);
        }
        else if (FLAG("--method")) {
            NEEDVAL();
            if (streq_ci(val, "reprompi")) {   /* ReproMPI's mpibenchmark, option by option (README) */
                O.interleave_size = 0; O.buf_cell = 1; O.buf_align = 0; O.buf_touch = BUF_TOUCH_REPROMPI; O.check = 0;
                O.proc_sync = SYNC_BARRIER;
            } else if (streq_ci(val, "pgmpi")) {
                O.interleave_size = 0; O.buf_cell = 1; O.buf_align = 0; O.buf_touch = 1; O.check = 1;
                O.proc_sync = SYNC_DISSEM;
            } else die_usage("--method: unknown value '%s'; valid: pgmpi (the defaults), reprompi", val);
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
    /* The library's own algorithms: discovered through MPI_T before MPI_Init.  Open MPI applies forced
     * algorithms only with dynamic rules on, which must hold from the start (bench_native.c). */
    if (strstr(algs, "native:") || O.list_native) {
        if (strstr(algs, "native:")) setenv("OMPI_MCA_coll_tuned_use_dynamic_rules", "1", 1);
        native_discover();
    }
    parse_algs(algs);
    if (g_native_impi_hint)   /* presets on hinted communicators: MPI_COMM_WORLD runs the file's last one */
        for (int i = 0; i < O.ncalls; i++) {
            const call_t *c = &O.calls[i];
            int nat = 0;
            for (int a = 0; a < c->nalg; a++) nat += c->alg[a] <= ALG_NATIVE0;
            for (int a = 0; nat && a < c->nalg; a++)
                if (c->alg[a] > ALG_NATIVE0)
                    die_usage("--algorithms: '%s' next to Intel MPI presets on %s: the tuning file that gives each "
                              "preset its communicator also changes MPI_COMM_WORLD's %s (it runs the file's last "
                              "preset there), so measure '%s' in another mpirun with the same --mpirun-index",
                              alg_label(c, c->alg[a]), c->mpi_name, c->mpi_name, alg_label(c, c->alg[a]));
        }
    else if (g_native_flavor == NATIVE_IMPI)  /* the preset runs every call of its collective: nothing next to it */
        for (int i = 0; i < O.ncalls; i++)
            for (int a = 0; a < O.calls[i].nalg; a++)
                if (O.calls[i].alg[a] <= ALG_NATIVE0 && O.calls[i].nalg > 1)
                    die_usage("--algorithms: %s is forced on %s for the whole mpirun (Intel MPI reads it at MPI_Init), "
                              "so '%s' would measure it again under another name: measure %s alone, the default "
                              "in another mpirun with the same --mpirun-index", alg_label(&O.calls[i], O.calls[i].alg[a]),
                              O.calls[i].mpi_name, alg_label(&O.calls[i], O.calls[i].alg[a == 0 ? 1 : 0]),
                              alg_label(&O.calls[i], O.calls[i].alg[a]));
    native_prepare();       /* Intel MPI's hinted presets: their tuning file, before MPI_Init reads it */
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
    if (O.serve && (O.policy == P_TIME || O.policy == P_PREDICT || O.policy == P_FROM))
        die_usage("--serve measures each requested cell with a fixed --nrep (or a --time-budget); the NREP "
                  "prediction and time rules need every cell of the run");
    if (window_given && O.proc_sync != SYNC_WINDOW)
        die_usage("--window-size/--wait-time belong to --proc-sync=window (now %s)", sync_names[O.proc_sync]);
    if (rt_given && O.proc_sync != SYNC_ROUNDTIME)
        die_usage("--rt-multiplier belongs to --proc-sync=roundtime (now %s)", sync_names[O.proc_sync]);
    if (start_given && !SYNC_ON_CLOCK(O.proc_sync))
        die_usage("--start-agreement belongs to --proc-sync=window or roundtime (now %s)", sync_names[O.proc_sync]);
    if (clock_given && !SYNC_ON_CLOCK(O.proc_sync))
        die_usage("--fitpoints/--exchanges fit the global clock of --proc-sync=window or roundtime (now %s)",
                  sync_names[O.proc_sync]);
    if (O.buf_touch == BUF_TOUCH_REPROMPI && !O.buf_cell)
        die_usage("--buffer-touch=reprompi initialises each call's buffers as ReproMPI does, so it needs "
                  "--buffers=cell (the default)");
    /* with libpgmpitune disabled pgmpitune_force does nothing: mock-up rows would measure the default */
    const char *dis = getenv("PGMPITUNE_DISABLE");
    if (dis && *dis && strcmp(dis, "0") && strcasecmp(dis, "no") && strcasecmp(dis, "false") && strcasecmp(dis, "off"))
        for (int i = 0; i < O.ncalls; i++)
            for (int a = 0; a < O.calls[i].nalg; a++)
                if (O.calls[i].alg[a] != 0 && O.calls[i].alg[a] != ALG_CONTROL && O.calls[i].alg[a] > ALG_NATIVE0)
                    die_usage("PGMPITUNE_DISABLE=%s switches libpgmpitune off, so %s would run the default; unset it "
                              "or use --algorithms=default", dis, alg_label(&O.calls[i], O.calls[i].alg[a]));
    /* datatype / operation suit the reductions? */
    for (int i = 0; i < O.ncalls; i++)
        if (kind_is_reduction(O.calls[i].kind) && !op_valid(O.op, O.dt))
            die_usage("%s with %s on %s is not valid MPI (bitwise ops need an integer type or MPI_BYTE, "
                      "arithmetic ops an integer or floating type; MPI_CHAR suits no reduction); choose "
                      "another --datatype or --operation", O.calls[i].mpi_name, opnames[O.op], dtypes[O.dt].name);
}

