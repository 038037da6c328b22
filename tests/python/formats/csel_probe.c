/* A user program for MPICH's selection file: calls one collective at the given sizes (bytes) on
 * MPI_COMM_WORLD and on an intercommunicator between the two halves of it (created after
 * MPI_Init, so the file governs its creation too), and checks every result.
 *   csel_probe <allreduce|bcast|reduce|allgather|alltoall|gather|scatter> <bytes>[,<bytes>...]
 * Prints "ok <collective> <bytes> <intra|inter>" per call; exit 1 on a wrong result.  Reductions run
 * MPI_BXOR on unsigned char (exact in any order; not MPI_SUM: Open MPI 4.1.4's op/avx adds unsigned char
 * with saturation from the 17th byte on, a wrong result of the library's own) and a non-commutative user
 * operation (the left operand wins: the result must be the lowest rank's). Used by tests/python/formats/test_native_files.py. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int wrong;

static unsigned char val(int rank, long i) { return (unsigned char)(rank * 31 + i * 7 + 1); }

static void left(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    memcpy(inout, in, (size_t)*len);    /* in (lower rank) op inout = in */
}

static void expect(const unsigned char *got, long n, int (*want)(long, void *), void *ctx, const char *what)
{
    for (long i = 0; i < n; i++)
        if (got[i] != (unsigned char)want(i, ctx)) {
            fprintf(stderr, "wrong %s at byte %ld: %u\n", what, i, got[i]);
            wrong = 1;
            return;
        }
}

struct sumctx { int lo, hi; };        /* xor over world ranks lo..hi-1 */
static int want_sum(long i, void *c)
{
    struct sumctx *s = c;
    unsigned v = 0;
    for (int r = s->lo; r < s->hi; r++) v ^= val(r, i);
    return (unsigned char)v;
}
static int want_rank(long i, void *c) { return val(*(int *)c, i); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 3 || size % 2) {
        if (!rank) fprintf(stderr, "usage: csel_probe <collective> <bytes,...> (an even number of ranks)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *coll = argv[1];
    int half = size / 2, color = rank < half ? 0 : 1;
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, color ? 0 : half, 7, &inter);
    MPI_Op nc;
    MPI_Op_create(left, 0, &nc);
    char *list = strdup(argv[2]);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        long n = atol(tok);
        for (int k = 0; k < 2; k++) {
            MPI_Comm comm = k ? inter : MPI_COMM_WORLD;
            int p = k ? half : size;                    /* processes whose data arrives */
            int base = k ? (color ? 0 : half) : 0;      /* first world rank of those */
            int me = k ? rank - (color ? half : 0) : rank;
            unsigned char *s = malloc((size_t)n * size + 1), *r = malloc((size_t)n * size + 1);
            for (long i = 0; i < n * size; i++) s[i] = val(rank, i % (n ? n : 1));
            struct sumctx all = {base, base + p};
            int lowest = base;
            if (!strcmp(coll, "allreduce")) {
                MPI_Allreduce(s, r, (int)n, MPI_UNSIGNED_CHAR, MPI_BXOR, comm);
                expect(r, n, want_sum, &all, "allreduce bxor");
                MPI_Allreduce(s, r, (int)n, MPI_UNSIGNED_CHAR, nc, comm);
                expect(r, n, want_rank, &lowest, "allreduce non-commutative");
            } else if (!strcmp(coll, "reduce") || !strcmp(coll, "bcast") || !strcmp(coll, "gather")
                       || !strcmp(coll, "scatter")) {
                /* intra: root 0; inter: the first half's rank 0 is the root (others there: PROC_NULL) */
                int root = k ? (color ? 0 : (me == 0 ? MPI_ROOT : MPI_PROC_NULL)) : 0;
                int receives = k ? color == 1 : 1;      /* side holding the data after the call */
                int rootproc = k ? (color == 0 && me == 0) : rank == 0;
                if (!strcmp(coll, "reduce")) {
                    /* inter: the second half's data reaches the root */
                    struct sumctx second = {k ? half : 0, k ? size : size};
                    int low2 = k ? half : 0;
                    MPI_Reduce(s, r, (int)n, MPI_UNSIGNED_CHAR, MPI_BXOR, root, comm);
                    if (rootproc) expect(r, n, want_sum, &second, "reduce bxor");
                    MPI_Reduce(s, r, (int)n, MPI_UNSIGNED_CHAR, nc, root, comm);
                    if (rootproc) expect(r, n, want_rank, &low2, "reduce non-commutative");
                } else if (!strcmp(coll, "bcast")) {
                    int from = 0;
                    unsigned char *b = rootproc ? s : r;
                    MPI_Bcast(b, (int)n, MPI_UNSIGNED_CHAR, root, comm);
                    if (receives && !rootproc) expect(r, n, want_rank, &from, "bcast");
                } else if (!strcmp(coll, "gather")) {
                    MPI_Gather(s, (int)n, MPI_UNSIGNED_CHAR, r, (int)n, MPI_UNSIGNED_CHAR, root, comm);
                    if (rootproc)
                        for (int q = 0; q < p; q++) {
                            int from = (k ? half : 0) + q;
                            expect(r + (long)q * n, n, want_rank, &from, "gather block");
                        }
                } else {
                    /* the root's block q is val(root rank, ...) sent to process q */
                    MPI_Scatter(s, (int)n, MPI_UNSIGNED_CHAR, r, (int)n, MPI_UNSIGNED_CHAR, root, comm);
                    int from = 0;
                    if (receives) expect(r, n, want_rank, &from, "scatter block");
                }
            } else if (!strcmp(coll, "allgather") || !strcmp(coll, "alltoall")) {
                if (coll[3] == 'g')
                    MPI_Allgather(s, (int)n, MPI_UNSIGNED_CHAR, r, (int)n, MPI_UNSIGNED_CHAR, comm);
                else
                    MPI_Alltoall(s, (int)n, MPI_UNSIGNED_CHAR, r, (int)n, MPI_UNSIGNED_CHAR, comm);
                for (int q = 0; q < p; q++) {
                    int from = base + q;
                    expect(r + (long)q * n, n, want_rank, &from, coll);
                }
            } else {
                if (!rank) fprintf(stderr, "csel_probe: unknown collective %s\n", coll);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            if (!wrong) printf("ok %s %ld %s\n", coll, n, k ? "inter" : "intra");
            free(s);
            free(r);
        }
    }
    free(list);
    MPI_Op_free(&nc);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return wrong;
}
