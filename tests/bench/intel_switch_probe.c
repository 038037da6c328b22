/* Can Intel MPI 2021.13 switch a collective's preset inside one running process (issue 35)?  Run by
 * tests/bench/intel_switch_probe.py, which compares what this prints with the fingerprints of mpiruns whose
 * environment forces each preset at launch (I_MPI_ADJUST_<COLL>=<p>, the one way known to work).
 *
 * The evidence is lib/bench/bench_check.c's NaN-payload fingerprint: one MPI_SUM over quiet NaNs whose payload
 * is (rank + 1, element), so which rank's payload survives where follows the algorithm; hashed over every
 * rank's result (reduce: the root's) and printed by rank 0 as "<mode> <preset> <bytes> <fingerprint> <note>".
 *
 *   intel_switch_probe inproc <allreduce|reduce> <bytes,...> <preset,...> [--preinit <p> | --env-first <p>]
 *     after MPI_Init, per preset p, one call after each way of asking for p (each undone before the next):
 *       mpit, mpit-dup, mpit-split  MPI_T write of MPIR_CVAR_USE_<COLL> (Intel's MPI_T alias of
 *                                   I_MPI_ADJUST_<COLL>), then a call on MPI_COMM_WORLD / a new MPI_Comm_dup /
 *                                   a new MPI_Comm_split (note: the value read back through MPI_T)
 *       env, env-dup, env-split     setenv I_MPI_ADJUST_<COLL>=p, then the same three calls
 *       info-dup                    MPI_Comm_dup_with_info, the info carrying I_MPI_ADJUST_<COLL>=p and
 *                                   MPIR_CVAR_USE_<COLL>=p as keys; call on the new communicator
 *     "world -" is the call before any of them.  --preinit writes p through MPI_T between MPI_T_init_thread
 *     and MPI_Init (does a write through MPI_T reach the selection at all?); --env-first sets
 *     I_MPI_ADJUST_<COLL>=p right after MPI_Init, before the process's first collective call, and prints only
 *     the "world" calls (is the variable read lazily, at a first call?).
 *   intel_switch_probe comms <allreduce|reduce> <bytes,...> <n>
 *     one call on MPI_COMM_WORLD and one on each of n MPI_Comm_dup's (modes "world", "dup<i>"): for a tuning
 *     file (I_MPI_TUNING) that gives communicators of different comm_id different presets.
 *   intel_switch_probe sessions <allreduce|reduce> <bytes,...> <preset,...> <serial|concurrent>
 *     MPI-4 sessions, no MPI_Init: per preset, setenv I_MPI_ADJUST_<COLL>=p ("-": unset), MPI_Session_init,
 *     a communicator from "mpi://WORLD", one call, MPI_Session_finalize ("serial": the library is finalized
 *     and initialised again between presets; "concurrent": one session stays open throughout).
 *   intel_switch_probe hint <allreduce|reduce> <bytes,...> <preset,...>
 *     one communicator per preset p, made by MPI_Comm_dup_with_info with the info key "comm_id" = p (Intel's
 *     communicator hint); one call on each (mode "hint"), on MPI_COMM_WORLD ("world") and on a plain
 *     MPI_Comm_dup ("plain-dup").  For a tuning file (I_MPI_TUNING) whose "comm_id=p" entries force preset p,
 *     read only under I_MPI_TUNING_AUTO_COMM_USER=1 (else the library numbers communicators itself).
 *   intel_switch_probe hint-time <allreduce|reduce> <bytes> <preset,...> <rounds>
 *     the same communicators; per round every one of them once, in an order rotated by one each round, each
 *     call after a barrier, its time the maximum over ranks; prints per preset "time <p> <bytes> <median us>".
 *     With no presets ("-") it times MPI_COMM_WORLD alone (the forced-at-launch reference).
 *   intel_switch_probe cvars
 *     every MPI_T control variable, one a line: "cvar <name> <alias>" (the "@Alias:# NAME" of its description,
 *     "-" without one), before MPI_Init. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_reduce;
static char COLL[16];            /* ALLREDUCE | REDUCE */

static int cvar_index(const char *want)
{
    int n = 0;
    MPI_T_cvar_get_num(&n);
    for (int i = 0; i < n; i++) {
        char name[256], desc[8]; int nl = sizeof name, dl = sizeof desc, verb, bind, scope;
        MPI_Datatype dt; MPI_T_enum et;
        if (MPI_T_cvar_get_info(i, name, &nl, &verb, &dt, &et, desc, &dl, &bind, &scope) != MPI_SUCCESS) continue;
        if (strcmp(name, want) == 0) return i;
    }
    return -1;
}

/* reads a string control variable into out ("?" when it cannot be read) */
static void cvar_get(int idx, char *out, size_t len)
{
    MPI_T_cvar_handle h; int cnt = 0;
    snprintf(out, len, "?");
    if (idx < 0 || MPI_T_cvar_handle_alloc(idx, NULL, &h, &cnt) != MPI_SUCCESS) return;
    char rd[4096] = "";
    if (MPI_T_cvar_read(h, rd) == MPI_SUCCESS) { rd[sizeof rd - 1] = 0; snprintf(out, len, "%s", rd[0] ? rd : "''"); }
    MPI_T_cvar_handle_free(&h);
}

/* writes a string control variable; note gets what a read gives back ("refused:" first when the write failed) */
static void cvar_set(int idx, const char *value, char *note, size_t len)
{
    MPI_T_cvar_handle h; int cnt = 0, rc = -1;
    char buf[4096], back[256];
    snprintf(buf, sizeof buf, "%s", value);
    if (idx >= 0 && MPI_T_cvar_handle_alloc(idx, NULL, &h, &cnt) == MPI_SUCCESS) {
        rc = MPI_T_cvar_write(h, buf);
        MPI_T_cvar_handle_free(&h);
    }
    cvar_get(idx, back, sizeof back);
    snprintf(note, len, "%s%s", rc == MPI_SUCCESS ? "" : "refused:", back);
}

/* one call on comm, fingerprinted over every rank of comm (reduce: the root's result only); rank 0 gets it */
static unsigned long long fingerprint(MPI_Comm comm, size_t nbytes)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    size_t nd = nbytes / sizeof(double);
    double *s = malloc(nd * sizeof *s), *r = calloc(nd, sizeof *r);
    for (size_t e = 0; e < nd; e++) {
        uint64_t b = 0x7ff8000000000000ULL | ((uint64_t)(rank + 1) << 32) | (uint64_t)(e & 0xffffffffu);
        memcpy(&s[e], &b, sizeof b);
    }
    if (g_reduce) MPI_Reduce(s, r, (int)nd, MPI_DOUBLE, MPI_SUM, 0, comm);
    else MPI_Allreduce(s, r, (int)nd, MPI_DOUBLE, MPI_SUM, comm);
    unsigned long long h = 1469598103934665603ULL;
    if (!g_reduce || rank == 0)
        for (size_t e = 0; e < nd; e++) {
            uint64_t b;
            memcpy(&b, &r[e], sizeof b);
            int nan = (b & 0x7ff8000000000000ULL) == 0x7ff8000000000000ULL;
            unsigned who = nan ? (unsigned)((b >> 32) & 0xffffu) : 0xffffu;
            h = (h ^ who) * 1099511628211ULL;
        }
    unsigned long long *all = malloc(sizeof *all * (size_t)size), x;
    MPI_Gather(&h, 1, MPI_UNSIGNED_LONG_LONG, all, 1, MPI_UNSIGNED_LONG_LONG, 0, comm);
    x = all[0];
    for (int q = 1; q < size; q++) x = x * 31 ^ all[q];
    free(s); free(r); free(all);
    return x;
}

static void cvars(void)
{
    int prov, n = 0;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    MPI_T_cvar_get_num(&n);
    for (int i = 0; i < n; i++) {
        char name[256], desc[8192], alias[256] = "-"; int nl = sizeof name, dl = sizeof desc, verb, bind, scope;
        MPI_Datatype dt; MPI_T_enum et;
        if (MPI_T_cvar_get_info(i, name, &nl, &verb, &dt, &et, desc, &dl, &bind, &scope) != MPI_SUCCESS) continue;
        const char *a = strstr(desc, "@Alias:# ");
        if (a) sscanf(a + 9, "%255s", alias);
        printf("cvar %s %s\n", name, alias);
    }
    MPI_T_finalize();
}

static void show(MPI_Comm comm, const char *mode, const char *preset, size_t n, const char *note)
{
    int rank;
    unsigned long long fp = fingerprint(comm, n);
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) { printf("%s %s %zu %016llx %s\n", mode, preset, n, fp, note[0] ? note : "-"); fflush(stdout); }
}

#define FOR_EACH(item, list, copy) \
    snprintf(copy, sizeof copy, "%s", list); \
    for (char *sv_##item, *item = strtok_r(copy, ",", &sv_##item); item; item = strtok_r(NULL, ",", &sv_##item))

static void inproc(const char *sizes, const char *presets, const char *preinit, const char *envfirst)
{
    char cvname[80], envname[80], orig[256], note[300], s1[1024], s2[1024];
    snprintf(cvname, sizeof cvname, "MPIR_CVAR_USE_%s", COLL);
    snprintf(envname, sizeof envname, "I_MPI_ADJUST_%s", COLL);
    int prov;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    int idx = cvar_index(cvname);
    if (preinit) cvar_set(idx, preinit, note, sizeof note);
    MPI_Init(NULL, NULL);
    if (envfirst) setenv(envname, envfirst, 1);     /* before the first collective call of the process */
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    cvar_get(idx, orig, sizeof orig);
    if (rank == 0) printf("# %s: MPI_T index %d, reads %s after MPI_Init%s%s\n", cvname, idx, orig,
                          preinit ? "; written before MPI_Init: " : "", preinit ? preinit : "");
    FOR_EACH(st, sizes, s1) {
        size_t n = strtoull(st, NULL, 10);
        show(MPI_COMM_WORLD, "world", "-", n, orig);
        if (envfirst) continue;
        FOR_EACH(p, presets, s2) {
            MPI_Comm c;
            cvar_set(idx, p, note, sizeof note);
            show(MPI_COMM_WORLD, "mpit", p, n, note);
            MPI_Comm_dup(MPI_COMM_WORLD, &c);
            show(c, "mpit-dup", p, n, note);
            MPI_Comm_free(&c);
            MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &c);
            show(c, "mpit-split", p, n, note);
            MPI_Comm_free(&c);
            cvar_set(idx, strcmp(orig, "''") ? orig : "", note, sizeof note);

            setenv(envname, p, 1);
            show(MPI_COMM_WORLD, "env", p, n, "");
            MPI_Comm_dup(MPI_COMM_WORLD, &c);
            show(c, "env-dup", p, n, "");
            MPI_Comm_free(&c);
            MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &c);
            show(c, "env-split", p, n, "");
            MPI_Comm_free(&c);
            unsetenv(envname);

            MPI_Info info;
            MPI_Info_create(&info);
            MPI_Info_set(info, envname, p);
            MPI_Info_set(info, cvname, p);
            MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c);
            show(c, "info-dup", p, n, "");
            MPI_Comm_free(&c);
            MPI_Info_free(&info);
        }
    }
    MPI_Finalize();
    MPI_T_finalize();
}

/* one communicator per preset, tagged with Intel's "comm_id" hint = the preset number */
static int hint_comms(const char *presets, MPI_Comm *c, char names[][16], int max)
{
    char s2[1024];
    int k = 0;
    FOR_EACH(p, presets, s2) {
        if (k == max || strcmp(p, "-") == 0) break;
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "comm_id", p);
        MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &c[k]);
        MPI_Info_free(&info);
        snprintf(names[k++], 16, "%s", p);
    }
    return k;
}

static void hint(const char *sizes, const char *presets)
{
    char s1[1024], names[64][16];
    MPI_Comm c[64], plain;
    MPI_Init(NULL, NULL);
    int k = hint_comms(presets, c, names, 64);
    MPI_Comm_dup(MPI_COMM_WORLD, &plain);
    FOR_EACH(st, sizes, s1) {
        size_t n = strtoull(st, NULL, 10);
        show(MPI_COMM_WORLD, "world", "-", n, "");
        show(plain, "plain-dup", "-", n, "");
        for (int i = 0; i < k; i++) {
            char v[64] = "", note[80];
            int flag = 0;
            MPI_Info got;
            MPI_Comm_get_info(c[i], &got);
            MPI_Info_get(got, "comm_id", sizeof v - 1, v, &flag);
            MPI_Info_free(&got);
            snprintf(note, sizeof note, "comm_id=%s", flag ? v : "unset");
            show(c[i], "hint", names[i], n, note);
        }
    }
    for (int i = 0; i < k; i++) MPI_Comm_free(&c[i]);
    MPI_Comm_free(&plain);
    MPI_Finalize();
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void hint_time(size_t n, const char *presets, int rounds)
{
    char names[64][16];
    MPI_Comm c[64];
    MPI_Init(NULL, NULL);
    int rank, k = hint_comms(presets, c, names, 64);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (k == 0) { c[0] = MPI_COMM_WORLD; snprintf(names[0], 16, "world"); k = 1; }
    size_t nd = n / sizeof(double) ? n / sizeof(double) : 1;
    double *s = calloc(nd, sizeof *s), *r = calloc(nd, sizeof *r), *t = malloc(sizeof *t * (size_t)(k * rounds));
    for (int w = 0; w < 3; w++)                              /* warm-up: every communicator a few times */
        for (int i = 0; i < k; i++) {
            if (g_reduce) MPI_Reduce(s, r, (int)nd, MPI_DOUBLE, MPI_SUM, 0, c[i]);
            else MPI_Allreduce(s, r, (int)nd, MPI_DOUBLE, MPI_SUM, c[i]);
        }
    for (int q = 0; q < rounds; q++)
        for (int j = 0; j < k; j++) {
            int i = (j + q) % k;
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (g_reduce) MPI_Reduce(s, r, (int)nd, MPI_DOUBLE, MPI_SUM, 0, c[i]);
            else MPI_Allreduce(s, r, (int)nd, MPI_DOUBLE, MPI_SUM, c[i]);
            double dt = MPI_Wtime() - t0, mx;
            MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            t[i * rounds + q] = mx;
        }
    for (int i = 0; i < k; i++) {
        qsort(t + i * rounds, (size_t)rounds, sizeof *t, cmp_double);
        if (rank == 0) printf("time %s %zu %.2f\n", names[i], n, 1e6 * t[i * rounds + rounds / 2]);
    }
    for (int i = 0; i < k; i++) if (c[i] != MPI_COMM_WORLD) MPI_Comm_free(&c[i]);
    free(s); free(r); free(t);
    MPI_Finalize();
}

static void comms(const char *sizes, int ncomms)
{
    char s1[1024], mode[32];
    MPI_Init(NULL, NULL);
    MPI_Comm *c = malloc(sizeof *c * (size_t)(ncomms > 0 ? ncomms : 1));
    for (int i = 0; i < ncomms; i++) MPI_Comm_dup(MPI_COMM_WORLD, &c[i]);
    FOR_EACH(st, sizes, s1) {
        size_t n = strtoull(st, NULL, 10);
        show(MPI_COMM_WORLD, "world", "-", n, "");
        for (int i = 0; i < ncomms; i++) {
            snprintf(mode, sizeof mode, "dup%d", i);
            show(c[i], mode, "-", n, "");
        }
    }
    for (int i = 0; i < ncomms; i++) MPI_Comm_free(&c[i]);
    free(c);
    MPI_Finalize();
}

static MPI_Comm open_session(MPI_Session *s, const char *tag)
{
    MPI_Group g;
    MPI_Comm c;
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, s);
    MPI_Group_from_session_pset(*s, "mpi://WORLD", &g);
    MPI_Comm_create_from_group(g, tag, MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &c);
    MPI_Group_free(&g);
    return c;
}

static void sessions(const char *sizes, const char *presets, int concurrent)
{
    char envname[80], tag[32], s1[1024], s2[1024];
    snprintf(envname, sizeof envname, "I_MPI_ADJUST_%s", COLL);
    MPI_Session keep = MPI_SESSION_NULL;
    MPI_Comm kc = MPI_COMM_NULL;
    if (concurrent) kc = open_session(&keep, "keep");
    int i = 0;
    FOR_EACH(p, presets, s2) {
        if (strcmp(p, "-") != 0) setenv(envname, p, 1); else unsetenv(envname);
        MPI_Session s;
        snprintf(tag, sizeof tag, "probe%d", i++);
        MPI_Comm c = open_session(&s, tag);
        FOR_EACH(st, sizes, s1)
            show(c, concurrent ? "session-concurrent" : "session-serial", p, strtoull(st, NULL, 10), "");
        MPI_Comm_free(&c);
        MPI_Session_finalize(&s);
    }
    if (concurrent) { MPI_Comm_free(&kc); MPI_Session_finalize(&keep); }
}

int main(int argc, char **argv)
{
    const char *use = "usage: intel_switch_probe inproc <coll> <bytes,...> <preset,...> [--preinit <p> | --env-first <p>]\n"
                      "       intel_switch_probe comms <coll> <bytes,...> <n>\n"
                      "       intel_switch_probe sessions <coll> <bytes,...> <preset|-,...> <serial|concurrent>\n"
                      "       intel_switch_probe hint <coll> <bytes,...> <preset,...>\n"
                      "       intel_switch_probe hint-time <coll> <bytes> <preset,...|-> <rounds>\n"
                      "       intel_switch_probe cvars\n";
    if (argc == 2 && strcmp(argv[1], "cvars") == 0) { cvars(); return 0; }
    if (argc < 5 || (strcmp(argv[2], "allreduce") != 0 && strcmp(argv[2], "reduce") != 0)) { fputs(use, stderr); return 2; }
    g_reduce = strcmp(argv[2], "reduce") == 0;
    snprintf(COLL, sizeof COLL, "%s", g_reduce ? "REDUCE" : "ALLREDUCE");
    if (strcmp(argv[1], "inproc") == 0 && argc >= 5)
        inproc(argv[3], argv[4], argc > 6 && strcmp(argv[5], "--preinit") == 0 ? argv[6] : NULL,
               argc > 6 && strcmp(argv[5], "--env-first") == 0 ? argv[6] : NULL);
    else if (strcmp(argv[1], "comms") == 0)
        comms(argv[3], atoi(argv[4]));
    else if (strcmp(argv[1], "hint") == 0)
        hint(argv[3], argv[4]);
    else if (strcmp(argv[1], "hint-time") == 0 && argc >= 6)
        hint_time(strtoull(argv[3], NULL, 10), argv[4], atoi(argv[5]));
    else if (strcmp(argv[1], "sessions") == 0 && argc >= 6)
        sessions(argv[3], argv[4], strcmp(argv[5], "concurrent") == 0);
    else { fputs(use, stderr); return 2; }
    return 0;
}
