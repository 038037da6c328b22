/* Correctness of the GL4 replacement (lib/src/core/datatypes.c), under mpirun, p = 1..5.
 *
 * Layouts (units of base elements within one element, the element's extent and lb): the paper's tiled,
 * block, bucket and alternating (variant 1), equal blocks at one stride, a negative lb, and tiled over
 * MPI_DOUBLE; plus two the replacement must leave alone (a struct of MPI_INT and MPI_FLOAT; a subarray).
 * Every layout exists once per replacement description (contiguous, vector, indexed_block, indexed,
 * hindexed, struct_flat, contig), padded by k base elements so that each has its own signature, and the datatype
 * profile (written by `dt_matrix --write-profile FILE` on one rank, from the library's signatures) maps
 * every signature to its description. Whether the replacement fits is predicted here (one block for
 * contiguous, equal blocks for vector and indexed_block, one base type, no probing) and checked with
 * pgmpitune_type_replacement on every rank.
 *
 * Each rank describes the layout with its own constructor (indexed, struct, hindexed, and vector /
 * indexed_block where they fit, rotating over ranks and cases), so the ranks of one call hold DIFFERENT
 * types of one signature; in some cases rank 0 uses plain MPI_INT / MPI_DOUBLE buffers instead. The
 * application's handle must stay its own: combiner, extent, lb and size are checked after commit, and
 * MPI_Type_dup of it works. Calls: MPI_Bcast (roots 0 and p-1) and MPI_Allgather (also MPI_IN_PLACE), at
 * counts 0, 1, 7 and 1000, each with the library's default and with the packed repair mock-up forced;
 * and MPI_Send / MPI_Recv around a ring (p >= 2);
 * the reference is the same call through PMPI_ with the user's own types on a second buffer, and the
 * whole buffers (gaps included) must be equal byte for byte. --some runs one count and one of the two
 * modes per (layout, description, pattern), rotating; --part=i/n (implies --some) only every n-th
 * (layout, description) variant from the i-th, so that two process counts share the variants. A watchdog turns a hang into a failure.
 * Exit 0 only without mismatches. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgmpitune.h"
#include "watchdog.h"

static int P, R;
static long g_mismatches, g_calls, g_replaced_checks;

static void mismatch(const char *what, const char *text)
{
    g_mismatches++;
    if (g_mismatches <= 30) fprintf(stderr, "MISMATCH rank %d p=%d: %s: %s\n", R, P, what, text);
}

/* ------------------------------------------------------------------ layouts */
typedef struct {
    const char *name;
    int nu, off[3], len[3], X, lb;   /* in base elements */
    int kind;                        /* 0 plain, 1 mixed base types (kept), 2 subarray (kept) */
    int dbl;                         /* base MPI_DOUBLE */
} layout_t;
static const layout_t layouts[] = {
    {"tiled", 1, {0}, {3}, 5, 0, 0, 0},
    {"block", 2, {0, 3}, {2, 2}, 8, 0, 0, 0},
    {"bucket", 2, {0, 5}, {2, 4}, 10, 0, 0, 0},
    {"alternating", 2, {0, 4}, {2, 4}, 10, 0, 0, 0},
    {"strided3", 3, {0, 3, 6}, {2, 2, 2}, 9, 0, 0, 0},
    {"negative_lb", 2, {-1, 2}, {2, 2}, 6, -1, 0, 0},
    {"tiled_double", 1, {0}, {2}, 3, 0, 0, 1},
    {"mixed_int_float", 2, {0, 3}, {2, 2}, 6, 0, 1, 0},
    {"subarray", 1, {0}, {2}, 4, 0, 2, 0},
};
#define NLAYOUTS ((int)(sizeof layouts / sizeof layouts[0]))
static const char *const repl_names[] = {"contiguous", "vector", "indexed_block", "indexed", "hindexed", "struct_flat",
                                         "contig"};
#define NREPL 7
enum { U_INDEXED, U_STRUCT, U_HINDEXED, U_VECTOR, U_INDEXED_BLOCK, NUSER };
static const char *const user_names[NUSER] = {"indexed", "struct", "hindexed", "vector", "indexed_block"};

static int equal_lengths(const layout_t *L)
{
    for (int u = 1; u < L->nu; u++) if (L->len[u] != L->len[0]) return 0;
    return 1;
}
/* what the library must do for description k of this layout */
static int predict_replaced(const layout_t *L, int k)
{
    if (L->kind) return 0;
    switch (k) {
    case 0: return L->nu == 1;
    case 1: case 2: return equal_lengths(L);
    default: return 1;
    }
}
static int user_fits(const layout_t *L, int ud)
{
    if (L->kind) return ud == U_STRUCT;   /* the special layouts have one constructor each */
    if (ud == U_VECTOR) return equal_lengths(L) && (L->nu < 3 || L->off[2] - L->off[1] == L->off[1] - L->off[0]);
    if (ud == U_INDEXED_BLOCK) return equal_lengths(L);
    return 1;
}

static MPI_Datatype base_of(const layout_t *L) { return L->dbl ? MPI_DOUBLE : MPI_INT; }
static int esize(const layout_t *L) { return L->dbl ? 8 : 4; }
static int extent_elems(const layout_t *L, int k) { return L->X + k; }   /* pad k: its own signature */

/* The layout's element type, described with constructor ud, resized to (lb, extent); committed. The
 * combiner the application must keep seeing is returned in *comb. */
static MPI_Datatype make(const layout_t *L, int k, int ud, int *comb)
{
    MPI_Datatype B = base_of(L), t = MPI_DATATYPE_NULL, r;
    int es = esize(L);
    MPI_Aint ad[3];
    for (int u = 0; u < L->nu; u++) ad[u] = (MPI_Aint)L->off[u] * es;
    if (L->kind == 1) {
        MPI_Datatype ty[2] = {MPI_INT, MPI_FLOAT};
        MPI_Type_create_struct(2, (int *)L->len, ad, ty, &t);
        *comb = MPI_COMBINER_STRUCT;
    } else if (L->kind == 2) {
        int sizes[1] = {4}, sub[1] = {2}, start[1] = {0};
        MPI_Type_create_subarray(1, sizes, sub, start, MPI_ORDER_C, MPI_INT, &t);
        *comb = MPI_COMBINER_SUBARRAY;
        int one = 1;
        MPI_Aint zero = 0;
        MPI_Datatype s = t;   /* pad like the others: a struct around it keeps the subarray inside */
        MPI_Type_create_struct(1, &one, &zero, &s, &t);
        MPI_Type_free(&s);
        *comb = MPI_COMBINER_STRUCT;
    } else {
        switch (ud) {
        case U_INDEXED: MPI_Type_indexed(L->nu, (int *)L->len, (int *)L->off, B, &t); *comb = MPI_COMBINER_INDEXED; break;
        case U_HINDEXED: MPI_Type_create_hindexed(L->nu, (int *)L->len, ad, B, &t); *comb = MPI_COMBINER_HINDEXED; break;
        case U_VECTOR: {
            int stride = L->nu > 1 ? L->off[1] - L->off[0] : L->len[0];
            MPI_Type_vector(L->nu, L->len[0], stride, B, &t);
            if (L->off[0]) { int one = 1; MPI_Aint d = ad[0]; MPI_Datatype v = t; MPI_Type_create_struct(1, &one, &d, &v, &t); MPI_Type_free(&v); *comb = MPI_COMBINER_STRUCT; }
            else *comb = MPI_COMBINER_VECTOR;
            break;
        }
        case U_INDEXED_BLOCK: MPI_Type_create_indexed_block(L->nu, L->len[0], (int *)L->off, B, &t); *comb = MPI_COMBINER_INDEXED_BLOCK; break;
        default: {
            MPI_Datatype ty[3] = {B, B, B};
            MPI_Type_create_struct(L->nu, (int *)L->len, ad, ty, &t);
            *comb = MPI_COMBINER_STRUCT;
        }
        }
    }
    MPI_Type_create_resized(t, (MPI_Aint)L->lb * es, (MPI_Aint)extent_elems(L, k) * es, &r);
    MPI_Type_free(&t);
    MPI_Type_commit(&r);
    return r;
}

/* ------------------------------------------------------------------ profile */
static int write_profile(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) { perror(path); return 1; }
    fprintf(f, "# dt_matrix: every layout variant of tests/c/datatypes/dt_matrix.c -> its description\n");
    fprintf(f, "#@pgmpi datatype_profile_version 1\n");
    for (int l = 0; l < NLAYOUTS; l++)
        for (int k = 0; k < NREPL; k++) {
            int comb;
            MPI_Datatype t = make(&layouts[l], k, layouts[l].kind ? U_STRUCT : U_INDEXED, &comb);
            char hex[17];
            if (pgmpitune_type_signature(t, 1, hex, NULL, 0) == 0)
                fprintf(f, "replace %s %s layout=%s\n", hex, repl_names[k], layouts[l].name);
            MPI_Type_free(&t);
        }
    fclose(f);
    return 0;
}

/* ------------------------------------------------------------------ the calls */
static unsigned char fill_byte(int r, size_t i, int salt) { return (unsigned char)(r * 71 + (int)(i % 253) * 13 + salt * 7 + 1); }

static void compare(const char *what, const unsigned char *a, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) {
            char t[128];
            snprintf(t, sizeof t, "byte %zu: %u, reference %u", i, a[i], b[i]);
            mismatch(what, t);
            return;
        }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_rank(MPI_COMM_WORLD, &R);
    if (argc == 3 && !strcmp(argv[1], "--write-profile")) {
        int rc = R == 0 ? write_profile(argv[2]) : 0;
        MPI_Finalize();
        return rc;
    }
    int some = 0, part = 0, parts = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--some")) some = 1;
        else if (sscanf(argv[i], "--part=%d/%d", &part, &parts) == 2 && parts >= 1 && part >= 0 && part < parts) some = 1;
    }
    wd_start(R, P);
    int cb = pgmpitune_collective_lookup("bcast"), ca = pgmpitune_collective_lookup("allgather");
    int forced[2][2] = {{cb, 0}, {ca, 0}};
    forced[0][1] = pgmpitune_algorithm_lookup(cb, "bcast_as_packed_bcast");
    forced[1][1] = pgmpitune_algorithm_lookup(ca, "allgather_as_packed_allgather");
    const int counts[] = {0, 1, 7, 1000};
    long cases = 0;
    for (int l = 0; l < NLAYOUTS; l++) {
        const layout_t *L = &layouts[l];
        for (int k = 0; k < NREPL; k++) {
            if ((l * NREPL + k) % parts != part) continue;
            /* this rank's constructor: rotate over the ones that fit, differently per rank and variant */
            int fits[NUSER], nf = 0;
            for (int u = 0; u < NUSER; u++) if (user_fits(L, u)) fits[nf++] = u;
            int ud = fits[(R + k + l) % nf], comb = 0;
            MPI_Datatype t = make(L, k, ud, &comb);
            char what[200];
            snprintf(what, sizeof what, "layout=%s repl=%s user=%s", L->name, repl_names[k], user_names[ud]);
            /* the replacement as predicted, and the user's handle untouched */
            const char *got = pgmpitune_type_replacement(t);
            int want = predict_replaced(L, k);
            if (want != (got != NULL) || (got && strcmp(got, repl_names[k]))) mismatch(what, got ? got : "not replaced");
            g_replaced_checks += want;
            int ni, na, nd, c2 = -1, c0 = -1, size;
            MPI_Aint lb, ext;
            MPI_Type_get_envelope(t, &ni, &na, &nd, &c0);
            if (c0 == MPI_COMBINER_RESIZED && ni == 0 && na == 2 && nd == 1) {   /* the constructor inside */
                MPI_Aint aa[2];
                MPI_Datatype inner;
                MPI_Type_get_contents(t, 0, 2, 1, NULL, aa, &inner);
                MPI_Type_get_envelope(inner, &ni, &na, &nd, &c2);
                MPI_Type_free(&inner);
            }
            MPI_Type_get_extent(t, &lb, &ext);
            MPI_Type_size(t, &size);
            int usize = 0;
            for (int u = 0; u < L->nu; u++) usize += L->len[u];
            if (c2 != comb || lb != (MPI_Aint)L->lb * esize(L) || ext != (MPI_Aint)extent_elems(L, k) * esize(L) ||
                size != usize * esize(L))
                mismatch(what, "the application's handle changed (combiner, lb, extent or size)");
            MPI_Datatype d;
            if (MPI_Type_dup(t, &d) != MPI_SUCCESS) mismatch(what, "MPI_Type_dup failed");
            else MPI_Type_free(&d);
            /* rank 0 with plain base elements in every other variant: layouts differ, signatures match */
            int plain = R == 0 && (k % 2) == 1 && P > 1 && L->kind != 1;
            MPI_Datatype mine = plain ? base_of(L) : t;
            int per = plain ? usize : 1;   /* elements of `mine` per layout element */
            size_t E = plain ? (size_t)usize * (size_t)esize(L) : (size_t)ext;
            int shift = L->lb < 0 ? -L->lb * esize(L) : 0;   /* the buffer starts at the type's lb */
            for (int ci = 0; ci < 4; ci++) {
                /* --some (quick manual runs): one count per variant, rotating, so that every count
                 * still meets every layout over the variants */
                if (some && ci != (l + k) % 4) continue;
                int n = counts[ci];
                size_t span = E * (size_t)(n ? n : 1) + (size_t)shift + 64;
                unsigned char *a = malloc(span * (size_t)P), *b = malloc(span * (size_t)P);
                unsigned char *s1 = malloc(span), *s2 = malloc(span);
                for (int pat = 0; pat < 4; pat++)
                    for (int fm = 0; fm < 2; fm++) {
                        if (pat == 3 && (fm || P == 1)) continue;   /* send/recv: no mock-up; a ring needs 2 */
                        if (some && pat < 3 && fm != (l + k + pat) % 2) continue;
                        int coll = pat == 0 ? 0 : 1;
                        if (pat < 3) pgmpitune_force(forced[coll][0], forced[coll][1] > 0 ? fm * forced[coll][1] : 0);
                        for (size_t i = 0; i < span * (size_t)P; i++) a[i] = b[i] = fill_byte(R, i, ci + pat);
                        for (size_t i = 0; i < span; i++) s1[i] = s2[i] = fill_byte(R + 9, i, ci);
                        char cw[300];
                        snprintf(cw, sizeof cw, "%s count=%d %s%s", what, n,
                                 pat == 0 ? "bcast" : pat == 1 ? "allgather" : pat == 2 ? "allgather in place" : "send/recv ring",
                                 fm ? " packed repair" : "");
                        int rc1, rc2;
                        if (pat == 3) {   /* even ranks send first, odd ones receive first: no cycle */
                            int to = (R + 1) % P, from = (R + P - 1) % P;
                            wd_enter("MPI_Send/MPI_Recv", cw);
                            if (R % 2 == 0) {
                                rc1 = MPI_Send(s1 + shift, n * per, mine, to, 7, MPI_COMM_WORLD);
                                if (rc1 == MPI_SUCCESS) rc1 = MPI_Recv(a + shift, n * per, mine, from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                                rc2 = PMPI_Send(s2 + shift, n * per, mine, to, 8, MPI_COMM_WORLD);
                                if (rc2 == MPI_SUCCESS) rc2 = PMPI_Recv(b + shift, n * per, mine, from, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                            } else {
                                rc1 = MPI_Recv(a + shift, n * per, mine, from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                                if (rc1 == MPI_SUCCESS) rc1 = MPI_Send(s1 + shift, n * per, mine, to, 7, MPI_COMM_WORLD);
                                rc2 = PMPI_Recv(b + shift, n * per, mine, from, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                                if (rc2 == MPI_SUCCESS) rc2 = PMPI_Send(s2 + shift, n * per, mine, to, 8, MPI_COMM_WORLD);
                            }
                            wd_leave();
                            compare(cw, a, b, span);
                        } else if (pat == 0) {
                            int root = (l + k) % 2 ? P - 1 : 0;
                            wd_enter("MPI_Bcast", cw);
                            rc1 = MPI_Bcast(a + shift, n * per, mine, root, MPI_COMM_WORLD);
                            rc2 = PMPI_Bcast(b + shift, n * per, mine, root, MPI_COMM_WORLD);
                            wd_leave();
                            compare(cw, a, b, span);
                        } else {
                            /* receive block of rank j at j * n elements of the layout */
                            size_t own = (size_t)R * (size_t)n * E;
                            wd_enter("MPI_Allgather", cw);
                            if (pat == 1) {
                                rc1 = MPI_Allgather(s1 + shift, n * per, mine, a + shift, n * per, mine, MPI_COMM_WORLD);
                                rc2 = PMPI_Allgather(s2 + shift, n * per, mine, b + shift, n * per, mine, MPI_COMM_WORLD);
                            } else {
                                (void)own;
                                rc1 = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a + shift, n * per, mine, MPI_COMM_WORLD);
                                rc2 = PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b + shift, n * per, mine, MPI_COMM_WORLD);
                            }
                            wd_leave();
                            compare(cw, a, b, span * (size_t)P);
                            compare(cw, s1, s2, span);
                        }
                        if (rc1 != MPI_SUCCESS || rc2 != MPI_SUCCESS) mismatch(cw, "an MPI error");
                        g_calls++;
                        cases++;
                    }
                free(a); free(b); free(s1); free(s2);
            }
            pgmpitune_unforce(cb);
            pgmpitune_unforce(ca);
            MPI_Type_free(&t);
            if (pgmpitune_type_replacement(t) != NULL) mismatch(what, "a replacement outlived MPI_Type_free");
        }
    }
    long tot[2] = {g_mismatches, g_replaced_checks}, all[2];
    PMPI_Allreduce(tot, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (R == 0)
        printf("dt_matrix: p=%d cases=%ld replaced-type checks=%ld mismatches=%ld\n", P, cases, all[1], all[0]);
    MPI_Finalize();
    return all[0] ? 1 : 0;
}
