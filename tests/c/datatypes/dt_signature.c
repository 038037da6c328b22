/* Layout signatures (lib/src/core/datatypes.c): every description of one layout -- vector, indexed,
 * indexed_block, hindexed, struct, nested, dup, subarray (flattened by probing), single elements that
 * merge into blocks -- has the same canonical text and signature; a different stride, base type,
 * extent, block order or a mixed struct differs. The signature of count elements is that of
 * contiguous(count, t) (the seam between two elements merges). A freed handle's cached signature is dropped (MPI_Type_free), so a new type
 * that reuses the handle gets its own. Rank-local; runs on one rank. Exit 0 only without failures. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "pgmpitune.h"

static int failures;

static void fail(const char *what, const char *detail)
{
    failures++;
    fprintf(stderr, "FAIL %s: %s\n", what, detail);
}

/* the signature from the cache path (no text) and the canonical text; both must agree across calls */
static void sig(MPI_Datatype t, int count, char hex[17], char *text, size_t cap)
{
    char again[17];
    if (pgmpitune_type_signature(t, count, hex, text, cap)) { fail("signature", "could not flatten"); return; }
    if (pgmpitune_type_signature(t, count, again, NULL, 0) || strcmp(hex, again)) fail("signature", "cached value differs");
}

static MPI_Datatype committed(MPI_Datatype t) { MPI_Type_commit(&t); return t; }

static void expect_text(const char *name, MPI_Datatype t, int count, const char *want, char hex_out[17])
{
    char text[512], hex[17];
    sig(t, count, hex, text, sizeof text);
    if (strcmp(text, want)) {
        char d[700];
        snprintf(d, sizeof d, "text '%s', expected '%s'", text, want);
        fail(name, d);
    }
    if (hex_out) memcpy(hex_out, hex, 17);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    /* layout: 3 blocks of 2 ints, 16 bytes apart, extent 40 */
    const char *want = "v1;MPI_INT;40;0+8,16+8,32+8";
    MPI_Datatype c2 = committed(({ MPI_Datatype t; MPI_Type_contiguous(2, MPI_INT, &t); t; }));
    MPI_Datatype d[12];
    const char *names[12];
    int nd = 0;
    { int bl[3] = {2, 2, 2}, di[3] = {0, 4, 8};
      MPI_Type_vector(3, 2, 4, MPI_INT, &d[nd]); names[nd++] = "vector";
      MPI_Type_indexed(3, bl, di, MPI_INT, &d[nd]); names[nd++] = "indexed";
      MPI_Type_create_indexed_block(3, 2, di, MPI_INT, &d[nd]); names[nd++] = "indexed_block"; }
    { int bl[3] = {2, 2, 2}; MPI_Aint da[3] = {0, 16, 32}; MPI_Datatype ty[3] = {MPI_INT, MPI_INT, MPI_INT};
      MPI_Type_create_hindexed(3, bl, da, MPI_INT, &d[nd]); names[nd++] = "hindexed";
      MPI_Type_create_struct(3, bl, da, ty, &d[nd]); names[nd++] = "struct";
      int one[3] = {1, 1, 1}; MPI_Datatype c[3] = {c2, c2, c2};
      MPI_Type_create_struct(3, one, da, c, &d[nd]); names[nd++] = "struct_of_contig"; }
    MPI_Type_create_hvector(3, 1, 16, c2, &d[nd]); names[nd++] = "hvector_of_contig";
    MPI_Type_vector(3, 1, 2, c2, &d[nd]); names[nd++] = "nested_vector";
    { MPI_Datatype v; MPI_Type_vector(3, 2, 4, MPI_INT, &v); MPI_Type_dup(v, &d[nd]); MPI_Type_free(&v); names[nd++] = "dup"; }
    { int sizes[2] = {3, 4}, sub[2] = {3, 2}, start[2] = {0, 0};
      MPI_Datatype s; MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_INT, &s);
      MPI_Type_create_resized(s, 0, 40, &d[nd]); MPI_Type_free(&s); names[nd++] = "subarray_resized"; }
    { int di[6] = {0, 1, 4, 5, 8, 9}; MPI_Type_create_indexed_block(6, 1, di, MPI_INT, &d[nd]); names[nd++] = "single_ints"; }
    char ref[17] = "", h[17];
    for (int i = 0; i < nd; i++) {
        MPI_Type_commit(&d[i]);
        expect_text(names[i], d[i], 1, want, h);
        if (!ref[0]) memcpy(ref, h, 17);
        else if (strcmp(ref, h)) fail(names[i], "signature differs from the vector description's");
    }
    /* count elements = contiguous(count, t) */
    { MPI_Datatype cc; MPI_Type_contiguous(2, d[0], &cc); MPI_Type_commit(&cc);
      char a[17], b[17];
      expect_text("count2", d[0], 2, "v1;MPI_INT;80;0+8,16+8,32+16,56+8,72+8", a);
      sig(cc, 1, b, NULL, 0);
      if (strcmp(a, b)) fail("count2", "differs from contiguous(2, t)");
      MPI_Type_free(&cc); }
    expect_text("named", MPI_INT, 1, "v1;MPI_INT;4;0+4", NULL);
    /* different layouts differ */
    MPI_Datatype o[5];
    const char *onames[5] = {"stride5", "float", "extent48", "reordered", "mixed"};
    MPI_Type_vector(3, 2, 5, MPI_INT, &o[0]);
    MPI_Type_vector(3, 2, 4, MPI_FLOAT, &o[1]);
    { MPI_Datatype v; MPI_Type_vector(3, 2, 4, MPI_INT, &v); MPI_Type_create_resized(v, 0, 48, &o[2]); MPI_Type_free(&v); }
    { int bl[3] = {2, 2, 2}, di[3] = {8, 4, 0}; MPI_Type_indexed(3, bl, di, MPI_INT, &o[3]); }
    { int bl[3] = {2, 2, 2}; MPI_Aint da[3] = {0, 16, 32}; MPI_Datatype ty[3] = {MPI_INT, MPI_FLOAT, MPI_INT};
      MPI_Type_create_struct(3, bl, da, ty, &o[4]); }
    const char *owant[5] = {"v1;MPI_INT;48;0+8,20+8,40+8", "v1;MPI_FLOAT;40;0+8,16+8,32+8",
                            "v1;MPI_INT;48;0+8,16+8,32+8", "v1;MPI_INT;40;32+8,16+8,0+8", "v1;mixed;40;0+8,16+8,32+8"};
    for (int i = 0; i < 5; i++) {
        MPI_Type_commit(&o[i]);
        expect_text(onames[i], o[i], 1, owant[i], h);
        if (!strcmp(h, ref)) fail(onames[i], "same signature as a different layout");
    }
    /* free drops the cache: a new type on a (possibly) reused handle has its own signature */
    for (int round = 0; round < 4; round++) {
        MPI_Datatype a, b;
        char ha[17], hb[17], text[128];
        MPI_Type_vector(2, 1, 3, MPI_INT, &a); MPI_Type_commit(&a);
        sig(a, 1, ha, NULL, 0);
        MPI_Type_free(&a);
        MPI_Type_vector(2, 1, 5, MPI_INT, &b); MPI_Type_commit(&b);
        sig(b, 1, hb, NULL, 0);
        pgmpitune_type_signature(b, 1, hb, text, sizeof text);
        if (strcmp(text, "v1;MPI_INT;24;0+4,20+4")) fail("reuse", text);
        if (!strcmp(ha, hb)) fail("reuse", "a freed type's signature came back for a new type");
        MPI_Type_free(&b);
    }
    for (int i = 0; i < nd; i++) MPI_Type_free(&d[i]);
    for (int i = 0; i < 5; i++) MPI_Type_free(&o[i]);
    MPI_Type_free(&c2);
    printf("dt_signature: %s (%d descriptions of one layout, 5 other layouts)\n", failures ? "FAILED" : "OK", nd);
    MPI_Finalize();
    return failures ? 1 : 0;
}
