/* The .prf reader: PGMPITuneLib's profile format + our #@pgmpi comment extensions, with the search index
 * of a profile's ranges (pgmpi_profile_find_alg). Shared by the library (at MPI_Init, never on the call
 * path) and pgmpitune-check. See lib/docs/profile-format.md. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_text.h"

#define PGMPI_PROFILE_VERSION 1

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
    const char *k = text_token(&s, e, &kl);
    if (!k) return 0;
    if (kl == 15 && !strncmp(k, "profile_version", kl)) {
        long long v;
        const char *t = text_token(&s, e, &vl);
        if (!t || text_int(t, vl, &v) != 0 || v < 1)
            return text_fail(d, line, "#@pgmpi profile_version needs a positive integer");
        if (v > PGMPI_PROFILE_VERSION)
            text_note(d, line, "profile_version %lld is newer than this reader (%d); unknown keys are ignored",
                 v, PGMPI_PROFILE_VERSION);
        out->version = (int)v;
    } else if (kl == 12 && !strncmp(k, "nprocs_range", kl)) {
        long long lo, hi;
        size_t l1, l2;
        const char *t1 = text_token(&s, e, &l1), *t2 = text_token(&s, e, &l2);
        if (!t1 || !t2 || text_int(t1, l1, &lo) || text_int(t2, l2, &hi) || lo < 1 || hi < lo || hi > 0x7fffffff)
            return text_fail(d, line, "#@pgmpi nprocs_range needs two integers 1 <= lo <= hi");
        out->plo = (int)lo;
        out->phi = (int)hi;
        *have_prange = 1;
        *prange_line = line;
    } else if (kl == 6 && !strncmp(k, "layout", kl)) {
        const char *t = text_token(&s, e, &vl);
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
            return text_fail(d, line, "#@pgmpi layout needs <nodes>x<ppn>, e.g. 2x2 (positive integers)");
        out->lnodes = (int)nodes;
        out->lppn = (int)ppn;
        *prange_line = *prange_line ? *prange_line : line;
    } else if ((kl == 7 && !strncmp(k, "machine", kl)) || (kl == 11 && !strncmp(k, "mpi_library", kl)) ||
               (kl == 11 && !strncmp(k, "mpi_version", kl)) || (kl == 6 && !strncmp(k, "module", kl)) ||
               (kl == 8 && !strncmp(k, "campaign", kl)) || (kl == 7 && !strncmp(k, "created", kl)) ||
               (kl == 9 && !strncmp(k, "generator", kl))) {
        /* provenance: free text */
    } else {
        text_note(d, line, "unknown extension key '%.*s' ignored", (int)kl, k);
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
    if (memchr(text, '\0', len)) return text_fail(&d, 0, "binary data (NUL byte) in a profile");

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
        const char *t = text_token(&s, e, &tl);
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
                text_fail(&d, L.lineno, "unknown MPI collective '%.*s' (valid: %s)", (int)(tl > 64 ? 64 : tl), t,
                     names);
                goto bad;
            }
            out->coll = c;
            out->line = L.lineno;
            st = ST_NPROCS;
            break;
        }
        case ST_NPROCS:
            if (text_int(t, tl, &v) || v <= 0 || v > 0x7fffffff) {
                text_fail(&d, L.lineno, "number of processes: expected an integer > 0, got '%.*s'",
                     (int)(tl > 64 ? 64 : tl), t);
                goto bad;
            }
            out->nprocs = (int)v;
            st = ST_NALGS;
            break;
        case ST_NALGS:
            if (text_int(t, tl, &v) || v < 0 || v > 256) {
                text_fail(&d, L.lineno, "number of mock-ups: expected an integer 0..256, got '%.*s'",
                     (int)(tl > 64 ? 64 : tl), t);
                goto bad;
            }
            nalgs = v;
            st = nalgs ? ST_ALG : ST_NRANGES;
            break;
        case ST_ALG: {
            size_t nl;
            if (text_int(t, tl, &v) || v < -0x7fffffffLL || v > 0x7fffffffLL) {
                text_fail(&d, L.lineno, "mock-up line: expected '<id> <name>', got '%.*s'", (int)(tl > 64 ? 64 : tl), t);
                goto bad;
            }
            const char *nm = text_token(&s, e, &nl);
            if (!nm) { text_fail(&d, L.lineno, "mock-up line: name missing after id %lld", v); goto bad; }
            for (long long i = 0; i < got_algs; i++)
                if (alg_ids[i] == (int)v) {
                    text_fail(&d, L.lineno, "duplicate mock-up id %lld (first on line %d)", v, alg_lines[i]);
                    goto bad;
                }
            int a = pgmpi_alg_lookup(out->coll, nm, nl);
            if (a < 0) {
                pgmpi_alg_list(out->coll, valid, sizeof valid);
                text_fail(&d, L.lineno, "unknown mock-up '%.*s' for %s (valid: %s)", (int)(nl > 80 ? 80 : nl), nm,
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
            if (text_int(t, tl, &v) || v < 0 || v > 100000000) {
                text_fail(&d, L.lineno, "number of ranges: expected an integer >= 0, got '%.*s'",
                     (int)(tl > 64 ? 64 : tl), t);
                goto bad;
            }
            nranges = v;
            if (nranges) {
                out->ranges = malloc((size_t)nranges * sizeof *out->ranges);
                if (!out->ranges) { text_fail(&d, L.lineno, "out of memory for %lld ranges", v); goto bad; }
            }
            st = nranges ? ST_RANGE : ST_DONE;
            break;
        case ST_RANGE: {
            long long lo, hi, id;
            size_t l2, l3;
            const char *t2 = text_token(&s, e, &l2), *t3 = t2 ? text_token(&s, e, &l3) : NULL;
            if (!t2 || !t3 || text_int(t, tl, &lo) || text_int(t2, l2, &hi) || text_int(t3, l3, &id)) {
                text_fail(&d, L.lineno, "range %lld of %lld: expected '<first byte> <last byte> <id>'", got_ranges + 1,
                     nranges);
                goto bad;
            }
            if (lo < 0 || hi < lo) {
                text_fail(&d, L.lineno, "range %lld..%lld: need 0 <= first byte <= last byte", lo, hi);
                goto bad;
            }
            int a = -1;
            for (long long i = 0; i < got_algs; i++)
                if (alg_ids[i] == id) a = alg_idx[i];
            if (a < 0) {
                text_fail(&d, L.lineno, "range %lld..%lld refers to mock-up id %lld, which is not declared", lo, hi, id);
                goto bad;
            }
            out->ranges[got_ranges].lo = (uint64_t)lo;
            out->ranges[got_ranges].hi = (uint64_t)hi;
            out->ranges[got_ranges].alg = a;
            if (++got_ranges == nranges) st = ST_DONE;
            break;
        }
        case ST_DONE:
            text_fail(&d, L.lineno, "unexpected data after the last of %lld ranges: '%.*s'", nranges,
                 (int)(tl > 64 ? 64 : tl), t);
            goto bad;
        }
    }
    if (st != ST_DONE) {
        static const char *const what[] = {"the MPI name", "the number of processes", "the number of mock-ups",
                                           "a mock-up line", "the number of ranges", "a range line", ""};
        if (st == ST_RANGE)
            text_fail(&d, last_line, "truncated: %lld of %lld ranges present", got_ranges, nranges);
        else if (st == ST_ALG)
            text_fail(&d, last_line, "truncated: %lld of %lld mock-up lines present", got_algs, nalgs);
        else
            text_fail(&d, last_line, "truncated: %s is missing", what[st]);
        goto bad;
    }
    if (have_prange) {
        if (out->nprocs < out->plo || out->nprocs > out->phi) {
            text_fail(&d, prange_line, "nprocs_range %d %d does not contain the number of processes %d (line 2)",
                 out->plo, out->phi, out->nprocs);
            goto bad;
        }
    } else {
        out->plo = out->phi = out->nprocs;
    }
    if (out->lnodes) {    /* a layout is one process count: that of line 2 */
        if (out->lnodes * out->lppn != out->nprocs || out->plo != out->phi) {
            text_fail(&d, prange_line, "layout %dx%d is %d processes, the profile is for %d..%d (line 2, nprocs_range)",
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
                text_fail(&d, out->line, "overlapping ranges %llu..%llu and %llu..%llu",
                     (unsigned long long)out->ranges[i - 1].lo, (unsigned long long)out->ranges[i - 1].hi,
                     (unsigned long long)out->ranges[i].lo, (unsigned long long)out->ranges[i].hi);
                goto bad;
            }
    }
    if (nranges && build_index(out) != 0) { text_fail(&d, out->line, "out of memory for %lld ranges", nranges); goto bad; }
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
