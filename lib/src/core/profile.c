/* Profile reader (PGMPITuneLib .prf + our #@pgmpi comment extensions), shared by the library
 * (at MPI_Init, never on the call path) and pgmpitune-check. See lib/docs/profile-format.md. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pgmpi_internal.h"

#define PGMPI_PROFILE_VERSION 1
#define MAX_PROFILE_BYTES ((size_t)64 << 20)

typedef struct {
    const char *file;
    pgmpi_diag_fn diag;
    void *ctx;
} diag_t;

static int fail(const diag_t *d, int line, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (d->diag) d->diag(d->ctx, 1, d->file, line, msg);
    return -1;
}

static void note(const diag_t *d, int line, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (d->diag) d->diag(d->ctx, 0, d->file, line, msg);
}

static int is_blank(char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f'; }

/* A line cursor over the text. */
typedef struct {
    const char *p, *end;
    int lineno;
    const char *ls, *le;   /* current line, without '\n' */
} lines_t;

static int next_line(lines_t *L)
{
    if (L->p >= L->end) return 0;
    L->ls = L->p;
    const char *nl = memchr(L->p, '\n', (size_t)(L->end - L->p));
    L->le = nl ? nl : L->end;
    L->p = nl ? nl + 1 : L->end;
    L->lineno++;
    return 1;
}

/* Token reader within [s, e). Returns token start and sets *tl; NULL at end of line or '#'. */
static const char *token(const char **s, const char *e, size_t *tl)
{
    const char *q = *s;
    while (q < e && is_blank(*q)) q++;
    if (q >= e || *q == '#') { *s = q; return NULL; }
    const char *t = q;
    while (q < e && !is_blank(*q) && *q != '#') q++;
    *tl = (size_t)(q - t);
    *s = q;
    return t;
}

/* Whole-token signed integer. */
static int tok_int(const char *t, size_t l, long long *v)
{
    size_t i = 0;
    int neg = 0;
    if (l == 0) return -1;
    if (t[0] == '+' || t[0] == '-') { neg = t[0] == '-'; i = 1; }
    if (i == l) return -1;
    unsigned long long acc = 0;
    for (; i < l; i++) {
        if (t[i] < '0' || t[i] > '9') return -1;
        unsigned d = (unsigned)(t[i] - '0');
        if (acc > (0x7fffffffffffffffULL - d) / 10) return -1;
        acc = acc * 10 + d;
    }
    *v = neg ? -(long long)acc : (long long)acc;
    return 0;
}

int pgmpi_parse_size(const char *s, size_t len, uint64_t *out)
{
    while (len && is_blank(*s)) { s++; len--; }
    while (len && (is_blank(s[len - 1]) || s[len - 1] == '\n')) len--;
    long long v;
    if (tok_int(s, len, &v) != 0 || v < 0) return -1;
    *out = (uint64_t)v;
    return 0;
}

/* Log-linear buckets of message sizes (as in HdrHistogram): sizes below 2^(k+1) have a bucket each;
 * above, each octave [2^e, 2^(e+1)) is cut into 2^k equal parts. Monotone in n; exact for small
 * sizes and for the power-of-two boundaries that profiles are made of. */
static inline size_t size_bucket(uint64_t n, unsigned k)
{
    if (n < (UINT64_C(2) << k)) return (size_t)n;
    unsigned e = 63u - (unsigned)__builtin_clzll(n);
    return ((size_t)(e - k) << k) + (size_t)(n >> (e - k));
}

/* The first size of bucket b (saturating at UINT64_MAX past the last octave). */
static uint64_t bucket_start(size_t b, unsigned k)
{
    if (b < ((size_t)2 << k)) return (uint64_t)b;
    size_t e = (b >> k) - 1 + k, m = b - ((e - k) << k);
    if (e > 63) return UINT64_MAX;
    return (uint64_t)m << (e - k);
}

/* Entries of the bucket table: at most 4 per range (+256), so the index never costs more memory than
 * the ranges (24 bytes each); within that, the finest buckets, so that few ranges share one. */
#define BUCKETS_PER_RANGE 4
#define BUCKETS_MIN 256
#define BUCKET_BITS_MAX 24

static int build_index(pgmpi_profile_t *p)
{
    size_t n = (size_t)p->nranges, budget = BUCKETS_PER_RANGE * n + BUCKETS_MIN;
    uint64_t last = p->ranges[n - 1].lo;
    unsigned k = 1;
    while (k < BUCKET_BITS_MAX && size_bucket(last, k + 1) + 2 <= budget) k++;
    size_t nb = size_bucket(last, k) + 1;   /* sizes in buckets >= nb are all >= last */
    uint32_t *first = malloc((nb + 1) * sizeof *first);
    if (!first) return -1;
    size_t i = 0;
    for (size_t b = 0; b <= nb; b++) {
        uint64_t start = bucket_start(b, k);
        while (i < n && p->ranges[i].lo <= start) i++;
        first[b] = (uint32_t)i;
    }
    p->bucket_first = first;
    p->nbuckets = nb;
    p->bucket_bits = k;
    return 0;
}

typedef enum { ST_NAME, ST_NPROCS, ST_NALGS, ST_ALG, ST_NRANGES, ST_RANGE, ST_DONE } state_t;

static int cmp_range(const void *a, const void *b)
{
    const pgmpi_range_t *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : 0;
}

void pgmpi_profile_free(pgmpi_profile_t *p)
{
    if (!p) return;
    free(p->ranges);
    free(p->bucket_first);
    free(p->file);
    p->bucket_first = NULL;
    p->nbuckets = 0;
    p->ranges = NULL;
    p->file = NULL;
}

/* Extension line "#@pgmpi key value..." (s points after "#@pgmpi"). */
static int extension(const diag_t *d, int line, const char *s, const char *e, pgmpi_profile_t *out,
                     int *have_prange, int *prange_line)
{
    size_t kl, vl;
    const char *k = token(&s, e, &kl);
    if (!k) return 0;
    if (kl == 15 && !strncmp(k, "profile_version", kl)) {
        long long v;
        const char *t = token(&s, e, &vl);
        if (!t || tok_int(t, vl, &v) != 0 || v < 1)
            return fail(d, line, "#@pgmpi profile_version needs a positive integer");
        if (v > PGMPI_PROFILE_VERSION)
            note(d, line, "profile_version %lld is newer than this reader (%d); unknown keys are ignored",
                 v, PGMPI_PROFILE_VERSION);
        out->version = (int)v;
    } else if (kl == 12 && !strncmp(k, "nprocs_range", kl)) {
        long long lo, hi;
        size_t l1, l2;
        const char *t1 = token(&s, e, &l1), *t2 = token(&s, e, &l2);
        if (!t1 || !t2 || tok_int(t1, l1, &lo) || tok_int(t2, l2, &hi) || lo < 1 || hi < lo || hi > 0x7fffffff)
            return fail(d, line, "#@pgmpi nprocs_range needs two integers 1 <= lo <= hi");
        out->plo = (int)lo;
        out->phi = (int)hi;
        *have_prange = 1;
        *prange_line = line;
    } else if (kl == 6 && !strncmp(k, "layout", kl)) {
        const char *t = token(&s, e, &vl);
        char buf[64], *x;
        long nodes = 0, ppn = 0;
        if (t && vl < sizeof buf) {
            memcpy(buf, t, vl);
            buf[vl] = 0;
            nodes = strtol(buf, &x, 10);
            if (*x == 'x') ppn = strtol(x + 1, &x, 10); else nodes = 0;
            if (*x) nodes = 0;
        }
        if (nodes < 1 || ppn < 1 || nodes > 0x7fffffff / ppn)
            return fail(d, line, "#@pgmpi layout needs <nodes>x<ppn>, e.g. 2x2 (positive integers)");
        out->lnodes = (int)nodes;
        out->lppn = (int)ppn;
        *prange_line = *prange_line ? *prange_line : line;
    } else if ((kl == 7 && !strncmp(k, "machine", kl)) || (kl == 11 && !strncmp(k, "mpi_library", kl)) ||
               (kl == 11 && !strncmp(k, "mpi_version", kl)) || (kl == 6 && !strncmp(k, "module", kl)) ||
               (kl == 8 && !strncmp(k, "campaign", kl)) || (kl == 7 && !strncmp(k, "created", kl)) ||
               (kl == 9 && !strncmp(k, "generator", kl))) {
        /* provenance: free text */
    } else {
        note(d, line, "unknown extension key '%.*s' ignored", (int)kl, k);
    }
    return 0;
}

int pgmpi_profile_parse(const char *file, const char *text, size_t len, pgmpi_profile_t *out,
                        pgmpi_diag_fn diagfn, void *ctx)
{
    diag_t d = {file, diagfn, ctx};
    lines_t L = {text, text + len, 0, NULL, NULL};
    state_t st = ST_NAME;
    long long nalgs = 0, nranges = 0, got_algs = 0, got_ranges = 0;
    int alg_ids[256], alg_idx[256], alg_lines[256];
    int have_prange = 0, prange_line = 0, last_line = 0;
    char valid[2048];

    memset(out, 0, sizeof *out);
    out->coll = -1;
    if (memchr(text, '\0', len)) return fail(&d, 0, "binary data (NUL byte) in a profile");

    while (next_line(&L)) {
        const char *s = L.ls, *e = L.le;
        while (s < e && is_blank(*s)) s++;
        if (s >= e) continue;                               /* blank line */
        if (*s == '#') {
            if (e - s >= 7 && !strncmp(s, "#@pgmpi", 7) && (e - s == 7 || is_blank(s[7]))) {
                if (extension(&d, L.lineno, s + 7, e, out, &have_prange, &prange_line)) goto bad;
            }
            continue;
        }
        last_line = L.lineno;
        size_t tl;
        const char *t = token(&s, e, &tl);
        long long v;
        switch (st) {
        case ST_NAME: {
            int c = -1;
            for (int i = 0; i < PGMPI_NCOLL; i++)
                if (strlen(pgmpi_coll_mpi_names[i]) == tl && !strncmp(pgmpi_coll_mpi_names[i], t, tl)) c = i;
            if (c < 0) {
                char names[512] = "";
                size_t pos = 0;
                for (int i = 0; i < PGMPI_NCOLL; i++)
                    pos += (size_t)snprintf(names + pos, sizeof names - pos, "%s%s", i ? ", " : "",
                                            pgmpi_coll_mpi_names[i]);
                fail(&d, L.lineno, "unknown MPI collective '%.*s' (valid: %s)", (int)(tl > 64 ? 64 : tl), t,
                     names);
                goto bad;
            }
            out->coll = c;
            out->line = L.lineno;
            st = ST_NPROCS;
            break;
        }
        case ST_NPROCS:
            if (tok_int(t, tl, &v) || v <= 0 || v > 0x7fffffff) {
                fail(&d, L.lineno, "number of processes: expected an integer > 0, got '%.*s'",
                     (int)(tl > 64 ? 64 : tl), t);
                goto bad;
            }
            out->nprocs = (int)v;
            st = ST_NALGS;
            break;
        case ST_NALGS:
            if (tok_int(t, tl, &v) || v < 0 || v > 256) {
                fail(&d, L.lineno, "number of mock-ups: expected an integer 0..256, got '%.*s'",
                     (int)(tl > 64 ? 64 : tl), t);
                goto bad;
            }
            nalgs = v;
            st = nalgs ? ST_ALG : ST_NRANGES;
            break;
        case ST_ALG: {
            size_t nl;
            if (tok_int(t, tl, &v) || v < -0x7fffffffLL || v > 0x7fffffffLL) {
                fail(&d, L.lineno, "mock-up line: expected '<id> <name>', got '%.*s'", (int)(tl > 64 ? 64 : tl), t);
                goto bad;
            }
            const char *nm = token(&s, e, &nl);
            if (!nm) { fail(&d, L.lineno, "mock-up line: name missing after id %lld", v); goto bad; }
            for (long long i = 0; i < got_algs; i++)
                if (alg_ids[i] == (int)v) {
                    fail(&d, L.lineno, "duplicate mock-up id %lld (first on line %d)", v, alg_lines[i]);
                    goto bad;
                }
            int a = pgmpi_alg_lookup(out->coll, nm, nl);
            if (a < 0) {
                pgmpi_alg_list(out->coll, valid, sizeof valid);
                fail(&d, L.lineno, "unknown mock-up '%.*s' for %s (valid: %s)", (int)(nl > 80 ? 80 : nl), nm,
                     pgmpi_coll_mpi_names[out->coll], valid);
                goto bad;
            }
            alg_ids[got_algs] = (int)v;
            alg_idx[got_algs] = a;
            alg_lines[got_algs] = L.lineno;
            if (++got_algs == nalgs) st = ST_NRANGES;
            break;
        }
        case ST_NRANGES:
            if (tok_int(t, tl, &v) || v < 0 || v > 100000000) {
                fail(&d, L.lineno, "number of ranges: expected an integer >= 0, got '%.*s'",
                     (int)(tl > 64 ? 64 : tl), t);
                goto bad;
            }
            nranges = v;
            if (nranges) {
                out->ranges = malloc((size_t)nranges * sizeof *out->ranges);
                if (!out->ranges) { fail(&d, L.lineno, "out of memory for %lld ranges", v); goto bad; }
            }
            st = nranges ? ST_RANGE : ST_DONE;
            break;
        case ST_RANGE: {
            long long lo, hi, id;
            size_t l2, l3;
            const char *t2 = token(&s, e, &l2), *t3 = t2 ? token(&s, e, &l3) : NULL;
            if (!t2 || !t3 || tok_int(t, tl, &lo) || tok_int(t2, l2, &hi) || tok_int(t3, l3, &id)) {
                fail(&d, L.lineno, "range %lld of %lld: expected '<first byte> <last byte> <id>'", got_ranges + 1,
                     nranges);
                goto bad;
            }
            if (lo < 0 || hi < lo) {
                fail(&d, L.lineno, "range %lld..%lld: need 0 <= first byte <= last byte", lo, hi);
                goto bad;
            }
            int a = -1;
            for (long long i = 0; i < got_algs; i++)
                if (alg_ids[i] == id) a = alg_idx[i];
            if (a < 0) {
                fail(&d, L.lineno, "range %lld..%lld refers to mock-up id %lld, which is not declared", lo, hi, id);
                goto bad;
            }
            out->ranges[got_ranges].lo = (uint64_t)lo;
            out->ranges[got_ranges].hi = (uint64_t)hi;
            out->ranges[got_ranges].alg = a;
            if (++got_ranges == nranges) st = ST_DONE;
            break;
        }
        case ST_DONE:
            fail(&d, L.lineno, "unexpected data after the last of %lld ranges: '%.*s'", nranges,
                 (int)(tl > 64 ? 64 : tl), t);
            goto bad;
        }
    }
    if (st != ST_DONE) {
        static const char *const what[] = {"the MPI name", "the number of processes", "the number of mock-ups",
                                           "a mock-up line", "the number of ranges", "a range line", ""};
        if (st == ST_RANGE)
            fail(&d, last_line, "truncated: %lld of %lld ranges present", got_ranges, nranges);
        else if (st == ST_ALG)
            fail(&d, last_line, "truncated: %lld of %lld mock-up lines present", got_algs, nalgs);
        else
            fail(&d, last_line, "truncated: %s is missing", what[st]);
        goto bad;
    }
    if (have_prange) {
        if (out->nprocs < out->plo || out->nprocs > out->phi) {
            fail(&d, prange_line, "nprocs_range %d %d does not contain the number of processes %d (line 2)",
                 out->plo, out->phi, out->nprocs);
            goto bad;
        }
    } else {
        out->plo = out->phi = out->nprocs;
    }
    if (out->lnodes) {    /* a layout is one process count: that of line 2 */
        if (out->lnodes * out->lppn != out->nprocs || out->plo != out->phi) {
            fail(&d, prange_line, "layout %dx%d is %d processes, the profile is for %d..%d (line 2, nprocs_range)",
                 out->lnodes, out->lppn, out->lnodes * out->lppn, out->plo, out->phi);
            goto bad;
        }
    }
    out->nranges = (int)nranges;
    if (nranges > 1) {
        /* remember file lines for overlap messages: sort a copy of indexes would cost memory; instead
         * sort and report the overlapping byte ranges themselves. */
        qsort(out->ranges, (size_t)nranges, sizeof *out->ranges, cmp_range);
        for (long long i = 1; i < nranges; i++)
            if (out->ranges[i].lo <= out->ranges[i - 1].hi) {
                fail(&d, out->line, "overlapping ranges %llu..%llu and %llu..%llu",
                     (unsigned long long)out->ranges[i - 1].lo, (unsigned long long)out->ranges[i - 1].hi,
                     (unsigned long long)out->ranges[i].lo, (unsigned long long)out->ranges[i].hi);
                goto bad;
            }
    }
    if (nranges && build_index(out) != 0) { fail(&d, out->line, "out of memory for %lld ranges", nranges); goto bad; }
    out->file = strdup(file ? file : "?");
    return 0;
bad:
    free(out->ranges);
    out->ranges = NULL;
    out->nranges = 0;
    return -1;
}

int pgmpi_profile_find_alg(const pgmpi_profile_t *p, uint64_t n)
{
    /* The last range with lo <= n. Its index is count(lo <= n) - 1, and that count lies between
     * bucket_first[b] and bucket_first[b + 1] for n's bucket b: one table load, then a branch-free
     * binary search over the few ranges starting inside the bucket (all of them, O(log M), in the
     * worst case). */
    size_t b = size_bucket(n, p->bucket_bits), count;
    if (b >= p->nbuckets) {
        count = (size_t)p->nranges;        /* beyond the last lo (also: no ranges) */
    } else {
        size_t len = p->bucket_first[b + 1] - p->bucket_first[b];
        const pgmpi_range_t *base = p->ranges + p->bucket_first[b];
        if (len) {
            while (len > 1) {
                size_t half = len / 2;
                base = base[half].lo <= n ? base + half : base;
                len -= half;
            }
            base += base->lo <= n;
        }
        count = (size_t)(base - p->ranges);
    }
    if (!count) return 0;
    const pgmpi_range_t *r = &p->ranges[count - 1];
    return n <= r->hi ? r->alg : 0;
}

int pgmpi_profset_add(pgmpi_profset_t *s, pgmpi_profile_t *p, pgmpi_diag_fn diagfn, void *ctx)
{
    diag_t d = {p->file, diagfn, ctx};
    int c = p->coll, n = s->nprofs[c];
    if (p->lnodes) {
        int m = s->nlprofs[c];
        for (int i = 0; i < m; i++) {
            const pgmpi_profile_t *q = &s->lprofs[c][i];
            if (q->lnodes == p->lnodes && q->lppn == p->lppn) {
                fail(&d, p->line, "%s profile for layout %dx%d conflicts with %s, which is used instead",
                     pgmpi_coll_mpi_names[c], p->lnodes, p->lppn, q->file);
                pgmpi_profile_free(p);
                return -1;
            }
        }
        pgmpi_profile_t *nl = realloc(s->lprofs[c], (size_t)(m + 1) * sizeof *nl);
        if (!nl) {
            fail(&d, 0, "out of memory");
            pgmpi_profile_free(p);
            return -1;
        }
        nl[m] = *p;
        s->lprofs[c] = nl;
        s->nlprofs[c] = m + 1;
        return 0;
    }
    for (int i = 0; i < n; i++) {
        const pgmpi_profile_t *q = &s->profs[c][i];
        if (p->plo <= q->phi && q->plo <= p->phi) {
            fail(&d, p->line, "%s profile for p=%d..%d conflicts with %s (p=%d..%d), which is used instead",
                 pgmpi_coll_mpi_names[c], p->plo, p->phi, q->file, q->plo, q->phi);
            pgmpi_profile_free(p);
            return -1;
        }
    }
    pgmpi_profile_t *np = realloc(s->profs[c], (size_t)(n + 1) * sizeof *np);
    if (!np) {
        fail(&d, 0, "out of memory");
        pgmpi_profile_free(p);
        return -1;
    }
    int i = n;
    while (i > 0 && np[i - 1].plo > p->plo) { np[i] = np[i - 1]; i--; }
    np[i] = *p;
    s->profs[c] = np;
    s->nprofs[c] = n + 1;
    return 0;
}

void pgmpi_profset_free(pgmpi_profset_t *s)
{
    for (int c = 0; c < PGMPI_NCOLL; c++) {
        for (int i = 0; i < s->nprofs[c]; i++) pgmpi_profile_free(&s->profs[c][i]);
        free(s->profs[c]);
        s->profs[c] = NULL;
        s->nprofs[c] = 0;
        for (int i = 0; i < s->nlprofs[c]; i++) pgmpi_profile_free(&s->lprofs[c][i]);
        free(s->lprofs[c]);
        s->lprofs[c] = NULL;
        s->nlprofs[c] = 0;
    }
    free(s->dtrules);
    s->dtrules = NULL;
    s->ndtrules = s->ndtfiles = 0;
}

const pgmpi_profile_t *pgmpi_profset_find(const pgmpi_profset_t *s, int c, int p)
{
    const pgmpi_profile_t *v = s->profs[c];
    int lo = 0, hi = s->nprofs[c] - 1, best = -1;
    while (lo <= hi) {
        int mid = (lo + hi) >> 1;
        if (v[mid].plo <= p) { best = mid; lo = mid + 1; }
        else hi = mid - 1;
    }
    return (best >= 0 && p <= v[best].phi) ? &v[best] : NULL;
}

/* ---- files and directories -------------------------------------------------- */

int pgmpi_read_file(const char *path, char **text, size_t *len, size_t max)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) { fclose(f); errno = ENOMEM; return -1; }
    for (;;) {
        if (n == cap) {
            if (cap >= max) { free(buf); fclose(f); errno = EFBIG; return -1; }
            cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb) { free(buf); fclose(f); errno = ENOMEM; return -1; }
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) { free(buf); errno = EIO; return -1; }
    *text = buf;
    *len = n;
    return 0;
}

static int has_suffix(const char *nm, const char *suffix)
{
    size_t l = strlen(nm), k = strlen(suffix);
    return l > k && strcmp(nm + l - k, suffix) == 0;
}
/* The profile set: PGMPITuneLib's *.prf files and our datatype profiles (*.dtprf, which readers of the
 * .prf format never open). */
static int is_profile_name(const char *nm)
{
    return nm[0] != '.' && (has_suffix(nm, ".prf") || has_suffix(nm, ".dtprf"));
}
int pgmpi_is_dtprofile_name(const char *path) { return has_suffix(path, ".dtprf"); }

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int blob_put(char **blob, size_t *len, size_t *cap, const void *data, size_t n)
{
    if (*len + n > *cap) {
        size_t nc = *cap ? *cap : 4096;
        while (nc < *len + n) nc *= 2;
        char *nb = realloc(*blob, nc);
        if (!nb) return -1;
        *blob = nb;
        *cap = nc;
    }
    memcpy(*blob + *len, data, n);
    *len += n;
    return 0;
}

int pgmpi_read_profile_dir(const char *dir, char **blob, size_t *len, char *err, size_t errcap)
{
    *blob = NULL;
    *len = 0;
    DIR *dp = opendir(dir);
    if (!dp) {
        snprintf(err, errcap, "cannot open profile directory %s: %s", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t nn = 0, cn = 0;
    struct dirent *ent;
    while ((ent = readdir(dp))) {
        if (!is_profile_name(ent->d_name)) continue;
        if (nn == cn) {
            cn = cn ? 2 * cn : 16;
            char **x = realloc(names, cn * sizeof *x);
            if (!x) break;
            names = x;
        }
        names[nn++] = strdup(ent->d_name);
    }
    closedir(dp);
    if (nn) qsort(names, nn, sizeof *names, cmp_str);
    size_t cap = 0;
    for (size_t i = 0; i < nn; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat sb;
        char *text = NULL;
        size_t tl = 0;
        int ok = stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && pgmpi_read_file(path, &text, &tl, MAX_PROFILE_BYTES) == 0;
        if (!ok) {
            /* unreadable: an empty record with a marker text the parser reports */
            static const char marker[] = "\0unreadable";
            text = malloc(sizeof marker);
            memcpy(text, marker, sizeof marker);
            tl = sizeof marker - 1;
        }
        uint32_t nl = (uint32_t)strlen(path);
        uint64_t l64 = tl;
        if (blob_put(blob, len, &cap, &nl, sizeof nl) || blob_put(blob, len, &cap, path, nl) ||
            blob_put(blob, len, &cap, &l64, sizeof l64) || blob_put(blob, len, &cap, text, tl)) {
            snprintf(err, errcap, "out of memory reading %s", dir);
            free(text);
            for (size_t j = i; j < nn; j++) free(names[j]);
            free(names);
            return -1;
        }
        free(text);
        free(names[i]);
    }
    free(names);
    return 0;
}

int pgmpi_profset_load_blob(pgmpi_profset_t *s, const char *blob, size_t len, pgmpi_diag_fn diag, void *ctx)
{
    size_t pos = 0;
    int bad = 0;
    while (pos + sizeof(uint32_t) <= len) {
        uint32_t nl;
        uint64_t tl;
        memcpy(&nl, blob + pos, sizeof nl);
        pos += sizeof nl;
        if (pos + nl + sizeof tl > len) break;
        char name[4097];
        size_t cl = nl < 4096 ? nl : 4096;
        memcpy(name, blob + pos, cl);
        name[cl] = 0;
        pos += nl;
        memcpy(&tl, blob + pos, sizeof tl);
        pos += sizeof tl;
        if (pos + tl > len) break;
        const char *text = blob + pos;
        pos += tl;
        if (tl >= 1 && text[0] == '\0') {
            diag_t d = {name, diag, ctx};
            fail(&d, 0, "cannot read this profile file");
            bad++;
            continue;
        }
        if (pgmpi_is_dtprofile_name(name)) {
            if (pgmpi_dtprofile_parse(name, text, (size_t)tl, s, diag, ctx) != 0) bad++;
            continue;
        }
        pgmpi_profile_t p;
        if (pgmpi_profile_parse(name, text, (size_t)tl, &p, diag, ctx) != 0) { bad++; continue; }
        if (pgmpi_profset_add(s, &p, diag, ctx) != 0) bad++;
    }
    return bad;
}

/* ---- datatype profiles (*.dtprf): GL4 replacements keyed on the layout signature --------------- */
#define PGMPI_DTPROFILE_VERSION 1

static int hex16(const char *t, size_t l, uint64_t *v)
{
    if (l != 16) return -1;
    uint64_t acc = 0;
    for (size_t i = 0; i < l; i++) {
        char ch = t[i];
        unsigned d = ch >= '0' && ch <= '9' ? (unsigned)(ch - '0') : ch >= 'a' && ch <= 'f' ? (unsigned)(ch - 'a' + 10) : 16u;
        if (d == 16) return -1;
        acc = acc << 4 | d;
    }
    *v = acc;
    return 0;
}

int pgmpi_dtprofile_parse(const char *file, const char *text, size_t len, pgmpi_profset_t *set,
                          pgmpi_diag_fn diagfn, void *ctx)
{
    diag_t d = {file, diagfn, ctx};
    lines_t L = {text, text + len, 0, NULL, NULL};
    char valid[256];
    size_t o = 0;
    for (int k = 0; k < PGMPI_DT_NDESC; k++)
        o += (size_t)snprintf(valid + o, sizeof valid - o, "%s%s", k ? ", " : "", pgmpi_dt_description_names[k]);
    pgmpi_dtrule_t *rules = NULL;
    int n = 0, version = 0;
    while (next_line(&L)) {
        const char *s = L.ls, *e = L.le, *t;
        size_t tl = 0;
        while (s < e && is_blank(*s)) s++;
        if (e - s >= 7 && !strncmp(s, "#@pgmpi", 7) && (e - s == 7 || is_blank(s[7]))) {
            s += 7;
            t = token(&s, e, &tl);
            long long v = 0;
            size_t vl = 0;
            const char *vt;
            if (!t || tl != 24 || strncmp(t, "datatype_profile_version", 24)) {
                free(rules);
                return fail(&d, L.lineno, "unknown #@pgmpi line in a datatype profile (valid: #@pgmpi datatype_profile_version 1)");
            }
            if (!(vt = token(&s, e, &vl)) || tok_int(vt, vl, &v) || v < 1 || token(&s, e, &tl)) {
                free(rules);
                return fail(&d, L.lineno, "#@pgmpi datatype_profile_version needs one positive integer");
            }
            if (v > PGMPI_DTPROFILE_VERSION) {
                free(rules);
                return fail(&d, L.lineno, "datatype profile version %lld is newer than this library reads (%d)", v,
                            PGMPI_DTPROFILE_VERSION);
            }
            version = (int)v;
            continue;
        }
        if (!(t = token(&s, e, &tl))) continue;   /* blank or comment */
        if (tl != 7 || strncmp(t, "replace", 7)) {
            free(rules);
            return fail(&d, L.lineno, "unknown line '%.*s' (valid: replace <signature> <description> [key=value ...])",
                        (int)(tl > 40 ? 40 : tl), t);
        }
        if (!version) {
            free(rules);
            return fail(&d, L.lineno, "a replace line before '#@pgmpi datatype_profile_version 1'");
        }
        uint64_t sig;
        size_t sl = 0, dl = 0;
        const char *st = token(&s, e, &sl), *dt = st ? token(&s, e, &dl) : NULL;
        if (!st || hex16(st, sl, &sig)) {
            free(rules);
            return fail(&d, L.lineno, "replace: the signature must be 16 lowercase hex digits (pgmpi-dtbench's signature=)");
        }
        int desc = -1;
        for (int k = 0; dt && k < PGMPI_DT_NDESC; k++)
            if (strlen(pgmpi_dt_description_names[k]) == dl && !strncmp(dt, pgmpi_dt_description_names[k], dl)) desc = k;
        if (desc < 0) {
            free(rules);
            return fail(&d, L.lineno, "replace: unknown description '%.*s' (valid: %s)", dt ? (int)(dl > 40 ? 40 : dl) : 0,
                        dt ? dt : "", valid);
        }
        while ((t = token(&s, e, &tl)))   /* key=value evidence for people and tools; the library needs none */
            if (!memchr(t, '=', tl) || t[0] == '=') {
                free(rules);
                return fail(&d, L.lineno, "replace: '%.*s' is not key=value", (int)(tl > 40 ? 40 : tl), t);
            }
        for (int i = 0; i < set->ndtrules; i++)
            if (set->dtrules[i].sig == sig && set->dtrules[i].desc != desc) {
                free(rules);
                return fail(&d, L.lineno, "signature %016llx already has description %s in another file",
                            (unsigned long long)sig, pgmpi_dt_description_names[set->dtrules[i].desc]);
            }
        int dup = 0;
        for (int i = 0; i < n; i++)
            if (rules[i].sig == sig) {
                if (rules[i].desc != desc) {
                    free(rules);
                    return fail(&d, L.lineno, "signature %016llx listed twice with different descriptions",
                                (unsigned long long)sig);
                }
                dup = 1;
            }
        if (dup) continue;
        if (set->ndtrules + n >= PGMPI_DT_MAX_RULES) {
            free(rules);
            return fail(&d, L.lineno, "more than %d replacements in the profile set", PGMPI_DT_MAX_RULES);
        }
        pgmpi_dtrule_t *x = realloc(rules, (size_t)(n + 1) * sizeof *x);
        if (!x) { free(rules); return fail(&d, L.lineno, "out of memory"); }
        rules = x;
        rules[n].sig = sig;
        rules[n].desc = desc;
        n++;
    }
    if (!version) { free(rules); return fail(&d, 0, "not a datatype profile: no '#@pgmpi datatype_profile_version 1' line"); }
    if (n) {
        pgmpi_dtrule_t *x = realloc(set->dtrules, (size_t)(set->ndtrules + n) * sizeof *x);
        if (!x) { free(rules); return fail(&d, 0, "out of memory"); }
        set->dtrules = x;
        for (int i = 0; i < n; i++) {
            int known = 0;
            for (int j = 0; j < set->ndtrules; j++) known |= set->dtrules[j].sig == rules[i].sig;
            if (!known) set->dtrules[set->ndtrules++] = rules[i];
        }
    }
    set->ndtfiles++;
    free(rules);
    return 0;
}
