/* pgmpi-bench: the raw output file -- header, rows, footer (see bench.h for the split). */
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

/* ------------------------------------------------------------------ output */
FILE *g_out;
void out_fail(void)
{
    fprintf(stderr, "pgmpi-bench: error: writing %s failed: %s\n", O.output ? O.output : "stdout", strerror(errno));
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);   /* MPI_Abort does not return */
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
layout_t layout(void)
{
    layout_t L = {1, g_size, g_size, "measured", NULL, NULL, ""};
    MPI_Comm node;
    PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node);
    int lrank = 0, first = g_rank;
    PMPI_Comm_rank(node, &lrank);
    PMPI_Allreduce(&g_rank, &first, 1, MPI_INT, MPI_MIN, node);
    PMPI_Comm_free(&node);
    char name[MPI_MAX_PROCESSOR_NAME] = {0};
    int len = 0;
    MPI_Get_processor_name(name, &len);
    /* Allgather, not Gather: a rooted collective among a job's first messages slows later small
     * collectives (share_from_rank0 in bench_measure.c) */
    int *firsts = calloc((size_t)g_size, sizeof(int));
    char *names = calloc((size_t)g_size, MPI_MAX_PROCESSOR_NAME);
    if (!firsts || !names) { fprintf(stderr, "pgmpi-bench: error: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    PMPI_Allgather(&first, 1, MPI_INT, firsts, 1, MPI_INT, MPI_COMM_WORLD);
    PMPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
    if (g_rank != 0) {
        free(firsts); free(names);
        unsigned long long v[3] = {0, 0, 0};
        share_from_rank0(v, 3);
        L.nodes = (int)v[0]; L.ppn = (int)v[1]; L.ppn_min = (int)v[2];
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
    unsigned long long v[3] = {(unsigned long long)L.nodes, (unsigned long long)L.ppn, (unsigned long long)L.ppn_min};
    share_from_rank0(v, 3);
    return L;
}

/* PGMPI_EXPECT_LAYOUT=<nodes>x<ppn> (the scheduler sets it from the request): the measured layout must
 * be exactly that, every node with ppn ranks. Returns 0 when it is, or when nothing is expected. */
int layout_mismatch(const layout_t *L, char *why, size_t wl)
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
void footer_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void footer_add(const char *fmt, ...)
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

/* Ends a run that measured nothing; the library's report at MPI_Finalize stays out of stdout. */
void bench_quiet_finalize(void)
{
    fflush(stdout);
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) { dup2(fd, 1); close(fd); }
    MPI_Finalize();
}

/* MPI_Init as both programs start: the library's #@pgmpi report at MPI_Finalize belongs in the output
 * (run_phase suspends it inside the timed loops: the timed calls take an application's path); returns
 * the wall-clock start of the run. */
time_t bench_mpi_init(int *argc, char ***argv)
{
    setenv("PGMPITUNE_VERBOSE", "1", 1);
    time_t start_wall = time(NULL);
    MPI_Init(argc, argv);
    g_mpi_up = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    g_print = g_rank == 0;
    return start_wall;
}

/* The start both programs share: the plan's checks (check_plan, the program's own more_checks, the
 * nrep policy); --dry-run prints the plan and ends the run (returns 0); otherwise rank 0 opens the
 * output and draws the seed (unless --seed), and every rank gets both through share_from_rank0 --
 * never a rooted collective first (bench.h). Returns -1 to go on (*seed and rng_state set), or the exit
 * status after MPI_Finalize (2: the output cannot be written). */
int bench_start(void (*more_checks)(void), unsigned long long *seed)
{
    double limit; size_t ms, mr, msc; int wj;
    check_plan(&limit, &ms, &mr, &msc, &wj);
    if (more_checks) more_checks();
    describe_policy();
    if (O.dry_run) {
        dry_run(limit, ms, mr, msc, wj);
        bench_quiet_finalize();
        return 0;
    }
    unsigned long long s = O.seed;
    int ok = 1;
    if (g_rank == 0) {
        ok = open_output();
        if (!O.seed_given) s = ((unsigned long long)time(NULL) << 20) ^ (unsigned long long)getpid() ^ (unsigned long long)clock();
    }
    unsigned long long hdr[2] = {(unsigned long long)ok, s};
    share_from_rank0(hdr, 2);
    if (!hdr[0]) { bench_quiet_finalize(); return 2; }
    *seed = rng_state = hdr[1];
    return -1;
}

/* Rank 0 opens --output (new or empty) or stdout; returns 0 when the run must stop (message printed). */
int open_output(void)
{
    int ok = 1;
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
    return ok;
}

/* The I_MPI_ADJUST_<COLL> variables of the environment, "NAME=value" space-separated, into buf: what Intel
 * MPI read at MPI_Init (libpgmpitune's MPI_Init sets those of a native.impi before PMPI_Init, rule 8, and
 * nothing changes them afterwards); "" when there are none. */
static void impi_variables(char *buf, size_t cap)
{
    extern char **environ;
    size_t o = 0;
    buf[0] = '\0';
    for (char **v = environ; *v && o + 1 < cap; v++)
        if (strncmp(*v, "I_MPI_ADJUST_", 13) == 0 && strchr(*v, '='))
            o += (size_t)snprintf(buf + o, cap - o, "%s%s", o ? " " : "", *v);
}

/* The MPI library's own decision file the environment names (Open MPI's dynamic rules file, MPICH's JSON
 * selection file; the pgmpitunelib module or a campaign's native_file sets them; Intel MPI's native.impi,
 * which the module names in PGMPITUNE_NATIVE_IMPI for libpgmpitune's MPI_Init): a mock-up measured under it
 * competes with what the file makes of its parts, so the analysis must know which file, byte for byte.
 * "#@native_file=<path>" and "#@native_file_fnv1a64=<16 hex digits of FNV-1a 64 over its bytes>|unreadable"
 * (service/analysis/native_decision.py compares it with the file it writes); nothing when none is named.
 * For a native.impi also "#@native_impi=<the I_MPI_ADJUST_* variables Intel MPI read>", empty when the
 * file set nothing (a job of a size it was not decided for, no size from the launcher, a bad file,
 * PGMPITUNE_DISABLE): the file names the candidate, this line says what of it this job ran. */
static void put_native_file(void)
{
    const char *path = getenv("OMPI_MCA_coll_tuned_dynamic_rules_filename");
    if (!path || !*path) path = getenv("MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE");
    int impi = 0;
    if (!path || !*path) { path = getenv("PGMPITUNE_NATIVE_IMPI"); impi = 1; }
    if (!path || !*path) return;
    put("native_file", path);
    if (impi) {
        char vars[4096];
        impi_variables(vars, sizeof vars);
        put("native_impi", vars);
    }
    FILE *f = fopen(path, "rb");
    if (!f) { put("native_file_fnv1a64", "unreadable"); return; }
    unsigned long long h = 1469598103934665603ULL;
    int ch;
    while ((ch = getc(f)) != EOF) h = (h ^ (unsigned char)ch) * 1099511628211ULL;
    fclose(f);
    char b[32];
    snprintf(b, sizeof b, "%016llx", h);
    put("native_file_fnv1a64", b);
}

/* The #@key=value header and the column line (rank 0). */
void write_header(int argc, char **argv, time_t start_wall, unsigned long long seed, const layout_t *L)
{
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
    put_native_file();
    putl("nodes", L->nodes);
    putl("ppn", L->ppn);
    if (L->ppn_min != L->ppn) putl("ppn_min", L->ppn_min);
    put("nodes_source", L->source);
    put("hosts", L->hosts);
    put("placement", L->placement);
    if (L->skipped[0]) put("skipped_on_one_node", L->skipped);
    putl("nprocs", g_size);
    putl("mpirun_index", O.mpirun_index);
    put("slurm_job_id", job ? job : "");
    put("campaign", O.campaign ? O.campaign : "");
    put("start_time", tbuf);
    put("clock", "MPI_Wtime");
    snprintf(b, sizeof b, "%.3g", MPI_Wtick()); put("wtick_sec", b);
    /* the measurement method: #@procsync is the one line pgmpi_formats.results reads it from */
    put("sync", sync_names[O.proc_sync]);
    put("procsync", sync_names[O.proc_sync]);
    if (SYNC_ON_CLOCK(O.proc_sync)) {
        put("clocktype", "global");
        put("clocksync", "HCA_offset_ref0");   /* bench_clock.c rule 3: offsets, no slope */
        putl("fitpoints", O.fitpoints);
        putl("exchanges", O.exchanges);
        put("runtime_type", "global");
        put("runtime_reduction", "max_global_end_minus_min_global_start_per_measurement;late_measurements_dropped");
        if (O.proc_sync == SYNC_WINDOW) {
            snprintf(b, sizeof b, "%.9f", O.window_sec); put("window_size_sec", b);
            snprintf(b, sizeof b, "%.9f", O.wait_sec); put("wait_time_sec", b);
        } else {
            snprintf(b, sizeof b, "%g", O.rt_multiplier); put("rt_multiplier", b);
        }
        put("start_agreement", O.start_reprompi ? "reprompi" : "allreduce");
    } else {
        put("clocktype", "local");
        put("clocksync", "None");
        put("runtime_type", "local");
        put("runtime_reduction", "max_over_ranks_per_measurement;reduced_per_batch_after_timing");
    }
    put("nrep_policy", g_policy);
    putl("nrep", O.policy == P_FIXED ? O.nrep : 0);
    if (O.budget > 0) { snprintf(b, sizeof b, "%g", O.budget); put("time_budget_sec", b); }
    put("order", O.order_rr ? "roundrobin" : "shuffle");
    put("interleave", O.interleave_size ? "size" : "cell");
    put("buffers", O.buf_cell ? "cell" : "once");
    if (O.buf_align) putl("buffer_align", O.buf_align); else put("buffer_align", "malloc");
    put("buffer_touch", O.buf_touch == BUF_TOUCH_REPROMPI ? "reprompi" : O.buf_touch ? "yes" : "no");
    { long so, ro; buffer_page_offsets(&so, &ro);
      if (so >= 0) { snprintf(b, sizeof b, "%ld,%ld", so, ro); put("buffer_page_offsets", b); } }
    put("check", O.check ? "yes" : "no");
    snprintf(b, sizeof b, "%llu", seed); put("seed", b);
    put("datatype", dtypes[O.dt].name);
    putl("datatype_size_bytes", (long)dtypes[O.dt].size);
    put("operation", opnames[O.op]);
    putl("root_proc", O.root);
    put("calls_arg", O.calls_arg);
    put("algorithms_arg", O.algs_arg);
    put("msizes_arg", O.sizes_arg);
    if (g_nnative) {   /* how the library's own algorithms were selected (bench_native.c) */
        put("native_switch", g_native_flavor == NATIVE_OMPI ? "communicator_per_variant"
                            : g_native_impi_hint ? "communicator_hint"
                            : g_native_flavor == NATIVE_IMPI ? "preset_at_mpi_init" : "mpi_t_per_call");
        char nv[8192]; size_t no = 0; nv[0] = 0;
        for (int i = 0; i < O.ncalls; i++)
            for (int a = 0; a < O.calls[i].nalg && no < sizeof nv; a++) {
                if (O.calls[i].alg[a] > ALG_NATIVE0) continue;
                const native_t *n = &g_native[ALG_NATIVE0 - O.calls[i].alg[a]];
                no += snprintf(nv + no, sizeof nv - no, "%s%s:%s=%d", no ? ";" : "", O.calls[i].mpi_name, n->label, n->value);
            }
        put("native_values", nv);
    }
    char notes[4096]; rounding_notes(notes, sizeof notes);
    put("msize_rounding", notes);
    char cmd[4096]; size_t o = 0; cmd[0] = 0;
    for (int i = 0; i < argc && o < sizeof cmd; i++) o += snprintf(cmd + o, sizeof cmd - o, "%s%s", i ? " " : "", argv[i]);
    put("command_line", cmd);
    if (g_header_extra) g_header_extra();
    if (fprintf(g_out, g_count_column ? "test nrep msize count runtime_sec algorithm\n"
                                      : "test nrep msize runtime_sec algorithm\n") < 0) out_fail();
    fflush(g_out);
}

void (*g_header_extra)(void);
int g_count_column;

void write_row(const call_t *c, long idx, size_t n, double t, int a)
{
    int rc = g_count_column ? fprintf(g_out, "%s %ld %zu %zu %.10f %s\n", c->mpi_name, idx, n, dt_row_count(c, a), t, alg_label(c, a))
                            : fprintf(g_out, "%s %ld %zu %.10f %s\n", c->mpi_name, idx, n, t, alg_label(c, a));
    if (rc < 0) out_fail();
}

/* The footer lines collected during the run and the execution time (rank 0). */
void write_footer(time_t start_wall)
{
    if (g_rank != 0) return;
    if (g_flen && fputs(g_footer, g_out) < 0) out_fail();
    if (fprintf(g_out, "# Execution time: %lds\n", (long)(time(NULL) - start_wall)) < 0) out_fail();
    if (fflush(g_out)) out_fail();
}

/* libpgmpitune prints its #@pgmpi report on rank 0's stdout inside MPI_Finalize: point stdout at
 * the output file for that moment. */
void finish_output(void)
{
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
    free(g_footer);
}
