/* Correctness of the mock-ups where the ranks of one call differ (run under mpirun, p = 2..5): what the
 * main matrix (matrix.c) cannot see, because there every rank uses the same datatype and layout.
 *
 * Class A, data movement with per-rank datatypes of one type signature (MPI requires only matching
 * signatures). Every rank describes a block of N ints with one of five layouts: N x MPI_INT
 * (contiguous), 1 x vector (gaps), 1 x indexed (irregular gaps), 1 x struct, N x an int resized to
 * 8 bytes. Patterns: send/receive layouts rotated over the ranks (every pair of layouts meets), the
 * root contiguous and the others not, and the reverse. Allgather and Alltoall (also MPI_IN_PLACE at
 * all ranks), Bcast, Gather and Scatter (roots 0 and p-1, also MPI_IN_PLACE at the root only);
 * N in {1, 7, 1000, 4099}.
 *
 * Class B, reductions over a derived element of several ints (contiguous(4, MPI_INT)) with
 * non-commutative user operations: a 2x2 integer matrix product in rank order; an affine composition
 * that counts every element it is given that the application did not make (a made-up padding
 * element is a failure); and, for count 1, a matrix product that only handles the first element of a
 * call, as MPICH's red3 test does (a mock-up that hands it more elements than the application
 * reduces changes the result). Allreduce, Reduce (roots 0 and p-1, MPI_IN_PLACE at the root only),
 * Reduce_scatter_block, Reduce_scatter (with empty blocks) and Scan, also in place; counts not
 * divisible by p. The receive buffer ends where the send buffer starts (one allocation): an inner
 * call whose receive buffer is the end of an empty block then aliases the send buffer, which MPICH
 * refuses ("Buffers must not be aliased"); this program links the debug build of the library, which
 * aborts on any aliased inner call.
 *
 * Every case runs the library default (forced "default"), then every mock-up of the collective forced
 * in turn on the same input, and compares the whole receive buffer (gaps included) byte for byte, and
 * checks the send buffer unchanged. A watchdog (watchdog.h) turns a hang into a failure that says
 * which ranks are in which call. The served / fell-back counts of every mock-up are predicted
 * (class A: never a fallback -- the layout is this rank's own business, rule 3 of
 * lib/src/core/pgmpitune_core.h; class B: padded decompositions fall back for user ops, rule 7) and
 * checked against the library's #@pgmpi report (needs PGMPITUNE_VERBOSE=1).
 * Exit status 0 only without mismatches and with the report as predicted. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgmpitune.h"
#include "nodes.h"
#include "report.h"
#include "watchdog.h"

static int P, R;
static long g_cases[2], g_runs[2], g_mismatches, g_bad_elements;

/* ------------------------------------------------------------------ expectations ------------ */
#define MAXALG 8
static long g_pred_used[16][MAXALG], g_pred_fb[16][MAXALG], g_got_used[16][MAXALG], g_got_fb[16][MAXALG];

static void mismatch(const char *what, const char *alg, const char *text)
{
    g_mismatches++;
    if (g_mismatches <= 30) fprintf(stderr, "MISMATCH rank %d p=%d: %s alg=%s: %s\n", R, P, what, alg, text);
}

/* ------------------------------------------------------------------ class A: layouts --------- */
enum { L_CONTIG, L_VECTOR, L_INDEXED, L_STRUCT, L_RESIZED, NL };
static const char *lname[NL] = {"contig", "vector", "indexed", "struct", "resized"};

typedef struct {
    MPI_Datatype type;
    int count;          /* count of type that describes N ints */
    size_t span;        /* bytes of one block: count x extent */
    size_t *off;        /* byte offset of int j in the block */
} layout_t;
static layout_t LAY[NL];

static void layouts_make(int N)
{
    for (int k = 0; k < NL; k++) {
        layout_t *L = &LAY[k];
        L->off = malloc((size_t)N * sizeof(size_t));
        switch (k) {
        case L_CONTIG:
            L->type = MPI_INT; L->count = N;
            for (int j = 0; j < N; j++) L->off[j] = 4 * (size_t)j;
            break;
        case L_VECTOR:
            MPI_Type_vector(N, 1, 2, MPI_INT, &L->type); L->count = 1;
            for (int j = 0; j < N; j++) L->off[j] = 8 * (size_t)j;
            break;
        case L_INDEXED: {   /* blocks of 1, 2, 1, 2, ... ints, one int of gap after each block */
            int nb = 0, *bl = malloc((size_t)N * sizeof(int)), *dp = malloc((size_t)N * sizeof(int));
            int j = 0, at = 0;
            while (j < N) {
                int len = (nb % 2) ? 2 : 1;
                if (len > N - j) len = N - j;
                bl[nb] = len; dp[nb] = at;
                for (int i = 0; i < len; i++) L->off[j + i] = 4 * (size_t)(at + i);
                j += len; at += len + 1; nb++;
            }
            MPI_Type_indexed(nb, bl, dp, MPI_INT, &L->type); L->count = 1;
            free(bl); free(dp);
        } break;
        case L_STRUCT: {    /* pairs of ints, one int of gap after each pair */
            int *bl = malloc((size_t)N * sizeof(int));
            MPI_Aint *dp = malloc((size_t)N * sizeof(MPI_Aint));
            MPI_Datatype *ty = malloc((size_t)N * sizeof(MPI_Datatype));
            for (int j = 0; j < N; j++) {
                bl[j] = 1; ty[j] = MPI_INT; dp[j] = 4 * (MPI_Aint)(j + j / 2);
                L->off[j] = (size_t)dp[j];
            }
            MPI_Type_create_struct(N, bl, dp, ty, &L->type); L->count = 1;
            free(bl); free(dp); free(ty);
        } break;
        default:
            MPI_Type_create_resized(MPI_INT, 0, 8, &L->type); L->count = N;
            for (int j = 0; j < N; j++) L->off[j] = 8 * (size_t)j;
            break;
        }
        if (k != L_CONTIG) MPI_Type_commit(&L->type);
        MPI_Aint lb, ext;
        MPI_Type_get_extent(L->type, &lb, &ext);
        L->span = (size_t)ext * (size_t)L->count;
    }
}

static void layouts_free(void)
{
    for (int k = 0; k < NL; k++) {
        if (k != L_CONTIG) MPI_Type_free(&LAY[k].type);
        free(LAY[k].off);
    }
}

/* The value int j of the block that rank src sends to rank dst carries. */
static int32_t val(int src, int dst, int j) { return (int32_t)(((src * 8 + dst) << 16) ^ (j * 2654435761u >> 8)); }

static void put_block(unsigned char *blk, const layout_t *L, int N, int src, int dst)
{
    for (int j = 0; j < N; j++) { int32_t v = val(src, dst, j); memcpy(blk + L->off[j], &v, 4); }
}

enum { C_ALLGATHER, C_ALLTOALL, C_BCAST, C_GATHER, C_SCATTER, C_ALLREDUCE, C_REDUCE, C_RSB, C_RS, C_SCAN, NC };
static const char *ckey[NC] = {"allgather", "alltoall", "bcast", "gather", "scatter",
                               "allreduce", "reduce", "reducescatterblock", "reducescatter", "scan"};
static int cid[NC];

#define SENT 0xA5
static unsigned char *SB, *RB, *REF, *S0;
static size_t CAP;

static void ensure(size_t bytes)
{
    if (bytes <= CAP) return;
    CAP = bytes;
    SB = realloc(SB, CAP); RB = realloc(RB, CAP); REF = realloc(REF, CAP); S0 = realloc(S0, CAP);
    if (!SB || !RB || !REF || !S0) { fprintf(stderr, "out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 3); }
}

typedef struct { int c, N, root, inplace, ks, kr; const char *pattern; } acase_t;

/* Fills SB/RB for case a on this rank; returns the receive span (bytes compared). */
static size_t a_prepare(const acase_t *a)
{
    const layout_t *S = &LAY[a->ks], *Rl = &LAY[a->kr];
    int N = a->N, root = a->root;
    size_t rspan = 0, sspan = 0;
    switch (a->c) {
    case C_BCAST: rspan = Rl->span; break;
    case C_ALLGATHER: sspan = S->span; rspan = Rl->span * (size_t)P; break;
    case C_ALLTOALL: sspan = S->span * (size_t)P; rspan = Rl->span * (size_t)P; break;
    case C_GATHER: sspan = S->span; rspan = R == root ? Rl->span * (size_t)P : 0; break;
    case C_SCATTER: sspan = R == root ? S->span * (size_t)P : 0; rspan = Rl->span; break;
    }
    ensure((rspan > sspan ? rspan : sspan) + 64);
    memset(SB, SENT, CAP);
    memset(RB, SENT, CAP);
    switch (a->c) {
    case C_BCAST:
        if (R == root) put_block(RB, Rl, N, root, 0);
        break;
    case C_ALLGATHER:
        if (a->inplace) put_block(RB + (size_t)R * Rl->span, Rl, N, R, 0);
        else put_block(SB, S, N, R, 0);
        break;
    case C_ALLTOALL:
        for (int d = 0; d < P; d++) {
            if (a->inplace) put_block(RB + (size_t)d * Rl->span, Rl, N, R, d);
            else put_block(SB + (size_t)d * S->span, S, N, R, d);
        }
        break;
    case C_GATHER:
        if (a->inplace && R == root) put_block(RB + (size_t)R * Rl->span, Rl, N, R, 0);
        else put_block(SB, S, N, R, 0);
        break;
    case C_SCATTER:
        if (R == root)
            for (int d = 0; d < P; d++) put_block(SB + (size_t)d * S->span, S, N, root, d);
        break;
    }
    memcpy(S0, SB, CAP);
    return rspan;
}

static int a_call(const acase_t *a)
{
    const layout_t *S = &LAY[a->ks], *Rl = &LAY[a->kr];
    int root = a->root, ip = a->inplace;
    switch (a->c) {
    case C_BCAST: return MPI_Bcast(RB, Rl->count, Rl->type, root, MPI_COMM_WORLD);
    case C_ALLGATHER:
        return MPI_Allgather(ip ? MPI_IN_PLACE : SB, S->count, S->type, RB, Rl->count, Rl->type, MPI_COMM_WORLD);
    case C_ALLTOALL:
        return MPI_Alltoall(ip ? MPI_IN_PLACE : SB, S->count, S->type, RB, Rl->count, Rl->type, MPI_COMM_WORLD);
    case C_GATHER:
        if (R == root)
            return MPI_Gather(ip ? MPI_IN_PLACE : SB, S->count, S->type, RB, Rl->count, Rl->type, root,
                              MPI_COMM_WORLD);
        return MPI_Gather(SB, S->count, S->type, NULL, 0, MPI_DATATYPE_NULL, root, MPI_COMM_WORLD);
    default:
        if (R == root)
            return MPI_Scatter(SB, S->count, S->type, ip ? MPI_IN_PLACE : RB, Rl->count, Rl->type, root,
                               MPI_COMM_WORLD);
        return MPI_Scatter(NULL, 0, MPI_DATATYPE_NULL, RB, Rl->count, Rl->type, root, MPI_COMM_WORLD);
    }
}

static void run_a(const acase_t *a)
{
    int c = cid[a->c], na = pgmpitune_nalgorithms(c);
    char what[200];
    snprintf(what, sizeof what, "%s N=%d root=%d in_place=%d pattern=%s send=%s recv=%s", ckey[a->c], a->N, a->root,
             a->inplace, a->pattern, lname[a->ks], lname[a->kr]);
    g_cases[0]++;
    size_t span = a_prepare(a);
    pgmpitune_force(c, 0);
    wd_enter("default", what);
    if (a_call(a) != MPI_SUCCESS) mismatch(what, "default", "returned an error");
    wd_leave();
    size_t cmp = span + 64;
    memcpy(REF, RB, cmp);
    for (int alg = 1; alg < na; alg++) {
        const char *name = pgmpitune_algorithm_name(c, alg);
        a_prepare(a);
        pgmpitune_force(c, alg);
        wd_enter(name, what);
        int rc = a_call(a);
        wd_leave();
        pgmpitune_force(c, 0);
        g_runs[0]++;
        /* rule 3: never a fallback for a layout; node-aware ones on one node */
        if (R == 0) { if (node_falls_back(name, 0)) g_pred_fb[a->c][alg]++; else g_pred_used[a->c][alg]++; }
        if (rc != MPI_SUCCESS) mismatch(what, name, "returned an error");
        if (memcmp(REF, RB, cmp)) mismatch(what, name, "receive buffer differs from the default's");
        if (memcmp(S0, SB, CAP)) mismatch(what, name, "send buffer changed");
    }
}

static void class_a(void)
{
    static const int Ns[] = {1, 7, 1000, 4099};
    const int cs[] = {C_ALLGATHER, C_ALLTOALL, C_BCAST, C_GATHER, C_SCATTER};
    for (size_t ni = 0; ni < sizeof Ns / sizeof Ns[0]; ni++) {
        int N = Ns[ni];
        layouts_make(N);
        for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++) {
            int c = cs[ci], rooted = c == C_BCAST || c == C_GATHER || c == C_SCATTER;
            int roots[2] = {0, P - 1}, nroots = rooted && P > 1 ? 2 : 1;
            int nip = c == C_BCAST ? 1 : 2;
            for (int ri = 0; ri < nroots; ri++)
                for (int ip = 0; ip < nip; ip++)
                    for (int q = 0; q < NL + 2; q++) {
                        acase_t a = {c, N, roots[ri], ip, 0, 0, NULL};
                        char pat[32];
                        if (q < NL) {
                            a.ks = (R + q) % NL;
                            a.kr = (R + q + 1) % NL;
                            snprintf(pat, sizeof pat, "rotate%d", q);
                        } else {
                            int special = R == a.root;
                            int mine = (q == NL) == special ? L_CONTIG : L_VECTOR;
                            a.ks = a.kr = mine;
                            snprintf(pat, sizeof pat, q == NL ? "root-contig" : "root-vector");
                        }
                        a.pattern = pat;
                        run_a(&a);
                    }
        }
        layouts_free();
    }
}

/* ------------------------------------------------------------------ class B: user ops -------- */
/* Element: 4 ints. MATMUL: a 2x2 matrix (row major), inout = in x inout (rank order). TAGGED:
 * {tag, m, c, x}: x -> m x + c maps composed in rank order; an element without the application's tag
 * was made up by a mock-up. RED3: MATMUL on the first element of a call only. */
#define TAG 0x5047AB1E
enum { OP_MATMUL, OP_TAGGED, OP_RED3, NOPS };
static const char *opname[NOPS] = {"matmul", "tagged", "red3-first-element-only"};
static MPI_Op g_ops[NOPS];
static MPI_Datatype g_elem;

static void matmul1(const int32_t *a, int32_t *b)
{
    uint32_t r0 = (uint32_t)a[0] * (uint32_t)b[0] + (uint32_t)a[1] * (uint32_t)b[2];
    uint32_t r1 = (uint32_t)a[0] * (uint32_t)b[1] + (uint32_t)a[1] * (uint32_t)b[3];
    uint32_t r2 = (uint32_t)a[2] * (uint32_t)b[0] + (uint32_t)a[3] * (uint32_t)b[2];
    uint32_t r3 = (uint32_t)a[2] * (uint32_t)b[1] + (uint32_t)a[3] * (uint32_t)b[3];
    b[0] = (int32_t)r0; b[1] = (int32_t)r1; b[2] = (int32_t)r2; b[3] = (int32_t)r3;
}
static void op_matmul(void *in, void *io, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int e = 0; e < *len; e++) matmul1((int32_t *)in + 4 * e, (int32_t *)io + 4 * e);
}
static void op_red3(void *in, void *io, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int e = 0; e < *len; e++) matmul1((int32_t *)in, (int32_t *)io);   /* the test's own defect */
}
static void op_tagged(void *in, void *io, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int e = 0; e < *len; e++) {
        int32_t *a = (int32_t *)in + 4 * e, *b = (int32_t *)io + 4 * e;
        if (a[0] != TAG || b[0] != TAG) g_bad_elements++;
        uint32_t m = (uint32_t)b[1] * (uint32_t)a[1], c = (uint32_t)b[1] * (uint32_t)a[2] + (uint32_t)b[2];
        b[1] = (int32_t)m; b[2] = (int32_t)c; b[3] = (int32_t)((uint32_t)b[3] + (uint32_t)a[3]);
    }
}

typedef struct { int c, count, root, inplace, op; } bcase_t;
static int g_rcs[64];

static void b_fill(unsigned char *buf, int count, int op, int rank)
{
    uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t)(rank + 1) + (uint64_t)count;
    for (int e = 0; e < count; e++) {
        int32_t v[4];
        for (int i = 0; i < 4; i++) { s = s * 6364136223846793005ull + 1442695040888963407ull; v[i] = (int32_t)((s >> 33) % 7) - 3; }
        if (op == OP_TAGGED) { v[0] = TAG; v[1] |= 1; }
        memcpy(buf + 16 * (size_t)e, v, 16);
    }
}

/* One allocation: the receive buffer is followed directly by the send buffer. */
static unsigned char *BR, *BS;
static size_t b_prepare(const bcase_t *b)
{
    int count = b->count;
    size_t rbytes = 16 * (size_t)count, total = 16 * (size_t)count;
    if (b->c == C_RSB) {
        total = 16 * (size_t)count * (size_t)P;
        if (b->inplace) rbytes = total;
    }
    if (b->c == C_RS) {
        total = 0;
        for (int i = 0; i < P; i++) total += 16 * (size_t)g_rcs[i];
        rbytes = b->inplace ? total : 16 * (size_t)g_rcs[R];
    }
    ensure(rbytes + 16 + total + 64);
    memset(SB, SENT, CAP);
    BR = SB;
    BS = SB + (rbytes ? rbytes : 16);   /* an empty receive buffer at the send buffer is the test's aliasing */
    int ip = b->inplace && (b->c != C_REDUCE || R == b->root);
    b_fill(ip ? BR : BS, (int)(total / 16), b->op, R);
    memcpy(S0, SB, CAP);
    return rbytes;
}

static int b_call(const bcase_t *b)
{
    int ip = b->inplace, cnt = b->count;
    MPI_Op op = g_ops[b->op];
    switch (b->c) {
    case C_ALLREDUCE: return MPI_Allreduce(ip ? MPI_IN_PLACE : BS, BR, cnt, g_elem, op, MPI_COMM_WORLD);
    case C_REDUCE:
        if (R == b->root) return MPI_Reduce(ip ? MPI_IN_PLACE : BS, BR, cnt, g_elem, op, b->root, MPI_COMM_WORLD);
        return MPI_Reduce(BS, BR, cnt, g_elem, op, b->root, MPI_COMM_WORLD);
    case C_RSB: return MPI_Reduce_scatter_block(ip ? MPI_IN_PLACE : BS, BR, cnt, g_elem, op, MPI_COMM_WORLD);
    case C_RS: return MPI_Reduce_scatter(ip ? MPI_IN_PLACE : BS, BR, g_rcs, g_elem, op, MPI_COMM_WORLD);
    default: return MPI_Scan(ip ? MPI_IN_PLACE : BS, BR, cnt, g_elem, op, MPI_COMM_WORLD);
    }
}

/* Bytes of the receive buffer that hold this rank's result. */
static size_t b_result_bytes(const bcase_t *b, size_t rbytes)
{
    switch (b->c) {
    case C_REDUCE: return R == b->root ? rbytes : 0;
    case C_RSB: return 16 * (size_t)b->count;
    case C_RS: return 16 * (size_t)g_rcs[R];
    default: return rbytes;
    }
}

/* Rule 7 of lib/src/core/pgmpitune_core.h: padded decompositions are not offered for user ops. */
static int b_predict_fallback(const bcase_t *b, const char *name)
{
    if (node_falls_back(name, 1)) return 1;   /* every op here is a non-commutative user op */
    if (b->count % P == 0) return 0;
    return !strcmp(name, "allreduce_as_reducescatterblock_allgather") ||
           !strcmp(name, "reduce_as_reducescatterblock_gather");
}

static void run_b(const bcase_t *b)
{
    int c = cid[b->c], na = pgmpitune_nalgorithms(c);
    char what[200];
    snprintf(what, sizeof what, "%s count=%d root=%d in_place=%d op=%s", ckey[b->c], b->count, b->root, b->inplace,
             opname[b->op]);
    g_cases[1]++;
    size_t rbytes = b_prepare(b), res = b_result_bytes(b, rbytes);
    pgmpitune_force(c, 0);
    g_bad_elements = 0;
    wd_enter("default", what);
    if (b_call(b) != MPI_SUCCESS) mismatch(what, "default", "returned an error");
    wd_leave();
    if (g_bad_elements) mismatch(what, "default", "the default made up elements (test defect)");
    memcpy(REF, BR, res);
    for (int alg = 1; alg < na; alg++) {
        const char *name = pgmpitune_algorithm_name(c, alg);
        b_prepare(b);
        g_bad_elements = 0;
        pgmpitune_force(c, alg);
        wd_enter(name, what);
        int rc = b_call(b);
        wd_leave();
        pgmpitune_force(c, 0);
        g_runs[1]++;
        int fb = b_predict_fallback(b, name);
        if (R == 0) { if (fb) g_pred_fb[b->c][alg]++; else g_pred_used[b->c][alg]++; }
        if (rc != MPI_SUCCESS) mismatch(what, name, "returned an error");
        if (memcmp(REF, BR, res)) mismatch(what, name, "result differs from the default's");
        if (g_bad_elements) mismatch(what, name, "the user op was given elements the application did not provide");
        /* the send buffer (or, in place, nothing past the result) must be untouched */
        int ip = b->inplace && (b->c != C_REDUCE || R == b->root);
        size_t soff = (size_t)(BS - SB);
        if (!ip && memcmp(S0 + soff, SB + soff, CAP - soff)) mismatch(what, name, "send buffer changed");
    }
}

static void class_b(void)
{
    int counts[] = {1, P - 1, P + 1, 2 * P, 7, 100};
    const int cs[] = {C_ALLREDUCE, C_REDUCE, C_RSB, C_RS, C_SCAN};
    for (size_t ki = 0; ki < sizeof counts / sizeof counts[0]; ki++) {
        int count = counts[ki];
        if (count <= 0) continue;
        /* Reduce_scatter: empty blocks on every even rank but the last, so that a block's end can be
         * where the send buffer starts */
        for (int i = 0; i < P; i++) g_rcs[i] = (i % 2 || i == P - 1) ? count : 0;
        for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++) {
            int c = cs[ci];
            int roots[2] = {0, P - 1}, nroots = c == C_REDUCE && P > 1 ? 2 : 1;
            for (int op = 0; op < NOPS; op++) {
                /* an op that handles one element per call is only valid where the application
                 * reduces one element in all: Allreduce, Reduce and Scan with count 1 */
                if (op == OP_RED3 && (count != 1 || c == C_RSB || c == C_RS)) continue;
                for (int ri = 0; ri < nroots; ri++)
                    for (int ip = 0; ip < 2; ip++) {
                        bcase_t b = {c, count, roots[ri], ip, op};
                        run_b(&b);
                    }
            }
        }
    }
}

/* ------------------------------------------------------------------ report check ------------- */
static void got_line(void *ctx, int c, int a, size_t n, int fell_back, long v, const char *line)
{
    long *bad = ctx;
    (void)n;
    int k = -1;
    for (int i = 0; i < NC; i++) if (cid[i] == c) k = i;
    if (k < 0 || a < 0 || a >= MAXALG) { (*bad)++; fprintf(stderr, "REPORT unexpected: %s", line); return; }
    if (a == 0) return;
    if (fell_back) g_got_fb[k][a] += v; else g_got_used[k][a] += v;
}

static long check_report(void)
{
    if (R != 0) return 0;
    long bad = 0, other = 0, lines = report_read(got_line, &bad, &other);
    if (lines < 0) return 1;
    if (!lines) {
        fprintf(stderr, "REPORT empty: run with PGMPITUNE_VERBOSE=1\n");
        return 1;
    }
    for (int k = 0; k < NC; k++)
        for (int a = 1; a < pgmpitune_nalgorithms(cid[k]); a++) {
            const char *name = pgmpitune_algorithm_name(cid[k], a);
            printf("mixed p=%d %-44s served=%ld fell_back=%ld\n", P, name, g_got_used[k][a], g_got_fb[k][a]);
            if (g_got_used[k][a] != g_pred_used[k][a] || g_got_fb[k][a] != g_pred_fb[k][a]) {
                bad++;
                fprintf(stderr, "REPORT %s: predicted served=%ld fell_back=%ld, library says served=%ld fell_back=%ld\n",
                        name, g_pred_used[k][a], g_pred_fb[k][a], g_got_used[k][a], g_got_fb[k][a]);
            }
        }
    return bad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_rank(MPI_COMM_WORLD, &R);
    nodes_measure();
    wd_start(R, P);
    double t0 = MPI_Wtime();
    for (int i = 0; i < NC; i++) {
        cid[i] = pgmpitune_collective_lookup(ckey[i]);
        if (cid[i] < 0 || pgmpitune_nalgorithms(cid[i]) > MAXALG) {
            fprintf(stderr, "mixed: collective %s unknown to the library\n", ckey[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    MPI_Type_contiguous(4, MPI_INT, &g_elem);
    MPI_Type_commit(&g_elem);
    MPI_Op_create(op_matmul, 0, &g_ops[OP_MATMUL]);
    MPI_Op_create(op_tagged, 0, &g_ops[OP_TAGGED]);
    MPI_Op_create(op_red3, 0, &g_ops[OP_RED3]);

    class_a();
    class_b();

    long mism = 0, local = g_mismatches;
    MPI_Allreduce(&local, &mism, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    long rep = check_report();
    if (R == 0)
        printf("mixed p=%d nodes=%d%s: class A (per-rank datatypes of one signature) cases=%ld mockup_runs=%ld; "
               "class B (derived elements, non-commutative user ops, adjacent buffers) cases=%ld mockup_runs=%ld; "
               "mismatches=%ld report_mismatches=%ld hangs=0 time=%.1fs\n",
               P, g_nnodes, g_node_contig ? "" : "(interleaved)", g_cases[0], g_runs[0], g_cases[1], g_runs[1], mism, rep, MPI_Wtime() - t0);
    for (int i = 0; i < NOPS; i++) MPI_Op_free(&g_ops[i]);
    MPI_Type_free(&g_elem);
    MPI_Finalize();
    return (mism || rep) ? 1 : 0;
}
