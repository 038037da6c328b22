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
 * "result <label> <median seconds> <lower quartile seconds>" (or "result <label> failed": its check failed)
 * per label, then "done".  The lower quartile is the race's screening figure (scheduler/native_driver.py):
 * timing noise only adds, and an algorithm whose calls interleaved with others fall into a fast and a slow
 * mode (MPICH's allreduce recursive_doubling at 128 B: 0.9 us after the default, 3.5 us after smp or nb)
 * keeps its fast mode there while the median of 16 calls dropped it.
 * With "alone" it measures exactly the one label named, nothing next to it (the native search's confirmations,
 * scheduler/native_driver.py: per cell the default, the chosen variant and the control arm one after the
 * other, each all its repetitions alone, as a job under a decision file runs one algorithm per cell).
 * With "blocks=<k>" it measures exactly the labels named, each alone in blocks of k consecutive repetitions, the
 * labels in the order given, then reversed, then as given ... (A B C C B A A B C ...), until each has its n
 * repetitions (nrep= or --nrep; fixed policy only): a confirmation in one command, where two commands per arm
 * and pass let a drift between long blocks into the pair (MPICH's sub-microsecond cells: 20-30 % between
 * blocks of 50) and many short commands cost a round trip through the driver each.  Every measurement but a
 * block's first follows a call of its own algorithm on this cell.  The footer's served line ends in "blocks=k".
 * A label's rows at a cell are numbered as one series over the whole mpirun (nrep 0, 1, ... across a blocks=
 * command's blocks and across commands: a race's first stage, its second stage, the confirmations), as an
 * interleaved cell's are: the store orders a series by that index (service/store/ingest.py).
 * A command it cannot serve gets "error <why>" and changes nothing.  "quit" or end of input ends the run.
 * Labels and sizes must be among --algorithms and --sizes: the native variants' communicators and the
 * buffer plan are made before the first command. */
#define SERVE_LOW_Q 0.25

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

/* The next row index of each (call, size, algorithm of the call's --algorithms) in this mpirun: [i][j][a]. */
static long *g_next_row;

static long *next_row(int i, int j, int alg_id)
{
    if (!g_next_row && !(g_next_row = calloc((size_t)O.ncalls * (size_t)O.nsizes * MAXALGS, sizeof *g_next_row))) {
        fprintf(stderr, "pgmpi-bench: error: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int a = 0;
    while (a < O.calls[i].nalg - 1 && O.calls[i].alg[a] != alg_id) a++;    /* sub's ids are the call's */
    return &g_next_row[((size_t)i * (size_t)O.nsizes + (size_t)j) * MAXALGS + (size_t)a];
}

/* "cell ... blocks=<k>": each algorithm of sub alone in blocks of k repetitions, the order reversed after each
 * pass, until each has nrep; then its rows' median answered as for any cell.  A block is measure_cells on a
 * call holding that one algorithm (its check round only in its first block: a check between two blocks
 * would put another call between them), all on the buffers the cell's first block installed. */
static void serve_blocks(const call_t *sub, int ci, int sj, cplan_t plan, long nrep, long k)
{
    int n = sub->nalg, ok[MAXALGS];
    long done[MAXALGS];
    series_t all[MAXALGS];
    static cstate_t cs;              /* one algorithm at a time; static: MAXALGS series */
    call_t one = *sub;
    char why[1][256] = {""};
    double tnrep1 = 0;
    long saved_nrep = O.nrep;
    int saved_check = O.check, saved_buf_cell = O.buf_cell;
    for (int a = 0; a < n; a++) { ok[a] = 1; done[a] = 0; series_init(&all[a]); }
    for (int a = 0; a < MAXALGS; a++) series_init(&cs.s[a]);
    for (int pass = 0, left = 1; left; pass++) {
        left = 0;
        for (int q = 0; q < n; q++) {
            int a = pass % 2 == 0 ? q : n - 1 - q;
            if (!ok[a] || done[a] >= nrep) continue;
            one.nalg = 1;
            one.alg[0] = sub->alg[a];
            memset(cs.skip, 0, sizeof cs.skip);
            cs.call = &one;
            cs.plan = plan;
            long *next = next_row(ci, sj, sub->alg[a]);
            cs.row0[0] = *next;             /* one series per label: after its rows so far, not 0 per block */
            O.nrep = nrep - done[a] < k ? nrep - done[a] : k;
            O.check = done[a] == 0 ? saved_check : 0;
            int passed[1][MAXALGS];
            measure_cells(&cs, 1, why, &tnrep1, passed);
            *next += cs.done;               /* a measurement a rank started late leaves its index unused */
            O.buf_cell = 0;     /* --buffers=cell: one pair for the cell, as for an interleaved one, not per block */
            if (!passed[0][0] || cs.s[0].n == 0) { ok[a] = 0; continue; }
            /* the block's values are its two heaps (bench_stats.h): their union, in any order */
            for (size_t m = 0; m < cs.s[0].nlo + cs.s[0].nhi; m++) {
                double x = m < cs.s[0].nlo ? cs.s[0].lo[m] : cs.s[0].hi[m - cs.s[0].nlo];
                if (series_push(&all[a], x)) { fprintf(stderr, "pgmpi-bench: error: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
            }
            done[a] += cs.done;
            left |= done[a] < nrep;
        }
    }
    O.nrep = saved_nrep;
    O.check = saved_check;
    O.buf_cell = saved_buf_cell;
    for (int a = 0; a < n; a++) footer_add("#@pgmpi nrep %s %zu %ld\n", sub->mpi_name, plan.n, done[a]);
    if (g_rank == 0) {
        if (fflush(g_out)) out_fail();
        for (int a = 0; a < n; a++) {
            if (!ok[a] || all[a].n == 0) printf("result %s failed\n", alg_label(sub, sub->alg[a]));
            else printf("result %s %.10g %.10g\n", alg_label(sub, sub->alg[a]), series_median(&all[a]),
                        series_quantile(&all[a], SERVE_LOW_Q));
        }
        printf("done\n");
        fflush(stdout);
    }
    for (int a = 0; a < n; a++) series_free(&all[a]);
    for (int a = 0; a < MAXALGS; a++) series_free(&cs.s[a]);
}

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
        char cmd[16] = "", name[64] = "", labels[16000] = "", ex[4][32] = {"", "", "", ""}, bad[32] = "";
        unsigned long long bytes = 0;
        int got = sscanf(line, "%15s %63s %llu %15999s %31s %31s %31s %31s", cmd, name, &bytes, labels, ex[0], ex[1],
                         ex[2], ex[3]);
        long nrep = O.nrep, blocks = 0;
        /* "alone", "nrep=<n>" and "blocks=<k>" in any order, each at most once; bad: anything else */
        int alone = 0, has_nrep = 0, twice = 0;
        for (int e = 0; e < 4 && ex[e][0]; e++) {
            if (strcmp(ex[e], "alone") == 0) twice |= alone++;
            else if (strncmp(ex[e], "nrep=", 5) == 0) { twice |= has_nrep++; nrep = atol(ex[e] + 5); if (nrep < 1) strcpy(bad, ex[e]); }
            else if (strncmp(ex[e], "blocks=", 7) == 0) { twice |= blocks != 0; blocks = atol(ex[e] + 7); if (blocks < 1) strcpy(bad, ex[e]); }
            else if (!bad[0]) strcpy(bad, ex[e]);
        }
        if (got < 1 || strcmp(cmd, "quit") == 0) break;
        int i = -1, j = -1;
        char err[256] = "";
        if (strcmp(cmd, "cell") != 0 || got < 3) snprintf(err, sizeof err, "expected 'cell <call> <bytes> <labels>' or 'quit'");
        else if (!serve_find(name, &i)) snprintf(err, sizeof err, "%s is not among --calls", name);
        else if (twice)
            snprintf(err, sizeof err, "expected at most one nrep=<n>, one alone and one blocks=<k> after the labels");
        else if (bad[0])
            snprintf(err, sizeof err, "expected nrep=<n> (n >= 1), alone or blocks=<k> (k >= 1) after the labels, got '%s'", bad);
        else if (alone && blocks)
            snprintf(err, sizeof err, "alone measures one label, blocks=<k> several each alone: not both");
        else if (alone && strchr(labels, ','))
            snprintf(err, sizeof err, "alone measures one label, got '%s'", labels);
        /* nrep= replaces --nrep for this cell; a --time-budget still stops it early, as it does a fixed count */
        else if ((has_nrep || blocks) && O.policy != P_FIXED)
            snprintf(err, sizeof err, "%s needs a fixed --nrep", has_nrep ? "nrep=" : "blocks=");
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
                int want = !alone && !blocks && (c->alg[a] == 0 || c->alg[a] == ALG_CONTROL);
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
        if (blocks) {
            /* the blocks go in the order the labels were named (sub has them in --algorithms' order) */
            call_t named = sub;
            named.nalg = 0;
            for (char *p = labels; *p; ) {
                size_t n = strcspn(p, ",");
                for (int a = 0; a < sub.nalg; a++) {
                    const char *lab = alg_label(&sub, sub.alg[a]);
                    int seen = 0;        /* a label named twice is measured once */
                    for (int b = 0; b < named.nalg; b++) seen |= named.alg[b] == sub.alg[a];
                    if (!seen && n == strlen(lab) && strncmp(p, lab, n) == 0) named.alg[named.nalg++] = sub.alg[a];
                }
                p += n + (p[n] == ',');
            }
            sub = named;
            footer_add("#@pgmpi served %ld %s %zu %s blocks=%ld\n", ++g_served, sub.mpi_name, O.req_sizes[j], labels, blocks);
            serve_blocks(&sub, i, j, g_plan[i][j], nrep, blocks);
            continue;
        }
        footer_add("#@pgmpi served %ld %s %zu %s\n", ++g_served, sub.mpi_name, O.req_sizes[j], labels[0] ? labels : "-");
        cstate_t cs;
        memset(&cs, 0, sizeof cs);
        char why[1][256] = {""};
        double tnrep1 = 0;
        cs.call = &sub;
        for (int a = 0; a < MAXALGS; a++) series_init(&cs.s[a]);
        cs.plan = g_plan[i][j];
        for (int a = 0; a < sub.nalg; a++) cs.row0[a] = *next_row(i, j, sub.alg[a]);
        int ok[1][MAXALGS];
        long saved = O.nrep;
        O.nrep = nrep;
        measure_cells(&cs, 1, why, &tnrep1, ok);
        O.nrep = saved;
        for (int a = 0; a < sub.nalg; a++) *next_row(i, j, sub.alg[a]) += cs.done;
        footer_add("#@pgmpi nrep %s %zu %ld\n", sub.mpi_name, cs.plan.n, cs.done);
        if (g_rank == 0) {
            if (fflush(g_out)) out_fail();
            for (int a = 0; a < sub.nalg; a++) {
                if (!ok[0][a] || cs.s[a].n == 0) printf("result %s failed\n", alg_label(&sub, sub.alg[a]));
                else printf("result %s %.10g %.10g\n", alg_label(&sub, sub.alg[a]), series_median(&cs.s[a]),
                            series_quantile(&cs.s[a], SERVE_LOW_Q));
            }
            printf("done\n");
            fflush(stdout);
        }
        for (int a = 0; a < MAXALGS; a++) series_free(&cs.s[a]);
    }
}
