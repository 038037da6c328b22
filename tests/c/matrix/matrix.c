/* Correctness matrix of libpgmpitune's mock-ups (run under mpirun, one run per process count p).
 *
 * For every collective and every mock-up of it (forced in turn with pgmpitune_force), over
 *   root in {0, p-1} (rooted collectives) x count in {0, 1, 7, 1000, 100003} x MPI_IN_PLACE where the
 *   standard allows it x datatype {MPI_INT, MPI_DOUBLE, MPI_CHAR, MPI_LONG_LONG, a contiguous derived
 *   type (2 x MPI_INT)} x op {MPI_SUM, MPI_MAX, MPI_BOR, a non-commutative user op} where they apply
 *   (predefined ops on the predefined types MPI defines them for; BOR on integers; the user op on all),
 * the mock-up's result must equal the library default's result for the same input: bit-exact, except
 * MPI_DOUBLE with MPI_SUM, which must be identical on all ranks (Allreduce) and within reduction-order
 * tolerance of the default. Data-movement collectives run the derived-type case with mixed but
 * signature-compatible datatypes (even ranks: count x int2, odd ranks: 2count x MPI_INT). Every call
 * also checks that send buffers stay unchanged and that nothing is written past the receive buffers;
 * non-roots pass NULL where MPI says the buffer is not significant.
 *
 * Fallback sections: a non-contiguous datatype (reduction mock-ups that need byte moves must fall back,
 * the others -- data-movement mock-ups pack locally -- must run), an intercommunicator (all must fall
 * back). Every section's result must equal
 * the default's.
 *
 * Fallbacks are verified, not assumed: the program predicts, per (collective, bytes, mock-up), how
 * many calls the library serves with the mock-up and how many fall back to the default (pool needs
 * from pgmpitune_algorithm_{msg,int}_memory against pgmpitune_pool_bytes, plus the semantic rules
 * above) and compares that with the library's own #@pgmpi report (needs PGMPITUNE_VERBOSE=1). A
 * mock-up that silently fell back would otherwise pass every comparison.
 *
 * MPICH 4.0.2 segfaults in its own MPI_Reduce(MPI_IN_PLACE) at a root other than 0 for more than 2048
 * bytes (measured: 512 ints fine, 600 ints crash; 256 doubles fine, 400 crash): there the default
 * is not called; the reference is the default without MPI_IN_PLACE, and the case is reported as a
 * library defect.
 *
 * Usage: pgmpi-matrix [--counts=0,1,7,1000,100003] [--big-combos=all|some] [--only=<key>[,<key>...]]
 *   --big-combos=some runs count 100003 for a subset of type/op combinations only (see big_combo;
 *   marked in the summary line); default all.
 * Exit status 0 only if there is no mismatch and the report matches the prediction. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "pgmpitune.h"
#include "report.h"
#include "nodes.h"

enum { C_ALLGATHER, C_ALLREDUCE, C_ALLTOALL, C_BCAST, C_GATHER, C_REDUCE, C_RSB, C_RS, C_SCAN, C_SCATTER, NC };
static const char *ckey[NC] = {"allgather", "allreduce", "alltoall", "bcast", "gather", "reduce",
                               "reducescatterblock", "reducescatter", "scan", "scatter"};
static int cid[NC];          /* library index of each collective */
static const int rooted[NC] = {0, 0, 0, 1, 1, 1, 0, 0, 0, 1};
static const int is_red[NC] = {0, 1, 0, 0, 0, 1, 1, 1, 1, 0};
/* MPI_IN_PLACE: 0 = not allowed, 1 = all ranks, 2 = root only */
static const int inplace_kind[NC] = {1, 1, 1, 0, 2, 2, 1, 1, 1, 2};

enum { K_INT, K_DBL, K_CHAR, K_LL, K_DER, K_VEC, NK };
static const char *kname[NK] = {"int", "double", "char", "long_long", "int2", "vector"};
enum { O_NONE, O_SUM, O_MAX, O_BOR, O_USER, NO };
static const char *oname[NO] = {"-", "sum", "max", "bor", "user"};

static MPI_Datatype g_int2, g_vec;
static MPI_Op g_user;
static int P, R;
/* The library under test, from MPI_Get_library_version: its name for the summary line and whether it is
 * the one whose defects (below) were measured. MPICH-derived libraries (Intel MPI) are not MPICH 4.0.2. */
static const char *g_mpi_name = "other";
static char g_mpich_version[32];      /* "4.0.2" for MPICH itself; empty for every other library */
static MPI_Comm g_comm;                /* communicator of the running section */
static int g_inter;                    /* g_comm is an intercommunicator */

/* ------------------------------------------------------------------ the user op ---------- */
/* Affine maps x -> m x + c composed in rank order (associative, not commutative), on integer words
 * (the element's bytes; m in the high half, c in the low half, modulo 2^(w/2)). Exact for any type. */
#define AFF(T, H)                                                                  \
    static void aff_##T(const unsigned char *in, unsigned char *io)                \
    {                                                                              \
        T a, b;                                                                    \
        memcpy(&a, in, sizeof a);                                                  \
        memcpy(&b, io, sizeof b);                                                  \
        T mask = (T)(((T)1 << H) - 1);                                             \
        T ma = a >> H, ca = a & mask, mb = b >> H, cb = b & mask;                  \
        T m = (T)(ma * mb) & mask, c = (T)(mb * ca + cb) & mask;                   \
        T out = (T)((T)(m << H) | c);                                              \
        memcpy(io, &out, sizeof out);                                              \
    }
AFF(uint64_t, 32)
AFF(uint32_t, 16)
AFF(uint16_t, 8)
AFF(uint8_t, 4)

static void user_fn(void *in, void *io, int *len, MPI_Datatype *dt)
{
    unsigned char *a = in, *b = io;
    if (*dt == g_vec) {                 /* ints at offsets 0 and 8 of each 12-byte element */
        for (int i = 0; i < *len; i++) {
            aff_uint32_t(a + 12 * i, b + 12 * i);
            aff_uint32_t(a + 12 * i + 8, b + 12 * i + 8);
        }
        return;
    }
    int sz = 0;
    MPI_Type_size(*dt, &sz);
    size_t nb = (size_t)*len * (size_t)sz;
    if (sz % 8 == 0) for (size_t i = 0; i < nb; i += 8) aff_uint64_t(a + i, b + i);
    else if (sz % 4 == 0) for (size_t i = 0; i < nb; i += 4) aff_uint32_t(a + i, b + i);
    else if (sz % 2 == 0) for (size_t i = 0; i < nb; i += 2) aff_uint16_t(a + i, b + i);
    else for (size_t i = 0; i < nb; i++) aff_uint8_t(a + i, b + i);
}

/* ------------------------------------------------------------------ data ------------------- */
static uint64_t sm(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static MPI_Datatype ktype(int k)
{
    switch (k) {
    case K_INT: return MPI_INT;
    case K_DBL: return MPI_DOUBLE;
    case K_CHAR: return MPI_CHAR;
    case K_LL: return MPI_LONG_LONG;
    case K_DER: return g_int2;
    default: return g_vec;
    }
}
static size_t ksize(int k) { return k == K_CHAR ? 1 : (k == K_INT ? 4 : 8); }
static size_t kext(int k) { return k == K_VEC ? 12 : ksize(k); }

/* Fills cnt elements of kind k at buf (extent layout; gaps of the vector type untouched). */
static void fill(unsigned char *buf, size_t cnt, int k, uint64_t seed)
{
    uint64_t s = seed;
    for (size_t i = 0; i < cnt; i++) {
        unsigned char *e = buf + i * kext(k);
        switch (k) {
        case K_INT: { int32_t v = (int32_t)(sm(&s) % 33554433u) - 16777216; memcpy(e, &v, 4); } break;
        case K_DER: case K_VEC: {
            for (int j = 0; j < 2; j++) {
                int32_t v = (int32_t)(sm(&s) % 33554433u) - 16777216;
                memcpy(e + (k == K_VEC ? 8 * j : 4 * j), &v, 4);
            }
        } break;
        case K_LL: { long long v = (long long)(sm(&s) % (1ull << 48)) - (1ll << 47); memcpy(e, &v, 8); } break;
        case K_DBL: { double v = (double)(sm(&s) >> 11) * 0x1.0p-52 - 1.0; memcpy(e, &v, 8); } break;
        default: { unsigned char v = (unsigned char)sm(&s); *e = v; } break;
        }
    }
}

/* ------------------------------------------------------------------ expectations ----------- */
typedef struct { int c, a; size_t n; long used, fb; long got_used, got_fb; } expect_t;
static expect_t *g_exp;
static int g_nexp, g_capexp;

static void expect(int c, size_t n, int a, int fb)
{
    for (int i = 0; i < g_nexp; i++)
        if (g_exp[i].c == c && g_exp[i].a == a && g_exp[i].n == n) { if (fb) g_exp[i].fb++; else g_exp[i].used++; return; }
    if (g_nexp == g_capexp) {
        g_capexp = g_capexp ? 2 * g_capexp : 1024;
        g_exp = realloc(g_exp, (size_t)g_capexp * sizeof *g_exp);
    }
    expect_t e = {c, a, n, fb ? 0 : 1, fb ? 1 : 0, 0, 0};
    g_exp[g_nexp++] = e;
}

/* ------------------------------------------------------------------ one call ------------------ */
typedef struct {
    int c, root, count, inplace, k, op;
    int mixed;        /* data movement, derived kind: odd ranks use 2count x MPI_INT */
} case_t;

#define GUARD 64
static unsigned char *S, *Rb, *S0;          /* send, receive, pristine send */
static size_t g_bufcap;
static int rcs[1024];                        /* Reduce_scatter counts */

static void rs_counts(int count, int p)
{
    /* irregular: rank i gets a share proportional to i+1, the last rank the rest */
    long tot = (long)p * (p + 1) / 2, given = 0;
    for (int i = 0; i < p; i++) {
        rcs[i] = (int)((long)count * (i + 1) / tot);
        given += rcs[i];
    }
    rcs[p - 1] += (int)(count - given);
}

static MPI_Op mop(int o)
{
    switch (o) {
    case O_SUM: return MPI_SUM;
    case O_MAX: return MPI_MAX;
    case O_BOR: return MPI_BOR;
    default: return g_user;
    }
}

typedef struct {
    size_t ssz, rsz;          /* bytes of the send / receive buffers on this rank */
    size_t cmp_off, cmp_len;  /* significant part of the receive buffer */
    int send_null, recv_null;
    size_t n;                 /* message bytes as the entry point computes them */
    size_t elem;
} layout_t;

static layout_t layout(const case_t *cs, int p, int r)
{
    layout_t L = {0};
    int k = cs->k;
    size_t cnt = (size_t)cs->count, ext = kext(k), blk = cnt * ext;   /* per-rank block, bytes incl. gaps */
    L.elem = ksize(k);
    switch (cs->c) {
    case C_ALLGATHER: L.ssz = blk; L.rsz = (size_t)p * blk; L.n = cnt * ksize(k); break;
    case C_ALLREDUCE: case C_SCAN: L.ssz = blk; L.rsz = blk; L.n = cnt * ksize(k); break;
    case C_ALLTOALL: L.ssz = (size_t)p * blk; L.rsz = (size_t)p * blk; L.n = cnt * ksize(k); break;
    case C_BCAST: L.ssz = 0; L.rsz = blk; L.n = cnt * ksize(k); L.send_null = 1; break;
    case C_GATHER:
        L.ssz = blk; L.rsz = r == cs->root ? (size_t)p * blk : 0; L.recv_null = r != cs->root;
        L.n = cnt * ksize(k); break;
    case C_REDUCE:
        L.ssz = blk; L.rsz = r == cs->root ? blk : 0; L.recv_null = r != cs->root; L.n = cnt * ksize(k); break;
    case C_RSB:
        L.ssz = (size_t)p * blk; L.rsz = cs->inplace ? (size_t)p * blk : blk; L.n = cnt * (size_t)p * ksize(k);
        L.cmp_len = blk; break;
    case C_RS:
        rs_counts(cs->count, p);
        L.ssz = cnt * ext; L.rsz = cs->inplace ? cnt * ext : (size_t)rcs[r] * ext; L.n = cnt * ksize(k);
        L.cmp_len = (size_t)rcs[r] * ext; break;
    case C_SCATTER:
        L.ssz = r == cs->root ? (size_t)p * blk : 0; L.send_null = r != cs->root;
        L.rsz = blk; L.recv_null = cs->inplace && r == cs->root; L.n = cnt * ksize(k); break;
    }
    if (cs->c != C_RSB && cs->c != C_RS) L.cmp_len = L.rsz;
    if (cs->inplace && !(cs->c == C_GATHER || cs->c == C_REDUCE || cs->c == C_SCATTER)) L.send_null = 1;
    if (cs->inplace && (cs->c == C_GATHER || cs->c == C_REDUCE) && r == cs->root) L.send_null = 1;
    return L;
}

/* Prepares the buffers of this rank for case cs (same content for every algorithm). */
static void prepare(const case_t *cs, const layout_t *L, uint64_t seed)
{
    int r = R, p = P, k = cs->k;
    size_t cnt = (size_t)cs->count, ext = kext(k), blk = cnt * ext;
    memset(S, 0xEE, L->ssz + GUARD);
    memset(Rb, 0xDD, L->rsz + GUARD);
    uint64_t rs = seed * 1000003u + (uint64_t)r * 7919u;
    switch (cs->c) {
    case C_ALLGATHER:
        fill(S, cnt, k, rs);
        if (cs->inplace) memcpy(Rb + (size_t)r * blk, S, blk);
        break;
    case C_ALLREDUCE: case C_SCAN: case C_REDUCE:
        fill(S, cnt, k, rs);
        if (cs->inplace && (cs->c != C_REDUCE || r == cs->root)) memcpy(Rb, S, blk);
        break;
    case C_ALLTOALL: case C_RSB:
        fill(S, (size_t)p * cnt, k, rs);
        if (cs->inplace) memcpy(Rb, S, (size_t)p * blk);
        break;
    case C_RS:
        fill(S, cnt, k, rs);
        if (cs->inplace) memcpy(Rb, S, cnt * ext);
        break;
    case C_BCAST:
        if (r == cs->root) fill(Rb, cnt, k, seed * 31u + 17u);
        break;
    case C_GATHER:
        fill(S, cnt, k, rs);
        if (cs->inplace && r == cs->root) memcpy(Rb + (size_t)r * blk, S, blk);
        break;
    case C_SCATTER:
        if (r == cs->root) fill(S, (size_t)p * cnt, k, seed * 31u + 17u);
        break;
    }
    memcpy(S0, S, L->ssz + GUARD);
}

/* Runs the collective on the prepared buffers with algorithm a forced (0 = default). */
static int g_trace;                    /* PGMPI_MATRIX_TRACE=1: print every call before making it */
static void describe(char *buf, size_t cap, const case_t *cs, int a);

static int call(const case_t *cs, const layout_t *L, int a)
{
    if (g_trace) {
        char d[256];
        describe(d, sizeof d, cs, a);
        fprintf(stderr, "TRACE p=%d rank=%d %s\n", P, R, d);
    }
    pgmpitune_force(cid[cs->c], a);
    MPI_Datatype t = ktype(cs->k);
    int cnt = cs->count;
    if (cs->mixed && (R % 2)) { t = MPI_INT; cnt *= 2; }
    void *sb = L->send_null ? NULL : S, *rb = L->recv_null ? NULL : Rb;
    int rc = MPI_SUCCESS, root = cs->root;
    MPI_Op op = mop(cs->op);
    MPI_Comm comm = g_comm;
    switch (cs->c) {
    case C_ALLGATHER:
        rc = MPI_Allgather(cs->inplace ? MPI_IN_PLACE : sb, cnt, t, rb, cnt, t, comm); break;
    case C_ALLREDUCE:
        rc = MPI_Allreduce(cs->inplace ? MPI_IN_PLACE : sb, rb, cnt, t, op, comm); break;
    case C_ALLTOALL:
        rc = MPI_Alltoall(cs->inplace ? MPI_IN_PLACE : sb, cnt, t, rb, cnt, t, comm); break;
    case C_BCAST:
        rc = MPI_Bcast(rb, cnt, t, root, comm); break;
    case C_GATHER:
        rc = MPI_Gather((cs->inplace && R == root) ? MPI_IN_PLACE : sb, cnt, t, rb, cnt, t, root, comm); break;
    case C_REDUCE:
        rc = MPI_Reduce((cs->inplace && R == root) ? MPI_IN_PLACE : sb, rb, cnt, t, op, root, comm); break;
    case C_RSB:
        rc = MPI_Reduce_scatter_block(cs->inplace ? MPI_IN_PLACE : sb, rb, cnt, t, op, comm); break;
    case C_RS:
        rc = MPI_Reduce_scatter(cs->inplace ? MPI_IN_PLACE : sb, rb, rcs, t, op, comm); break;
    case C_SCAN:
        rc = MPI_Scan(cs->inplace ? MPI_IN_PLACE : sb, rb, cnt, t, op, comm); break;
    case C_SCATTER:
        rc = MPI_Scatter(sb, cnt, t, (cs->inplace && R == root) ? MPI_IN_PLACE : rb, cnt, t, root, comm); break;
    }
    pgmpitune_force(cid[cs->c], 0);
    return rc;
}

/* ------------------------------------------------------------------ comparison -------------- */
static long g_mism, g_runs, g_fb_pred, g_cases, g_defects, g_defect_skips;
static int g_printed;

static void describe(char *buf, size_t cap, const case_t *cs, int a)
{
    snprintf(buf, cap, "%s alg=%s root=%d count=%d inplace=%d type=%s%s op=%s",
             ckey[cs->c], pgmpitune_algorithm_name(cid[cs->c], a), cs->root, cs->count, cs->inplace,
             kname[cs->k], cs->mixed ? "(mixed with int)" : "", oname[cs->op]);
}

static void report_mismatch(const case_t *cs, int a, const char *what)
{
    g_mism++;
    if (g_printed++ < 25) {
        char d[256];
        describe(d, sizeof d, cs, a);
        fprintf(stderr, "MISMATCH p=%d rank=%d %s: %s\n", P, R, d, what);
    }
}

static uint64_t fnv(const unsigned char *b, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* out = this algorithm's significant bytes; ref = the default's. */
static void compare(const case_t *cs, const layout_t *L, int a, const unsigned char *ref)
{
    const unsigned char *out = Rb + L->cmp_off;
    size_t len = L->recv_null ? 0 : L->cmp_len;
    int bad = 0;
    if (len && memcmp(out, ref, len)) {
        if (cs->k == K_DBL && cs->op == O_SUM) {
            for (size_t i = 0; i < len / 8; i++) {
                double x, y;
                memcpy(&x, out + 8 * i, 8);
                memcpy(&y, ref + 8 * i, 8);
                if (!(fabs(x - y) <= 1e-12 * (P + fabs(y)))) { bad = 1; break; }
            }
        } else bad = 1;
    }
    if (bad) report_mismatch(cs, a, "result differs from the default");
    if (!L->recv_null) {
        for (size_t i = 0; i < GUARD; i++)
            if (Rb[L->rsz + i] != 0xDD) { report_mismatch(cs, a, "wrote past the receive buffer"); break; }
    }
    if (!L->send_null && memcmp(S, S0, L->ssz + GUARD)) report_mismatch(cs, a, "modified the send buffer");
    if (cs->c == C_ALLREDUCE && !g_inter) {         /* identical on all ranks */
        uint64_t h[2], g[2];
        h[0] = fnv(out, len);
        h[1] = ~h[0];
        PMPI_Allreduce(h, g, 2, MPI_UINT64_T, MPI_MAX, g_comm);
        if (g[0] != h[0] || g[1] != h[1]) report_mismatch(cs, a, "result not identical on all ranks");
    }
}

/* ------------------------------------------------------------------ prediction --------------- */
/* Reduction mock-ups that need a contiguous datatype (byte moves on the reduced vector; the datatype is
 * the same on all ranks); 2 = only with MPI_IN_PLACE. Data-movement mock-ups pack and unpack a
 * non-contiguous layout locally (rule 3 of lib/src/core/pgmpitune_core.h) and never fall back for it. */
static int needs_contig(const char *name)
{
    static const char *always[] = {
        "allreduce_as_reducescatterblock_allgather", "reduce_as_allreduce",
        "reduce_as_reducescatterblock_gather", "reduce_as_reducescatter_gatherv",
        "reducescatterblock_as_reduce_scatter", "reducescatterblock_as_allreduce",
        "reducescatter_as_allreduce", "reducescatter_as_reduce_scatterv", "scan_as_exscan_reducelocal",
        "reduce_as_nodereduce_leaderreduce", NULL};
    for (int i = 0; always[i]; i++) if (!strcmp(name, always[i])) return 1;
    if (!strcmp(name, "allreduce_as_reducescatter_allgatherv")) return 2;
    return 0;
}

static int predict_fallback(const case_t *cs, const layout_t *L, int a, int inter)
{
    int c = cid[cs->c];
    if (inter) return 1;
    if (pgmpitune_algorithm_msg_memory(c, a, L->n, L->elem, P) > pgmpitune_pool_bytes(0)) return 1;
    if (pgmpitune_algorithm_int_memory(c, a, L->n, L->elem, P) > pgmpitune_pool_bytes(1)) return 1;
    const char *name = pgmpitune_algorithm_name(c, a);
    if (node_falls_back(name, cs->op == O_USER)) return 1;
    if (cs->k == K_VEC) {
        int nc = needs_contig(name);
        if (nc == 1 || (nc == 2 && cs->inplace)) return 1;
    }
    /* rule 7: zero padding (p does not divide count) only for predefined ops */
    if (cs->op == O_USER && cs->count % P != 0 &&
        (!strcmp(name, "allreduce_as_reducescatterblock_allgather") ||
         !strcmp(name, "reduce_as_reducescatterblock_gather")))
        return 1;
    return 0;
}

/* ------------------------------------------------------------------ library defects ------------ */
/* Defaults that crash inside the MPI library itself, per MPICH version where each was measured (Debian 12's
 * 4.0.2; 5.0.2 from the Python registry aborts in the Reduce_scatter one, yaksa's memcpy check, 160000 bytes at
 * p = 4, and runs the in-place Reduce at roots other than 0 correctly; Intel MPI
 * 2021.13 and Open MPI run every case). The matrix does not call them; it reports them. */
#define NDEFECT 2
static const char *g_defect_text[NDEFECT] = {
    "MPICH 4.0.2: MPI_Reduce(MPI_IN_PLACE) at root != 0 segfaults above 2048 bytes "
    "(measured: 512 ints fine, 600 ints crash; 256 doubles fine, 400 crash)",
    "MPICH 4.0.2 and 5.0.2: MPI_Reduce_scatter(MPI_IN_PLACE) with large irregular counts aborts "
    "(yaksa: 'memcpy argument memory ranges overlap'; seen with 100003 doubles at p=2,3,4,5,8, "
    "data- and op-dependent; never at <= 80000 bytes nor at p=1)",
};
/* the MPICH versions each defect was seen in; 5.0.2 runs the in-place Reduce at p = 3 without it */
static const char *g_defect_versions[NDEFECT] = {"4.0.2", "4.0.2 5.0.2"};
static long g_defect_cases[NDEFECT];

static int defect_applies(int d)
{
    char v[40];
    if (!g_mpich_version[0]) return 0;
    snprintf(v, sizeof v, "%s ", g_mpich_version);
    char list[64];
    snprintf(list, sizeof list, "%s ", g_defect_versions[d]);
    return strstr(list, v) != NULL;
}

static const char *library_defect(const case_t *cs, const layout_t *L)
{
    if (!cs->inplace) return NULL;
    if (cs->c == C_REDUCE && cs->root != 0 && L->n > 2048 && defect_applies(0)) return g_defect_text[0];
    if (cs->c == C_RS && P >= 2 && L->n >= 256 * 1024 && defect_applies(1)) return g_defect_text[1];
    return NULL;
}

/* ------------------------------------------------------------------ one case ----------------- */
static unsigned char *REF;

static void run_case(const case_t *cs, uint64_t seed, int inter)
{
    layout_t L = layout(cs, P, R);
    int c = cid[cs->c], na = pgmpitune_nalgorithms(c);
    g_cases++;
    /* the reference: the library's default */
    prepare(cs, &L, seed);
    const char *defect = inter ? NULL : library_defect(cs, &L);
    if (defect) {
        /* the default would crash inside the MPI library: reference = the default without
         * MPI_IN_PLACE on the same data */
        case_t alt = *cs;
        alt.inplace = 0;
        layout_t L2 = layout(&alt, P, R);
        int rc = call(&alt, &L2, 0);
        if (rc != MPI_SUCCESS) report_mismatch(cs, 0, "default (not in place) returned an error");
        for (int i = 0; i < NDEFECT; i++) if (defect == g_defect_text[i]) g_defect_cases[i]++;
        g_defects++;
    } else {
        int rc = call(cs, &L, 0);
        if (rc != MPI_SUCCESS) report_mismatch(cs, 0, "default returned an error");
    }
    if (!L.recv_null) memcpy(REF, Rb + L.cmp_off, L.cmp_len);
    for (int a = 1; a < na; a++) {
        int fb = predict_fallback(cs, &L, a, inter);
        if (defect && fb) {     /* its fallback is the crashing default: not run, counted */
            g_defect_skips++;
            continue;
        }
        prepare(cs, &L, seed);
        int rc = call(cs, &L, a);
        g_runs++;
        if (rc != MPI_SUCCESS) report_mismatch(cs, a, "returned an MPI error");
        compare(cs, &L, a, REF);
        g_fb_pred += fb;
        if (R == 0) expect(c, L.n, a, fb);
    }
}

static int ops_for(int k, int *ops)
{
    int n = 0;
    switch (k) {
    case K_INT: case K_LL: ops[n++] = O_SUM; ops[n++] = O_MAX; ops[n++] = O_BOR; ops[n++] = O_USER; break;
    case K_DBL: ops[n++] = O_SUM; ops[n++] = O_MAX; ops[n++] = O_USER; break;
    default: ops[n++] = O_USER; break;   /* MPI_CHAR and derived types: predefined ops undefined */
    }
    return n;
}

/* ------------------------------------------------------------------ report check ------------- */
static void got_line(void *ctx, int c, int a, size_t n, int fell_back, long v, const char *line)
{
    long *bad = ctx;
    if (a == 0) return;                        /* default calls: references and fallbacks */
    int found = 0;
    for (int i = 0; i < g_nexp; i++)
        if (g_exp[i].c == c && g_exp[i].a == a && g_exp[i].n == n) {
            if (fell_back) g_exp[i].got_fb += v; else g_exp[i].got_used += v;
            found = 1;
        }
    if (!found) { (*bad)++; fprintf(stderr, "REPORT unexpected: %s", line); }
}

static long check_report(void)
{
    if (R != 0) return 0;
    long bad = 0, other = 0, count_lines = report_read(got_line, &bad, &other);
    if (count_lines < 0) return 1;
    long lines = count_lines + other;
    if (lines == 0) {
        fprintf(stderr, "REPORT empty: run with PGMPITUNE_VERBOSE=1 (the fallback check needs the #@pgmpi report)\n");
        return 1;
    }
    for (int i = 0; i < g_nexp; i++) {
        expect_t *e = &g_exp[i];
        if (e->used != e->got_used || e->fb != e->got_fb) {
            bad++;
            if (bad < 25)
                fprintf(stderr, "REPORT %s %s n=%zu: predicted served=%ld fell_back=%ld, library says served=%ld fell_back=%ld\n",
                        pgmpitune_collective_key(e->c), pgmpitune_algorithm_name(e->c, e->a), e->n, e->used,
                        e->fb, e->got_used, e->got_fb);
        }
    }
    return bad;
}

/* key is one of the comma-separated words of list */
static int in_list(const char *list, const char *key)
{
    size_t k = strlen(key);
    for (const char *s = list; *s;) {
        const char *e = strchr(s, ',');
        size_t l = e ? (size_t)(e - s) : strlen(s);
        if (l == k && !strncmp(s, key, k)) return 1;
        if (!e) break;
        s = e + 1;
    }
    return 0;
}

/* --big-combos=some: the largest count (100003) only for these type/op combinations (every collective,
 * mock-up, root and MPI_IN_PLACE variant still runs it): data movement with MPI_INT and with the
 * mixed derived/int pair; reductions with MPI_INT+SUM, MPI_DOUBLE+SUM and int2+user op. */
static int big_combo(int c, int k, int op)
{
    if (!is_red[c]) return k == K_INT || k == K_DER;
    return (k == K_INT && op == O_SUM) || (k == K_DBL && op == O_SUM) || (k == K_DER && op == O_USER);
}

/* ------------------------------------------------------------------ main ---------------------- */
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_rank(MPI_COMM_WORLD, &R);
    nodes_measure();
    double t0 = MPI_Wtime();
    int counts[16] = {0, 1, 7, 1000, 100003}, ncounts = 5, big_some = 0;
    const char *only = NULL;   /* --only=<key>[,<key>...]: these collectives only */
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--counts=", 9)) {
            ncounts = 0;
            for (char *s = argv[i] + 9; *s && ncounts < 16;) {
                counts[ncounts++] = (int)strtol(s, &s, 10);
                if (*s == ',') s++;
            }
        } else if (!strncmp(argv[i], "--only=", 7)) only = argv[i] + 7;
        else if (!strcmp(argv[i], "--big-combos=some")) big_some = 1;
        else if (!strcmp(argv[i], "--big-combos=all")) big_some = 0;
        else { if (!R) fprintf(stderr, "usage: %s [--counts=a,b,..] [--big-combos=all|some] [--only=<key>[,<key>...]]\n", argv[0]); MPI_Abort(MPI_COMM_WORLD, 2); }
    }
    char ver[MPI_MAX_LIBRARY_VERSION_STRING];
    int vlen;
    MPI_Get_library_version(ver, &vlen);
    if (strstr(ver, "Intel(R) MPI")) g_mpi_name = "intelmpi";
    else if (strstr(ver, "Open MPI")) g_mpi_name = "openmpi";
    else if (strstr(ver, "MPICH")) g_mpi_name = "mpich";
    {
        const char *v = strstr(ver, "MPICH Version:");
        if (v && !strcmp(g_mpi_name, "mpich")) {
            v += strlen("MPICH Version:");
            while (*v == ' ' || *v == '\t') v++;
            size_t n = strcspn(v, " \t\n");
            if (n >= sizeof g_mpich_version) n = sizeof g_mpich_version - 1;
            memcpy(g_mpich_version, v, n);
            g_mpich_version[n] = '\0';
        }
    }
    g_trace = getenv("PGMPI_MATRIX_TRACE") != NULL;
    for (int c = 0; c < NC; c++) {
        cid[c] = pgmpitune_collective_lookup(ckey[c]);
        if (cid[c] < 0) { if (!R) fprintf(stderr, "collective %s unknown to the library\n", ckey[c]); MPI_Abort(MPI_COMM_WORLD, 2); }
    }
    MPI_Type_contiguous(2, MPI_INT, &g_int2);
    MPI_Type_commit(&g_int2);
    MPI_Type_vector(2, 1, 2, MPI_INT, &g_vec);
    MPI_Type_commit(&g_vec);
    MPI_Op_create(user_fn, 0, &g_user);
    int maxc = 0;
    for (int i = 0; i < ncounts; i++) if (counts[i] > maxc) maxc = counts[i];
    g_bufcap = (size_t)P * (size_t)(maxc > 7 ? maxc : 7) * 12 + GUARD;
    S = malloc(g_bufcap); S0 = malloc(g_bufcap); Rb = malloc(g_bufcap); REF = malloc(g_bufcap);
    if (!S || !S0 || !Rb || !REF) MPI_Abort(MPI_COMM_WORLD, 3);
    g_comm = MPI_COMM_WORLD;

    /* main matrix */
    uint64_t seed = 1;
    long mock_algs = 0;
    for (int c = 0; c < NC; c++) {
        if (only && !in_list(only, ckey[c])) continue;
        mock_algs += pgmpitune_nalgorithms(cid[c]) - 1;
        int roots[2] = {0, P - 1}, nroots = rooted[c] && P > 1 ? 2 : 1;
        for (int ri = 0; ri < nroots; ri++)
            for (int ci = 0; ci < ncounts; ci++)
                for (int ip = 0; ip <= (inplace_kind[c] ? 1 : 0); ip++)
                    for (int k = K_INT; k <= K_DER; k++) {
                        int ops[4], nops = 1;
                        ops[0] = O_NONE;
                        if (is_red[c]) nops = ops_for(k, ops);
                        for (int oi = 0; oi < nops; oi++) {
                            if (big_some && counts[ci] >= 100000 && !big_combo(c, k, ops[oi])) continue;
                            case_t cs = {c, roots[ri], counts[ci], ip, k, ops[oi], 0};
                            if (!is_red[c] && k == K_DER && P > 1) cs.mixed = 1;
                            run_case(&cs, seed++, 0);
                        }
                    }
    }
    long main_cases = g_cases, main_runs = g_runs, main_fb = g_fb_pred;

    /* fallback section 1: a non-contiguous datatype (vector of 2 ints, stride 2) */
    for (int c = 0; c < NC; c++) {
        if (only && !in_list(only, ckey[c])) continue;
        int roots[2] = {0, P - 1}, nroots = rooted[c] && P > 1 ? 2 : 1;
        for (int ri = 0; ri < nroots; ri++)
            for (int ip = 0; ip <= (inplace_kind[c] ? 1 : 0); ip++) {
                case_t cs = {c, roots[ri], 7, ip, K_VEC, is_red[c] ? O_USER : O_NONE, 0};
                run_case(&cs, seed++, 0);
            }
    }
    /* fallback section 2: an intercommunicator (two halves); collectives whose intercomm form keeps
     * the intracomm argument pattern on both sides (all-to-all kinds) */
    long inter_cases = 0;
    if (P >= 2) {
        MPI_Comm half, inter;
        int color = R < P / 2;
        MPI_Comm_split(MPI_COMM_WORLD, color, R, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, color ? P / 2 : 0, 77, &inter);
        int lp, rp;
        MPI_Comm_size(inter, &lp);
        MPI_Comm_remote_size(inter, &rp);
        if (lp == rp) {   /* equal halves: buffers sized as for an intracomm of lp ranks work */
            int saveP = P, saveR = R;
            g_comm = inter;
            P = lp;
            MPI_Comm_rank(inter, &R);
            int ic[] = {C_ALLGATHER, C_ALLREDUCE, C_ALLTOALL, C_RSB};
            g_inter = 1;
            for (unsigned i = 0; i < sizeof ic / sizeof ic[0]; i++) {
                /* predictions are recorded where R == 0: world rank 0 is local rank 0 of its group */
                case_t cs = {ic[i], 0, 7, 0, K_INT, is_red[ic[i]] ? O_SUM : O_NONE, 0};
                run_case(&cs, seed++, 1);
                inter_cases++;
            }
            g_inter = 0;
            P = saveP;
            R = saveR;
            g_comm = MPI_COMM_WORLD;
        }
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }

    long totals[5] = {g_cases, g_runs, g_fb_pred, g_mism, g_defects}, sums[5];
    PMPI_Reduce(totals, sums, 5, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    long rep_bad = check_report();
    PMPI_Bcast(&rep_bad, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    if (R == 0) {
        printf("matrix p=%d nodes=%d%s mpi=%s mockups=%ld: cases=%ld (main %ld, non-contiguous %ld, intercomm %ld) "
               "mockup_runs=%ld fallbacks=%ld (main %ld) mismatches=%ld report_mismatches=%ld "
               "library_defects=%ld%s time=%.1fs\n",
               P, g_nnodes, g_node_contig ? "" : "(interleaved)", g_mpi_name, mock_algs, totals[0], main_cases,
               totals[0] - main_cases - inter_cases, inter_cases, totals[1], totals[2], main_fb,
               sums[3], rep_bad, totals[4], big_some ? " big-count=subset(int,int2/user,double/sum)" : "", t1 - t0);
        for (int i = 0; i < NDEFECT; i++)
            if (g_defect_cases[i])
                printf("LIBRARY DEFECT %s -- default not called in %ld cases (reference: the default without "
                       "MPI_IN_PLACE); the mock-ups served them\n", g_defect_text[i], g_defect_cases[i]);
        if (g_defect_skips)
            printf("LIBRARY DEFECT: %ld mock-up runs not made in those cases because they must fall back "
                   "(pool) and their fallback is the crashing default\n", g_defect_skips);
        (void)main_runs;
        fflush(stdout);
    }
    int fail = sums[3] != 0 || rep_bad != 0;
    PMPI_Bcast(&fail, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Op_free(&g_user);
    MPI_Type_free(&g_int2);
    MPI_Type_free(&g_vec);
    free(S); free(S0); free(Rb); free(REF); free(g_exp);
    /* the library prints its whole #@pgmpi report at MPI_Finalize (PGMPITUNE_VERBOSE=1); it was
     * checked above, keep the test log short */
    if (R == 0 && !getenv("PGMPI_MATRIX_SHOW_REPORT")) { fflush(stdout); if (!freopen("/dev/null", "w", stdout)) {} }
    MPI_Finalize();
    return fail ? 1 : 0;
}
