/* Intel MPI's own decision file (native.impi) applied at MPI_Init, rule 8 of pgmpitune_core.h.
 *
 * The module names the published file in PGMPITUNE_NATIVE_IMPI instead of exporting its I_MPI_ADJUST_<COLL>
 * lines: once such a variable is set, Intel MPI 2021.13 runs another algorithm than its default even outside
 * every range of it (fingerprints: 3:0-2147483647@2-2 changes allreduce at 4 ranks), so a file decided at 2
 * ranks must not reach a job of 4.  Before PMPI_Init (Intel MPI reads the variables there) this unit takes
 * the job's size from the launcher (launcher_size: PMI_SIZE, else Slurm's PMIx step; never SLURM_NTASKS,
 * the allocation's, not an mpirun's) and sets each variable only when some range of it holds that size,
 * with only those ranges, each without its "@<pmin>-<pmax>": Intel MPI 2021.13 matches no message range that
 * carries a process range and runs the last range's preset at every size (fingerprints at 2 ranks, 2-8 KiB:
 * 8:0-4095@2-2;3:4096-2147483647@2-2 runs preset 3 at 2 KiB, with @1-2 or @2-4 the same; without the process
 * ranges 8 at 2 KiB and 3 at 4 KiB; docs/transcripts/intel-ranges-2026-11-26.txt), so the job's size is
 * this unit's to match, the message size Intel MPI's.  A variable already in the environment is the user's:
 * never overwritten.  A file
 * that does not read, or an unknown size, sets nothing (the library's default) and says why once.
 *
 * File (pgmpi_formats/impi_adjust.py writes it): '#' comments, blank lines, and
 *   I_MPI_ADJUST_<COLL>=<preset>:<lo>-<hi>@<pmin>-<pmax>[;...]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgmpi_internal.h"
#include "profile_text.h"

#define MAX_VARS 32
#define MAX_VALUE 4096
#define PREFIX "I_MPI_ADJUST_"

typedef struct {
    char name[64];
    char value[MAX_VALUE];   /* the ranges that hold the job's size, without it, ';'-joined; "" = none */
} setting_t;

/* A positive count from the environment variable `name`; 0 when unset or not one. */
static long long env_count(const char *name)
{
    const char *v = getenv(name);
    long long n = 0;
    if (!v || text_int(v, strlen(v), &n) != 0 || n < 1) return 0;
    return n;
}

/* The job's size as the launcher gives it to this process, read in this order (what each launcher sets was
 * measured on deploy/slurm.sh with Intel MPI 2021.13; lib/docs/library.md):
 *  1. PMI_SIZE: set by the PMI server the ranks talk to -- Intel's (and MPICH's) hydra mpirun, srun --mpi=pmi2.
 *  2. SLURM_STEP_NUM_TASKS, only when PMIX_NAMESPACE is "slurm.pmix.<SLURM_JOB_ID>.<SLURM_STEP_ID>": srun
 *     --mpi=pmix sets neither PMI_SIZE nor PMIX_SIZE, and that namespace shows the ranks' PMIx server is
 *     Slurm's for this very step, whose task count is then the job's size.
 * Never read: SLURM_NTASKS (the allocation's under mpirun: 4 in an -n 4 allocation running mpirun -np 2);
 * SLURM_STEP_NUM_TASKS without that namespace (1 under hydra's mpirun in Slurm, whose proxies are the step;
 * 2 under srun -n 2 --mpi=none, which starts two singletons of size 1); MPI_LOCALNRANKS (this node's ranks).
 * Returns 0 and says why in `why` when no size is known, or when 1 and 2 both give one and they differ. */
static long long launcher_size(char *why, size_t cap)
{
    long long pmi = env_count("PMI_SIZE"), step = 0;
    const char *ns = getenv("PMIX_NAMESPACE"), *job = getenv("SLURM_JOB_ID"), *id = getenv("SLURM_STEP_ID");
    if (ns && job && id) {
        char own[160];
        snprintf(own, sizeof own, "slurm.pmix.%s.%s", job, id);
        if (strcmp(ns, own) == 0) step = env_count("SLURM_STEP_NUM_TASKS");
    }
    if (pmi && step && pmi != step) {
        snprintf(why, cap, "the launcher's job sizes disagree (PMI_SIZE=%lld, SLURM_STEP_NUM_TASKS=%lld of Slurm's "
                 "PMIx step), so it cannot tell whether this job is one the file was decided for", pmi, step);
        return 0;
    }
    if (!pmi && !step)
        snprintf(why, cap, "the launcher gives no job size (PMI_SIZE; under srun --mpi=pmix SLURM_STEP_NUM_TASKS "
                 "with Slurm's PMIX_NAMESPACE), so it cannot tell whether this job is one the file was decided for");
    return pmi ? pmi : step;
}

static int valid_name(const char *s, size_t len)
{
    if (len <= strlen(PREFIX) || len >= sizeof(((setting_t *)0)->name) || strncmp(s, PREFIX, strlen(PREFIX)) != 0)
        return 0;
    for (size_t i = strlen(PREFIX); i < len; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || s[i] == '_')) return 0;
    return 1;
}

/* "<a>:<lo>-<hi>@<p>-<q>" as four non-negative numbers in order; returns 0 when it reads, -1 otherwise. */
static int parse_range(const char *s, size_t len, long long *pmin, long long *pmax)
{
    long long v[5];
    const char seps[] = ":-@-";
    size_t i = 0;
    for (int k = 0; k < 5; k++) {
        size_t start = i;
        while (i < len && s[i] >= '0' && s[i] <= '9') i++;
        if (i == start || i - start > 10 || text_int(s + start, i - start, &v[k]) != 0) return -1;
        if (k < 4) {
            if (i >= len || s[i] != seps[k]) return -1;
            i++;
        }
    }
    if (i != len || v[1] > v[2] || v[3] > v[4]) return -1;
    *pmin = v[3];
    *pmax = v[4];
    return 0;
}

/* One line "NAME=r1;r2;..." into *st, keeping the ranges whose process range holds size, as
 * "<preset>:<lo>-<hi>" (Intel MPI ignores message ranges that carry a process range: file comment). */
static int parse_line(const diag_t *d, int line, const char *s, const char *e, long long size, setting_t *st)
{
    const char *eq = memchr(s, '=', (size_t)(e - s));
    if (!eq || !valid_name(s, (size_t)(eq - s)))
        return text_fail(d, line, "not an I_MPI_ADJUST_<COLL>=<ranges> line");
    memcpy(st->name, s, (size_t)(eq - s));
    st->name[eq - s] = '\0';
    st->value[0] = '\0';
    size_t used = 0;
    for (const char *r = eq + 1; r <= e;) {
        const char *semi = memchr(r, ';', (size_t)(e - r));
        const char *end = semi ? semi : e;
        long long p, q;
        if (parse_range(r, (size_t)(end - r), &p, &q) != 0)
            return text_fail(d, line, "%s: '%.*s' is not <preset>:<lo>-<hi>@<pmin>-<pmax>", st->name,
                             (int)(end - r), r);
        if (p <= size && size <= q) {
            size_t n = (size_t)((const char *)memchr(r, '@', (size_t)(end - r)) - r);   /* parse_range read it */
            if (used + n + 2 > sizeof st->value) return text_fail(d, line, "%s: value too long", st->name);
            if (used) st->value[used++] = ';';
            memcpy(st->value + used, r, n);
            used += n;
            st->value[used] = '\0';
        }
        r = end + 1;
    }
    return 0;
}

/* The whole file into set[] (all or nothing); returns the number of variables, -1 on an error. */
static int read_settings(const char *path, long long size, setting_t *set, pgmpi_diag_fn diag, void *ctx)
{
    diag_t d = {path, diag, ctx};
    char *text = NULL;
    size_t len = 0;
    if (pgmpi_read_file(path, &text, &len, (size_t)1 << 20) != 0)
        return text_fail(&d, 0, "cannot read it: %s", strerror(errno));
    lines_t L = {text, text + len, 0, NULL, NULL};
    int n = 0, rc = 0;
    while (rc == 0 && next_line(&L)) {
        const char *s = L.ls, *e = L.le;
        const char *hash = memchr(s, '#', (size_t)(e - s));
        if (hash) e = hash;
        while (s < e && is_blank(*s)) s++;
        while (e > s && is_blank(e[-1])) e--;
        if (s == e) continue;
        if (n == MAX_VARS) { rc = text_fail(&d, L.lineno, "more than %d variables", MAX_VARS); break; }
        rc = parse_line(&d, L.lineno, s, e, size, &set[n]);
        for (int i = 0; rc == 0 && i < n; i++)
            if (strcmp(set[i].name, set[n].name) == 0) rc = text_fail(&d, L.lineno, "%s appears twice", set[n].name);
        if (rc == 0) n++;
    }
    free(text);
    return rc == 0 ? n : -1;
}

int pgmpi_native_env_apply(pgmpi_diag_fn diag, void *ctx)
{
    const char *path = getenv("PGMPITUNE_NATIVE_IMPI");
    if (!path || !*path) return 0;
    char why[400];
    long long size = launcher_size(why, sizeof why);
    if (size == 0) {
        diag_t d = {path, diag, ctx};
        return text_fail(&d, 0, "%s", why);
    }
    setting_t *set = calloc(MAX_VARS, sizeof *set);
    if (!set) {
        diag_t d = {path, diag, ctx};
        return text_fail(&d, 0, "out of memory");
    }
    int n = read_settings(path, size, set, diag, ctx), applied = n < 0 ? -1 : 0;
    for (int i = 0; i < n; i++) {
        if (!set[i].value[0] || getenv(set[i].name)) continue;   /* not this size / the user's own */
        if (setenv(set[i].name, set[i].value, 0) == 0) applied++;
    }
    free(set);
    return applied;
}
