/* libpgmpitune run time: MPI_Init/MPI_Init_thread/MPI_Finalize wrappers, the per-call dispatch
 * (pgmpi_begin/pgmpi_end), the two memory pools, the #@pgmpi report.
 *
 * Everything that reads files, parses or allocates happens in setup() at MPI_Init. After that the
 * tables below are read-only; the call path touches them, a few atomics when reporting is on, and
 * never allocates, locks, prints or compares strings. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/stat.h>

#include "pgmpi_internal.h"
#include "pgmpitune.h"

#define PTAB 1024                  /* communicator sizes with an O(1) profile index */
#define REPORT_SLOTS 4096          /* distinct (bytes, algorithm) pairs per collective in the report */

enum { MODE_DEFAULT = 0, MODE_FORCED = 1, MODE_PROFILE = 2 };

typedef struct {
    int forced;                    /* algorithm when MODE_FORCED */
    const pgmpi_profile_t *profs;  /* MODE_PROFILE: sorted by process range */
    int nprofs;
    int16_t *pidx;                 /* [PTAB + 1]: index into profs for p <= PTAB, -1 = none */
    const pgmpi_profile_t *lprofs; /* MODE_PROFILE: profiles for one layout (#@pgmpi layout) */
    int nlprofs;
} cstate_t;

typedef struct {
    _Atomic uint64_t key;          /* ((bytes << 8) | alg) + 1, 0 = empty */
    _Atomic uint64_t used;         /* calls served by alg */
    _Atomic uint64_t fellback;     /* calls that selected alg but ran the default */
} slot_t;

static cstate_t cs[PGMPI_NCOLL];
pgmpi_fast_t pgmpi_fast;          /* mode[c] (MODE_*), verbose: read by the inline fast path */
#define g_verbose (pgmpi_fast.verbose)
static slot_t *g_report[PGMPI_NCOLL];
static _Atomic uint64_t g_report_overflow[PGMPI_NCOLL];

static int g_setup_done, g_finalized, g_disabled, g_disabled_verbose, g_rank = 0, g_thread_multiple;
/* The report asked for (PGMPITUNE_VERBOSE) and whether the caller suspended its accounting
 * (pgmpitune_report_suspend): g_verbose, which the call path reads, is on only when asked and not suspended. */
static int g_report_on, g_report_suspended;
static int g_world_size;   /* MPI_COMM_WORLD's size: most calls are on it, and asking MPI costs a call */
static char *g_msg_pool;
static int *g_int_pool;
static size_t g_msg_cap, g_int_cap;        /* agreed (minimum over ranks) capacities */
static size_t g_msg_req, g_int_req;        /* requested sizes, for the report */
static int g_pack_raw;                     /* agreed at MPI_Init: see pgmpi_pack_is_raw */
static atomic_int g_pool_busy;
static _Thread_local int t_pool_held __attribute__((tls_model("initial-exec")));
static pgmpi_profset_t g_profiles;
static int g_nprofiles, g_nbad_profiles;
static char g_profile_dir[1024];
static int g_profile_dir_missing;    /* rank 0: the profile directory does not exist (none published) */
static char g_config_file[1024];

/* ---- messages (rank 0 only, at MPI_Init / MPI_Finalize) ------------------------ */

static void update_any(void)
{
    int any = pgmpi_fast.verbose;   /* usage records ask for the sizes of sampled calls only (pgmpi_type_bytes) */
    for (int c = 0; c < PGMPI_NCOLL; c++) any |= pgmpi_fast.mode[c] != 0;
    pgmpi_fast.any = any;
}

static void warn(const char *fmt, ...)
{
    if (g_rank != 0) return;
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "pgmpitune: warning: %s\n", buf);
    fflush(stderr);
}

static void profile_diag(void *ctx, int is_error, const char *file, int line, const char *text)
{
    (void)ctx;
    if (!is_error) return;          /* the library ignores what it does not know */
    if (line > 0)
        warn("%s:%d: %s; this profile is ignored (the MPI library's default is used instead)", file, line, text);
    else
        warn("%s: %s; this profile is ignored (the MPI library's default is used instead)", file, text);
}

static void config_diag(void *ctx, int is_error, const char *file, int line, const char *text)
{
    (void)ctx;
    (void)is_error;
    warn("%s:%d: %s", file, line, text);
}

/* ---- helpers for mock-ups and entry points ---------------------------------- */

size_t pgmpi_type_bytes_exact(MPI_Datatype t)
{
    int s = 0;
    if (PMPI_Type_size(t, &s) != MPI_SUCCESS || s < 0) return 0;
    return (size_t)s;
}

int pgmpi_type_is_contiguous(MPI_Datatype t)
{
    int s = 0;
    MPI_Aint lb = 0, ext = 0, tlb = 0, text = 0;
    if (PMPI_Type_size(t, &s) != MPI_SUCCESS) return 0;
    if (PMPI_Type_get_extent(t, &lb, &ext) != MPI_SUCCESS) return 0;
    if (PMPI_Type_get_true_extent(t, &tlb, &text) != MPI_SUCCESS) return 0;
    return lb == 0 && tlb == 0 && (MPI_Aint)s == ext && (MPI_Aint)s == text;
}

int pgmpi_comm_is_inter(MPI_Comm comm)
{
    int f = 0;
    if (PMPI_Comm_test_inter(comm, &f) != MPI_SUCCESS) return 1;   /* unknown: be safe */
    return f;
}

int pgmpi_pack_is_raw(void) { return g_pack_raw; }

void *pgmpi_pool_msg(void) { return g_msg_pool; }
int *pgmpi_pool_int(void) { return g_int_pool; }

/* ---- report tables ---------------------------------------------------------------- */

static void record(int c, size_t n, int alg, int fellback)
{
    slot_t *tab = g_report[c];
    if (!tab || (uint64_t)n >= (UINT64_C(1) << 55)) { atomic_fetch_add_explicit(&g_report_overflow[c], 1, memory_order_relaxed); return; }
    uint64_t key = (((uint64_t)n << 8) | (uint64_t)(alg & 0xff)) + 1;
    uint64_t h = key * UINT64_C(0x9E3779B97F4A7C15);
    for (unsigned i = 0; i < REPORT_SLOTS; i++) {
        slot_t *s = &tab[(h + i) & (REPORT_SLOTS - 1)];
        uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == 0) {
            uint64_t expect = 0;
            if (atomic_compare_exchange_strong(&s->key, &expect, key)) k = key;
            else k = expect;
        }
        if (k == key) {
            atomic_fetch_add_explicit(fellback ? &s->fellback : &s->used, 1, memory_order_relaxed);
            return;
        }
    }
    atomic_fetch_add_explicit(&g_report_overflow[c], 1, memory_order_relaxed);
}

/* ---- the call path ------------------------------------------------------------------ */

static inline const pgmpi_profile_t *find_profile(const cstate_t *s, int p)
{
    if (p <= PTAB) {
        int i = s->pidx[p];
        return i < 0 ? NULL : &s->profs[i];
    }
    int lo = 0, hi = s->nprofs - 1, best = -1;
    while (lo <= hi) {
        int mid = (lo + hi) >> 1;
        if (s->profs[mid].plo <= p) { best = mid; lo = mid + 1; }
        else hi = mid - 1;
    }
    return (best >= 0 && p <= s->profs[best].phi) ? &s->profs[best] : NULL;
}

/* The profile for comm's layout (nodes x ranks per node, every node alike), if there is one for p.
 * The layout comes from the communicator's node structure (nodes.c), built collectively by the first
 * call on comm that gets here: every rank of comm is in the same collective, with the same p and the
 * same profiles (broadcast at MPI_Init), so all of them get here together (rule 3). */
static const pgmpi_profile_t *find_layout_profile(const cstate_t *s, MPI_Comm comm, int p)
{
    int any = 0;
    for (int i = 0; i < s->nlprofs && !any; i++) any = s->lprofs[i].nprocs == p;
    if (!any || pgmpi_comm_is_inter(comm)) return NULL;
    const pgmpi_nodes_t *N = pgmpi_nodes(comm);
    if (!N) return NULL;
    int ppn = N->count[0];
    for (int k = 1; k < N->nnodes; k++) if (N->count[k] != ppn) return NULL;   /* uneven: no layout */
    for (int i = 0; i < s->nlprofs; i++)
        if (s->lprofs[i].lnodes == N->nnodes && s->lprofs[i].lppn == ppn) return &s->lprofs[i];
    return NULL;
}

int pgmpi_begin_slow(pgmpi_coll_t c, MPI_Comm comm, size_t n, size_t elem)
{
    const cstate_t *s = &cs[c];
    int mode = pgmpi_fast.mode[c];
    if (mode == MODE_DEFAULT) return 0;
    int p = g_world_size;
    if (comm != MPI_COMM_WORLD && PMPI_Comm_size(comm, &p) != MPI_SUCCESS) return 0;   /* the library reports it */
    int a;
    if (mode == MODE_FORCED) {
        a = s->forced;
    } else {
        const pgmpi_profile_t *pr = s->nlprofs ? find_layout_profile(s, comm, p) : NULL;
        if (!pr && s->pidx) pr = find_profile(s, p);
        if (!pr) return 0;
        a = pgmpi_profile_find_alg(pr, pgmpi_profile_key_bytes(c, n, p));
    }
    if (a <= 0) return 0;
    const pgmpi_alg_t *alg = &pgmpi_descs[c]->algs[a];
    if (!alg->fn || pgmpi_comm_is_inter(comm)) goto fallback;
    size_t mneed = alg->msg_need ? alg->msg_need(n, elem, p) : 0;
    size_t ineed = alg->int_need ? alg->int_need(n, elem, p) : 0;
    if (mneed > g_msg_cap || ineed > g_int_cap) goto fallback;
    if (mneed || ineed) {
        /* One pool per process: usable by one call at a time. Under MPI_THREAD_MULTIPLE every rank
         * falls back (same decision everywhere); below it calls cannot overlap, so the flag is a guard. */
        if (g_thread_multiple) goto fallback;
        if (atomic_exchange_explicit(&g_pool_busy, 1, memory_order_acquire)) goto fallback;
        t_pool_held = 1;
    }
    return a;
fallback:
    if (g_verbose) record(c, n, a, 1);
    return 0;
}

void pgmpi_end_slow(pgmpi_coll_t c, size_t n, int alg, int fell_back)
{
    if (alg > 0 && t_pool_held) {
        t_pool_held = 0;
        atomic_store_explicit(&g_pool_busy, 0, memory_order_release);
    }
    if (!g_verbose) return;
    if (fell_back) {
        record(c, n, alg, 1);
        record(c, n, 0, 0);
    } else {
        record(c, n, alg, 0);
    }
}

/* ---- setup at MPI_Init ---------------------------------------------------------------- */

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return (v && *v) ? v : NULL;
}

static int env_true(const char *name)
{
    const char *v = env(name);
    return v && strcmp(v, "0") != 0 && strcasecmp(v, "no") != 0 && strcasecmp(v, "false") != 0 &&
           strcasecmp(v, "off") != 0;
}

static uint64_t phys_mem(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), ps = sysconf(_SC_PAGESIZE);
    return (pages > 0 && ps > 0) ? (uint64_t)pages * (uint64_t)ps : UINT64_MAX;
}

static void pool_size_from_env(const char *var, size_t *dst)
{
    const char *v = env(var);
    uint64_t x;
    if (!v) return;
    if (pgmpi_parse_size(v, strlen(v), &x) != 0 || x > SIZE_MAX)
        warn("%s='%s' is not a non-negative integer; using %zu bytes", var, v, *dst);
    else
        *dst = (size_t)x;
}

/* Rank 0's n values to every rank, as an Allreduce (MAX over zeros elsewhere), not a Bcast: with Open MPI
 * 4.1 on shared memory, an odd number of one-way messages between two ranks (one small Bcast) left every
 * later small collective of the application 20-80 % slower, even called as PMPI_ (lib/bench/README.md,
 * "Compared with ReproMPI"; tests/bench/lib_init_cost.sh). */
static void share_from_rank0(uint64_t *v, int n)
{
    uint64_t in[4] = {0, 0, 0, 0};
    if (g_rank == 0) memcpy(in, v, (size_t)n * sizeof *v);
    PMPI_Allreduce(in, v, n, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
}

/* Rank 0's byte string (len then bytes) to every rank, without a Bcast (see share_from_rank0). */
static void share_bytes_from_rank0(char **buf, size_t *len)
{
    uint64_t l = *len;
    share_from_rank0(&l, 1);
    if (g_rank != 0) {
        *buf = l ? calloc((size_t)l, 1) : NULL;   /* zeros: OR-ed with rank 0's bytes below */
        *len = (size_t)l;
    }
    size_t off = 0;
    while (off < l) {
        size_t chunk = l - off > (1u << 30) ? (1u << 30) : l - off;
        PMPI_Allreduce(MPI_IN_PLACE, *buf + off, (int)chunk, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD);
        off += chunk;
    }
}

/* Does MPI_Pack yield the raw signature bytes? Packs a strided int vector and looks at the bytes. */
static int probe_pack_raw(void)
{
    int src[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8] = {0};
    MPI_Datatype v;
    if (PMPI_Type_vector(4, 1, 2, MPI_INT, &v) != MPI_SUCCESS) return 0;
    int ok = 0, pos = 0, psz = 0;
    if (PMPI_Type_commit(&v) == MPI_SUCCESS && PMPI_Pack_size(1, v, MPI_COMM_WORLD, &psz) == MPI_SUCCESS &&
        psz >= 16 && PMPI_Pack(src, 1, v, out, (int)sizeof out, &pos, MPI_COMM_WORLD) == MPI_SUCCESS)
        ok = pos == 16 && out[0] == 1 && out[1] == 3 && out[2] == 5 && out[3] == 7;
    PMPI_Type_free(&v);
    return ok;
}

static void setup_pools(pgmpi_options_t *o)
{
    size_t msg = PGMPI_DEFAULT_MSG_POOL, ints = PGMPI_DEFAULT_INT_POOL;
    const char *cfg = o->config ? o->config : env("PGMPITUNE_CONFIG") ? env("PGMPITUNE_CONFIG")
                                                                       : env("PGMPI_CONFIG_FILE");
    uint64_t sizes[2];
    if (g_rank == 0) {
        if (cfg) {
            char *text = NULL;
            size_t len = 0;
            snprintf(g_config_file, sizeof g_config_file, "%s", cfg);
            if (pgmpi_read_file(cfg, &text, &len, (size_t)1 << 20) != 0)
                warn("cannot read config file %s: %s; using the default pool sizes", cfg, strerror(errno));
            else
                pgmpi_config_parse(cfg, text, len, &msg, &ints, config_diag, NULL);
            free(text);
        }
        pool_size_from_env("PGMPITUNE_MSG_POOL_BYTES", &msg);
        pool_size_from_env("PGMPITUNE_INT_POOL_BYTES", &ints);
        uint64_t mem = phys_mem();
        if ((uint64_t)msg > mem) {
            warn("message pool of %zu bytes exceeds the physical memory (%llu bytes); pool disabled, mock-ups that "
                 "need it use the default", msg, (unsigned long long)mem);
            msg = 0;
        }
        if ((uint64_t)ints > mem) {
            warn("int pool of %zu bytes exceeds the physical memory (%llu bytes); pool disabled, mock-ups that "
                 "need it use the default", ints, (unsigned long long)mem);
            ints = 0;
        }
        sizes[0] = msg;
        sizes[1] = ints;
    }
    share_from_rank0(sizes, 2);
    g_msg_req = (size_t)sizes[0];
    g_int_req = (size_t)sizes[1];
    uint64_t have[3] = {0, 0, (uint64_t)probe_pack_raw()};
    if (g_msg_req) {
        g_msg_pool = malloc(g_msg_req);
        if (g_msg_pool) have[0] = g_msg_req;
    }
    if (g_int_req >= sizeof(int)) {
        g_int_pool = malloc(g_int_req);
        if (g_int_pool) have[1] = g_int_req;
    }
    uint64_t agreed[3];
    PMPI_Allreduce(have, agreed, 3, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    g_pack_raw = agreed[2] == 1;
    if (agreed[0] < sizes[0]) warn("message pool of %zu bytes could not be allocated on every rank; pool disabled",
                                   g_msg_req);
    if (agreed[1] < sizes[1] && sizes[1] >= sizeof(int))
        warn("int pool of %zu bytes could not be allocated on every rank; pool disabled", g_int_req);
    g_msg_cap = agreed[0] == sizes[0] ? (size_t)agreed[0] : 0;
    g_int_cap = agreed[1] == sizes[1] ? (size_t)agreed[1] : 0;
    if (!g_msg_cap) { free(g_msg_pool); g_msg_pool = NULL; }
    if (!g_int_cap) { free(g_int_pool); g_int_pool = NULL; }
}

static void setup_profiles(pgmpi_options_t *o)
{
    const char *dir = o->ppath ? o->ppath : env("PGMPITUNE_PROFILE_DIR") ? env("PGMPITUNE_PROFILE_DIR")
                                                                         : env("PGMPI_PROFILE_PATH");
    if (!dir) return;
    snprintf(g_profile_dir, sizeof g_profile_dir, "%s", dir);
    char *blob = NULL;
    size_t len = 0;
    int ok = 1;
    if (g_rank == 0) {
        char err[1200];
        struct stat sb;
        if (stat(dir, &sb) != 0 && errno == ENOENT) {
            /* Nothing published yet for this machine and MPI is the normal state, not a problem: the
             * module points at the directory before the first profile exists (the report says so). */
            g_profile_dir_missing = 1;
            ok = 0;
        } else if (pgmpi_read_profile_dir(dir, &blob, &len, err, sizeof err) != 0) {
            warn("%s; all collectives use the MPI library's default", err);
            ok = 0;
        }
    }
    uint64_t ok64 = (uint64_t)ok;
    share_from_rank0(&ok64, 1);
    if (!ok64) return;
    share_bytes_from_rank0(&blob, &len);
    g_nbad_profiles = pgmpi_profset_load_blob(&g_profiles, blob, len, profile_diag, NULL);
    free(blob);
    pgmpi_datatypes_setup(g_profiles.dtrules, g_profiles.ndtrules);   /* GL4 replacements (datatypes.c) */
    for (int c = 0; c < PGMPI_NCOLL; c++) {
        g_nprofiles += g_profiles.nprofs[c] + g_profiles.nlprofs[c];
        cs[c].lprofs = g_profiles.lprofs[c];
        cs[c].nlprofs = g_profiles.nlprofs[c];
        if (!g_profiles.nprofs[c]) continue;
        cs[c].profs = g_profiles.profs[c];
        cs[c].nprofs = g_profiles.nprofs[c];
        cs[c].pidx = malloc((PTAB + 1) * sizeof(int16_t));
        if (!cs[c].pidx) continue;
        for (int p = 0; p <= PTAB; p++) {
            const pgmpi_profile_t *pr = p ? pgmpi_profset_find(&g_profiles, c, p) : NULL;
            cs[c].pidx[p] = pr ? (int16_t)(pr - cs[c].profs) : -1;
        }
    }
}

static void setup(int *argc, char ***argv)
{
    if (g_setup_done) return;
    g_setup_done = 1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &g_world_size);
    int provided = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&provided);
    g_thread_multiple = provided == MPI_THREAD_MULTIPLE;

    pgmpi_options_t o;
    pgmpi_options_init(&o);
    pgmpi_options_from_params(&o, env("PGMPI_PARAMS"));
    pgmpi_options_from_modules(&o, env("PGMPITUNE_MODULES"));
    pgmpi_options_from_argv(&o, argc, argv);        /* always removes our arguments */

    int verbose = env_true("PGMPITUNE_VERBOSE");
    if (env_true("PGMPITUNE_DISABLE")) {
        g_disabled = 1;
        g_verbose = 0;
        g_disabled_verbose = verbose;
        pgmpi_options_free(&o);
        return;
    }

    /* Benchmark mode errors are hard errors, the same decision on every rank. */
    int err = o.nerrors > 0, any = 0;
    PMPI_Allreduce(&err, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any) {
        if (g_rank == 0) {
            for (int i = 0; i < o.nerrors && i < (int)(sizeof o.errors / sizeof o.errors[0]); i++)
                fprintf(stderr, "pgmpitune: error: %s\n", o.errors[i]);
            if (!err) fprintf(stderr, "pgmpitune: error: invalid forced selection on another rank\n");
            fprintf(stderr, "pgmpitune: error: refusing to run a benchmark with an invalid --module selection\n");
            fflush(stderr);
        }
        PMPI_Barrier(MPI_COMM_WORLD);
        PMPI_Finalize();
        exit(2);
    }

    setup_pools(&o);
    setup_profiles(&o);
    pgmpi_fast.usage = pgmpi_usage_setup(g_rank, g_world_size);
    if (verbose) {
        for (int c = 0; c < PGMPI_NCOLL; c++) g_report[c] = calloc(REPORT_SLOTS, sizeof(slot_t));
    }
    for (int c = 0; c < PGMPI_NCOLL; c++) {
        if (o.forced[c] >= 0) {
            cs[c].forced = o.forced[c];
            pgmpi_fast.mode[c] = o.forced[c] > 0 ? MODE_FORCED : MODE_DEFAULT;
        } else if ((cs[c].nprofs && cs[c].pidx) || cs[c].nlprofs) {
            pgmpi_fast.mode[c] = MODE_PROFILE;
        }
        if (o.forced[c] >= 0) cs[c].forced = o.forced[c];
    }
    /* forced "default" still wins over profiles: MODE_DEFAULT above */
    g_report_on = verbose;
    g_verbose = verbose && !g_report_suspended;
    update_any();
    pgmpi_options_free(&o);
}

/* ---- report ----------------------------------------------------------------------------- */

void pgmpitune_report(FILE *out)
{
    if (!out || g_rank != 0) return;
    if (g_disabled) {
        fprintf(out, "#@pgmpi config disabled 1\n");
        fflush(out);
        return;
    }
    fprintf(out, "#@pgmpi config size_msg_buffer_bytes %zu\n", g_msg_req);
    fprintf(out, "#@pgmpi config size_int_buffer_bytes %zu\n", g_int_req);
    if (g_msg_cap != g_msg_req) fprintf(out, "#@pgmpi config usable_msg_buffer_bytes %zu\n", g_msg_cap);
    if (g_int_cap != g_int_req) fprintf(out, "#@pgmpi config usable_int_buffer_bytes %zu\n", g_int_cap);
    fprintf(out, "#@pgmpi config thread_multiple %d\n", g_thread_multiple);
    if (!g_pack_raw) fprintf(out, "#@pgmpi config pack_is_raw 0\n");
    if (g_profile_dir[0]) fprintf(out, "#@pgmpi config profile_dir %s\n", g_profile_dir);
    if (g_profile_dir_missing) fprintf(out, "#@pgmpi config profile_dir_missing 1\n");
    if (g_config_file[0]) fprintf(out, "#@pgmpi config config_file %s\n", g_config_file);
    fprintf(out, "#@pgmpi config profiles %d\n", g_nprofiles);
    if (g_nbad_profiles) fprintf(out, "#@pgmpi config bad_profiles %d\n", g_nbad_profiles);
    if (g_profiles.ndtfiles) fprintf(out, "#@pgmpi config datatype_profiles %d\n", g_profiles.ndtfiles);
    for (int c = 0; c < PGMPI_NCOLL; c++)
        if (pgmpi_fast.mode[c] == MODE_FORCED)
            fprintf(out, "#@pgmpi config forced %s %s\n", pgmpi_coll_keys[c], pgmpi_descs[c]->algs[cs[c].forced].name);
    for (int c = 0; c < PGMPI_NCOLL; c++) {
        slot_t *tab = g_report[c];
        if (!tab) continue;
        for (unsigned i = 0; i < REPORT_SLOTS; i++) {
            uint64_t k = atomic_load(&tab[i].key);
            if (!k) continue;
            k -= 1;
            unsigned long long n = (unsigned long long)(k >> 8);
            int a = (int)(k & 0xff);
            const char *name = a < pgmpi_descs[c]->nalgs ? pgmpi_descs[c]->algs[a].name : "?";
            uint64_t used = atomic_load(&tab[i].used), fb = atomic_load(&tab[i].fellback);
            if (used) {
                fprintf(out, "#@pgmpi alg %s %llu %s\n", pgmpi_coll_mpi_names[c], n, name);
                fprintf(out, "#@pgmpi count %s %llu %s %llu\n", pgmpi_coll_mpi_names[c], n, name,
                        (unsigned long long)used);
            }
            if (fb)
                fprintf(out, "#@pgmpi fallback %s %llu %s %llu\n", pgmpi_coll_mpi_names[c], n, name,
                        (unsigned long long)fb);
        }
        uint64_t ov = atomic_load(&g_report_overflow[c]);
        if (ov) fprintf(out, "#@pgmpi overflow %s %llu\n", pgmpi_coll_mpi_names[c], (unsigned long long)ov);
    }
    pgmpi_datatypes_report(out);
    fflush(out);
}

static void teardown(void)
{
    if (!g_setup_done || g_finalized) return;
    g_finalized = 1;
    if (g_report_on || g_disabled_verbose) pgmpitune_report(stdout);   /* suspended or not */
    pgmpi_fast.usage = 0;
    pgmpi_usage_finalize();       /* collective on every rank: all of them are in MPI_Finalize */
    pgmpi_datatypes_teardown();   /* the replacements, before MPI goes */
    for (int c = 0; c < PGMPI_NCOLL; c++) pgmpi_fast.mode[c] = MODE_DEFAULT;
    g_verbose = 0;
    update_any();
}

/* ---- public control API ------------------------------------------------------------------ */

int pgmpitune_force(int c, int a)
{
    if (c < 0 || c >= PGMPI_NCOLL || a < 0 || a >= pgmpi_descs[c]->nalgs) return -1;
    if (g_disabled) return 0;
    cs[c].forced = a;
    pgmpi_fast.mode[c] = a > 0 ? MODE_FORCED : MODE_DEFAULT;
    update_any();
    return 0;
}

int pgmpitune_unforce(int c)
{
    if (c < 0 || c >= PGMPI_NCOLL) return -1;
    if (g_disabled) return 0;
    pgmpi_fast.mode[c] = ((cs[c].nprofs && cs[c].pidx) || cs[c].nlprofs) ? MODE_PROFILE : MODE_DEFAULT;
    update_any();
    return 0;
}

/* The call path reads g_verbose only: off, a call of the default asks MPI for nothing (pgmpi_type_bytes)
 * and no call is counted, exactly as in an application without the report. The tables stay. */
int pgmpitune_report_suspend(int suspend)
{
    int was = g_report_suspended;
    g_report_suspended = suspend != 0;
    if (g_setup_done && !g_finalized && !g_disabled) {
        g_verbose = g_report_on && !g_report_suspended;
        update_any();
    }
    return was;
}

int pgmpitune_selected(int c, size_t n_bytes, int p)
{
    if (c < 0 || c >= PGMPI_NCOLL) return -1;
    const cstate_t *s = &cs[c];
    if (pgmpi_fast.mode[c] == MODE_FORCED) return s->forced;
    if (pgmpi_fast.mode[c] != MODE_PROFILE) return 0;
    const pgmpi_profile_t *pr = find_profile(s, p);
    return pr ? pgmpi_profile_find_alg(pr, pgmpi_profile_key_bytes(c, n_bytes, p)) : 0;
}

size_t pgmpitune_pool_bytes(int which)
{
    return which == 0 ? g_msg_cap : g_int_cap;
}

/* ---- MPI entry points ---------------------------------------------------------------------- */

/* Before PMPI_Init, when the rank is not known yet: the message waits for setup() (rank 0 says it). */
static char g_native_msg[1536];

static void native_diag(void *ctx, int is_error, const char *file, int line, const char *text)
{
    (void)ctx;
    (void)is_error;
    char where[1100];
    if (line > 0) snprintf(where, sizeof where, "%s:%d", file, line);
    else snprintf(where, sizeof where, "%s", file);
    snprintf(g_native_msg, sizeof g_native_msg, "%s: %s; no I_MPI_ADJUST_* variable of it is set (the MPI "
             "library's default is used instead)", where, text);
}

/* Rule 8: the MPI library reads its own decision variables in PMPI_Init, so they are set (or not) before. */
static void native_before_init(void)
{
    if (!env_true("PGMPITUNE_DISABLE")) pgmpi_native_env_apply(native_diag, NULL);
}

static void native_after_setup(void)
{
    if (g_native_msg[0]) warn("%s", g_native_msg);
}

int MPI_Init(int *argc, char ***argv)
{
    native_before_init();
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) {
        setup(argc, argv);
        native_after_setup();
    }
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    native_before_init();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) {
        setup(argc, argv);
        native_after_setup();
    }
    return rc;
}

int MPI_Finalize(void)
{
    teardown();
    return PMPI_Finalize();
}
