/* pgmpi-dtbench's cases: the derived-datatype layouts, their descriptions and patterns of
 * "MPI derived datatypes: performance expectations and status quo" (Carpen-Amarie, Hunold, Traff),
 * measured by pgmpi-bench's engine (bench_measure.c) one (case, size) cell at a time with the
 * descriptions interleaved.  A case = (pattern, layout, variant, blocksize A); an "algorithm" of the
 * engine = one description of the case's layout (the X-macro table below).  Every type is built and
 * committed in dt_prepare(), outside the timed regions, and freed when the next cell is prepared.
 * Method and output: lib/bench/README.md, "pgmpi-dtbench". */
#define _GNU_SOURCE
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgmpitune.h"
#include "bench.h"
#include "bench_datatypes.h"

/* name, which guideline compares it with the reference, what it is */
#define DT_DESCRIPTIONS(X)                                                                                  \
    X(D_TYPED,         "typed",         "reference: the paper's static block type t, count c = n/k")       \
    X(D_CONTIG,        "contig",        "GL1: one contig(c, t), count 1")                                   \
    X(D_PACKED,        "packed",        "GL2/GL3: MPI_Pack + the call on MPI_PACKED + MPI_Unpack")          \
    X(D_VECTOR,        "vector",        "GL4 test 6 Tiled-vector: vector(c, A, B) resized")                 \
    X(D_NESTED,        "nested",        "GL4 test 7 Vector-tiled: hvector(c/S, 1, S*B) of vector(S, A, B)") \
    X(D_TILED_STRUCT,  "tiled_struct",  "GL4 test 5 Tiled-struct: struct of S1 = 2 and S2 = 3 tiles")       \
    X(D_INDEXED_BLOCK, "indexed_block", "GL4 test 8 Block-indexed / test 11 RowCol-fully-indexed")          \
    X(D_INDEXED,       "indexed",       "GL4 test 9 Alternating-indexed / test 11 RowCol-contiguous-and-indexed") \
    X(D_STRUCT_FLAT,   "struct_flat",   "GL4: create_struct over every unit")                               \
    X(D_STRUCT,        "struct",        "GL4 test 10 Alternating-struct / test 11 RowCol-struct")           \
    X(D_CONTROL,       "typed_control", "control arm: the reference measured again under its own label")   \
    X(D_REPAIRED,      "repaired",      "typed through libpgmpitune's repair (bcast/allgather_as_packed_*)") \
    X(D_TUNED,         "tuned",         "typed with libpgmpitune following its profile (validation; not in all)")
enum {
#define X(id, name, what) id,
    DT_DESCRIPTIONS(X)
#undef X
    D_COUNT
};
static const char *const desc_names[] = {
#define X(id, name, what) name,
    DT_DESCRIPTIONS(X)
#undef X
};
static const char *const desc_what[] = {
#define X(id, name, what) what,
    DT_DESCRIPTIONS(X)
#undef X
};

const char *const dt_layout_names[L_COUNT] = {"contiguous", "tiled", "block", "bucket", "alternating", "altrep", "rowcol"};
const char *const dt_pattern_names[PAT_COUNT] = {"pingpong", "bcast", "allgather"};

#define NESTED_S 4      /* units per inner vector of the nested description */
#define STRUCT_S1 2     /* tiles in the two parts of the tiled struct */
#define STRUCT_S2 3

int dt_ndescriptions(void) { return D_COUNT; }
const char *dt_description_name(int d) { return d >= 0 && d < D_COUNT ? desc_names[d] : "?"; }
const char *dt_description_what(int d) { return d >= 0 && d < D_COUNT ? desc_what[d] : "?"; }
int dt_description_lookup(const char *name)
{
    for (int d = 0; d < D_COUNT; d++) if (strcmp(desc_names[d], name) == 0) return d;
    return -1;
}

/* One block of a repeated layout (paper, sect. 2.2 and table 2): its units (offset, length) and its
 * extent X, in elements. */
typedef struct { int nu; long off[2], len[2], X, k; } block_t;

static block_t block_of(const dtcase_t *d)
{
    long A = d->A;
    int v2 = d->variant == 2;
    block_t b = {0};
    switch (d->layout) {
    case L_CONTIG: b.nu = 1; b.len[0] = 1; b.X = 1; break;
    case L_TILED: b.nu = 1; b.len[0] = A; b.X = v2 ? 3 * A : A + 2; break;
    case L_BLOCK: {
        long B1 = v2 ? 2 * A : A + 1, B2 = v2 ? 4 * A : A + 3;
        b.nu = 2; b.len[0] = b.len[1] = A; b.off[1] = B1; b.X = B1 + B2; break;
    }
    case L_BUCKET: {
        long A1 = v2 ? A / 2 : A - 1, A2 = v2 ? 3 * A / 2 : A + 1, B = v2 ? 3 * A : A + 2;
        b.nu = 2; b.len[0] = A1; b.len[1] = A2; b.off[1] = B; b.X = 2 * B; break;
    }
    case L_ALTERNATING: {
        long A1 = v2 ? A / 2 : A - 1, A2 = v2 ? 3 * A / 2 : A + 1, B1 = v2 ? 2 * A : A + 1, B2 = v2 ? 4 * A : A + 3;
        b.nu = 2; b.len[0] = A1; b.len[1] = A2; b.off[1] = B1; b.X = B1 + B2; break;
    }
    case L_ALTREP: {   /* test 10: Alternating with B1 = A + 1, B2 = A2 */
        long A1 = A - 1, A2 = A + 1, B1 = A + 1;
        b.nu = 2; b.len[0] = A1; b.len[1] = A2; b.off[1] = B1; b.X = B1 + A2; break;
    }
    default: break;    /* rowcol: not a repeated block */
    }
    b.k = b.len[0] + (b.nu > 1 ? b.len[1] : 0);
    return b;
}

const char *dt_case_check(const dtcase_t *d)
{
    if (d->layout == L_CONTIG) return NULL;
    if (d->A < 1) return "blocksize A must be >= 1";
    if ((d->layout == L_BUCKET || d->layout == L_ALTERNATING) && d->variant == 2 && (d->A < 2 || d->A % 2))
        return "variant 2 of bucket/alternating needs an even A >= 2 (A1 = A/2, A2 = 3A/2)";
    if ((d->layout == L_BUCKET || d->layout == L_ALTERNATING || d->layout == L_ALTREP) && d->A < 2)
        return "A1 = A - 1 needs A >= 2";
    if (d->layout == L_ROWCOL && d->variant != 1) return "rowcol has one variant";
    if (d->layout == L_ALTREP && d->variant != 1) return "altrep has one variant";
    return NULL;
}

void dt_case_name(dtcase_t *d)
{
    const char *base = dtypes[O.dt].name + 4;   /* MPI_INT -> int */
    char b[16]; size_t i = 0;
    for (; base[i] && i < sizeof b - 1; i++) b[i] = (char)(base[i] >= 'A' && base[i] <= 'Z' ? base[i] + 32 : base[i]);
    b[i] = 0;
    if (d->layout == L_CONTIG)
        snprintf(d->name, sizeof d->name, "dt_%s_%s_contiguous", dt_pattern_names[d->pattern], b);
    else if (d->layout == L_ROWCOL || d->layout == L_ALTREP)
        snprintf(d->name, sizeof d->name, "dt_%s_%s_%s_a%ld", dt_pattern_names[d->pattern], b, dt_layout_names[d->layout], d->A);
    else
        snprintf(d->name, sizeof d->name, "dt_%s_%s_%s_v%d_a%ld", dt_pattern_names[d->pattern], b,
                 dt_layout_names[d->layout], d->variant, d->A);
}

/* Which descriptions a layout has (the paper's for it; the flattened ones for every non-contiguous one). */
int dt_layout_has(int layout, int d)
{
    switch (d) {
    case D_TYPED: case D_CONTIG: return layout != L_ROWCOL;
    case D_PACKED: return 1;
    case D_VECTOR: case D_NESTED: case D_TILED_STRUCT: return layout == L_TILED;
    case D_INDEXED_BLOCK: return layout == L_TILED || layout == L_BLOCK || layout == L_ROWCOL;
    case D_INDEXED: return layout != L_CONTIG;
    case D_STRUCT_FLAT: return layout != L_CONTIG && layout != L_ROWCOL;
    case D_STRUCT: return layout == L_ALTREP || layout == L_ROWCOL;
    case D_CONTROL: return 1;
    case D_REPAIRED: case D_TUNED: return layout != L_ROWCOL;
    default: return 0;
    }
}

/* The reference description of a layout (GL1/GL4 compare against it; packed packs it). */
int dt_reference(int layout) { return layout == L_ROWCOL ? D_INDEXED_BLOCK : D_TYPED; }

/* n elements of the layout: the plan of one cell.  Repeated layouts: n rounded down to whole blocks
 * (at least one); rowcol: n > A and the matrix's extent at most DT_MAX_EXTENT bytes. */
void dt_plan(const call_t *c, size_t req, int p, cplan_t *cp)
{
    const dtcase_t *d = c->dt;
    size_t es = dtypes[O.dt].size;
    memset(cp, 0, sizeof *cp);
    cp->req = req; cp->ok = 1;
    size_t n = req / es, ext;
    if (d->layout == L_ROWCOL) {
        if (n <= (size_t)d->A) n = (size_t)d->A + 1;
        ext = ((n - (size_t)d->A) * (size_t)d->A + 1) * es;
        cp->count = 1;
    } else {
        block_t b = block_of(d);
        size_t blocks = n / (size_t)b.k;
        if (blocks == 0) blocks = 1;
        n = blocks * (size_t)b.k;
        ext = blocks * (size_t)b.X * es;
        cp->count = blocks;
    }
    cp->n = n * es;
    if (ext > DT_MAX_EXTENT || cp->count > INT_MAX || n > INT_MAX) { cp->ok = 0; return; }
    cp->sbytes = ext;
    cp->rbytes = d->pattern == PAT_ALLGATHER ? ext * (size_t)p : d->pattern == PAT_PINGPONG ? ext : 0;
}

/* ------------------------------------------------------------------ the current cell's types */
static struct {
    const call_t *call;
    size_t n, c, ext;        /* elements, blocks (count of typed), extent of the whole message in bytes */
    MPI_Datatype t[D_COUNT];
    int count[D_COUNT];
    int has[D_COUNT];
    char *pbuf, *prbuf;      /* pack buffers (packed description) */
    int plen;                /* packed bytes of the whole message */
    int sel;
    int coll, repair;        /* libpgmpitune's collective of the pattern (-1: ping-pong) and its repair mock-up */
} cur;

static void die_mpi(const char *what, int rc)
{
    char msg[MPI_MAX_ERROR_STRING]; int len = 0;
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "pgmpi-dtbench: error: rank %d: %s: %s\n", g_rank, what, msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
}
#define CK(call) do { int rc_ = (call); if (rc_ != MPI_SUCCESS) die_mpi(#call, rc_); } while (0)

static void release(void)
{
    for (int d = 0; d < D_COUNT; d++)
        if (cur.has[d] && d != D_PACKED && d != D_CONTROL && d != D_REPAIRED && d != D_TUNED && cur.t[d] != dtype_handle(O.dt))
            MPI_Type_free(&cur.t[d]);
    for (int d = 0; d < D_COUNT; d++) { cur.t[d] = MPI_DATATYPE_NULL; cur.has[d] = 0; cur.count[d] = 0; }
    free(cur.pbuf); free(cur.prbuf); cur.pbuf = cur.prbuf = NULL;
    cur.call = NULL;
}

/* every unit of the whole message, in elements */
static long units(const dtcase_t *d, size_t n, size_t c, long **off, int **len)
{
    long nu;
    if (d->layout == L_ROWCOL) {
        long A = d->A, m = (long)n - A;
        nu = 1 + m;
        *off = malloc((size_t)nu * sizeof **off); *len = malloc((size_t)nu * sizeof **len);
        if (!*off || !*len) return -1;
        (*off)[0] = 0; (*len)[0] = (int)A;
        for (long i = 1; i <= m; i++) { (*off)[i] = i * A; (*len)[i] = 1; }
        return nu;
    }
    block_t b = block_of(d);
    nu = (long)c * b.nu;
    *off = malloc((size_t)nu * sizeof **off); *len = malloc((size_t)nu * sizeof **len);
    if (!*off || !*len) return -1;
    for (size_t r = 0, k = 0; r < c; r++)
        for (int u = 0; u < b.nu; u++, k++) { (*off)[k] = (long)r * b.X + b.off[u]; (*len)[k] = (int)b.len[u]; }
    return nu;
}

static MPI_Datatype resized(MPI_Datatype t, MPI_Aint extent)
{
    MPI_Datatype r;
    CK(MPI_Type_create_resized(t, 0, extent, &r));
    MPI_Type_free(&t);
    return r;
}

/* the paper's static block type t of a repeated layout */
static MPI_Datatype block_type(const dtcase_t *d, MPI_Datatype base, MPI_Aint es)
{
    block_t b = block_of(d);
    MPI_Datatype t;
    switch (d->layout) {
    case L_CONTIG: return base;
    case L_TILED: CK(MPI_Type_contiguous((int)b.len[0], base, &t)); break;
    case L_BLOCK: { int disp[2] = {0, (int)b.off[1]}; CK(MPI_Type_create_indexed_block(2, (int)b.len[0], disp, base, &t)); break; }
    default: { int bl[2] = {(int)b.len[0], (int)b.len[1]}, disp[2] = {0, (int)b.off[1]};
               CK(MPI_Type_indexed(2, bl, disp, base, &t)); break; }
    }
    return resized(t, (MPI_Aint)b.X * es);
}

/* The layout signatures of the cell's descriptions (libpgmpitune computes them: one owner), for the
 * footer: the description's own type (what a datatype profile's replacement is keyed on) and the whole
 * message (count x type), which every description of one layout shares -- checked here, since GL4
 * compares descriptions of one layout only. Packed and the reference's arms report the reference's. */
static void record_signatures(const call_t *c, const cplan_t *cp)
{
    char first[17] = "", firstname[32] = "";
    for (int k = 0; k < D_COUNT; k++) {
        if (!cur.has[k]) continue;
        int ref = dt_reference(((const dtcase_t *)c->dt)->layout);
        MPI_Datatype t = k == D_PACKED ? cur.t[ref] : cur.t[k];
        int cnt = k == D_PACKED ? cur.count[ref] : cur.count[k];
        char own[17], msg[17];
        if (pgmpitune_type_signature(t, 1, own, NULL, 0) || pgmpitune_type_signature(t, cnt, msg, NULL, 0)) {
            footer_add("# dtsig %s %zu %s: the library could not flatten this type\n", c->mpi_name, cp->n, desc_names[k]);
            continue;
        }
        footer_add("#@pgmpi dtsig %s %zu %s %s count=%d message=%s\n", c->mpi_name, cp->n, desc_names[k], own, cnt, msg);
        if (!first[0]) { memcpy(first, msg, sizeof first); snprintf(firstname, sizeof firstname, "%s", desc_names[k]); }
        else if (strcmp(first, msg)) {
            footer_add("#@pgmpi dtsig_differs %s %zu %s %s\n", c->mpi_name, cp->n, firstname, desc_names[k]);
            fprintf(stderr, "pgmpi-dtbench: warning: %s %zu B: descriptions %s and %s do not describe the same type map\n",
                    c->mpi_name, cp->n, firstname, desc_names[k]);
        }
    }
}

/* The signature of the case's static block type (the typed description's type, independent of the
 * size); "" for rowcol, which has none. */
void dt_case_signature(const dtcase_t *d, char hex[17])
{
    hex[0] = 0;
    if (!dt_layout_has(d->layout, D_TYPED)) return;
    MPI_Datatype base = dtype_handle(O.dt), t = block_type(d, base, (MPI_Aint)dtypes[O.dt].size);
    if (t != base) CK(MPI_Type_commit(&t));
    if (pgmpitune_type_signature(t, 1, hex, NULL, 0)) hex[0] = 0;
    if (t != base) MPI_Type_free(&t);
}

void dt_prepare(const call_t *c, cplan_t *cp)
{
    release();
    if (!cp->ok) return;
    const dtcase_t *d = c->dt;
    MPI_Datatype base = dtype_handle(O.dt);
    MPI_Aint es = (MPI_Aint)dtypes[O.dt].size;
    cur.call = c;
    cur.n = cp->n / (size_t)es;
    cur.c = cp->count;
    cur.ext = cp->sbytes;
    /* the collectives go through libpgmpitune: its default, whatever a profile says */
    int coll = d->pattern == PAT_BCAST ? pgmpitune_collective_lookup("bcast")
             : d->pattern == PAT_ALLGATHER ? pgmpitune_collective_lookup("allgather") : -1;
    if (coll >= 0) pgmpitune_force(coll, 0);
    cur.coll = coll;
    cur.repair = coll < 0 ? -1 : pgmpitune_algorithm_lookup(coll, d->pattern == PAT_BCAST ? "bcast_as_packed_bcast"
                                                                                       : "allgather_as_packed_allgather");
    long *off = NULL; int *len = NULL;
    long nu = d->layout == L_CONTIG ? 0 : units(d, cur.n, cur.c, &off, &len);
    if (nu < 0) { fprintf(stderr, "pgmpi-dtbench: error: out of memory for the unit lists\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    MPI_Aint E = (MPI_Aint)cur.ext;
    block_t b = block_of(d);
    for (int k = 0; k < D_COUNT; k++) {
        if (!dt_layout_has(d->layout, k)) continue;
        MPI_Datatype t = MPI_DATATYPE_NULL, u;
        int cnt = 1;
        switch (k) {
        case D_TYPED: t = block_type(d, base, es); cnt = (int)cur.c; break;
        case D_CONTIG:
            u = block_type(d, base, es);
            CK(MPI_Type_contiguous((int)cur.c, u, &t));
            if (u != base) MPI_Type_free(&u);
            break;
        case D_PACKED: case D_CONTROL: case D_REPAIRED: case D_TUNED: continue;   /* the reference's type; set below */
        case D_VECTOR: CK(MPI_Type_vector((int)cur.c, (int)b.len[0], (int)b.X, base, &t)); t = resized(t, E); break;
        case D_NESTED:
            if (cur.c % NESTED_S) continue;
            CK(MPI_Type_vector(NESTED_S, (int)b.len[0], (int)b.X, base, &u));
            CK(MPI_Type_create_hvector((int)(cur.c / NESTED_S), 1, (MPI_Aint)NESTED_S * b.X * es, u, &t));
            MPI_Type_free(&u); t = resized(t, E); break;
        case D_TILED_STRUCT: {
            if (cur.c % (STRUCT_S1 + STRUCT_S2)) continue;
            u = block_type(d, base, es);
            int bl[2] = {STRUCT_S1, STRUCT_S2};
            MPI_Aint disp[2] = {0, (MPI_Aint)STRUCT_S1 * b.X * es};
            MPI_Datatype ty[2] = {u, u};
            CK(MPI_Type_create_struct(2, bl, disp, ty, &t));
            MPI_Type_free(&u);
            t = resized(t, (MPI_Aint)(STRUCT_S1 + STRUCT_S2) * b.X * es);
            cnt = (int)(cur.c / (STRUCT_S1 + STRUCT_S2));
            break;
        }
        case D_INDEXED_BLOCK: {
            /* every unit as blocks of one length: rowcol's n single elements, tiled/block's units */
            long m = d->layout == L_ROWCOL ? (long)cur.n : nu;
            int *disp = malloc((size_t)m * sizeof *disp), blen = d->layout == L_ROWCOL ? 1 : (int)b.len[0];
            if (!disp) { fprintf(stderr, "pgmpi-dtbench: error: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
            if (d->layout == L_ROWCOL) {
                for (long i = 0; i < d->A; i++) disp[i] = (int)i;
                for (long i = 1; i <= (long)cur.n - d->A; i++) disp[d->A + i - 1] = (int)(i * d->A);
            } else for (long i = 0; i < m; i++) disp[i] = (int)off[i];
            CK(MPI_Type_create_indexed_block((int)m, blen, disp, base, &t));
            free(disp);
            t = resized(t, E); break;
        }
        case D_INDEXED: {
            int *disp = malloc((size_t)nu * sizeof *disp);
            if (!disp) { fprintf(stderr, "pgmpi-dtbench: error: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
            for (long i = 0; i < nu; i++) disp[i] = (int)off[i];
            CK(MPI_Type_indexed((int)nu, len, disp, base, &t));
            free(disp);
            t = resized(t, E); break;
        }
        case D_STRUCT_FLAT: {
            MPI_Aint *disp = malloc((size_t)nu * sizeof *disp);
            MPI_Datatype *ty = malloc((size_t)nu * sizeof *ty);
            if (!disp || !ty) { fprintf(stderr, "pgmpi-dtbench: error: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
            for (long i = 0; i < nu; i++) { disp[i] = (MPI_Aint)off[i] * es; ty[i] = base; }
            CK(MPI_Type_create_struct((int)nu, len, disp, ty, &t));
            free(disp); free(ty);
            t = resized(t, E); break;
        }
        case D_STRUCT: {
            MPI_Datatype ty[3]; int bl[3] = {1, 1, 1}; MPI_Aint disp[3]; int np = 0;
            if (d->layout == L_ROWCOL) {   /* contig(A) + vector(n - A, 1, A) at A */
                CK(MPI_Type_contiguous((int)d->A, base, &ty[0])); disp[0] = 0;
                CK(MPI_Type_vector((int)((long)cur.n - d->A), 1, (int)d->A, base, &ty[1])); disp[1] = (MPI_Aint)d->A * es;
                np = 2;
            } else {                       /* altrep: contig(A1) + vector(c-1, A2+A1, X) at B1 + contig(A2) */
                long A1 = b.len[0], A2 = b.len[1], B1 = b.off[1];
                CK(MPI_Type_contiguous((int)A1, base, &ty[0])); disp[0] = 0;
                if (cur.c > 1) {
                    CK(MPI_Type_vector((int)cur.c - 1, (int)(A2 + A1), (int)b.X, base, &ty[np = 1]));
                    disp[1] = (MPI_Aint)B1 * es;
                }
                np++;
                CK(MPI_Type_contiguous((int)A2, base, &ty[np]));
                disp[np] = ((MPI_Aint)(cur.c - 1) * b.X + B1) * es;
                np++;
            }
            CK(MPI_Type_create_struct(np, bl, disp, ty, &t));
            for (int i = 0; i < np; i++) MPI_Type_free(&ty[i]);
            t = resized(t, E); break;
        }
        default: continue;
        }
        if (t != base) CK(MPI_Type_commit(&t));
        cur.t[k] = t; cur.count[k] = cnt; cur.has[k] = 1;
    }
    free(off); free(len);
    /* packed: packs the reference description; its exact packed length, the same on every rank */
    int ref = dt_reference(d->layout);
    if (cur.has[ref]) {   /* the control arm runs the reference's own handle */
        cur.has[D_CONTROL] = 1; cur.t[D_CONTROL] = cur.t[ref]; cur.count[D_CONTROL] = cur.count[ref];
        if (cur.repair > 0 && dt_layout_has(d->layout, D_REPAIRED)) {
            cur.has[D_REPAIRED] = 1; cur.t[D_REPAIRED] = cur.t[ref]; cur.count[D_REPAIRED] = cur.count[ref];
        }
        if (cur.coll >= 0 && dt_layout_has(d->layout, D_TUNED)) {
            cur.has[D_TUNED] = 1; cur.t[D_TUNED] = cur.t[ref]; cur.count[D_TUNED] = cur.count[ref];
        }
    }
    if (cur.has[ref]) {
        int ps = 0;
        CK(MPI_Pack_size(cur.count[ref], cur.t[ref], MPI_COMM_WORLD, &ps));
        cur.pbuf = malloc((size_t)ps + 1);
        size_t np = d->pattern == PAT_ALLGATHER ? (size_t)g_size : 1;
        cur.prbuf = malloc((size_t)ps * np + 1);
        if (!cur.pbuf || !cur.prbuf) { fprintf(stderr, "pgmpi-dtbench: error: out of memory for the pack buffers\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
        memset(cur.pbuf, 0, (size_t)ps + 1); memset(cur.prbuf, 0, (size_t)ps * np + 1);
        char *tmp = calloc(cur.ext ? cur.ext : 1, 1);
        int pos = 0;
        CK(MPI_Pack(tmp, cur.count[ref], cur.t[ref], cur.pbuf, ps, &pos, MPI_COMM_WORLD));
        free(tmp);
        cur.plen = pos;
        cur.has[D_PACKED] = 1; cur.count[D_PACKED] = cur.count[ref]; cur.t[D_PACKED] = MPI_DATATYPE_NULL;
    }
    if (g_rank == 0) record_signatures(c, cp);
}

int dt_applies(const call_t *c, int a) { return cur.call == c && a >= 0 && a < D_COUNT && cur.has[a]; }
/* the repaired description is the typed call with libpgmpitune's repair forced; every other one runs the
 * library's default (pgmpitune_force, as pgmpi-bench selects its algorithms) */
void dt_select(const call_t *c, int a)
{
    (void)c;
    cur.sel = a;
    if (cur.coll < 0) return;
    if (a == D_TUNED) pgmpitune_unforce(cur.coll);      /* the profile decides, as in an application */
    else pgmpitune_force(cur.coll, a == D_REPAIRED ? cur.repair : 0);
}
const char *dt_alg_label(const call_t *c, int a) { (void)c; return dt_description_name(a); }
size_t dt_row_count(const call_t *c, int a) { (void)c; return a >= 0 && a < D_COUNT ? (size_t)cur.count[a] : 0; }

/* ------------------------------------------------------------------ the patterns */
static int pingpong(MPI_Datatype t, int cnt, char *sbuf, char *rbuf)
{
    MPI_Comm w = MPI_COMM_WORLD;
    int rc = MPI_SUCCESS;
    if (g_rank == 0) {
        if ((rc = MPI_Send(sbuf, cnt, t, 1, 0x5044, w))) return rc;
        return MPI_Recv(rbuf, cnt, t, 1, 0x5044, w, MPI_STATUS_IGNORE);
    }
    if (g_rank == 1) {
        if ((rc = MPI_Recv(rbuf, cnt, t, 0, 0x5044, w, MPI_STATUS_IGNORE))) return rc;
        return MPI_Send(rbuf, cnt, t, 0, 0x5044, w);
    }
    return rc;
}

/* the paper, sect. 3.1: the whole operation with explicit MPI_Pack / MPI_Unpack */
static int packed(const dtcase_t *d, MPI_Datatype t, int cnt, char *sbuf, char *rbuf)
{
    MPI_Comm w = MPI_COMM_WORLD;
    int rc, pos, L = cur.plen;
    switch (d->pattern) {
    case PAT_PINGPONG:
        if (g_rank == 0) {
            pos = 0; if ((rc = MPI_Pack(sbuf, cnt, t, cur.pbuf, L, &pos, w))) return rc;
            if ((rc = MPI_Send(cur.pbuf, L, MPI_PACKED, 1, 0x5044, w))) return rc;
            if ((rc = MPI_Recv(cur.prbuf, L, MPI_PACKED, 1, 0x5044, w, MPI_STATUS_IGNORE))) return rc;
            pos = 0; return MPI_Unpack(cur.prbuf, L, &pos, rbuf, cnt, t, w);
        }
        if (g_rank == 1) {
            if ((rc = MPI_Recv(cur.prbuf, L, MPI_PACKED, 0, 0x5044, w, MPI_STATUS_IGNORE))) return rc;
            pos = 0; if ((rc = MPI_Unpack(cur.prbuf, L, &pos, rbuf, cnt, t, w))) return rc;
            pos = 0; if ((rc = MPI_Pack(rbuf, cnt, t, cur.pbuf, L, &pos, w))) return rc;
            return MPI_Send(cur.pbuf, L, MPI_PACKED, 0, 0x5044, w);
        }
        return MPI_SUCCESS;
    case PAT_BCAST:
        if (g_rank == 0) { pos = 0; if ((rc = MPI_Pack(sbuf, cnt, t, cur.pbuf, L, &pos, w))) return rc; }
        if ((rc = MPI_Bcast(cur.pbuf, L, MPI_PACKED, 0, w))) return rc;
        if (g_rank != 0) { pos = 0; return MPI_Unpack(cur.pbuf, L, &pos, sbuf, cnt, t, w); }
        return MPI_SUCCESS;
    default:   /* allgather: p unpacks, a catenation of packing units is not one (MPI 4.2) */
        pos = 0; if ((rc = MPI_Pack(sbuf, cnt, t, cur.pbuf, L, &pos, w))) return rc;
        if ((rc = MPI_Allgather(cur.pbuf, L, MPI_PACKED, cur.prbuf, L, MPI_PACKED, w))) return rc;
        for (int r = 0; r < g_size; r++) {
            pos = 0;
            if ((rc = MPI_Unpack(cur.prbuf + (size_t)r * (size_t)L, L, &pos, rbuf + (size_t)r * cur.ext, cnt, t, w))) return rc;
        }
        return MPI_SUCCESS;
    }
}

int dt_run(const call_t *c, char *sbuf, char *rbuf)
{
    const dtcase_t *d = c->dt;
    int a = cur.sel;
    if (a == D_PACKED) { int ref = dt_reference(d->layout); return packed(d, cur.t[ref], cur.count[ref], sbuf, rbuf); }
    MPI_Datatype t = cur.t[a];
    int cnt = cur.count[a];
    switch (d->pattern) {
    case PAT_PINGPONG: return pingpong(t, cnt, sbuf, rbuf);
    case PAT_BCAST: return MPI_Bcast(sbuf, cnt, t, 0, MPI_COMM_WORLD);
    default: return MPI_Allgather(sbuf, cnt, t, rbuf, cnt, t, MPI_COMM_WORLD);
    }
}

/* ------------------------------------------------------------------ the check round */
static unsigned char data_byte(int r, size_t k) { return (unsigned char)(r * 37 + (int)(k % 251) * 11 + 5); }

/* 1 for every byte of the whole message's extent that the layout covers */
static unsigned char *layout_mask(const dtcase_t *d)
{
    size_t es = dtypes[O.dt].size;
    unsigned char *m = calloc(cur.ext ? cur.ext : 1, 1);
    if (!m) return NULL;
    if (d->layout == L_CONTIG) { memset(m, 1, cur.ext); return m; }
    long *off = NULL; int *len = NULL;
    long nu = units(d, cur.n, cur.c, &off, &len);
    for (long i = 0; i < nu; i++) memset(m + (size_t)off[i] * es, 1, (size_t)len[i] * es);
    free(off); free(len);
    return nu < 0 ? (free(m), NULL) : m;
}

/* Each description once on deterministic data; every rank compares its whole receive side (the layout's
 * bytes carry the sender's data, the gaps keep what was there).  Same footer lines as bench_check.c. */
void dt_check_cell(const call_t *c, const cplan_t *cp, char *sbuf, char *rbuf, int *ok)
{
    const dtcase_t *d = c->dt;
    for (int a = 0; a < c->nalg; a++) ok[a] = 1;
    if (!cp->ok || cur.call != c) return;
    unsigned char *mask = layout_mask(d);
    if (!mask) { fprintf(stderr, "pgmpi-dtbench: error: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    size_t E = cur.ext;
    MPI_Errhandler saved;
    PMPI_Comm_get_errhandler(MPI_COMM_WORLD, &saved);
    PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int a = 0; a < c->nalg; a++) {
        int alg = c->alg[a];
        if (!cur.has[alg]) continue;
        for (size_t k = 0; k < E; k++) sbuf[k] = (char)data_byte(g_rank, k);
        if (cp->rbytes) memset(rbuf, 0xA5, cp->rbytes);
        dt_select(c, alg);
        int rc = dt_run(c, sbuf, rbuf), code = 0;
        char detail[200] = "";
        if (rc != MPI_SUCCESS) {
            code = check_error_detail(rc, detail, sizeof detail);
        } else {
            /* what each rank must hold: (buffer, block count, source rank of block b) */
            const char *got = rbuf; int nb = 1, bcast = d->pattern == PAT_BCAST, pp = d->pattern == PAT_PINGPONG;
            if (bcast) got = sbuf;
            if (d->pattern == PAT_ALLGATHER) nb = g_size;
            if (pp && g_rank > 1) nb = 0;
            for (int blk = 0; blk < nb && !code; blk++) {
                int src = bcast ? 0 : pp ? 0 : blk;
                for (size_t k = 0; k < E; k++) {
                    unsigned char want = mask[k] ? data_byte(src, k) : bcast ? data_byte(g_rank, k) : 0xA5;
                    unsigned char have = (unsigned char)got[(size_t)blk * E + k];
                    if (have != want) {
                        code = 2;
                        snprintf(detail, sizeof detail, "rank=%d byte=%zu got=0x%02x expected=0x%02x", g_rank,
                                 (size_t)blk * E + k, have, want);
                        break;
                    }
                }
            }
        }
        ok[a] = check_verdict(c->mpi_name, cp->n, desc_names[alg], code, detail);
    }
    PMPI_Comm_set_errhandler(MPI_COMM_WORLD, saved);
    free(mask);
}

void dt_release(void) { release(); }
