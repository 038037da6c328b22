/* A call-trace shim: which MPI functions a program calls, in order, per rank.  Test and diagnostic only.
 *   mpicc -shared -fPIC -o call_trace.so call_trace.c -ldl
 *   PGMPI_CALL_TRACE_DIR=DIR LD_PRELOAD=./call_trace.so mpirun -np 2 PROGRAM ...
 * writes DIR/trace.<rank>: one line per call, `<depth> <name>`, in call order; depth 0 is what the program
 * calls, depth 1 what runs inside that call through a PMPI name (a program calling MPI_Bcast through
 * libpgmpitune shows `0 MPI_Bcast`, then the library's `1 PMPI_Type_size` and `1 PMPI_Bcast`).
 *
 * Every function is defined under both names, MPI_x and PMPI_x, and forwards to the next definition in the
 * link order (dlsym(RTLD_NEXT)): pgmpi-bench calls PMPI_Barrier directly, and libpgmpitune's MPI_x entry
 * points call PMPI_x.  The list below covers every MPI function that pgmpi-bench, libpgmpitune and
 * tests/bench/min_loop.c import (tests/python/bench/test_bench_vs_min_loop.py checks that with nm), plus
 * the point-to-point and nonblocking calls a measurement loop could add.  The log is a preallocated array
 * of pointers to the names (one store per call), written out at exit, so the shim adds nothing but a few
 * nanoseconds to a call -- but its figures are not figures: it is for the order of calls, not for timing. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

enum { TRACE_MAX = 1 << 21 };
static const char **g_log;
static unsigned char *g_depth;
static size_t g_n;
static int g_overflow, g_rank = -1, g_on = -1;
static __thread int t_depth;   /* calls of this thread inside a wrapped call */

static void trace(const char *name)
{
    if (g_on < 0) {
        g_on = getenv("PGMPI_CALL_TRACE_DIR") != NULL;
        if (g_on && (!(g_log = malloc(TRACE_MAX * sizeof *g_log)) || !(g_depth = malloc(TRACE_MAX)))) g_on = 0;
    }
    if (!g_on) return;
    if (g_n < TRACE_MAX) { g_depth[g_n] = (unsigned char)(t_depth < 255 ? t_depth : 255); g_log[g_n++] = name; }
    else g_overflow = 1;
}

static void *next(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        fprintf(stderr, "call_trace: no definition of %s after the shim\n", name);
        abort();
    }
    return f;
}

/* One wrapper under each name; the compiler checks every prototype against mpi.h. */
#define WRAP_AS(ret, name, params, args)                                 \
    ret name params                                                      \
    {                                                                    \
        static ret (*f) params;                                          \
        trace(#name);                                                    \
        if (!f) f = (ret (*) params)next(#name);                         \
        t_depth++;                                                       \
        ret trace_rc_ = f args;                                          \
        t_depth--;                                                       \
        return trace_rc_;                                                \
    }
#define WRAP(ret, name, params, args) WRAP_AS(ret, MPI_##name, params, args) WRAP_AS(ret, PMPI_##name, params, args)

/* the rank for the file's name, read without tracing once MPI is up */
static void learn_rank(void)
{
    int (*rank)(MPI_Comm, int *) = (int (*)(MPI_Comm, int *))next("PMPI_Comm_rank");
    rank(MPI_COMM_WORLD, &g_rank);
}
#define WRAP_INIT(name, params, args)                                    \
    int name params                                                      \
    {                                                                    \
        static int (*f) params;                                          \
        trace(#name);                                                    \
        if (!f) f = (int (*) params)next(#name);                         \
        t_depth++;                                                       \
        int rc = f args;                                                 \
        t_depth--;                                                       \
        if (rc == MPI_SUCCESS && g_rank < 0) learn_rank();               \
        return rc;                                                       \
    }
WRAP_INIT(MPI_Init, (int *argc, char ***argv), (argc, argv))
WRAP_INIT(PMPI_Init, (int *argc, char ***argv), (argc, argv))
WRAP_INIT(MPI_Init_thread, (int *argc, char ***argv, int req, int *prov), (argc, argv, req, prov))
WRAP_INIT(PMPI_Init_thread, (int *argc, char ***argv, int req, int *prov), (argc, argv, req, prov))

__attribute__((destructor)) static void write_trace(void)
{
    const char *dir = getenv("PGMPI_CALL_TRACE_DIR");
    if (g_on != 1 || !dir) return;
    char path[4096];
    if (g_rank >= 0) snprintf(path, sizeof path, "%s/trace.%d", dir, g_rank);
    else snprintf(path, sizeof path, "%s/trace.pid%ld", dir, (long)getpid());
    FILE *f = fopen(path, "w");
    if (!f) { perror(path); return; }
    for (size_t i = 0; i < g_n; i++) fprintf(f, "%d %s\n", g_depth[i], g_log[i]);
    if (g_overflow) fprintf(f, "OVERFLOW\n");
    fclose(f);
}

/* clock */
WRAP(double, Wtime, (void), ())
WRAP(double, Wtick, (void), ())

/* collectives */
WRAP(int, Barrier, (MPI_Comm c), (c))
WRAP(int, Bcast, (void *b, int n, MPI_Datatype t, int root, MPI_Comm c), (b, n, t, root, c))
WRAP(int, Allreduce, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c), (s, r, n, t, op, c))
WRAP(int, Reduce, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c),
     (s, r, n, t, op, root, c))
WRAP(int, Allgather, (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c),
     (s, sn, st, r, rn, rt, c))
WRAP(int, Allgatherv, (const void *s, int sn, MPI_Datatype st, void *r, const int rn[], const int d[],
     MPI_Datatype rt, MPI_Comm c), (s, sn, st, r, rn, d, rt, c))
WRAP(int, Gather, (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm c),
     (s, sn, st, r, rn, rt, root, c))
WRAP(int, Gatherv, (const void *s, int sn, MPI_Datatype st, void *r, const int rn[], const int d[], MPI_Datatype rt,
     int root, MPI_Comm c), (s, sn, st, r, rn, d, rt, root, c))
WRAP(int, Scatter, (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm c),
     (s, sn, st, r, rn, rt, root, c))
WRAP(int, Scatterv, (const void *s, const int sn[], const int d[], MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
     int root, MPI_Comm c), (s, sn, d, st, r, rn, rt, root, c))
WRAP(int, Alltoall, (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c),
     (s, sn, st, r, rn, rt, c))
WRAP(int, Alltoallv, (const void *s, const int sn[], const int sd[], MPI_Datatype st, void *r, const int rn[],
     const int rd[], MPI_Datatype rt, MPI_Comm c), (s, sn, sd, st, r, rn, rd, rt, c))
WRAP(int, Reduce_scatter, (const void *s, void *r, const int rn[], MPI_Datatype t, MPI_Op op, MPI_Comm c),
     (s, r, rn, t, op, c))
WRAP(int, Reduce_scatter_block, (const void *s, void *r, int rn, MPI_Datatype t, MPI_Op op, MPI_Comm c),
     (s, r, rn, t, op, c))
WRAP(int, Scan, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c), (s, r, n, t, op, c))
WRAP(int, Exscan, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c), (s, r, n, t, op, c))
WRAP(int, Reduce_local, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op op), (s, r, n, t, op))
WRAP(int, Ibarrier, (MPI_Comm c, MPI_Request *q), (c, q))
WRAP(int, Ibcast, (void *b, int n, MPI_Datatype t, int root, MPI_Comm c, MPI_Request *q), (b, n, t, root, c, q))
WRAP(int, Iallreduce, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Request *q),
     (s, r, n, t, op, c, q))

/* point to point */
WRAP(int, Send, (const void *b, int n, MPI_Datatype t, int dst, int tag, MPI_Comm c), (b, n, t, dst, tag, c))
WRAP(int, Ssend, (const void *b, int n, MPI_Datatype t, int dst, int tag, MPI_Comm c), (b, n, t, dst, tag, c))
WRAP(int, Recv, (void *b, int n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Status *st),
     (b, n, t, src, tag, c, st))
WRAP(int, Sendrecv, (const void *sb, int sn, MPI_Datatype st, int dst, int stag, void *rb, int rn, MPI_Datatype rt,
     int src, int rtag, MPI_Comm c, MPI_Status *s), (sb, sn, st, dst, stag, rb, rn, rt, src, rtag, c, s))
WRAP(int, Isend, (const void *b, int n, MPI_Datatype t, int dst, int tag, MPI_Comm c, MPI_Request *q),
     (b, n, t, dst, tag, c, q))
WRAP(int, Irecv, (void *b, int n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Request *q),
     (b, n, t, src, tag, c, q))
WRAP(int, Wait, (MPI_Request *q, MPI_Status *s), (q, s))
WRAP(int, Waitall, (int n, MPI_Request q[], MPI_Status s[]), (n, q, s))
WRAP(int, Test, (MPI_Request *q, int *flag, MPI_Status *s), (q, flag, s))
WRAP(int, Iprobe, (int src, int tag, MPI_Comm c, int *flag, MPI_Status *s), (src, tag, c, flag, s))
WRAP(int, Probe, (int src, int tag, MPI_Comm c, MPI_Status *s), (src, tag, c, s))

/* communicators, attributes, error handlers */
WRAP(int, Comm_rank, (MPI_Comm c, int *r), (c, r))
WRAP(int, Comm_size, (MPI_Comm c, int *n), (c, n))
WRAP(int, Comm_dup, (MPI_Comm c, MPI_Comm *d), (c, d))
WRAP(int, Comm_free, (MPI_Comm *c), (c))
WRAP(int, Comm_dup_with_info, (MPI_Comm c, MPI_Info i, MPI_Comm *d), (c, i, d))
WRAP(int, Comm_get_info, (MPI_Comm c, MPI_Info *i), (c, i))
WRAP(int, Info_create, (MPI_Info *i), (i))
WRAP(int, Info_free, (MPI_Info *i), (i))
WRAP(int, Info_set, (MPI_Info i, const char *k, const char *v), (i, k, v))
WRAP(int, Info_get, (MPI_Info i, const char *k, int n, char *v, int *flag), (i, k, n, v, flag))
WRAP(int, Comm_split, (MPI_Comm c, int color, int key, MPI_Comm *d), (c, color, key, d))
WRAP(int, Comm_split_type, (MPI_Comm c, int type, int key, MPI_Info info, MPI_Comm *d), (c, type, key, info, d))
WRAP(int, Comm_test_inter, (MPI_Comm c, int *flag), (c, flag))
WRAP(int, Comm_create_keyval, (MPI_Comm_copy_attr_function *cp, MPI_Comm_delete_attr_function *del, int *key,
     void *extra), (cp, del, key, extra))
WRAP(int, Comm_get_attr, (MPI_Comm c, int key, void *v, int *flag), (c, key, v, flag))
WRAP(int, Comm_set_attr, (MPI_Comm c, int key, void *v), (c, key, v))
WRAP(int, Comm_get_errhandler, (MPI_Comm c, MPI_Errhandler *e), (c, e))
WRAP(int, Comm_set_errhandler, (MPI_Comm c, MPI_Errhandler e), (c, e))
WRAP(int, Errhandler_free, (MPI_Errhandler *e), (e))
WRAP(int, Error_string, (int code, char *s, int *len), (code, s, len))
WRAP(int, Abort, (MPI_Comm c, int code), (c, code))
WRAP(int, Finalize, (void), ())
WRAP(int, Query_thread, (int *p), (p))
WRAP(int, Get_version, (int *v, int *sv), (v, sv))
WRAP(int, Get_library_version, (char *s, int *len), (s, len))
WRAP(int, Get_processor_name, (char *s, int *len), (s, len))

/* operations and datatypes */
WRAP(int, Op_create, (MPI_User_function *fn, int commute, MPI_Op *op), (fn, commute, op))
WRAP(int, Op_free, (MPI_Op *op), (op))
WRAP(int, Op_commutative, (MPI_Op op, int *c), (op, c))
WRAP(int, Pack, (const void *in, int n, MPI_Datatype t, void *out, int size, int *pos, MPI_Comm c),
     (in, n, t, out, size, pos, c))
WRAP(int, Unpack, (const void *in, int size, int *pos, void *out, int n, MPI_Datatype t, MPI_Comm c),
     (in, size, pos, out, n, t, c))
WRAP(int, Pack_size, (int n, MPI_Datatype t, MPI_Comm c, int *size), (n, t, c, size))
WRAP(int, Type_commit, (MPI_Datatype *t), (t))
WRAP(int, Type_free, (MPI_Datatype *t), (t))
WRAP(int, Type_dup, (MPI_Datatype t, MPI_Datatype *d), (t, d))
WRAP(int, Type_size, (MPI_Datatype t, int *s), (t, s))
WRAP(int, Type_get_extent, (MPI_Datatype t, MPI_Aint *lb, MPI_Aint *ext), (t, lb, ext))
WRAP(int, Type_get_true_extent, (MPI_Datatype t, MPI_Aint *lb, MPI_Aint *ext), (t, lb, ext))
WRAP(int, Type_get_name, (MPI_Datatype t, char *s, int *len), (t, s, len))
WRAP(int, Type_get_envelope, (MPI_Datatype t, int *ni, int *na, int *nd, int *comb), (t, ni, na, nd, comb))
WRAP(int, Type_get_contents, (MPI_Datatype t, int ni, int na, int nd, int is[], MPI_Aint as[], MPI_Datatype ds[]),
     (t, ni, na, nd, is, as, ds))
WRAP(int, Type_contiguous, (int n, MPI_Datatype t, MPI_Datatype *d), (n, t, d))
WRAP(int, Type_vector, (int n, int bl, int stride, MPI_Datatype t, MPI_Datatype *d), (n, bl, stride, t, d))
WRAP(int, Type_create_hvector, (int n, int bl, MPI_Aint stride, MPI_Datatype t, MPI_Datatype *d),
     (n, bl, stride, t, d))
WRAP(int, Type_indexed, (int n, const int bl[], const int disp[], MPI_Datatype t, MPI_Datatype *d),
     (n, bl, disp, t, d))
WRAP(int, Type_create_hindexed, (int n, const int bl[], const MPI_Aint disp[], MPI_Datatype t, MPI_Datatype *d),
     (n, bl, disp, t, d))
WRAP(int, Type_create_indexed_block, (int n, int bl, const int disp[], MPI_Datatype t, MPI_Datatype *d),
     (n, bl, disp, t, d))
WRAP(int, Type_create_struct, (int n, const int bl[], const MPI_Aint disp[], const MPI_Datatype ts[],
     MPI_Datatype *d), (n, bl, disp, ts, d))
WRAP(int, Type_create_resized, (MPI_Datatype t, MPI_Aint lb, MPI_Aint ext, MPI_Datatype *d), (t, lb, ext, d))

/* the tool interface (MPICH's algorithm control variables) */
WRAP(int, T_init_thread, (int req, int *prov), (req, prov))
WRAP(int, T_finalize, (void), ())
WRAP(int, T_cvar_get_num, (int *n), (n))
WRAP(int, T_cvar_get_info, (int i, char *name, int *nl, int *verb, MPI_Datatype *t, MPI_T_enum *e, char *desc,
     int *dl, int *bind, int *scope), (i, name, nl, verb, t, e, desc, dl, bind, scope))
WRAP(int, T_cvar_handle_alloc, (int i, void *obj, MPI_T_cvar_handle *h, int *count), (i, obj, h, count))
WRAP(int, T_cvar_handle_free, (MPI_T_cvar_handle *h), (h))
WRAP(int, T_cvar_read, (MPI_T_cvar_handle h, void *buf), (h, buf))
WRAP(int, T_cvar_write, (MPI_T_cvar_handle h, const void *buf), (h, buf))
WRAP(int, T_enum_get_info, (MPI_T_enum e, int *n, char *name, int *nl), (e, n, name, nl))
WRAP(int, T_enum_get_item, (MPI_T_enum e, int i, int *v, char *name, int *nl), (e, i, v, name, nl))

/* handle conversions (Open MPI defines them as functions, MPICH as macros) */
#ifdef OPEN_MPI
WRAP(MPI_Comm, Comm_f2c, (MPI_Fint c), (c))
WRAP(MPI_Op, Op_f2c, (MPI_Fint op), (op))
WRAP(MPI_Datatype, Type_f2c, (MPI_Fint t), (t))
#endif
