/* Derived datatypes: the layout signature of a committed type and the GL4 replacement (a faster
 * description of the identical type map, named by a datatype profile; lib/docs/profile-format.md).
 *
 * The signature is FNV-1a 64 over "v1;<base>;<extent>;<d0>+<l0>,<d1>+<l1>,..." -- the single predefined
 * base type's name (or "mixed"), the extent, and the flattened type map of ONE element as byte blocks
 * (displacement + length) in type-map order, adjacent blocks merged. Descriptions of one layout share it.
 * It is computed once per type (at MPI_Type_commit when a datatype profile is loaded, else when first
 * asked for) and cached per handle; MPI_Type_free drops the entry and frees the replacement.
 *
 * The replacement never changes what the application sees: its handle keeps its own type (envelope,
 * contents, extent, dup, free); only the wrapped calls (pgmpi_type_for_call: MPI_Bcast, MPI_Allgather,
 * MPI_Send, MPI_Recv) communicate with the
 * replacement, whose type map, lb and extent are the user's, so every byte and the type signature are
 * the same whatever the other ranks use. Anything the replacement cannot do exactly keeps the user's
 * type: several base types, a base type with gaps (MPI_SHORT_INT), blocks that are not whole base
 * elements, a description that does not fit the layout (vector needs equal blocks at one stride). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgmpi_internal.h"
#include "pgmpitune.h"

/* ---- flattening ------------------------------------------------------------------------------- */
typedef struct { MPI_Aint disp, len; } blk_t;
typedef struct {
    blk_t       *b;
    size_t       n, cap;
    MPI_Datatype base;   /* the first named leaf type seen (valid when has_base; a zeroed handle is not
                          * MPI_DATATYPE_NULL in either library) */
    int          has_base;
    char         bname[MPI_MAX_OBJECT_NAME];   /* its name: bases compare by name (Open MPI's
                                                * get_contents may hand out other handles of one type) */
    int          mixed;  /* more than one named leaf type */
    int          inexact;/* a leaf whose bytes are not one block, or a combiner flattened by probing */
    int          failed; /* out of memory or an MPI error: no signature */
} flat_t;

static void flat_free(flat_t *f) { free(f->b); memset(f, 0, sizeof *f); }

static void add_block(flat_t *f, MPI_Aint disp, MPI_Aint len)
{
    if (len <= 0 || f->failed) return;
    if (f->n && f->b[f->n - 1].disp + f->b[f->n - 1].len == disp) { f->b[f->n - 1].len += len; return; }
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 16;
        blk_t *nb = realloc(f->b, cap * sizeof *nb);
        if (!nb) { f->failed = 1; return; }
        f->b = nb; f->cap = cap;
    }
    f->b[f->n].disp = disp; f->b[f->n].len = len; f->n++;
}

static void add_leaf_named(flat_t *f, MPI_Datatype t, const char *name)
{
    if (!f->has_base) { f->base = t; f->has_base = 1; snprintf(f->bname, sizeof f->bname, "%s", name); }
    else if (strcmp(f->bname, name)) f->mixed = 1;
}
static void add_leaf(flat_t *f, MPI_Datatype t)
{
    char name[MPI_MAX_OBJECT_NAME] = "";
    int len = 0;
    if (PMPI_Type_get_name(t, name, &len) != MPI_SUCCESS || len <= 0) {
        f->mixed |= f->has_base && f->base != t;   /* unnamed: by handle */
        snprintf(name, sizeof name, "?");
    }
    add_leaf_named(f, t, name);
}

/* Append child's blocks at offset (merging across the seam) and take over its base-type knowledge. */
static void append(flat_t *f, const flat_t *child, MPI_Aint off)
{
    for (size_t i = 0; i < child->n && !f->failed; i++) add_block(f, off + child->b[i].disp, child->b[i].len);
}
static void merge_bases(flat_t *f, const flat_t *child)
{
    if (child->has_base) add_leaf_named(f, child->base, child->bname);
    f->mixed |= child->mixed;
    f->inexact |= child->inexact;
    f->failed |= child->failed;
}

static int is_named(MPI_Datatype t)
{
    int ni, na, nd, comb;
    return PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) == MPI_SUCCESS && comb == MPI_COMBINER_NAMED;
}

/* Types the MPI library treats as predefined although they are not MPI_COMBINER_NAMED (Fortran
 * parameterised types): one leaf of their size. */
static int is_leaf_combiner(int comb)
{
    return comb == MPI_COMBINER_NAMED || comb == MPI_COMBINER_F90_REAL || comb == MPI_COMBINER_F90_COMPLEX ||
           comb == MPI_COMBINER_F90_INTEGER;
}

static void flatten(MPI_Datatype t, flat_t *f);

/* Byte probing for combiners without a simple offset pattern (subarray, darray): pack a buffer whose
 * byte k holds digit j of k in base 256, once per digit, and read off where each packed byte came from.
 * Valid when MPI_Pack yields raw bytes (pgmpi_pack_is_raw). */
static void flatten_by_probing(MPI_Datatype t, flat_t *f)
{
    MPI_Aint tlb = 0, text = 0;
    int size = 0;
    MPI_Datatype x = MPI_DATATYPE_NULL;   /* a committed copy: t may be an uncommitted inner type */
    f->inexact = 1;   /* correct type map, but no replacement is built from it */
    if (!pgmpi_pack_is_raw() || PMPI_Type_get_true_extent(t, &tlb, &text) != MPI_SUCCESS ||
        PMPI_Type_size(t, &size) != MPI_SUCCESS || text < 0 || text > ((MPI_Aint)1 << 28) ||
        PMPI_Type_dup(t, &x) != MPI_SUCCESS || PMPI_Type_commit(&x) != MPI_SUCCESS) {
        if (x != MPI_DATATYPE_NULL) PMPI_Type_free(&x);
        f->failed = 1;
        return;
    }
    if (size == 0) { PMPI_Type_free(&x); return; }
    unsigned char *src = malloc((size_t)text + 1), *dst = malloc((size_t)size);
    MPI_Aint *from = calloc((size_t)size, sizeof *from);
    if (!src || !dst || !from) { free(src); free(dst); free(from); f->failed = 1; return; }
    for (int digit = 0, shift = 0; digit < 8 && ((uint64_t)text >> shift) > 0; digit++, shift += 8) {
        for (MPI_Aint k = 0; k < text; k++) src[k] = (unsigned char)((uint64_t)k >> shift);
        int pos = 0;
        if (PMPI_Pack(src - tlb, 1, x, dst, size, &pos, MPI_COMM_SELF) != MPI_SUCCESS || pos != size) {
            f->failed = 1;
            break;
        }
        for (int j = 0; j < size; j++) from[j] |= (MPI_Aint)dst[j] << shift;
    }
    for (int j = 0; j < size && !f->failed; j++) add_block(f, tlb + from[j], 1);
    free(src); free(dst); free(from);
    PMPI_Type_free(&x);
}

static void flatten(MPI_Datatype t, flat_t *f)
{
    int ni = 0, na = 0, nd = 0, comb = 0;
    if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS) { f->failed = 1; return; }
    if (is_leaf_combiner(comb)) {
        int size = 0;
        MPI_Aint tlb = 0, text = 0;
        if (PMPI_Type_size(t, &size) != MPI_SUCCESS || PMPI_Type_get_true_extent(t, &tlb, &text) != MPI_SUCCESS) {
            f->failed = 1;
            return;
        }
        if (size == 0) return;                       /* MPI_LB / MPI_UB markers of old codes */
        if (tlb != 0 || text != size) f->inexact = 1; /* MPI_SHORT_INT & co.: padding inside */
        add_leaf(f, t);
        add_block(f, 0, size);
        return;
    }
    int *ints = malloc(((size_t)ni + 1) * sizeof *ints);
    MPI_Aint *aints = malloc(((size_t)na + 1) * sizeof *aints);
    MPI_Datatype *types = malloc(((size_t)nd + 1) * sizeof *types);
    if (!ints || !aints || !types ||
        PMPI_Type_get_contents(t, ni, na, nd, ints, aints, types) != MPI_SUCCESS) {
        free(ints); free(aints); free(types);
        f->failed = 1;
        return;
    }
    /* One child type (all combiners but struct): flatten it once, then place copies. */
    flat_t c = {0};
    MPI_Aint lb = 0, ext = 0;
    if (comb != MPI_COMBINER_STRUCT && comb != MPI_COMBINER_SUBARRAY && comb != MPI_COMBINER_DARRAY && nd >= 1) {
        flatten(types[0], &c);
        PMPI_Type_get_extent(types[0], &lb, &ext);
        merge_bases(f, &c);
    }
    switch (comb) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED:
        append(f, &c, 0);
        break;
    case MPI_COMBINER_CONTIGUOUS:
        for (int i = 0; i < ints[0]; i++) append(f, &c, (MPI_Aint)i * ext);
        break;
    case MPI_COMBINER_VECTOR:
    case MPI_COMBINER_HVECTOR: {
        MPI_Aint stride = comb == MPI_COMBINER_VECTOR ? (MPI_Aint)ints[2] * ext : aints[0];
        for (int i = 0; i < ints[0]; i++)
            for (int j = 0; j < ints[1]; j++) append(f, &c, (MPI_Aint)i * stride + (MPI_Aint)j * ext);
        break;
    }
    case MPI_COMBINER_INDEXED:
    case MPI_COMBINER_HINDEXED: {
        int n = ints[0];
        for (int i = 0; i < n; i++) {
            MPI_Aint d = comb == MPI_COMBINER_INDEXED ? (MPI_Aint)ints[1 + n + i] * ext : aints[i];
            for (int j = 0; j < ints[1 + i]; j++) append(f, &c, d + (MPI_Aint)j * ext);
        }
        break;
    }
    case MPI_COMBINER_INDEXED_BLOCK:
    case MPI_COMBINER_HINDEXED_BLOCK: {
        int n = ints[0];
        for (int i = 0; i < n; i++) {
            MPI_Aint d = comb == MPI_COMBINER_INDEXED_BLOCK ? (MPI_Aint)ints[2 + i] * ext : aints[i];
            for (int j = 0; j < ints[1]; j++) append(f, &c, d + (MPI_Aint)j * ext);
        }
        break;
    }
    case MPI_COMBINER_STRUCT: {
        int n = ints[0];
        for (int i = 0; i < n && !f->failed; i++) {
            flat_t ci = {0};
            MPI_Aint clb = 0, cext = 0;
            flatten(types[i], &ci);
            PMPI_Type_get_extent(types[i], &clb, &cext);
            merge_bases(f, &ci);
            for (int j = 0; j < ints[1 + i]; j++) append(f, &ci, aints[i] + (MPI_Aint)j * cext);
            flat_free(&ci);
        }
        break;
    }
    case MPI_COMBINER_SUBARRAY:
    case MPI_COMBINER_DARRAY: {
        flat_t leaf = {0};
        flatten(types[0], &leaf);   /* only for the base-type name */
        merge_bases(f, &leaf);
        flat_free(&leaf);
        flatten_by_probing(t, f);
        break;
    }
    default:
        flatten_by_probing(t, f);
        break;
    }
    flat_free(&c);
    for (int i = 0; i < nd; i++)
        if (!is_named(types[i])) PMPI_Type_free(&types[i]);
    free(ints); free(aints); free(types);
}

/* ---- the signature ---------------------------------------------------------------------------- */
/* FNV-1a 64 of the canonical text, which is also kept (truncated) when text != NULL (tools, tests). */
typedef struct { uint64_t h; char *text; size_t cap, len; } sink_t;
static void put(sink_t *s, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) { s->h ^= (unsigned char)p[i]; s->h *= 0x100000001b3ull; }
    if (s->text && s->cap) {
        size_t room = s->len + 1 < s->cap ? s->cap - 1 - s->len : 0, k = n < room ? n : room;
        memcpy(s->text + s->len, p, k);
        s->len += k;
        s->text[s->len] = 0;
    }
}

/* The signature of `count` consecutive elements (extent apart) of a flattened type: count 1 is the
 * type's own; count c is that of contiguous(c, t), the whole message of a call. */
static uint64_t signature_of(const flat_t *f, MPI_Datatype t, int count, char *text, size_t cap)
{
    sink_t s = {0xcbf29ce484222325ull, text, cap, 0};
    if (text && cap) text[0] = 0;
    char buf[MPI_MAX_OBJECT_NAME + 64];
    MPI_Aint lb = 0, ext = 0;
    PMPI_Type_get_extent(t, &lb, &ext);
    if (count < 1) count = 1;
    const char *base = !f->mixed && f->has_base && strcmp(f->bname, "?") ? f->bname : "mixed";
    int n = snprintf(buf, sizeof buf, "v1;%s;%lld;", base, (long long)ext * count);
    put(&s, buf, (size_t)n);
    /* the copies' blocks, merged across the seams as one flattening of contiguous(count, t) merges them */
    int pending = 0, emitted = 0;
    MPI_Aint cd = 0, cl = 0;
    for (int k = 0; k < count; k++)
        for (size_t i = 0; i < f->n; i++) {
            MPI_Aint d = f->b[i].disp + (MPI_Aint)k * ext, l = f->b[i].len;
            if (pending && cd + cl == d) { cl += l; continue; }
            if (pending) {
                n = snprintf(buf, sizeof buf, "%s%lld+%lld", emitted ? "," : "", (long long)cd, (long long)cl);
                put(&s, buf, (size_t)n);
                emitted = 1;
            }
            cd = d; cl = l; pending = 1;
        }
    if (pending) {
        n = snprintf(buf, sizeof buf, "%s%lld+%lld", emitted ? "," : "", (long long)cd, (long long)cl);
        put(&s, buf, (size_t)n);
    }
    return s.h;
}

/* ---- the cache: one entry per type we know something about ------------------------------------ */
typedef struct {
    MPI_Datatype user;   /* the application's handle (key) */
    int          state;  /* 0 empty, 1 used, 2 deleted */
    int          sig_ok;
    uint64_t     sig;
    MPI_Datatype repl;   /* the replacement, MPI_DATATYPE_NULL when none */
    int          rule;   /* index into g_rules of the replacement */
    int          tried;  /* a replacement was looked for (at commit) */
} entry_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static entry_t *g_tab;
static size_t g_cap, g_used;            /* g_used counts used + deleted slots (probe chains) */
static pgmpi_dtrule_t *g_rules;         /* the loaded datatype profile (runtime.c: pgmpi_datatypes_setup) */
static int g_nrules;
static long g_rule_types[PGMPI_DT_MAX_RULES], g_rule_calls[PGMPI_DT_MAX_RULES], g_kept, g_live;
uint64_t pgmpi_dt_filter[4];

static uint64_t handle_key(MPI_Datatype t)
{
    uint64_t k = 0;
    memcpy(&k, &t, sizeof t < sizeof k ? sizeof t : sizeof k);
    return k;
}
static size_t slot_of(uint64_t k, size_t cap) { return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1); }

static entry_t *find(MPI_Datatype t)
{
    if (!g_cap) return NULL;
    for (size_t i = slot_of(handle_key(t), g_cap), n = 0; n < g_cap; i = (i + 1) & (g_cap - 1), n++) {
        if (g_tab[i].state == 0) return NULL;
        if (g_tab[i].state == 1 && g_tab[i].user == t) return &g_tab[i];
    }
    return NULL;
}

static entry_t *insert(MPI_Datatype t)
{
    entry_t *e = find(t);
    if (e) return e;
    if ((g_used + 1) * 2 > g_cap) {   /* grow (and drop tombstones) at half load */
        size_t ncap = g_cap ? g_cap : 64;
        while ((g_used + 1) * 2 > ncap) ncap *= 2;
        entry_t *old = g_tab, *nt = calloc(ncap, sizeof *nt);
        if (!nt) return NULL;
        size_t ocap = g_cap;
        g_tab = nt; g_cap = ncap; g_used = 0;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].state == 1) { entry_t *d = insert(old[i].user); *d = old[i]; }
        free(old);
    }
    size_t i = slot_of(handle_key(t), g_cap);
    while (g_tab[i].state == 1) i = (i + 1) & (g_cap - 1);
    if (g_tab[i].state == 0) g_used++;
    memset(&g_tab[i], 0, sizeof g_tab[i]);
    g_tab[i].state = 1; g_tab[i].user = t; g_tab[i].repl = MPI_DATATYPE_NULL; g_tab[i].rule = -1;
    return &g_tab[i];
}

/* The hot path's filter: bit h(t) is set for every handle with a replacement (rebuilt on free). */
static unsigned filter_bit(MPI_Datatype t) { return pgmpi_dt_hash8(t); }
static void filter_rebuild(void)
{
    uint64_t f[4] = {0, 0, 0, 0};
    long live = 0;
    for (size_t i = 0; i < g_cap; i++)
        if (g_tab[i].state == 1 && g_tab[i].repl != MPI_DATATYPE_NULL) {
            unsigned b = filter_bit(g_tab[i].user);
            f[b >> 6] |= 1ull << (b & 63);
            live++;
        }
    for (int w = 0; w < 4; w++) __atomic_store_n(&pgmpi_dt_filter[w], f[w], __ATOMIC_RELAXED);
    g_live = live;
    __atomic_store_n(&pgmpi_fast.dt_live, live > 0, __ATOMIC_RELAXED);
}

/* ---- replacements ----------------------------------------------------------------------------- */
const char *const pgmpi_dt_description_names[PGMPI_DT_NDESC] = {
#define PGMPI_DT_DESC(id, name) name,
    PGMPI_DT_DESCRIPTIONS(PGMPI_DT_DESC)
#undef PGMPI_DT_DESC
};

/* The number k of blocks after which the type map repeats itself shifted (the smallest k <= 64 that
 * divides n with b[i + k] = b[i] + (b[k] - b[0]) throughout), else n: the layout's repeating block. */
static size_t period(const flat_t *f)
{
    size_t n = f->n;
    for (size_t k = 1; k <= 64 && k < n; k++) {
        if (n % k) continue;
        MPI_Aint P = f->b[k].disp - f->b[0].disp;
        if (P <= 0) continue;
        size_t i = k;
        for (; i < n; i++)
            if (f->b[i].len != f->b[i - k].len || f->b[i].disp - f->b[i - k].disp != P) break;
        if (i == n) return k;
    }
    return n;
}

static int fits_int(MPI_Aint v) { return v >= -(MPI_Aint)0x7fffffff && v <= (MPI_Aint)0x7fffffff; }

/* Builds description `desc` of the flattened type map f in base elements of bs bytes, at the user's lb
 * and extent; MPI_DATATYPE_NULL when it does not fit the layout. Committed by the caller. */
static MPI_Datatype build(int desc, const flat_t *f, int bs, MPI_Aint lb, MPI_Aint ext)
{
    size_t n = f->n;
    MPI_Datatype B = f->base, t = MPI_DATATYPE_NULL, u = MPI_DATATYPE_NULL;
    if (n == 0 || n > 0x7fffffff) return MPI_DATATYPE_NULL;
    int equal = 1;
    for (size_t i = 0; i < n; i++) {
        if (f->b[i].disp % bs || f->b[i].len % bs || !fits_int(f->b[i].len / bs) || !fits_int(f->b[i].disp / bs))
            return MPI_DATATYPE_NULL;
        if (f->b[i].len != f->b[0].len) equal = 0;
    }
    int *len = malloc(n * sizeof *len), *idisp = malloc(n * sizeof *idisp);
    MPI_Aint *adisp = malloc(n * sizeof *adisp);
    MPI_Datatype *types = malloc(n * sizeof *types);
    int rc = MPI_ERR_OTHER;
    if (!len || !idisp || !adisp || !types) goto out;
    for (size_t i = 0; i < n; i++) {
        len[i] = (int)(f->b[i].len / bs);
        idisp[i] = (int)(f->b[i].disp / bs);
        adisp[i] = f->b[i].disp;
        types[i] = B;
    }
    switch (desc) {
    case PGMPI_DT_CONTIGUOUS:   /* one block, placed at its displacement */
        if (n != 1) break;
        if ((rc = PMPI_Type_contiguous(len[0], B, &u)) != MPI_SUCCESS) break;
        if (adisp[0] == 0) { t = u; u = MPI_DATATYPE_NULL; break; }
        { int one = 1; rc = PMPI_Type_create_struct(1, &one, adisp, &u, &t); }
        break;
    case PGMPI_DT_VECTOR: {     /* equal blocks at one stride */
        if (!equal) break;
        MPI_Aint stride = n > 1 ? f->b[1].disp - f->b[0].disp : f->b[0].len;
        int ok = stride % bs == 0 && fits_int(stride / bs);
        for (size_t i = 1; i < n && ok; i++) ok = f->b[i].disp - f->b[i - 1].disp == stride;
        if (!ok) break;
        if ((rc = PMPI_Type_vector((int)n, len[0], (int)(stride / bs), B, &u)) != MPI_SUCCESS) break;
        if (adisp[0] == 0) { t = u; u = MPI_DATATYPE_NULL; break; }
        { int one = 1; rc = PMPI_Type_create_struct(1, &one, adisp, &u, &t); }
        break;
    }
    case PGMPI_DT_CONTIG: {   /* contiguous(c, block): the repeating block of the type map, c times */
        size_t k = period(f), c = n / k;
        MPI_Aint P = c > 1 ? f->b[k].disp - f->b[0].disp : 0, d0 = f->b[0].disp;
        for (size_t i = 0; i < k; i++) adisp[i] = f->b[i].disp - d0;
        MPI_Datatype blk = MPI_DATATYPE_NULL, blk_r = MPI_DATATYPE_NULL;
        if ((rc = PMPI_Type_create_hindexed((int)k, len, adisp, B, &blk)) != MPI_SUCCESS) break;
        if (c > 1) {
            rc = PMPI_Type_create_resized(blk, 0, P, &blk_r);
            PMPI_Type_free(&blk);
            if (rc != MPI_SUCCESS) break;
        } else blk_r = blk;
        rc = PMPI_Type_contiguous((int)c, blk_r, &u);
        PMPI_Type_free(&blk_r);
        if (rc != MPI_SUCCESS) break;
        if (d0 == 0) { t = u; u = MPI_DATATYPE_NULL; break; }
        { int one = 1; rc = PMPI_Type_create_struct(1, &one, &d0, &u, &t); }
        break;
    }
    case PGMPI_DT_INDEXED_BLOCK:
        if (equal) rc = PMPI_Type_create_indexed_block((int)n, len[0], idisp, B, &t);
        break;
    case PGMPI_DT_INDEXED: rc = PMPI_Type_indexed((int)n, len, idisp, B, &t); break;
    case PGMPI_DT_HINDEXED: rc = PMPI_Type_create_hindexed((int)n, len, adisp, B, &t); break;
    case PGMPI_DT_STRUCT_FLAT: rc = PMPI_Type_create_struct((int)n, len, adisp, types, &t); break;
    default: break;
    }
    if (u != MPI_DATATYPE_NULL) PMPI_Type_free(&u);
    if (rc != MPI_SUCCESS || t == MPI_DATATYPE_NULL) { if (t != MPI_DATATYPE_NULL) PMPI_Type_free(&t); t = MPI_DATATYPE_NULL; goto out; }
    MPI_Datatype r = MPI_DATATYPE_NULL;
    rc = PMPI_Type_create_resized(t, lb, ext, &r);
    PMPI_Type_free(&t);
    t = rc == MPI_SUCCESS ? r : MPI_DATATYPE_NULL;
out:
    free(len); free(idisp); free(adisp); free(types);
    return t;
}

/* Everything about one type, computed once: its signature and, when a rule names it, a replacement
 * whose own flattening and signature are checked to be the user's before it is used. Lock held. */
static void learn(entry_t *e, int want_replacement)
{
    MPI_Datatype t = e->user;
    flat_t f = {0};
    flatten(t, &f);
    if (f.failed) { flat_free(&f); return; }
    e->sig = signature_of(&f, t, 1, NULL, 0);
    e->sig_ok = 1;
    if (!want_replacement) { flat_free(&f); return; }
    int rule = -1;
    for (int i = 0; i < g_nrules; i++)
        if (g_rules[i].sig == e->sig) { rule = i; break; }
    if (rule < 0) { flat_free(&f); return; }
    int bs = 0;
    MPI_Aint lb = 0, ext = 0, blb = 0, bext = 0;
    MPI_Datatype r = MPI_DATATYPE_NULL;
    if (!f.mixed && !f.inexact && f.has_base && g_live < PGMPI_DT_MAX_LIVE &&
        PMPI_Type_size(f.base, &bs) == MPI_SUCCESS && bs > 0 && PMPI_Type_get_extent(t, &lb, &ext) == MPI_SUCCESS &&
        PMPI_Type_get_extent(f.base, &blb, &bext) == MPI_SUCCESS && blb == 0 && bext == bs)
        r = build(g_rules[rule].desc, &f, bs, lb, ext);
    if (r != MPI_DATATYPE_NULL && PMPI_Type_commit(&r) == MPI_SUCCESS) {
        /* exact by construction -- and checked: the same flattening, size, lb and extent */
        flat_t g = {0};
        flatten(r, &g);
        int s1 = 0, s2 = 0;
        MPI_Aint rlb = 0, rext = 0, tlb = 0, text = 0, rtlb = 0, rtext = 0;
        PMPI_Type_size(t, &s1); PMPI_Type_size(r, &s2);
        PMPI_Type_get_extent(r, &rlb, &rext);
        PMPI_Type_get_true_extent(t, &tlb, &text); PMPI_Type_get_true_extent(r, &rtlb, &rtext);
        int same = !g.failed && g.n == f.n && !strcmp(g.bname, f.bname) && !g.mixed && s1 == s2 && rlb == lb && rext == ext &&
                   tlb == rtlb && text == rtext && signature_of(&g, r, 1, NULL, 0) == e->sig;
        for (size_t i = 0; same && i < f.n; i++) same = g.b[i].disp == f.b[i].disp && g.b[i].len == f.b[i].len;
        flat_free(&g);
        if (same) { e->repl = r; e->rule = rule; g_rule_types[rule]++; r = MPI_DATATYPE_NULL; }
    }
    if (r != MPI_DATATYPE_NULL) PMPI_Type_free(&r);
    if (e->repl == MPI_DATATYPE_NULL) g_kept++;
    flat_free(&f);
}

/* ---- wrapped calls -------------------------------------------------------------------------- */
int MPI_Type_commit(MPI_Datatype *t)
{
    int rc = PMPI_Type_commit(t);
    if (rc != MPI_SUCCESS || !g_nrules || is_named(*t)) return rc;
    pthread_mutex_lock(&g_lock);
    entry_t *e = insert(*t);
    if (e && !e->tried) {
        e->tried = 1;
        learn(e, 1);
        if (e->repl != MPI_DATATYPE_NULL) filter_rebuild();
    }
    pthread_mutex_unlock(&g_lock);
    return rc;
}

int MPI_Type_free(MPI_Datatype *t)
{
    MPI_Datatype h = t ? *t : MPI_DATATYPE_NULL;
    int rc = PMPI_Type_free(t);
    if (rc != MPI_SUCCESS || !g_cap) return rc;
    pthread_mutex_lock(&g_lock);
    entry_t *e = find(h);
    if (e) {
        int had = e->repl != MPI_DATATYPE_NULL;
        if (had) PMPI_Type_free(&e->repl);
        e->state = 2;
        if (had) filter_rebuild();
    }
    pthread_mutex_unlock(&g_lock);
    return rc;
}

/* Point-to-point: GL4 holds for ping-pong too (pgmpi-dtbench's pingpong pattern), and the check costs
 * what it costs in the collectives (tests/bench/dt_overhead.sh). Nothing else changes here. */
int MPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    return PMPI_Send(buf, count, pgmpi_type_for_call(dt), dest, tag, comm);
}

int MPI_Recv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    return PMPI_Recv(buf, count, pgmpi_type_for_call(dt), source, tag, comm, status);
}

MPI_Datatype pgmpi_type_for_call_slow(MPI_Datatype t)
{
    MPI_Datatype r = t;
    pthread_mutex_lock(&g_lock);
    entry_t *e = find(t);
    if (e && e->repl != MPI_DATATYPE_NULL) { r = e->repl; g_rule_calls[e->rule]++; }
    pthread_mutex_unlock(&g_lock);
    return r;
}

/* ---- setup, report, public API ---------------------------------------------------------------- */
void pgmpi_datatypes_setup(const pgmpi_dtrule_t *rules, int n)
{
    pthread_mutex_lock(&g_lock);
    free(g_rules);
    g_rules = NULL; g_nrules = 0;
    if (n > 0 && (g_rules = malloc((size_t)n * sizeof *g_rules))) {
        memcpy(g_rules, rules, (size_t)n * sizeof *g_rules);
        g_nrules = n;
    }
    pthread_mutex_unlock(&g_lock);
}

void pgmpi_datatypes_report(FILE *out)
{
    if (!g_nrules) return;
    pthread_mutex_lock(&g_lock);
    fprintf(out, "#@pgmpi datatypes rules=%d live=%ld kept=%ld\n", g_nrules, g_live, g_kept);
    for (int i = 0; i < g_nrules; i++)
        fprintf(out, "#@pgmpi dtreplace %016llx %s types=%ld calls=%ld\n", (unsigned long long)g_rules[i].sig,
                pgmpi_dt_description_names[g_rules[i].desc], g_rule_types[i], g_rule_calls[i]);
    pthread_mutex_unlock(&g_lock);
}

void pgmpi_datatypes_teardown(void)
{
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < g_cap; i++)
        if (g_tab[i].state == 1 && g_tab[i].repl != MPI_DATATYPE_NULL) PMPI_Type_free(&g_tab[i].repl);
    free(g_tab);
    g_tab = NULL; g_cap = g_used = 0;
    memset(pgmpi_dt_filter, 0, sizeof pgmpi_dt_filter);
    g_live = 0;
    __atomic_store_n(&pgmpi_fast.dt_live, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&g_lock);
}

int pgmpitune_type_signature(MPI_Datatype t, int count, char hex[17], char *text, size_t cap)
{
    if (hex) hex[0] = 0;
    if (t == MPI_DATATYPE_NULL) return -1;
    uint64_t sig = 0;
    int ok = 0;
    pthread_mutex_lock(&g_lock);
    entry_t *e = (count <= 1 && !text) ? find(t) : NULL;
    if (e && e->sig_ok) { sig = e->sig; ok = 1; }
    pthread_mutex_unlock(&g_lock);
    if (!ok) {
        flat_t f = {0};
        flatten(t, &f);
        if (!f.failed) { sig = signature_of(&f, t, count, text, cap); ok = 1; }
        flat_free(&f);
        if (ok && count <= 1 && !is_named(t)) {   /* cache it: once per committed type */
            pthread_mutex_lock(&g_lock);
            entry_t *n = insert(t);
            if (n && !n->sig_ok) { n->sig = sig; n->sig_ok = 1; }
            pthread_mutex_unlock(&g_lock);
        }
    }
    if (!ok) return -1;
    if (hex) snprintf(hex, 17, "%016llx", (unsigned long long)sig);
    return 0;
}

const char *pgmpitune_type_replacement(MPI_Datatype t)
{
    const char *name = NULL;
    pthread_mutex_lock(&g_lock);
    entry_t *e = find(t);
    if (e && e->repl != MPI_DATATYPE_NULL) name = pgmpi_dt_description_names[g_rules[e->rule].desc];
    pthread_mutex_unlock(&g_lock);
    return name;
}
