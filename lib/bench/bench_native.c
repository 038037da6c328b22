/* pgmpi-bench: the MPI library's own algorithms ("native:<name>[:seg=<bytes>]", see bench.h for the split).
 *
 * Discovery: the names and the values that select them come from the library through MPI_T, before
 * MPI_Init (so a bad name is refused before any communication):
 *   Open MPI  coll_tuned_<coll>_algorithm, an MPI_T enumeration (value 0 "ignore" = the library decides),
 *             coll_tuned_<coll>_algorithm_segmentsize for ":seg=";
 *   MPICH     MPIR_CVAR_<COLL>_INTRA_ALGORITHM, an int whose value is the position of the name in the
 *             variable's description ("auto" = 0); MPICH has no segment size for blocking algorithms.
 * `pgmpi-bench --list-native` prints what was found (pgmpi_formats.native reads it).
 *
 * Switching at run time, interleaved inside one mpirun:
 *   Open MPI  reads its forced algorithm when a communicator is created (coll/tuned's module enable), so
 *             every variant gets its own MPI_Comm_dup made while its values were written through MPI_T;
 *             coll_tuned_use_dynamic_rules must be 1 from the start (set before MPI_T/MPI_Init).  The
 *             default and the mock-ups keep MPI_COMM_WORLD.
 *   MPICH     reads MPIR_CVAR_<COLL>_INTRA_ALGORITHM at every call: each measurement writes the value
 *             it needs (auto for the default and the mock-ups) outside the timed region.
 *   Intel MPI builds its I_MPI_ADJUST_<COLL> selection once, at MPI_Init (its MPI_T alias
 *             MPIR_CVAR_USE_<COLL> takes writes that change no call: tests/bench/intel_switch_probe.py), so
 *             "native:<preset>" takes one of two ways, one per mpirun:
 *             - forced at launch (I_MPI_ADJUST_<COLL>=<preset>, no ranges): the call's only algorithm, on
 *               every communicator.  pgmpi-bench owns the label because it is the one process that sees
 *               both the variable the library read at MPI_Init and the rows it writes: the raw file says
 *               native:<p> only when preset p was forced, whoever launched it (the planner's preset mpiruns,
 *               scheduler/planner.py; a user by hand);
 *             - with I_MPI_ADJUST_<COLL> unset, several presets of one collective interleaved, each on a
 *               communicator of its own: native_prepare writes a tuning file (comm_id=<i> -> preset) for
 *               Intel MPI's MPI_Init, native_setup tags communicator i with the "comm_id" hint and aborts
 *               unless Intel MPI kept it.  MPI_COMM_WORLD then runs the file's last preset, so nothing else
 *               is measured on that collective (bench_options.c).
 *             Either way the default is measured in another mpirun with the same --mpirun-index, and the
 *             analysis pairs them. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "pgmpitune.h"
#include "bench.h"

native_t g_native[MAXNATIVE];
int g_nnative;
int g_native_impi_hint;          /* Intel MPI: presets on communicators tagged with the "comm_id" hint */
static char g_impi_file[4096];   /* the tuning file written for them (removed after MPI_Init) */
int g_native_flavor;             /* NATIVE_NONE until discovery */

typedef struct {
    const char *key;             /* collectives.def key */
    char ompi[48], mpich[48];    /* coll_tuned_<ompi>_algorithm, MPIR_CVAR_<MPICH>_INTRA_ALGORITHM */
} native_names_t;

/* Both libraries name a collective's control variables after its MPI name: MPI_Reduce_scatter_block ->
 * coll_tuned_reduce_scatter_block_algorithm, MPIR_CVAR_REDUCE_SCATTER_BLOCK_INTRA_ALGORITHM. */
static native_names_t KINDS[K_UNKNOWN];
static void native_names(void)
{
    for (int k = 0; k < K_UNKNOWN; k++) {
        const char *mpi = k == K_BARRIER ? "MPI_Barrier" : pgmpitune_collective_mpi_name(k);
        KINDS[k].key = k == K_BARRIER ? "barrier" : pgmpitune_collective_key(k);
        size_t i = 0;
        for (const char *s = mpi + 4; *s && i + 1 < sizeof KINDS[k].ompi; s++, i++) {
            KINDS[k].ompi[i] = (char)tolower((unsigned char)*s);
            KINDS[k].mpich[i] = (char)toupper((unsigned char)*s);
        }
        KINDS[k].ompi[i] = KINDS[k].mpich[i] = 0;
    }
}

/* per kind: what the library offers */
typedef struct {
    int cvar, segcvar;           /* MPI_T indices, -1 when absent */
    int n;
    char names[NATIVE_MAXPER][48];
    int values[NATIVE_MAXPER];
} offer_t;
static offer_t g_offer[K_UNKNOWN];
static int g_mpit_up;

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

/* MPICH's description lists "<name> <padding>- <text>" items glued together without separators, e.g.
 * "...select bcast algorithmauto - Internal ...FILE)binomial      - Force Binomial Treenb            - ...":
 * item 0 is always "auto", whose text ends in ')', so item 1's name is the identifier before its
 * padding; every later item is padded to the same width (name + spaces), which gives its name's length.
 * tests/python/bench/test_native.py checks every name against the library (set by name in the
 * environment, read back through MPI_T as its position). */
static void parse_mpich_desc(const char *desc, offer_t *o)
{
    long width = -1;
    for (const char *p = strstr(desc, " - "); p && o->n < NATIVE_MAXPER; p = strstr(p + 3, " - ")) {
        const char *e = p;
        while (e > desc && e[-1] == ' ') e--;
        long pad = (long)(p - e) + 1;               /* spaces up to the dash */
        const char *b = e;
        while (b > desc && (isalnum((unsigned char)b[-1]) || b[-1] == '_')) b--;
        if (o->n == 0) {                            /* "...algorithmauto": the header's last word */
            if (e - b > 9 && strncmp(b, "algorithm", 9) == 0) b += 9;
        } else if (o->n == 1) {
            width = (long)(e - b) + pad;
        } else if (width > pad && (long)(e - b) >= width - pad) {
            b = e - (width - pad);
        }
        size_t len = (size_t)(e - b);
        if (len == 0 || len >= sizeof o->names[0]) return;
        memcpy(o->names[o->n], b, len);
        o->names[o->n][len] = 0;
        o->values[o->n] = o->n;
        o->n++;
    }
}

/* Open MPI: the rules file of the environment (coll_tuned_dynamic_rules_filename).  It takes precedence
 * over forced algorithms on every communicator and is read-only through MPI_T, so forced variants cannot
 * be measured next to it in one mpirun (parse_native refuses). */
static void read_rules_file_name(void)
{
    int i = cvar_index("coll_tuned_dynamic_rules_filename");
    MPI_T_cvar_handle h; int cnt = 0;
    if (i < 0 || MPI_T_cvar_handle_alloc(i, NULL, &h, &cnt) != MPI_SUCCESS) return;
    char cur[4096] = "";
    if (cnt > 0 && cnt <= (int)sizeof cur && MPI_T_cvar_read(h, cur) == MPI_SUCCESS) {
        cur[sizeof cur - 1] = 0;
        snprintf(g_native_rules_file, sizeof g_native_rules_file, "%s", cur);
    }
    MPI_T_cvar_handle_free(&h);
}

void native_discover(void)
{
    if (g_mpit_up || g_native_flavor == NATIVE_IMPI) return;
    native_names();
    for (int k = 0; k < K_UNKNOWN; k++) g_offer[k].cvar = g_offer[k].segcvar = -1;
    /* Intel MPI offers nothing through MPI_T, and MPI_T would read its environment before native_prepare sets
     * I_MPI_TUNING (MPI_Get_library_version may be called before MPI_Init) */
    char ver[MPI_MAX_LIBRARY_VERSION_STRING + 1] = ""; int vl = 0;
    MPI_Get_library_version(ver, &vl);
    if (strstr(ver, "Intel(R) MPI Library")) { g_native_flavor = NATIVE_IMPI; return; }
    int prov;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &prov) != MPI_SUCCESS) return;
    g_mpit_up = 1;
    read_rules_file_name();
    for (int k = 0; k < K_UNKNOWN; k++) {
        offer_t *o = &g_offer[k];
        o->cvar = o->segcvar = -1;
        o->n = 0;
        char want[160];
        snprintf(want, sizeof want, "coll_tuned_%s_algorithm", KINDS[k].ompi);
        int i = cvar_index(want);
        if (i >= 0) {
            g_native_flavor = NATIVE_OMPI;
            char name[256], desc[8]; int nl = sizeof name, dl = sizeof desc, verb, bind, scope;
            MPI_Datatype dt; MPI_T_enum et;
            MPI_T_cvar_get_info(i, name, &nl, &verb, &dt, &et, desc, &dl, &bind, &scope);
            if (et == MPI_T_ENUM_NULL) continue;
            int ni = 0; char en[128]; int el = sizeof en;
            MPI_T_enum_get_info(et, &ni, en, &el);
            o->cvar = i;
            for (int j = 0; j < ni && o->n < NATIVE_MAXPER; j++) {
                int v; char item[48]; int il = sizeof item;
                if (MPI_T_enum_get_item(et, j, &v, item, &il) != MPI_SUCCESS || v == 0) continue;   /* 0: ignore */
                snprintf(o->names[o->n], sizeof o->names[0], "%s", item);
                o->values[o->n++] = v;
            }
            snprintf(want, sizeof want, "coll_tuned_%s_algorithm_segmentsize", KINDS[k].ompi);
            o->segcvar = cvar_index(want);
            continue;
        }
        snprintf(want, sizeof want, "MPIR_CVAR_%s_INTRA_ALGORITHM", KINDS[k].mpich);
        i = cvar_index(want);
        if (i >= 0) {
            g_native_flavor = NATIVE_MPICH;
            char name[256], desc[4096]; int nl = sizeof name, dl = sizeof desc, verb, bind, scope;
            MPI_Datatype dt; MPI_T_enum et;
            MPI_T_cvar_get_info(i, name, &nl, &verb, &dt, &et, desc, &dl, &bind, &scope);
            o->cvar = i;
            offer_t tmp = {0};
            parse_mpich_desc(desc, &tmp);
            /* item 0 is "auto" (the library decides): not an algorithm of its own */
            for (int j = 1; j < tmp.n; j++) {
                memcpy(o->names[o->n], tmp.names[j], sizeof o->names[0]);
                o->values[o->n++] = tmp.values[j];
            }
        }
    }
}

/* Intel MPI: the variant "native:<preset>" of a call, when I_MPI_ADJUST_<COLL> of the environment is exactly
 * that preset (what Intel MPI read at MPI_Init); else -1 with the reason in why. */
int native_add_preset(int kind, const char *preset, char *why, size_t len)
{
    if (kind < 0 || kind >= K_UNKNOWN) return -1;
    char var[80];
    snprintf(var, sizeof var, "I_MPI_ADJUST_%s", KINDS[kind].mpich);
    const char *set = getenv(var);
    int digits = *preset != 0;
    for (const char *s = preset; *s; s++) digits &= isdigit((unsigned char)*s) != 0;
    if (!digits || atoi(preset) < 1) {
        snprintf(why, len, "Intel MPI's algorithms are presets: native:<number> (impi_info -v %s lists them)", var);
        return -1;
    }
    if (!set && getenv("I_MPI_TUNING")) {
        snprintf(why, len, "native:%s with %s unset runs on a communicator of its own through a tuning file "
                 "pgmpi-bench writes as I_MPI_TUNING, but the environment already sets I_MPI_TUNING='%s'",
                 preset, var, getenv("I_MPI_TUNING"));
        return -1;
    }
    if (set && strcmp(set, preset) != 0) {
        snprintf(why, len, "Intel MPI reads %s once at MPI_Init, so native:%s needs the launch's environment to "
                 "force it (%s=%s, no ranges; it is '%s'), or %s unset (a communicator per preset), the default "
                 "measured in another mpirun", var, preset, var, preset, set, var);
        return -1;
    }
    for (int v = 0; v < g_nnative; v++)
        if (g_native[v].hint != !set) {
            snprintf(why, len, "native:%s: %s, while %s forced at MPI_Init: one mpirun takes one way (a "
                     "communicator per preset needs every collective's I_MPI_ADJUST_<COLL> unset)", preset,
                     set ? "forced at MPI_Init" : "on a communicator of its own",
                     g_native[v].label);
            return -1;
        }
    for (int v = 0; v < g_nnative && !set; v++)
        if (g_native[v].kind != kind) {
            /* tests/bench/intel_switch_probe.py: with two collectives in the file, Intel MPI 2021.13 ran allreduce's
             * comm_id=3 entry as neither preset 3 nor the default (a third fingerprint) */
            die_usage("--algorithms: native:%s on %s's own communicator: one collective per mpirun (%s already "
                      "has %s; Intel MPI 2021.13 confuses a tuning file's comm_id entries of two collectives): "
                      "measure each collective's presets in an mpirun of its own", preset,
                      pgmpitune_collective_mpi_name(kind), pgmpitune_collective_mpi_name(g_native[v].kind),
                      g_native[v].label);
        }
    if (!set) g_native_impi_hint = 1;
    for (int v = 0; v < g_nnative; v++)
        if (g_native[v].kind == kind && g_native[v].value == atoi(preset)) return v;
    if (g_nnative >= MAXNATIVE) die_usage("too many native algorithm variants (at most %d)", MAXNATIVE);
    native_t *n = &g_native[g_nnative];
    n->kind = kind; n->value = atoi(preset); n->seg = -1; n->comm = MPI_COMM_NULL; n->hint = !set;
    snprintf(n->name, sizeof n->name, "%s", preset);
    snprintf(n->label, sizeof n->label, "native:%s", preset);
    return g_nnative++;
}

int native_has_seg(int kind) { return kind >= 0 && kind < K_UNKNOWN && g_offer[kind].segcvar >= 0; }

/* "name, name, ..." of one kind into buf */
void native_list(int kind, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = 0;
    if (kind < 0 || kind >= K_UNKNOWN) return;
    for (int j = 0; j < g_offer[kind].n && o < len; j++)
        o += snprintf(buf + o, len - o, "%snative:%s", j ? ", " : "", g_offer[kind].names[j]);
}

/* Adds the variant (kind, name, seg) unless present; returns its index, -1 when the library has no
 * such algorithm for this kind. */
int native_add(int kind, const char *name, long seg)
{
    if (kind < 0 || kind >= K_UNKNOWN) return -1;
    const offer_t *o = &g_offer[kind];
    int j = 0;
    while (j < o->n && strcmp(o->names[j], name) != 0) j++;
    if (j == o->n) return -1;
    for (int v = 0; v < g_nnative; v++)
        if (g_native[v].kind == kind && g_native[v].value == o->values[j] && g_native[v].seg == seg) return v;
    if (g_nnative >= MAXNATIVE) die_usage("too many native algorithm variants (at most %d)", MAXNATIVE);
    native_t *n = &g_native[g_nnative];
    n->kind = kind; n->value = o->values[j]; n->seg = seg; n->comm = MPI_COMM_NULL;
    snprintf(n->name, sizeof n->name, "%s", name);
    if (seg >= 0) snprintf(n->label, sizeof n->label, "native:%s:seg=%ld", name, seg);
    else snprintf(n->label, sizeof n->label, "native:%s", name);
    return g_nnative++;
}

int native_count(int kind) { return kind >= 0 && kind < K_UNKNOWN ? g_offer[kind].n : 0; }
const char *native_name(int kind, int j) { return g_offer[kind].names[j]; }

static int cvar_write(int idx, int value)
{
    MPI_T_cvar_handle h; int cnt;
    if (MPI_T_cvar_handle_alloc(idx, NULL, &h, &cnt) != MPI_SUCCESS) return 0;
    int rc = MPI_T_cvar_write(h, &value);
    MPI_T_cvar_handle_free(&h);
    return rc == MPI_SUCCESS;
}

char g_native_rules_file[4096];

/* Intel MPI, hinted presets (g_native_impi_hint), before MPI_Init: a tuning file whose entry comm_id=<v+1>
 * forces variant v's preset on its collective, read by Intel MPI at MPI_Init as I_MPI_TUNING; with
 * I_MPI_TUNING_AUTO_COMM_USER=1 it keeps the comm_id that native_setup gives each variant's communicator
 * (MPI_Comm_dup_with_info, info key "comm_id").  MPI_COMM_WORLD and every other communicator run the file's
 * last entry of such a collective, not the default, so nothing else is measured on it (bench_options.c).
 * tests/bench/intel_switch_probe.py and scheduler/README.md, "Switching inside one process". */
static void remove_impi_file(void) { if (g_impi_file[0]) unlink(g_impi_file); }

void native_prepare(void)
{
    if (!g_native_impi_hint) return;
    const char *tmp = getenv("TMPDIR");
    snprintf(g_impi_file, sizeof g_impi_file, "%s/pgmpi-bench-impi-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(g_impi_file);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) die_usage("native:<preset>: cannot write Intel MPI's tuning file %s", g_impi_file);
    fprintf(f, "{");
    int first = 1;
    for (int k = 0; k < K_UNKNOWN; k++) {
        int any = 0;
        for (int v = 0; v < g_nnative; v++) {
            if (g_native[v].kind != k) continue;
            if (!any) fprintf(f, "%s\"coll=%s\": {\"ppn=-1\": {\"comm_size=-1\": {", first ? "" : ", ",
                              (k == K_BARRIER ? "MPI_Barrier" : pgmpitune_collective_mpi_name(k)) + 4);
            fprintf(f, "%s\"comm_id=%d\": {\"msg_size=-1\": {\"%s=%d\": {}}}", any ? ", " : "", v + 1,
                    KINDS[k].mpich, g_native[v].value);
            any = 1;
        }
        if (any) { fprintf(f, "}}}"); first = 0; }
    }
    fprintf(f, "}\n");
    if (fclose(f) != 0) die_usage("native:<preset>: cannot write Intel MPI's tuning file %s", g_impi_file);
    atexit(remove_impi_file);                      /* also when a later check refuses the run */
    setenv("I_MPI_TUNING", g_impi_file, 1);
    setenv("I_MPI_TUNING_AUTO_COMM_USER", "1", 1);
}

/* After MPI_Init, collectively: Open MPI's communicators, one per variant (each created while its
 * values were written through MPI_T). */
void native_setup(void)
{
    if (g_native_impi_hint) {
        remove_impi_file();                        /* read at MPI_Init */
        for (int v = 0; v < g_nnative; v++) {
            native_t *n = &g_native[v];
            char id[16], got[64] = "";
            int flag = 0;
            MPI_Info info, back;
            snprintf(id, sizeof id, "%d", v + 1);
            MPI_Info_create(&info);
            MPI_Info_set(info, "comm_id", id);
            PMPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &n->comm);
            MPI_Info_free(&info);
            PMPI_Comm_get_info(n->comm, &back);
            MPI_Info_get(back, "comm_id", sizeof got - 1, got, &flag);
            MPI_Info_free(&back);
            if (!flag || strcmp(got, id) != 0) {   /* the preset would not run: never label its rows */
                fprintf(stderr, "pgmpi-bench: error: rank %d: Intel MPI did not keep %s's communicator hint "
                        "comm_id=%s (it reads '%s'; I_MPI_TUNING_AUTO_COMM_USER)\n", g_rank, n->label, id, got);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
        return;
    }
    if (!g_nnative || g_native_flavor != NATIVE_OMPI) return;
    for (int v = 0; v < g_nnative; v++) {
        native_t *n = &g_native[v];
        const offer_t *o = &g_offer[n->kind];
        int ok = cvar_write(o->cvar, n->value);
        if (ok && o->segcvar >= 0) ok = cvar_write(o->segcvar, n->seg > 0 ? (int)n->seg : 0);
        if (!ok) {
            fprintf(stderr, "pgmpi-bench: error: rank %d: MPI_T refused to write %s's control variables\n", g_rank, n->label);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        PMPI_Comm_dup(MPI_COMM_WORLD, &n->comm);
        cvar_write(o->cvar, 0);
        if (o->segcvar >= 0) cvar_write(o->segcvar, 0);
    }
}

/* Before a call (outside the timed region): the communicator the algorithm alg of c runs on. */
MPI_Comm native_select(const call_t *c, int alg)
{
    if (!g_nnative) return MPI_COMM_WORLD;
    if (alg > ALG_NATIVE0) {                       /* default, mock-ups, tuned, control */
        if (g_native_flavor == NATIVE_MPICH && c->kind < K_UNKNOWN && g_offer[c->kind].cvar >= 0)
            cvar_write(g_offer[c->kind].cvar, 0);
        return MPI_COMM_WORLD;
    }
    native_t *n = &g_native[ALG_NATIVE0 - alg];
    if (g_native_flavor == NATIVE_IMPI)    /* its hinted communicator, or forced at MPI_Init on every one */
        return g_native_impi_hint ? n->comm : MPI_COMM_WORLD;
    if (g_native_flavor == NATIVE_MPICH) {
        cvar_write(g_offer[n->kind].cvar, n->value);
        return MPI_COMM_WORLD;
    }
    return n->comm;
}

void native_finish(void)
{
    for (int v = 0; v < g_nnative; v++)
        if (g_native[v].comm != MPI_COMM_NULL) PMPI_Comm_free(&g_native[v].comm);
    if (g_mpit_up) MPI_T_finalize();
    g_mpit_up = 0;
}

/* --list-native: one line per algorithm, read by pgmpi_formats.native.parse_listing:
 *   cvar <flavor> <collective key> <control variable> <its current value>
 *   native <flavor> <collective key> <name> <value> <control variable> <segment-size variable or ->  */
void native_print_listing(FILE *f)
{
    /* Intel MPI lists "none": no algorithm of its own through MPI_T (its presets: impi_info -v) */
    const char *fl = g_native_flavor == NATIVE_OMPI ? "openmpi" : g_native_flavor == NATIVE_MPICH ? "mpich" : "none";
    fprintf(f, "#@native_flavor=%s\n", fl);
    char ver[MPI_MAX_LIBRARY_VERSION_STRING + 1] = ""; int vl = 0;
    MPI_Get_library_version(ver, &vl);
    ver[strcspn(ver, "\r\n")] = 0;
    fprintf(f, "#@mpi_library_string=%s\n", ver);
    for (int k = 0; k < K_UNKNOWN; k++) {
        const offer_t *o = &g_offer[k];
        if (o->cvar < 0) continue;
        char cv[256], sv[256] = "-";
        if (g_native_flavor == NATIVE_OMPI) {
            snprintf(cv, sizeof cv, "coll_tuned_%s_algorithm", KINDS[k].ompi);
            if (o->segcvar >= 0) snprintf(sv, sizeof sv, "coll_tuned_%s_algorithm_segmentsize", KINDS[k].ompi);
        } else {
            snprintf(cv, sizeof cv, "MPIR_CVAR_%s_INTRA_ALGORITHM", KINDS[k].mpich);
        }
        int cur = -1;
        MPI_T_cvar_handle h; int cnt;
        if (MPI_T_cvar_handle_alloc(o->cvar, NULL, &h, &cnt) == MPI_SUCCESS) { MPI_T_cvar_read(h, &cur); MPI_T_cvar_handle_free(&h); }
        fprintf(f, "cvar %s %s %s %d\n", fl, KINDS[k].key, cv, cur);
        for (int j = 0; j < o->n; j++)
            fprintf(f, "native %s %s %s %d %s %s\n", fl, KINDS[k].key, o->names[j], o->values[j], cv, sv);
    }
}
