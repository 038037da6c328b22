/* pgmpi-bench --serve: cells on request from standard input (see bench.h for the split). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pgmpitune.h"
#include "bench.h"

/* --serve (scheduler/native_driver.py): one mpirun for a whole search instead of one per round, whose
 * start-up cost more than the reduced searches saved.  After the header rank 0 reads commands from its
 * standard input and shares each with every rank:
 *   cell <MPI_Name or call> <bytes> <label>[,<label>...] [nrep=<n>] [alone]
 * measures that one (call, size) exactly as measure_all would (with nrep=: n repetitions instead of --nrep,
 * fixed policy only -- a race's second stage, one command instead of one per pass: each command costs its
 * check round and synchronisation) -- check round, interleaved rounds, rows in
 * the output -- with only the given labels (plus default and default_control when the command line asked
 * for them: each experiment keeps its paired reference and the control arm), and rank 0 answers on stdout
 * "result <label> <median seconds>" (or "result <label> failed": its check failed) per label, then "done".
 * With "alone" it measures exactly the one label named, nothing next to it (the native search's confirmations,
 * scheduler/native_driver.py: per cell the default, the chosen variant and the control arm one after the
 * other, each all its repetitions alone, as a job under a decision file runs one algorithm per cell).
 * A command it cannot serve gets "error <why>" and changes nothing.  "quit" or end of input ends the run.
 * Labels and sizes must be among --algorithms and --sizes: the native variants' communicators and the
 * buffer plan are made before the first command. */
static int serve_find(const char *name, int *ci)
{
    for (int i = 0; i < O.ncalls; i++)
        if (strcasecmp(O.calls[i].mpi_name, name) == 0 || strcasecmp(O.calls[i].mpi_name + 4, name) == 0) {
            *ci = i;
            return 1;
        }
    return 0;
}

static long g_served;

void serve_all(void)
{
    char line[16384];
    for (;;) {
        unsigned long long len = 0;
        if (g_rank == 0) {
            if (!fgets(line, sizeof line, stdin)) strcpy(line, "quit\n");
            len = strlen(line) + 1;
        }
        share_from_rank0(&len, 1);
        PMPI_Bcast(line, (int)len, MPI_CHAR, 0, MPI_COMM_WORLD);
        char cmd[16] = "", name[64] = "", labels[16000] = "", ex[2][32] = {"", ""}, extra[32] = "";
        unsigned long long bytes = 0;
        int got = sscanf(line, "%15s %63s %llu %15999s %31s %31s", cmd, name, &bytes, labels, ex[0], ex[1]);
        long nrep = O.nrep;
        /* "alone" and "nrep=<n>" in either order; extra: the nrep= token, or anything else left to refuse */
        int alone = strcmp(ex[0], "alone") == 0 || strcmp(ex[1], "alone") == 0;
        for (int e = 0; e < 2; e++)
            if (strcmp(ex[e], "alone") != 0 && ex[e][0] && !extra[0]) strcpy(extra, ex[e]);
        if (got < 1 || strcmp(cmd, "quit") == 0) break;
        int i = -1, j = -1;
        char err[256] = "";
        if (strcmp(cmd, "cell") != 0 || got < 3) snprintf(err, sizeof err, "expected 'cell <call> <bytes> <labels>' or 'quit'");
        else if (!serve_find(name, &i)) snprintf(err, sizeof err, "%s is not among --calls", name);
        else if (ex[1][0] && !(strcmp(ex[0], "alone") == 0) == !(strcmp(ex[1], "alone") == 0))
            snprintf(err, sizeof err, "expected at most one nrep=<n> and one alone after the labels, got '%s %s'", ex[0], ex[1]);
        else if (alone && strchr(labels, ','))
            snprintf(err, sizeof err, "alone measures one label, got '%s'", labels);
        else if (extra[0] && (strncmp(extra, "nrep=", 5) != 0 || (nrep = atol(extra + 5)) < 1))
            snprintf(err, sizeof err, "expected nrep=<n> (n >= 1) or alone after the labels, got '%s'", extra);
        /* nrep= replaces --nrep for this cell; a --time-budget still stops it early, as it does a fixed count */
        else if (extra[0] && O.policy != P_FIXED)
            snprintf(err, sizeof err, "nrep= needs a fixed --nrep");
        else {
            for (int k = 0; k < O.nsizes; k++) if (O.req_sizes[k] == (size_t)bytes) j = k;
            if (j < 0) snprintf(err, sizeof err, "%llu B is not among --sizes", bytes);
        }
        call_t sub;
        if (!err[0]) {     /* the cell's call with only the wanted algorithms (same ids: same rows, same communicators) */
            const call_t *c = &O.calls[i];
            sub = *c;
            sub.nalg = 0;
            for (int a = 0; a < c->nalg; a++) {
                const char *lab = alg_label(c, c->alg[a]);
                int want = !alone && (c->alg[a] == 0 || c->alg[a] == ALG_CONTROL);
                for (char *p = labels; *p && !want; ) {
                    size_t n = strcspn(p, ",");
                    if (n == strlen(lab) && strncmp(p, lab, n) == 0) want = 1;
                    p += n + (p[n] == ',');
                }
                if (want) sub.alg[sub.nalg++] = c->alg[a];
            }
            for (char *p = labels; *p && !err[0]; ) {      /* every label asked for must exist */
                size_t n = strcspn(p, ",");
                int found = 0;
                for (int a = 0; a < sub.nalg && !found; a++) {
                    const char *lab = alg_label(&sub, sub.alg[a]);
                    found = n == strlen(lab) && strncmp(p, lab, n) == 0;
                }
                if (!found) snprintf(err, sizeof err, "%.*s is not among --algorithms for %s", (int)(n < 100 ? n : 100), p, c->mpi_name);
                p += n + (p[n] == ',');
            }
        }
        if (err[0]) {
            if (g_rank == 0) { printf("error %s\n", err); fflush(stdout); }
            continue;
        }
        /* the search path, cell by cell, for `pgmpi explain` (service/analysis/explain.py) */
        footer_add("#@pgmpi served %ld %s %zu %s\n", ++g_served, sub.mpi_name, O.req_sizes[j], labels[0] ? labels : "-");
        cstate_t cs;
        memset(&cs, 0, sizeof cs);
        char why[1][256] = {""};
        double tnrep1 = 0;
        cs.call = &sub;
        for (int a = 0; a < MAXALGS; a++) series_init(&cs.s[a]);
        cs.plan = g_plan[i][j];
        int ok[1][MAXALGS];
        long saved = O.nrep;
        O.nrep = nrep;
        measure_cells(&cs, 1, why, &tnrep1, ok);
        O.nrep = saved;
        footer_add("#@pgmpi nrep %s %zu %ld\n", sub.mpi_name, cs.plan.n, cs.done);
        if (g_rank == 0) {
            if (fflush(g_out)) out_fail();
            for (int a = 0; a < sub.nalg; a++) {
                if (!ok[0][a] || cs.s[a].n == 0) printf("result %s failed\n", alg_label(&sub, sub.alg[a]));
                else printf("result %s %.10g\n", alg_label(&sub, sub.alg[a]), series_median(&cs.s[a]));
            }
            printf("done\n");
            fflush(stdout);
        }
        for (int a = 0; a < MAXALGS; a++) series_free(&cs.s[a]);
    }
}
