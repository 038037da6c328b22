/* pgmpi-dtbench -- the derived-datatype guidelines GL1-GL4 of "MPI derived datatypes: performance
 * expectations and status quo", measured with pgmpi-bench's core: its synchronisation, measurement
 * rounds, statistics, check round, raw output format and options (bench_options.c).  A case is
 * (pattern, layout, variant, blocksize A) on the --datatype base type; its descriptions (typed, contig,
 * packed, vector, ...; bench_datatypes.c) are the "algorithms" of a cell and are interleaved round by
 * round in the same mpirun, so every guideline's two sides are paired.  See lib/bench/README.md,
 * "pgmpi-dtbench". */
#define _GNU_SOURCE
#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "pgmpitune.h"
#include "bench.h"
#include "bench_datatypes.h"

static void usage(void)
{
    printf(
"Usage: mpirun -np P pgmpi-dtbench [DATATYPE OPTIONS] [pgmpi-bench OPTIONS]\n"
"\n"
"Measures the derived-datatype guidelines GL1-GL4 (Carpen-Amarie, Hunold, Traff): for every case\n"
"(pattern x layout x variant x blocksize A) and size, the descriptions of the layout interleaved\n"
"round by round in this mpirun.  Output: pgmpi-bench's raw format with a count column; the test\n"
"name is dt_<pattern>_<base>_<layout>[_v<variant>]_a<A>, the algorithm the description.\n"
"\n"
"DATATYPE OPTIONS\n"
"  --patterns=LIST       pingpong (MPI_Send/MPI_Recv between ranks 0 and 1), bcast, allgather\n"
"                        (default: all three)\n"
"  --layouts=LIST        contiguous, tiled, block, bucket, alternating (the paper's basic layouts;\n"
"                        the default), altrep (expectation test 10), rowcol (test 11)\n"
"  --variants=LIST       1, 2 (table 2 of the paper; default 1,2; altrep and rowcol have 1 only)\n"
"  --blocksizes=LIST     the unit size A (default 2,10,100,1000)\n"
"  --descriptions=LIST   all (default) or names:\n");
    for (int d = 0; d < dt_ndescriptions(); d++) printf("     %-14s %s\n", dt_description_name(d), dt_description_what(d));
    printf(
"  --datatype=NAME       the base type (default MPI_INT; e.g. MPI_DOUBLE)\n"
"  --sizes=LIST          total bytes of the layout's elements (n x the base type's size), rounded\n"
"                        down to whole blocks (default 8,3200,64K,2560000)\n"
"\n"
"Shared with pgmpi-bench (see pgmpi-bench --help): --nrep, --predict and its thresholds,\n"
"--time-budget, --sync, --order, --seed, --buffer-align, --buffer-touch, --check, --output,\n"
"--machine, --module-name, --mpirun-index, --campaign, --mem-limit, --dry-run.\n"
"Not available here: --calls, --algorithms (use --descriptions), --interleave=size, --time-rule,\n"
"--nrep-from, --buffers=cell.\n");
}

static int in_list(const char *list, const char *name)
{
    char *dup = strdup(list), *save = NULL;
    int found = 0;
    for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save))
        /* "all" leaves out the validation arm "tuned" (the profile's choice), which is named explicitly */
        if (strcasecmp(t, name) == 0 || (strcasecmp(t, "all") == 0 && strcmp(name, "tuned") != 0)) found = 1;
    free(dup);
    return found;
}

/* every item of list must be one of names[0..n) (or "all") */
static void check_list(const char *opt, const char *list, const char *const *names, int n)
{
    char *dup = strdup(list), *save = NULL;
    for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int ok = strcasecmp(t, "all") == 0;
        for (int i = 0; i < n; i++) if (strcasecmp(t, names[i]) == 0) ok = 1;
        if (!ok) {
            char valid[512]; size_t o = 0;
            for (int i = 0; i < n; i++) o += snprintf(valid + o, sizeof valid - o, "%s%s", i ? ", " : "", names[i]);
            die_usage("%s: unknown value '%s'; valid: all, %s", opt, t, valid);
        }
    }
    free(dup);
}

static dtcase_t g_cases[MAXCALLS];
static char g_spec[1024], g_desc_arg[512];

static void header_extra(void)
{
    fprintf(g_out, "#@pgmpi_dtbench_version=1\n#@dt_cases=%s\n#@dt_descriptions=%s\n", g_spec, g_desc_arg);
}

int main(int argc, char **argv)
{
    g_print = rank_guess_before_init() == 0;
    const char *patterns = "all", *layouts = "contiguous,tiled,block,bucket,alternating", *variants = "1,2";
    const char *blocksizes = "2,10,100,1000", *descs = "all";
    int dt_given = 0, sizes_given = 0;
    /* our options out, pgmpi-bench's options through its parser */
    char **rest = calloc((size_t)argc + 4, sizeof *rest);
    int nr = 0;
    rest[nr++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *eq = strchr(a, '=');
        size_t kl = eq ? (size_t)(eq - a) : strlen(a);
#define IS(name) (kl == strlen(name) && strncmp(a, name, kl) == 0)
#define VAL() (eq ? eq + 1 : (i + 1 < argc ? argv[++i] : (die_usage("%s needs a value", a), "")))
        if (IS("--help") || IS("-h")) { if (g_print) usage(); return 0; }
        else if (IS("--patterns")) patterns = VAL();
        else if (IS("--layouts")) layouts = VAL();
        else if (IS("--variants")) variants = VAL();
        else if (IS("--blocksizes")) blocksizes = VAL();
        else if (IS("--descriptions")) descs = VAL();
        else if (IS("--calls") || IS("--algorithms") || IS("--algs") || IS("--time-rule") || IS("--nrep-from")
                 || IS("--no-barrier-rows"))
            die_usage("%.*s is pgmpi-bench's; pgmpi-dtbench measures --patterns x --layouts with --descriptions",
                      (int)kl, a);
        else if ((IS("--interleave") && eq && strcasecmp(eq + 1, "cell")) || (IS("--buffers") && eq && strcasecmp(eq + 1, "once")))
            die_usage("%s: pgmpi-dtbench measures one cell at a time on one buffer pair", a);
        else {
            if (IS("--datatype")) dt_given = 1;
            if (IS("--sizes")) sizes_given = 1;
            rest[nr++] = argv[i];
        }
#undef IS
#undef VAL
    }
    static char dflt_dt[] = "--datatype=MPI_INT", dflt_sz[] = "--sizes=8,3200,64K,2560000",
                calls[] = "--calls=barrier", nobar[] = "--no-barrier-rows";
    if (!dt_given) rest[nr++] = dflt_dt;
    if (!sizes_given) rest[nr++] = dflt_sz;
    rest[nr++] = calls;
    rest[nr++] = nobar;
    parse_args(nr, rest);
    if (O.policy == P_TIME || O.policy == P_FROM) die_usage("use --nrep or --predict with pgmpi-dtbench");
    check_list("--patterns", patterns, dt_pattern_names, PAT_COUNT);
    check_list("--layouts", layouts, dt_layout_names, L_COUNT);
    const char *vnames[] = {"1", "2"};
    check_list("--variants", variants, vnames, 2);
    const char *dnames[32];
    for (int d = 0; d < dt_ndescriptions(); d++) dnames[d] = dt_description_name(d);
    check_list("--descriptions", descs, dnames, dt_ndescriptions());
    long As[64]; int nA = 0;
    {
        char *dup = strdup(blocksizes), *save = NULL;
        for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            char *end; long v = strtol(t, &end, 10);
            if (*end || v < 1 || v > (1L << 24) || nA >= 64) die_usage("--blocksizes: bad value '%s' (integers 1..2^24, at most 64)", t);
            As[nA++] = v;
        }
        free(dup);
        if (!nA) die_usage("--blocksizes: empty list");
    }
    /* the cases: pattern-major, then layout, variant, A */
    O.ncalls = 0;
    for (int pt = 0; pt < PAT_COUNT; pt++) {
        if (!in_list(patterns, dt_pattern_names[pt])) continue;
        for (int l = 0; l < L_COUNT; l++) {
            if (!in_list(layouts, dt_layout_names[l])) continue;
            for (int v = 1; v <= 2; v++) {
                if (!in_list(variants, vnames[v - 1])) continue;
                if ((l == L_CONTIG || l == L_ALTREP || l == L_ROWCOL) && v == 2) continue;
                for (int ia = 0; ia < (l == L_CONTIG ? 1 : nA); ia++) {
                    dtcase_t d = {pt, l, v, l == L_CONTIG ? 1 : As[ia], ""};
                    const char *why = dt_case_check(&d);
                    if (why) {
                        if (g_print) fprintf(stderr, "pgmpi-dtbench: note: %s variant %d A=%ld left out: %s\n",
                                             dt_layout_names[l], v, d.A, why);
                        continue;
                    }
                    if (O.ncalls >= MAXCALLS) die_usage("more than %d cases; measure fewer layouts or blocksizes per mpirun", MAXCALLS);
                    dt_case_name(&d);
                    g_cases[O.ncalls] = d;
                    call_t *c = &O.calls[O.ncalls++];
                    memset(c, 0, sizeof *c);
                    c->coll = -1; c->kind = K_DT; c->mpi_name = g_cases[O.ncalls - 1].name; c->dt = &g_cases[O.ncalls - 1];
                    for (int k = 0; k < dt_ndescriptions(); k++)
                        if (dt_layout_has(l, k) && in_list(descs, dt_description_name(k))) c->alg[c->nalg++] = k;
                    if (!c->nalg) O.ncalls--;
                }
            }
        }
    }
    if (O.ncalls == 0) die_usage("nothing to measure: no case has one of the --descriptions");
    snprintf(g_spec, sizeof g_spec, "patterns:%s;layouts:%s;variants:%s;blocksizes:%s", patterns, layouts, variants, blocksizes);
    snprintf(g_desc_arg, sizeof g_desc_arg, "%s", descs);
    snprintf(O.calls_arg, sizeof O.calls_arg, "%s", g_spec);
    snprintf(O.algs_arg, sizeof O.algs_arg, "%s", descs);
    g_header_extra = header_extra;
    g_count_column = 1;
    O.interleave_size = 0; O.buf_cell = 0;

    time_t start_wall = bench_mpi_init(&argc, &argv);
    if (in_list(patterns, "pingpong") && g_size < 2) die_usage("pingpong needs at least 2 ranks");
    layout_t L = layout();
    unsigned long long seed;
    int rc = bench_start(NULL, &seed);
    if (rc >= 0) return rc;
    g_dt = dtype_handle(O.dt);
    g_op = op_handle(O.op);
    alloc_buffers();
    if (g_rank == 0) write_header(argc, argv, start_wall, seed, &L);
    for (int i = 0; i < O.ncalls; i++) {
        const dtcase_t *d = &g_cases[i];
        char sig[17];
        dt_case_signature(d, sig);
        footer_add("#@pgmpi dtcase %s pattern=%s layout=%s variant=%d A=%ld basetype=%s%s%s\n", d->name,
                   dt_pattern_names[d->pattern], dt_layout_names[d->layout], d->variant, d->A, dtypes[O.dt].name,
                   sig[0] ? " signature=" : "", sig);
    }
    measure_all();
    dt_release();
    write_footer(start_wall);
    finish_output();
    free_buffers();
    free(rest);
    return 0;
}
