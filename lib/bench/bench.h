/* pgmpi-bench's shared declarations.  The program is split by concern, as bench_stats.c is:
 *   bench_options.c  command line (--help, parsing, the calls/algorithms/sizes lists, --nrep-from files)
 *   bench_plan.c     per (call, size) buffers and counts, memory and pool checks, --dry-run, nrep policy
 *   bench_measure.c  synchronisation, the calls themselves, the interleaved measurement rounds
 *   bench_serve.c    --serve: cells on request from standard input, one mpirun for a whole search
 *   bench_output.c   the raw file: header (#@key=value), rows, footer, metadata of the run
 *   bench_native.c   the MPI library's own algorithms: discovery (MPI_T), switching per measurement
 *   calls/<key>.c    one per collective of collectives.def (and MPI_Barrier): buffers, the call, its
 *                    expected result (bench_call.h)
 *   pgmpi_bench.c    main: the order of the steps above
 * Method and output format: lib/bench/README.md. */
#ifndef PGMPI_BENCH_H
#define PGMPI_BENCH_H
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "bench_stats.h"

#define BENCH_VERSION "1.0"
#define MAXCALLS 128
#define MAXALGS 96   /* default, mock-ups and native variants (with segment sizes) of one call */
/* Largest batch of rounds between two reductions of a fixed-count cell (bounds the time buffers). */
#define FIXED_BATCH_MAX 100000L
#define MAXSIZES 256

/* ------------------------------------------------------------------ the calls
 * kind: a collective of the library (its index in collectives.def), MPI_Barrier, or a datatype case.
 * What the benchmark does with each one is in calls/<key>.c (bench_call.h). */
enum kind {
#define PGMPI_COLLECTIVE(ID, key, mpi_name, rule) K_##ID,
#include "collectives.def"
#undef PGMPI_COLLECTIVE
    K_BARRIER, K_UNKNOWN,
    K_DT };                   /* a datatype case of pgmpi-dtbench (bench_datatypes.c) */

struct dtcase;

typedef struct {
    int coll;                 /* library collective index; -1 for MPI_Barrier */
    int kind;
    const char *mpi_name;
    int nalg;
    int alg[MAXALGS];         /* selected algorithm indices of the library (0 = default);
                                 K_DT: indices into the descriptions of bench_datatypes.c */
    const struct dtcase *dt;  /* K_DT only: pattern, layout, base type */
} call_t;

/* Pseudo-algorithm "tuned": nothing forced, the library follows its profiles
 * (PGMPITUNE_PROFILE_DIR) -- what a user gets; validation jobs measure it against "default". */
#define BUF_TOUCH_REPROMPI 2

#define ALG_TUNED (-1)
/* Pseudo-algorithm "default_control": the default measured a second time under its own label,
 * interleaved like any algorithm (a control arm: its ratio to "default" is a null ratio). */
#define ALG_CONTROL (-2)
/* The library's own algorithm "native:<name>[:seg=<bytes>]": alg = ALG_NATIVE0 - index into g_native. */
#define ALG_NATIVE0 (-16)

/* ------------------------------------------------------------------ datatypes and ops */
typedef struct { const char *name; size_t size; int cls; } dtinfo_t;   /* cls: 0 byte, 1 char, 2 int, 3 float */
extern const dtinfo_t dtypes[];
extern const int NDTYPES;
extern const char *opnames[];
#define NOPS 7
MPI_Datatype dtype_handle(int i);
MPI_Op op_handle(int i);
int kind_is_reduction(int k);

/* ------------------------------------------------------------------ options */
/* Process synchronisation (--proc-sync): two barriers with run-time = max over ranks of the local
 * durations; two on the global clock of bench_clock.c with run-time = max end - min start. */
enum { SYNC_DISSEM, SYNC_BARRIER, SYNC_WINDOW, SYNC_ROUNDTIME };
#define SYNC_ON_CLOCK(s) ((s) == SYNC_WINDOW || (s) == SYNC_ROUNDTIME)
extern const char *const sync_names[];   /* #@procsync values, by SYNC_* */
enum policy { P_FIXED, P_PREDICT, P_TIME, P_FROM };
enum { R_RSE = 1, R_COVMEAN = 2, R_COVMEDIAN = 4 };

typedef struct {
    /* what */
    call_t calls[MAXCALLS]; int ncalls;
    size_t req_sizes[MAXSIZES]; int nsizes;
    int barrier_rows;
    /* how many */
    int policy;
    long nrep;
    double budget;                 /* seconds per (call, size); 0 = none */
    int rules;                     /* R_* mask */
    double thr_rse, thr_covmean, thr_covmedian;
    long w_covmean, w_covmedian;
    long pmin, pmax, pstep;
    double t_rse1, t_rse2; long b1, b2, K, tmax, tmin1, tmax1; double tnrep1_given;
    const char *nrep_from;         /* --nrep-from files */
    /* how */
    int proc_sync;                 /* SYNC_*: the process synchronisation before every measurement */
    double window_sec, wait_sec;   /* --window-size, --wait-time (window) */
    long fitpoints, exchanges;     /* --fitpoints, --exchanges (the clock model of window and round-time) */
    double rt_multiplier;          /* --rt-multiplier: round-time's margin in agreement run-times */
    int start_reprompi;            /* --start-agreement=reprompi: ReproMPI's start messages (bench_clock.c) */
    int interleave_size;           /* 1: all calls of a size interleaved; 0: one (call, size) at a time */
    int buf_cell;                  /* 1 (default): buffers per (call, size); 0: once for the largest */
    long buf_align;                /* 0: malloc's own; else posix_memalign to this power of two */
    int buf_touch;                 /* 1: write the buffers before measuring; 0: leave calloc's pages;
                                      BUF_TOUCH_REPROMPI: per call, as ReproMPI initialises them */
    int check;                     /* check round before timing each cell */
    int order_rr;
    unsigned long long seed; int seed_given;
    int dt, op, root;
    /* output and metadata */
    const char *output;
    const char *machine, *module_name, *campaign;
    long mpirun_index;
    double mem_limit;              /* bytes per rank; 0 = MemAvailable / local ranks */
    int dry_run;
    int list_native;               /* --list-native */
    int serve;                     /* --serve: cells on request from standard input (serve_all) */
    /* for the header */
    char calls_arg[4096], algs_arg[4096], sizes_arg[4096];
} opts_t;

extern opts_t O;
extern int g_rank, g_size;
extern int g_print;            /* this process prints messages (rank 0, or before MPI_Init a guess) */
extern int g_mpi_up;

/* bench_options.c */
void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void parse_args(int argc, char **argv);
int rank_guess_before_init(void);
long nrep_lookup(const char *name, size_t bytes);
const char *alg_label(const call_t *c, int a);
void fmt_bytes(double b, char *buf, size_t len);

/* bench_plan.c */
typedef struct {
    size_t req, n;        /* requested and actual message bytes (collectives.def) */
    size_t count;         /* element count handed to the call (per block / per rank / whole) */
    size_t sbytes, rbytes;/* send / receive buffer bytes, maximum over ranks */
    size_t scratch;       /* mock-up scratch memory, maximum over the selected algorithms */
    int ok;               /* 0: does not fit an int count */
} cplan_t;
extern cplan_t g_plan[MAXCALLS][MAXSIZES];
extern char g_policy[512];
void plan_call(const call_t *c, size_t req, int p, cplan_t *cp);
void reserve_pools(void);
void check_plan(double *limit_out, size_t *maxs, size_t *maxr, size_t *maxscr, int *worst_size);
void check_nrep_from(void);
void check_pools(void);
void rounding_notes(char *buf, size_t len);
void dry_run(double limit, size_t ms, size_t mr, size_t msc, int wj);
void describe_policy(void);

/* bench_measure.c */
typedef struct {
    const call_t *call;
    cplan_t plan;
    int active;
    long done, target;           /* measurements per algorithm so far / at most */
    double elapsed;              /* global (max over ranks) seconds spent incl. synchronisation */
    const char *stop;            /* why it stopped */
    series_t s[MAXALGS];
    int skip[MAXALGS];           /* 1: failed the check round in this cell, not timed */
    long runs[MAXALGS];          /* executions in this cell (check, pilots, timed): evened out after it */
    long invalid[MAXALGS];       /* window / round-time: measurements a rank started late (not recorded) */
    long nrep_final;
    long row0[MAXALGS];          /* nrep index of each algorithm's first row here: --serve's commands and
                                    blocks on one cell continue one series (bench_serve.c), else 0 */
} cstate_t;

typedef struct {
    int record;                  /* write rows */
    int rules;                   /* R_* to check (0: fixed targets) */
    double thr_rse, thr_covmean, thr_covmedian;
    long w_covmean, w_covmedian, min, step;
    double budget;
} phase_t;
extern uint64_t rng_state;
extern MPI_Datatype g_dt;
extern MPI_Op g_op;
void alloc_buffers(void);
void free_buffers(void);
void buffer_page_offsets(long *s, long *r);
/* Rank 0's v[0..n) (n <= 8) to every rank; an Allreduce, never a Bcast (bench_measure.c says why). */
void share_from_rank0(unsigned long long *v, int n);
void fill_rcounts(const call_t *c, const cplan_t *cp);
void run_phase(cstate_t *cs, int nc, const phase_t *ph, char (*why)[256]);
void measure_cells(cstate_t *cs, int nc, char (*why)[256], const double *tnrep1, int (*passed)[MAXALGS]);
void measure_all(void);
int run_call_on(const call_t *c, const cplan_t *cp, char *sbuf, char *rbuf, MPI_Comm comm);

/* bench_native.c */
#define MAXNATIVE 256
#define NATIVE_MAXPER 32
enum { NATIVE_NONE, NATIVE_OMPI, NATIVE_MPICH, NATIVE_IMPI };   /* IMPI: presets fixed at MPI_Init */
typedef struct {
    int kind;                    /* K_* */
    char name[48];               /* the library's name */
    int value;                   /* the control variable's value that selects it */
    long seg;                    /* Open MPI segment size in bytes; -1: not given (the library's 0) */
    MPI_Comm comm;               /* Open MPI: the communicator created while it was forced; Intel MPI: the
                                    one tagged with its comm_id hint */
    int hint;                    /* Intel MPI: on a hinted communicator (0: forced at MPI_Init) */
    char label[96];              /* native:<name>[:seg=<bytes>] */
} native_t;
extern native_t g_native[MAXNATIVE];
extern int g_nnative, g_native_flavor;
extern int g_native_impi_hint;           /* Intel MPI: presets on hinted communicators (bench_native.c) */
extern char g_native_rules_file[4096];   /* Open MPI: the rules file of the environment, "" none */
void native_discover(void);
int native_add(int kind, const char *name, long seg);
int native_add_preset(int kind, const char *preset, char *why, size_t len);
int native_count(int kind);
const char *native_name(int kind, int j);
int native_has_seg(int kind);
void native_list(int kind, char *buf, size_t len);
void native_prepare(void);
void native_setup(void);
MPI_Comm native_select(const call_t *c, int alg);
void native_finish(void);
void native_print_listing(FILE *f);

/* bench_clock.c: the global clock (HCA's linear model against rank 0) and window / round-time */
double global_time(double local);
void clock_sync(void);
void clock_prepare(void);
double clock_check(void);
void clock_footer(const char *mpi_name, size_t n);
void window_begin(void);
int window_wait(long k);
int window_expired(long k, double t);
int roundtime_wait(void);
void roundtime_after(int late);
double roundtime_margin(void);
long clock_fits(void);

/* bench_check.c */
void check_cell(const call_t *c, const cplan_t *cp, char *sbuf, char *rbuf, int *ok);

/* bench_datatypes.c (pgmpi-dtbench): a K_DT call's types per size, built outside the timed regions */
void dt_prepare(const call_t *c, cplan_t *cp);        /* builds the descriptions for cp->n; skip flags */
int  dt_applies(const call_t *c, int a);              /* 0: description a does not exist at this size */
void dt_select(const call_t *c, int a);               /* the description the next dt_run uses */
int  dt_run(const call_t *c, char *sbuf, char *rbuf);
void dt_check_cell(const call_t *c, const cplan_t *cp, char *sbuf, char *rbuf, int *ok);
const char *dt_alg_label(const call_t *c, int a);
size_t dt_row_count(const call_t *c, int a);          /* the count argument of description a */

/* bench_output.c */
/* The layout the launcher made, measured (layout(): numbers on every rank, strings on rank 0); skipped:
 * the node-aware mock-ups not measured on one node. */
typedef struct { int nodes, ppn, ppn_min; const char *source; char *hosts, *placement; char skipped[2048]; } layout_t;
extern FILE *g_out;
void out_fail(void) __attribute__((noreturn));
int open_output(void);
void bench_quiet_finalize(void);
int check_error_detail(int rc, char *detail, size_t dl);
int check_verdict(const char *mpi_name, size_t n, const char *label, int code, const char *detail);
time_t bench_mpi_init(int *argc, char ***argv);
int bench_start(void (*more_checks)(void), unsigned long long *seed);
void write_header(int argc, char **argv, time_t start_wall, unsigned long long seed, const layout_t *L);
void write_row(const call_t *c, long idx, size_t n, double t, int a);
void serve_all(void);    /* bench_serve.c */
/* pgmpi-dtbench: extra header keys before the column line, and a count column in every row */
extern void (*g_header_extra)(void);
extern int g_count_column;
layout_t layout(void);
int layout_mismatch(const layout_t *L, char *why, size_t wl);
void footer_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void write_footer(time_t start_wall);
void finish_output(void);
#endif
