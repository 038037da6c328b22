/* Usage records: where a job's collective time goes, one small file per job (issue "what users run").
 *
 * On when PGMPITUNE_USAGE_DIR names a spool directory (the module sets it where the admin chose to).
 * The call path then samples: a thread-local countdown picks about one call in PGMPITUNE_USAGE_PERIOD
 * (default 64, jittered so that a periodic application does not alias with it); only a sampled call is
 * timed (CLOCK_MONOTONIC) and entered in a small table keyed by (collective, size bucket, communicator
 * size, whether it was MPI_COMM_WORLD, algorithm that served). A sample stands for the calls since the
 * previous one, so the totals per collective are exact and the per-cell figures are estimates whose error
 * shrinks with the calls a cell holds -- the cells that matter. At MPI_Finalize every rank is in the
 * same call: rank 0 gathers the tables in three steps on a communicator of our own (errors return, never
 * abort), sums them and writes one record atomically (a temporary name in the spool, fsync, rename). Anything that
 * fails -- no directory, a full disk, an error -- drops the record and never touches the job. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pgmpi_internal.h"

#define USAGE_SLOTS 1024           /* distinct cells per rank; later cells count as "overflow" */
#define USAGE_VERSION 1

/* Calls left until the next sample (the call path decrements it while usage is on), and the length of
 * the interval that is running, per thread. A new thread samples its first call. */
__thread int pgmpi_usage_left __attribute__((tls_model("initial-exec"))) = 1;
static __thread int t_interval __attribute__((tls_model("initial-exec")));

typedef struct {
    uint64_t key;                  /* packed cell + 1; 0 = empty */
    uint64_t calls;                /* calls this cell stands for (sum of the sampling intervals) */
    uint64_t ns;                   /* time, ns, scaled the same way */
    uint64_t samples;              /* sampled calls */
} cell_t;

static cell_t *g_cells;
static int g_on, g_period = 64, g_rank, g_size;
static uint64_t g_overflow, g_t_init;
static __thread uint32_t t_rng __attribute__((tls_model("initial-exec"))) = 0x9e3779b9u;
static atomic_flag g_lock = ATOMIC_FLAG_INIT;   /* sampled calls only: MPI_THREAD_MULTIPLE */
static char g_dir[PATH_MAX], g_identity[64] = "job";
static MPI_Comm g_comm = MPI_COMM_NULL;
static int *g_counts, *g_displs;  /* rank 0: the gather's counts and displacements, from MPI_Init on */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The next interval: uniform in [period/2, 3 period/2), so its mean is the period. */
static int next_interval(void)
{
    t_rng = t_rng * 1664525u + 1013904223u;
    int half = g_period / 2 > 0 ? g_period / 2 : 1;
    return half + (int)((t_rng >> 8) % (uint32_t)(g_period > 1 ? g_period : 1));
}

static int bucket_of(size_t n)
{
    if (n == 0) return 0;
    return 64 - __builtin_clzll((unsigned long long)n);   /* 1 + floor(log2 n): 1 B -> 1, 8 B -> 4 */
}

static uint64_t bytes_of_bucket(int b) { return b == 0 ? 0 : (UINT64_C(1) << (b - 1)); }

/* key: coll 8 bits | bucket 8 | world 1 | alg 8 | p 32 */
static uint64_t pack(int c, int b, int world, int alg, int p)
{
    return (((uint64_t)(c & 0xff) << 49) | ((uint64_t)(b & 0xff) << 41) | ((uint64_t)(world & 1) << 40) |
            ((uint64_t)(alg & 0xff) << 32) | (uint64_t)(uint32_t)p) + 1;
}

static void add(uint64_t key, uint64_t calls, uint64_t ns, uint64_t samples)
{
    uint64_t h = key * UINT64_C(0x9E3779B97F4A7C15);
    for (unsigned i = 0; i < USAGE_SLOTS; i++) {
        cell_t *s = &g_cells[(h + i) & (USAGE_SLOTS - 1)];
        if (s->key == 0) s->key = key;
        if (s->key == key) {
            s->calls += calls;
            s->ns += ns;
            s->samples += samples;
            return;
        }
    }
    g_overflow += calls;
}

int pgmpi_usage_setup(int rank, int size)
{
    const char *dir = getenv("PGMPITUNE_USAGE_DIR");
    if (!dir || !*dir || strlen(dir) >= sizeof g_dir - 64) return 0;
    const char *per = getenv("PGMPITUNE_USAGE_PERIOD");
    if (per && *per) {
        long v = strtol(per, NULL, 10);
        if (v >= 1 && v <= 1 << 20) g_period = (int)v;
    }
    const char *id = getenv("PGMPITUNE_USAGE_IDENTITY");
    if (id && *id && strlen(id) < sizeof g_identity) snprintf(g_identity, sizeof g_identity, "%s", id);
    g_cells = calloc(USAGE_SLOTS, sizeof *g_cells);
    if (!g_cells) return 0;
    if (rank == 0 && !(g_counts = calloc(2 * (size_t)size, sizeof *g_counts))) { free(g_cells); g_cells = NULL; return 0; }
    g_displs = g_counts ? g_counts + size : NULL;
    /* Our own communicator for the gather at MPI_Finalize: errors return instead of aborting the job. */
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &g_comm) != MPI_SUCCESS) {
        free(g_cells);
        free(g_counts);
        g_cells = NULL;
        g_counts = g_displs = NULL;
        return 0;
    }
    PMPI_Comm_set_errhandler(g_comm, MPI_ERRORS_RETURN);
    snprintf(g_dir, sizeof g_dir, "%s", dir);
    g_rank = rank;
    g_size = size;
    t_rng ^= (uint32_t)rank * 2654435761u ^ (uint32_t)getpid();
    g_t_init = now_ns();
    g_on = 1;
    t_interval = pgmpi_usage_left = next_interval();
    return 1;
}

uint64_t pgmpi_usage_start(void)
{
    if (!g_on) { pgmpi_usage_left = INT_MAX; return 0; }   /* after MPI_Finalize */
    return now_ns() | 1;   /* never 0: 0 means "not sampled" to the caller */
}

void pgmpi_usage_stop(pgmpi_coll_t c, MPI_Comm comm, size_t n, int alg, uint64_t t0)
{
    uint64_t dt = now_ns() - (t0 & ~UINT64_C(1));
    int span = t_interval > 0 ? t_interval : g_period;   /* the calls this sample stands for */
    int p = 0, world = comm == MPI_COMM_WORLD;
    if (world) p = g_size;
    else if (PMPI_Comm_size(comm, &p) != MPI_SUCCESS) p = 0;
    if (g_cells) {
        while (atomic_flag_test_and_set_explicit(&g_lock, memory_order_acquire)) { }
        add(pack((int)c, bucket_of(n), world, alg, p), (uint64_t)span, dt * (uint64_t)span, 1);
        atomic_flag_clear_explicit(&g_lock, memory_order_release);
    }
    t_interval = pgmpi_usage_left = next_interval();
}

/* ---- MPI_Finalize: gather, sum, write ------------------------------------------------------------- */

typedef struct { uint64_t key, calls, ns, samples; } wire_t;

static int cmp_key(const void *a, const void *b)
{
    uint64_t x = ((const wire_t *)a)->key, y = ((const wire_t *)b)->key;
    return x < y ? -1 : x > y;
}

/* A rank's node, for the layout: FNV-1a of its host name, sent in its table's trailer. Rank 0 counts
 * nodes and ranks per node from the trailers, so the record needs no shared-memory split and no
 * collectives of its own at MPI_Finalize (each step waits for the slowest rank: three in all). */
static uint64_t host_hash(void)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (const unsigned char *q = (const unsigned char *)host; *q; q++) h = (h ^ *q) * UINT64_C(0x100000001b3);
    return h;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The layout of MPI_COMM_WORLD (nodes x ranks per node, or "uneven") from the ranks' host hashes. */
static void world_layout(uint64_t *hosts, int n, char *out, size_t len)
{
    snprintf(out, len, "-");
    if (n <= 0) return;
    qsort(hosts, (size_t)n, sizeof *hosts, cmp_u64);
    int nodes = 0, minppn = 0, maxppn = 0;
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && hosts[j] == hosts[i]) j++;
        int ppn = j - i;
        if (nodes == 0 || ppn < minppn) minppn = ppn;
        if (ppn > maxppn) maxppn = ppn;
        nodes++;
        i = j;
    }
    if (minppn == maxppn) snprintf(out, len, "%dx%d", nodes, maxppn);
    else snprintf(out, len, "%dnodes:%d-%dppn", nodes, minppn, maxppn);
}

static int write_record(const wire_t *cells, int n, uint64_t overflow, double wall_s, double rank_s,
                        const char *layout)
{
    char host[256] = "unknown", tmp[PATH_MAX + 512], fin[PATH_MAX + 512];
    gethostname(host, sizeof host - 1);
    for (char *q = host; *q; q++) if (*q == '/' || *q == ' ') *q = '_';
    const char *job = getenv("SLURM_JOB_ID");
    unsigned long long stamp = (unsigned long long)time(NULL);
    /* Job id, host, pid and time make the name unique; a dot name is never read by the agent. */
    snprintf(tmp, sizeof tmp, "%s/.%s.%d.%llu.tmp", g_dir, host, (int)getpid(), stamp);
    snprintf(fin, sizeof fin, "%s/%s%s%s.%d.%llu.pgmpi-usage", g_dir, job ? job : "", job ? "." : "", host,
             (int)getpid(), stamp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) return -1;
    FILE *f = fdopen(fd, "w");
    if (!f) { close(fd); unlink(tmp); return -1; }
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int llen = 0;
    PMPI_Get_library_version(lib, &llen);
    for (char *q = lib; *q; q++) if (*q == '\n' || *q == '\r') { *q = 0; break; }
    int ident_user = strstr(g_identity, "user") != NULL, ident_job = strstr(g_identity, "job") != NULL;
    int ident_exe = strstr(g_identity, "exe") != NULL;
    fprintf(f, "#@pgmpi usage version %d\n", USAGE_VERSION);
    fprintf(f, "#@pgmpi usage library %s\n", lib);
    fprintf(f, "#@pgmpi usage host %s\n", host);
    fprintf(f, "#@pgmpi usage ranks %d\n", g_size);
    fprintf(f, "#@pgmpi usage layout %s\n", layout);
    fprintf(f, "#@pgmpi usage wall_s %.6f\n", wall_s);
    fprintf(f, "#@pgmpi usage rank_s %.6f\n", rank_s);
    fprintf(f, "#@pgmpi usage sample_period %d\n", g_period);
    fprintf(f, "#@pgmpi usage identity %s\n", g_identity);
    if (ident_job && job) fprintf(f, "#@pgmpi usage slurm_job_id %s\n", job);
    if (ident_user) {
        const char *u = getenv("USER");
        if (u) fprintf(f, "#@pgmpi usage user %s\n", u);
    }
    if (ident_exe) {
        char exe[PATH_MAX];
        ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (l > 0) { exe[l] = 0; const char *b = strrchr(exe, '/'); fprintf(f, "#@pgmpi usage exe %s\n", b ? b + 1 : exe); }
    }
    if (overflow) fprintf(f, "#@pgmpi usage overflow_calls %llu\n", (unsigned long long)overflow);
    fprintf(f, "collective bytes_lo p world algorithm calls rank_seconds samples\n");
    for (int i = 0; i < n; i++) {
        uint64_t k = cells[i].key - 1;
        int c = (int)((k >> 49) & 0xff), b = (int)((k >> 41) & 0xff), world = (int)((k >> 40) & 1);
        int alg = (int)((k >> 32) & 0xff), p = (int)(uint32_t)k;
        if (c >= PGMPI_NCOLL) continue;
        const char *an = alg < pgmpi_descs[c]->nalgs ? pgmpi_descs[c]->algs[alg].name : "?";
        fprintf(f, "%s %llu %d %d %s %llu %.9f %llu\n", pgmpi_coll_mpi_names[c],
                (unsigned long long)bytes_of_bucket(b), p, world, an, (unsigned long long)cells[i].calls,
                (double)cells[i].ns * 1e-9, (unsigned long long)cells[i].samples);
    }
    fprintf(f, "#@pgmpi usage end %d\n", n);   /* a record without this line is incomplete */
    int bad = fflush(f) != 0 || ferror(f);
    if (!bad) bad = fsync(fd) != 0;
    if (fclose(f) != 0) bad = 1;
    if (bad || rename(tmp, fin) != 0) { unlink(tmp); return -1; }
    return 0;
}

void pgmpi_usage_finalize(void)
{
    if (!g_on) return;
    g_on = 0;
    pgmpi_usage_left = INT_MAX;
    double wall = (double)(now_ns() - g_t_init) * 1e-9;
    int n = 0;
    for (unsigned i = 0; i < USAGE_SLOTS; i++) n += g_cells[i].key != 0;
    wire_t *mine = calloc((size_t)n + 1, sizeof *mine);
    if (mine) {
        int k = 0;
        for (unsigned i = 0; i < USAGE_SLOTS; i++)
            if (g_cells[i].key) mine[k++] = (wire_t){g_cells[i].key, g_cells[i].calls, g_cells[i].ns, g_cells[i].samples};
        /* trailer: overflow, this rank's wall time, its node */
        mine[n] = (wire_t){0, g_overflow, (uint64_t)(wall * 1e9), host_hash()};
    }
    /* Every rank takes part in the same three steps whatever happened locally: (1) rank 0 gathers the
     * table sizes (-1: this rank has none), (2) tells everyone whether it can take them all, (3) gathers. */
    int bytes = mine ? (n + 1) * (int)sizeof(wire_t) : -1;
    int gathered = PMPI_Gather(&bytes, 1, MPI_INT, g_counts, 1, MPI_INT, 0, g_comm) == MPI_SUCCESS;
    long total = 0;
    wire_t *all = NULL;
    int can = 0;
    if (g_rank == 0 && gathered) {
        can = 1;
        for (int r = 0; r < g_size; r++) {
            if (g_counts[r] < 0) can = 0;
            g_displs[r] = (int)total;
            total += g_counts[r] > 0 ? g_counts[r] : 0;
        }
        all = can && total < INT_MAX ? malloc((size_t)total) : NULL;
        can = all != NULL;
    }
    if (PMPI_Bcast(&can, 1, MPI_INT, 0, g_comm) != MPI_SUCCESS) can = 0;
    if (can && mine &&
        PMPI_Gatherv(mine, bytes, MPI_BYTE, all, g_counts, g_displs, MPI_BYTE, 0, g_comm) == MPI_SUCCESS &&
        g_rank == 0) {
        wire_t *w = all;
        long m = total / (long)sizeof(wire_t);
        uint64_t overflow = 0, *hosts = malloc((size_t)g_size * sizeof *hosts);
        double rank_s = 0;
        long cells = 0;
        int nh = 0;
        for (long i = 0; i < m; i++) {
            if (w[i].key == 0) {
                overflow += w[i].calls;
                rank_s += (double)w[i].ns * 1e-9;
                if (hosts && nh < g_size) hosts[nh++] = w[i].samples;
            } else {
                w[cells++] = w[i];
            }
        }
        char layout[64] = "-";
        if (hosts && nh == g_size) world_layout(hosts, nh, layout, sizeof layout);
        free(hosts);
        qsort(w, (size_t)cells, sizeof *w, cmp_key);
        long out = 0;
        for (long i = 0; i < cells; i++) {
            if (out && w[out - 1].key == w[i].key) {
                w[out - 1].calls += w[i].calls;
                w[out - 1].ns += w[i].ns;
                w[out - 1].samples += w[i].samples;
            } else {
                w[out++] = w[i];
            }
        }
        if (write_record(w, (int)out, overflow, wall, rank_s, layout) != 0 && getenv("PGMPITUNE_VERBOSE"))
            fprintf(stderr, "pgmpitune: usage record not written to %s: %s (the job is not affected)\n", g_dir,
                    strerror(errno));
    }
    free(all);
    free(mine);
    free(g_cells);
    free(g_counts);
    g_cells = NULL;
    g_counts = g_displs = NULL;
    PMPI_Comm_free(&g_comm);
}
