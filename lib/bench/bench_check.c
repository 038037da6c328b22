/* pgmpi-bench: the check round (see bench.h for the split, lib/bench/README.md "Check round").
 * Before a cell is timed, every algorithm of it (the default included) runs once on deterministic
 * data; each rank compares its output with a reference it computes itself from the same data
 * (every rank knows what every other rank sent).  The values are small integers, so every operation
 * is exact in every datatype and any association order: the comparison is bitwise.  A wrong result
 * or an error code is written as '#@pgmpi check <MPI_Name> <bytes> <alg> fail <reason> <details>'
 * and the algorithm is not timed in that cell.  The round runs outside every timed region; it also
 * brings the buffers' and the library pools' pages in before the first timed call. */
#define _GNU_SOURCE
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgmpitune.h"
#include "bench.h"
#include "bench_call.h"

/* byte k of rank r's send buffer for the data-moving calls */
static unsigned char move_byte(int r, size_t k) { return (unsigned char)(r * 37 + (int)(k % 251) * 11 + 5); }

/* element e of rank r's send buffer for the reductions: 0/1 for sums of narrow types (no overflow up
 * to 127 ranks), 1/2 on the first 6 ranks for products, 1..5 otherwise */
static long long red_value(int r, size_t e)
{
    switch (O.op) {
    case 3: return dtypes[O.dt].size == 1 ? (long long)((e + (size_t)r) % 2) : (long long)(1 + (e * 7 + (size_t)r * 3) % 5);
    case 4: return (r < 6 && (e + (size_t)r) % 3 == 0) ? 2 : 1;
    default: return (long long)(1 + (e * 7 + (size_t)r * 3) % 5);
    }
}

static long long fold(long long a, long long b)
{
    switch (O.op) {
    case 0: return a | b;
    case 1: return a & b;
    case 2: return a ^ b;
    case 3: return a + b;
    case 4: return a * b;
    case 5: return a > b ? a : b;
    default: return a < b ? a : b;
    }
}

/* store value v as element e of buf in the run's datatype */
static void put_elem(char *buf, size_t e, long long v)
{
    switch (O.dt) {
    case 0: case 1: case 3: ((unsigned char *)buf)[e] = (unsigned char)v; break;
    case 2: ((signed char *)buf)[e] = (signed char)v; break;
    case 4: ((short *)buf)[e] = (short)v; break;
    case 5: ((int *)buf)[e] = (int)v; break;
    case 6: ((unsigned *)buf)[e] = (unsigned)v; break;
    case 7: ((long *)buf)[e] = (long)v; break;
    case 8: ((long long *)buf)[e] = v; break;
    case 9: ((float *)buf)[e] = (float)v; break;
    default: ((double *)buf)[e] = (double)v; break;
    }
}

/* rank r's send data into buf (sbytes of it) */
static void fill_send(const call_t *c, const cplan_t *cp, int r, char *buf)
{
    if (kind_is_reduction(c->kind)) {
        size_t ne = cp->sbytes / dtypes[O.dt].size;
        for (size_t e = 0; e < ne; e++) put_elem(buf, e, red_value(r, e));
    } else {
        for (size_t k = 0; k < cp->sbytes; k++) buf[k] = (char)move_byte(r, k);
    }
}

/* reduction over ranks lo..hi of element e */
static long long reduced(int lo, int hi, size_t e)
{
    long long v = red_value(lo, e);
    for (int q = lo + 1; q <= hi; q++) v = fold(v, red_value(q, e));
    return v;
}

/* The check data for lib/bench/calls/<key>.c (bench_call.h). */
size_t bench_expect_bytes(char *exp, int from, size_t first, size_t n)
{
    for (size_t k = 0; k < n; k++) exp[k] = (char)move_byte(from, first + k);
    return n;
}

size_t bench_expect_folded(char *exp, size_t ne, int lo, int hi, size_t first)
{
    for (size_t e = 0; e < ne; e++) put_elem(exp, e, reduced(lo, hi, first + e));
    return ne * dtypes[O.dt].size;
}

/* Non-commutative check of a native reduction: the library's own algorithm is selected by a rules
 * file or JSON for every operation, commutative or not, so a native algorithm that reorders operands
 * must never be chosen.  Operation: composition of affine maps x -> a*x + b on pairs of unsigned
 * (a, b) o (c, d) = (a*c, a*d + b), associative, not commutative, exact modulo 2^32; rank r's element
 * e is (2(r+e)+3, 7r+e+1).  Wrong operand order changes the result.  Returns 1 when every rank got
 * the reference (the run's plain check already passed). */
static void affine_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    unsigned *x = in, *y = inout;     /* inout = in o inout: in comes from the lower ranks */
    for (int i = 0; i < *len; i++) {
        unsigned a = x[2 * i], b = x[2 * i + 1], c = y[2 * i], d = y[2 * i + 1];
        y[2 * i] = a * c;
        y[2 * i + 1] = a * d + b;
    }
}

static int noncommutative_ok(const call_t *c, const cplan_t *cp, char *sbuf, char *rbuf, MPI_Comm comm, char *detail, size_t dl)
{
    size_t ne = cp->n / (2 * sizeof(unsigned));
    if (ne == 0) ne = 1;
    if (ne * 2 * sizeof(unsigned) > cp->sbytes || ne * 2 * sizeof(unsigned) > cp->rbytes) ne = 0;
    int ok = 1;
    if (ne) {
        MPI_Datatype pair; MPI_Op op;
        PMPI_Type_contiguous(2, MPI_UNSIGNED, &pair);
        PMPI_Type_commit(&pair);
        PMPI_Op_create(affine_op, 0, &op);
        unsigned *s = (unsigned *)sbuf, *r = (unsigned *)rbuf;
        for (size_t e = 0; e < ne; e++) { s[2 * e] = 2u * (unsigned)(g_rank + (int)e) + 3u; s[2 * e + 1] = 7u * (unsigned)g_rank + (unsigned)e + 1u; }
        /* twice: the cell's parity of calls (bench_measure.c, even_out_runs) stays that of one check call */
        for (int rep = 0; rep < 2; rep++) {     /* every rank makes both calls, whatever it saw */
            memset(rbuf, 0xA5, ne * 2 * sizeof(unsigned));
            const bench_call_t *b = bench_call_of(c->kind);
            bench_args_t args = {sbuf, rbuf, (int)ne, NULL, pair, op, O.root, comm};
            int first = 0, last = g_size - 1, mine = b->span(g_rank, g_size, O.root, &first, &last);
            int rc = b->call(&args);
            if (rc != MPI_SUCCESS) { ok = 0; snprintf(detail, dl, "rank=%d error under a non-commutative op", g_rank); }
            for (size_t e = 0; mine && ok && e < ne; e++) {
                unsigned a = 1, b = 0;            /* fold ranks 0..last left to right: f0 o f1 o ... */
                for (int q = last; q >= first; q--) {
                    unsigned qa = 2u * (unsigned)(q + (int)e) + 3u, qb = 7u * (unsigned)q + (unsigned)e + 1u;
                    b = qa * b + qb; a = qa * a;
                }
                if (r[2 * e] != a || r[2 * e + 1] != b) {
                    ok = 0;
                    snprintf(detail, dl, "rank=%d element=%zu got=(%u,%u) expected=(%u,%u) under a non-commutative op",
                             g_rank, e, r[2 * e], r[2 * e + 1], a, b);
                }
            }
        }
        PMPI_Op_free(&op);
        PMPI_Type_free(&pair);
    }
    return ok;
}

/* Whether the environment names a decision file of the MPI library's own (Open MPI's dynamic rules file,
 * MPICH's JSON selection file, as the module sets them; Intel MPI's I_MPI_ADJUST_<COLL> variables, which a
 * native.impi is, or the file itself that libpgmpitune's MPI_Init reads, rule 8): such a file applies to every operation, so the default arm may be a native choice too
 * and gets the non-commutative check and the fingerprint, also when something else in the environment keeps
 * the library from reading it (the fingerprint then shows it).  PGMPI_NATIVE_EVIDENCE=1 asks for the same in
 * an mpirun without a file: Intel MPI reads its presets once at MPI_Init, so its validation measures the
 * library's default in an mpirun of its own and needs the default's fingerprint there. */
static int decision_file_in_env(void)
{
    extern char **environ;
    const char *r = getenv("OMPI_MCA_coll_tuned_dynamic_rules_filename");
    const char *j = getenv("MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE");
    const char *e = getenv("PGMPI_NATIVE_EVIDENCE");
    const char *i = getenv("PGMPITUNE_NATIVE_IMPI");   /* the module's native.impi (libpgmpitune sets its variables) */
    if ((r && *r) || (j && *j) || (i && *i) || (e && strcmp(e, "1") == 0))
        return 1;
    for (char **v = environ; *v; v++)
        if (strncmp(*v, "I_MPI_ADJUST_", 13) == 0 && strchr(*v, '=') && strchr(*v, '=')[1])
            return 1;
    return 0;
}

/* Fingerprint of the algorithm that ran a reduction (MPI_Allreduce, MPI_Reduce): MPI_SUM over doubles that
 * are all quiet NaNs, rank r's element e carrying the payload (r + 1, e).  NaN + NaN keeps one operand's
 * payload, so which rank's payload survives in each element, on each rank, follows the algorithm's operand
 * order and its split of the vector: a built-in operation (no user op, which MPICH's selection files may
 * route elsewhere) whose result identifies the algorithm.  Written as
 * '#@pgmpi fingerprint <MPI_Name> <bytes> <alg> <hash of rank 0>:<hash of rank 1>:...' (hashes of the
 * survivors, 0 on ranks without output); called twice, like noncommutative_ok, and "unstable" when the two
 * calls disagree.  Read by pgmpi_formats.native_validation (the proof that a decision file took effect). */
static void fingerprint(const call_t *c, const cplan_t *cp, char *sbuf, char *rbuf, MPI_Comm comm, int alg)
{
    size_t ne = cp->n / sizeof(double);
    if (ne == 0 || ne * sizeof(double) > cp->sbytes || ne * sizeof(double) > cp->rbytes) return;
    unsigned long long h[2] = {0, 0};
    for (int rep = 0; rep < 2; rep++) {
        double *s = (double *)sbuf, *r = (double *)rbuf;
        for (size_t e = 0; e < ne; e++) {
            uint64_t bits = 0x7ff8000000000000ULL | ((uint64_t)(g_rank + 1) << 32) | (uint64_t)(e & 0xffffffffu);
            memcpy(&s[e], &bits, sizeof bits);
        }
        memset(rbuf, 0, ne * sizeof(double));
        const bench_call_t *b = bench_call_of(c->kind);
        bench_args_t args = {sbuf, rbuf, (int)ne, NULL, MPI_DOUBLE, MPI_SUM, O.root, comm};
        int lo, hi, mine = b->span(g_rank, g_size, O.root, &lo, &hi);
        int rc = b->call(&args);
        unsigned long long x = 1469598103934665603ULL;          /* FNV-1a over the survivors */
        for (size_t e = 0; mine && rc == MPI_SUCCESS && e < ne; e++) {
            uint64_t b;
            memcpy(&b, &r[e], sizeof b);
            unsigned who = ((b & 0x7ff8000000000000ULL) == 0x7ff8000000000000ULL) ? (unsigned)((b >> 32) & 0xffffu) : 0xffffu;
            x = (x ^ who) * 1099511628211ULL;
        }
        h[rep] = rc != MPI_SUCCESS ? 1 : mine ? x : 0;
    }
    /* Allgather, not Gather: an odd number of one-way messages slows Open MPI's later small collectives
     * (share_from_rank0 in bench_measure.c) */
    unsigned long long mine2[2] = {h[0], h[0] != h[1]}, *all = malloc(sizeof mine2 * (size_t)g_size);
    int have = all != NULL, everyone = 0;
    PMPI_Allreduce(&have, &everyone, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!everyone) { free(all); return; }
    PMPI_Allgather(mine2, 2, MPI_UNSIGNED_LONG_LONG, all, 2, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
    if (g_rank != 0) { free(all); return; }
    char buf[4096];
    size_t o = 0;
    int unstable = 0;
    for (int q = 0; q < g_size && o + 24 < sizeof buf; q++) {
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%llx", q ? ":" : "", all[2 * q]);
        unstable |= all[2 * q + 1] != 0;
    }
    footer_add("#@pgmpi fingerprint %s %zu %s %s\n", c->mpi_name, cp->n, alg_label(c, alg), unstable ? "unstable" : buf);
    free(all);
}

/* A call's MPI error code as the check's rank-local detail; returns the verdict code 1 ("error"). */
int check_error_detail(int rc, char *detail, size_t dl)
{
    char msg[MPI_MAX_ERROR_STRING]; int len = 0;
    MPI_Error_string(rc, msg, &len);
    for (char *q = msg; *q; q++) if (*q == '\n' || *q == '\r') *q = ' ';
    snprintf(detail, dl, "rank=%d %.150s", g_rank, msg);
    return 1;
}

/* The verdict over all ranks of one checked call (collective): code is this rank's (0 ok, 1 error,
 * 2 wrong result, 3 operand order), detail what it saw. The worst code wins; the failing rank with the
 * lowest number tells rank 0 what it saw; one `#@pgmpi check` footer line (and a message when it
 * failed). Returns 1 when the call was right on every rank. */
int check_verdict(const char *mpi_name, size_t n, const char *label, int code, const char *detail)
{
    int codes[2] = {code, code ? g_rank : g_size}, worst[2];
    PMPI_Allreduce(codes, worst, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD);
    if (worst[0] == 0) {
        footer_add("#@pgmpi check %s %zu %s ok\n", mpi_name, n, label);
        return 1;
    }
    char why[200] = "";
    if (worst[1] == 0 || g_rank == worst[1]) snprintf(why, sizeof why, "%s", detail);
    if (worst[1] != 0) {
        if (g_rank == worst[1]) PMPI_Send(why, (int)sizeof why, MPI_CHAR, 0, 0x5048, MPI_COMM_WORLD);
        if (g_rank == 0) PMPI_Recv(why, (int)sizeof why, MPI_CHAR, worst[1], 0x5048, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    why[sizeof why - 1] = 0;
    const char *reason = worst[0] == 1 ? "error" : worst[0] == 2 ? "wrong_result" : "noncommutative";
    footer_add("#@pgmpi check %s %zu %s fail %s %s\n", mpi_name, n, label, reason, why);
    if (g_rank == 0)
        fprintf(stderr, "%s: %s %zu B %s failed its check (%s %s): not timed\n", program_invocation_short_name,
                mpi_name, n, label, reason, why);
    return 0;
}

/* Runs the check round of one call at its installed plan; ok[a] = 0 for each algorithm that failed
 * on any rank.  Collective: every rank calls it with the same arguments. */
void check_cell(const call_t *c, const cplan_t *cp, char *sbuf, char *rbuf, int *ok)
{
    for (int a = 0; a < c->nalg; a++) ok[a] = 1;
    if (c->kind == K_BARRIER) return;
    size_t cap = cp->sbytes > cp->rbytes ? cp->sbytes : cp->rbytes;
    char *exp = malloc(cap ? cap : 1);
    if (!exp) { fprintf(stderr, "pgmpi-bench: error: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    MPI_Errhandler saved;
    PMPI_Comm_get_errhandler(MPI_COMM_WORLD, &saved);
    PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const bench_call_t *b = bench_call_of(c->kind);
    int in_sbuf = 0;
    size_t nexp = b->expected(cp, g_rank, g_size, O.root, exp, &in_sbuf);
    for (int a = 0; a < c->nalg; a++) {
        int alg = c->alg[a];
        /* the same selection as a timed measurement */
        MPI_Comm comm = MPI_COMM_WORLD;
        if (alg == ALG_TUNED) pgmpitune_unforce(c->coll);
        else if (c->coll >= 0) pgmpitune_force(c->coll, alg == ALG_CONTROL || alg <= ALG_NATIVE0 ? 0 : alg);
        if (c->coll >= 0) comm = native_select(c, alg);
        MPI_Errhandler saved_c = MPI_ERRHANDLER_NULL;
        if (comm != MPI_COMM_WORLD) { PMPI_Comm_get_errhandler(comm, &saved_c); PMPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN); }
        if ((b->flags & BC_INOUT) && g_rank != O.root) memset(sbuf, 0xA5, cp->sbytes);
        else fill_send(c, cp, g_rank, sbuf);
        memset(rbuf, 0xA5, cp->rbytes);
        int rc = run_call_on(c, cp, sbuf, rbuf, comm);
        /* local verdict: 0 ok, 1 error code, 2 wrong result; then the worst over ranks */
        long bad = -1;
        int code = 0;
        char detail[200] = "";
        if (rc != MPI_SUCCESS) {
            code = check_error_detail(rc, detail, sizeof detail);
        } else if (nexp) {
            const char *got = in_sbuf ? sbuf : rbuf;
            for (size_t k = 0; k < nexp; k++)
                if (got[k] != exp[k]) { bad = (long)k; break; }
            if (bad >= 0) {
                code = 2;
                snprintf(detail, sizeof detail, "rank=%d byte=%ld got=0x%02x expected=0x%02x", g_rank, bad,
                         (unsigned char)got[bad], (unsigned char)exp[bad]);
            }
        }
        /* a native reduction must also keep the operand order (noncommutative_ok) */
        int noncomm = (alg <= ALG_NATIVE0 || (alg == 0 && decision_file_in_env()))
                      && (b->flags & BC_ORDERED);
        if (code == 0 && noncomm && !noncommutative_ok(c, cp, sbuf, rbuf, comm, detail, sizeof detail))
            code = 3;
        /* evidence that the cell ran a non-commutative operation (read by pgmpi_formats.native_validation) */
        if (noncomm && code != 1 && code != 2)
            footer_add("#@pgmpi noncommutative %s %zu %s\n", c->mpi_name, cp->n, alg_label(c, alg));
        /* native comparisons (a decision file, or native variants): which algorithm ran a reduction */
        if ((b->flags & BC_FINGERPRINT) && (alg <= ALG_NATIVE0 || (alg == 0 && (g_nnative || decision_file_in_env()))))
            fingerprint(c, cp, sbuf, rbuf, comm, alg);
        if (comm != MPI_COMM_WORLD) { PMPI_Comm_set_errhandler(comm, saved_c); PMPI_Errhandler_free(&saved_c); }
        ok[a] = check_verdict(c->mpi_name, cp->n, alg_label(c, alg), code, detail);
    }
    PMPI_Comm_set_errhandler(MPI_COMM_WORLD, saved);
    free(exp);
}
