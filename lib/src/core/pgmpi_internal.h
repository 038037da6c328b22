/* libpgmpitune core internals shared by the core's files and pgmpitune-check.
 * Nothing here is used on the hot path except the read-only tables of runtime.c. */
#ifndef PGMPI_INTERNAL_H
#define PGMPI_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pgmpitune_core.h"

/* Internal to libpgmpitune: not exported (no PLT on the call path, no name clashes). */
#pragma GCC visibility push(hidden)

/* ---- registry (registry.c) ------------------------------------------------ */
extern const pgmpi_coll_desc_t *const pgmpi_descs[PGMPI_NCOLL];
extern const char *const pgmpi_coll_keys[PGMPI_NCOLL];
extern const char *const pgmpi_coll_mpi_names[PGMPI_NCOLL];

/* Usage records (usage.c): on when PGMPITUNE_USAGE_DIR is set; written at MPI_Finalize. */
int  pgmpi_usage_setup(int rank, int size);
void pgmpi_usage_finalize(void);
/* "allreduce", "MPI_Allreduce", PGMPITuneLib's prefix ("reduce_scatter_block"); case-insensitive */
int  pgmpi_coll_lookup(const char *s, size_t len);
int  pgmpi_alg_lookup(int c, const char *s, size_t len);
/* "a, b, c" list of valid algorithm names of c (for messages) */
void pgmpi_alg_list(int c, char *buf, size_t cap);
void pgmpi_coll_list(char *buf, size_t cap);

/* ---- diagnostics ---------------------------------------------------------- */
/* One message: "<file>:<line>: <text>" (line 0 = whole file). */
typedef void (*pgmpi_diag_fn)(void *ctx, int is_error, const char *file, int line, const char *text);

/* ---- the MPI library's own decision file (native_env.c, rule 8) ----------------------------------- */
/* Before PMPI_Init: the I_MPI_ADJUST_<COLL> variables of $PGMPITUNE_NATIVE_IMPI whose ranges hold this job's
 * size (the launcher's: PMI_SIZE, else Slurm's PMIx step; launcher_size), only those ranges, never over a
 * variable already set.  Returns how many it set, -1 after one message through diag (nothing set). */
int  pgmpi_native_env_apply(pgmpi_diag_fn diag, void *ctx);

/* ---- datatype profiles (profile_dtprf.c reads *.dtprf files, datatypes.c applies them) ---------- */
/* The descriptions a GL4 replacement can be built as from a flattened type map (datatypes.c). */
#define PGMPI_DT_DESCRIPTIONS(X)                 \
    X(PGMPI_DT_CONTIGUOUS, "contiguous")         \
    X(PGMPI_DT_VECTOR, "vector")                 \
    X(PGMPI_DT_INDEXED_BLOCK, "indexed_block")   \
    X(PGMPI_DT_INDEXED, "indexed")               \
    X(PGMPI_DT_HINDEXED, "hindexed")             \
    X(PGMPI_DT_STRUCT_FLAT, "struct_flat")       \
    X(PGMPI_DT_CONTIG, "contig")
enum {
#define PGMPI_DT_DESC(id, name) id,
    PGMPI_DT_DESCRIPTIONS(PGMPI_DT_DESC)
#undef PGMPI_DT_DESC
    PGMPI_DT_NDESC
};
extern const char *const pgmpi_dt_description_names[PGMPI_DT_NDESC];
typedef struct {
    uint64_t sig;      /* layout signature (datatypes.c) */
    int      desc;     /* PGMPI_DT_* */
} pgmpi_dtrule_t;
#define PGMPI_DT_MAX_RULES 1024
/* Replacements alive at once, at most: they are MPI types too, and MPICH 4.0.2 mishandles newly committed
 * types once about 770 derived types are alive; the library must not push an application toward that. */
#define PGMPI_DT_MAX_LIVE 64
void pgmpi_datatypes_setup(const pgmpi_dtrule_t *rules, int n);
void pgmpi_datatypes_report(FILE *out);
void pgmpi_datatypes_teardown(void);

/* ---- profiles (profile_prf.c reads one, profile_set.c a directory's; shared: profile_text.h) ---- */
typedef struct {
    uint64_t lo, hi;   /* inclusive byte range */
    int      alg;      /* index into the collective's algs (0 = default) */
} pgmpi_range_t;

typedef struct {
    int            coll;        /* pgmpi_coll_t */
    int            nprocs;      /* line 2 */
    int            plo, phi;    /* process-count range (nprocs, nprocs without extension) */
    int            version;     /* #@pgmpi profile_version, 0 = none (a genuine PGMPITuneLib file); the
                                 * message sizes mean the same either way (pgmpi_profile_key_bytes) */
    int            lnodes, lppn;/* #@pgmpi layout <nodes>x<ppn>: only communicators of that layout; 0 = any */
    int            nranges;
    pgmpi_range_t *ranges;      /* sorted by lo, non-overlapping */
    /* Search index (pgmpi_profile_find_alg): message sizes are cut into log-linear buckets (each
     * power-of-two octave into 2^bucket_bits equal parts); bucket_first[b] is the number of ranges
     * with lo <= the first size of bucket b, for b = 0 .. nbuckets. */
    uint32_t      *bucket_first;
    size_t         nbuckets;
    unsigned       bucket_bits;
    char          *file;        /* for messages */
    int            line;        /* line of the MPI name */
} pgmpi_profile_t;

/* Parse one profile held in text[0..len). Returns 0 and fills *out (ranges malloc'd), or -1 after
 * reporting exactly one error through diag. Notes (unknown extension keys) go through diag too. */
int  pgmpi_profile_parse(const char *file, const char *text, size_t len, pgmpi_profile_t *out,
                         pgmpi_diag_fn diag, void *ctx);
void pgmpi_profile_free(pgmpi_profile_t *p);

/* A set of profiles, per collective sorted by plo, process ranges non-overlapping; the profiles with a
 * layout apart (lprofs: one per layout, looked up before profs for a communicator of that layout). */
typedef struct {
    pgmpi_profile_t *profs[PGMPI_NCOLL];
    int              nprofs[PGMPI_NCOLL];
    pgmpi_profile_t *lprofs[PGMPI_NCOLL];
    int              nlprofs[PGMPI_NCOLL];
    pgmpi_dtrule_t  *dtrules;    /* the *.dtprf files' GL4 replacements, signatures unique */
    int              ndtrules, ndtfiles;
} pgmpi_profset_t;
/* Adds (takes ownership) or rejects with one error through diag (then frees p). 0 / -1. */
int  pgmpi_profset_add(pgmpi_profset_t *s, pgmpi_profile_t *p, pgmpi_diag_fn diag, void *ctx);
void pgmpi_profset_free(pgmpi_profset_t *s);
const pgmpi_profile_t *pgmpi_profset_find(const pgmpi_profset_t *s, int c, int p);
int  pgmpi_profile_find_alg(const pgmpi_profile_t *p, uint64_t n);
/* The message size a .prf file is keyed on, from the library's n (collectives.def). One meaning for every
 * file, whoever wrote it: PGMPITuneLib keys MPI_Reduce_scatter_block on the block each process receives
 * (recvcount x type size), where n is the whole vector (block x p); every other collective's file size is
 * n. The one conversion in C (inline: it is on the tuned call path); lib/python/pgmpi_formats/prf.py makes
 * the same in Python. */
static inline uint64_t pgmpi_profile_key_bytes(int c, size_t n, int p)
{
    return (c == PGMPI_COLL_REDUCE_SCATTER_BLOCK && p > 0) ? (uint64_t)n / (uint64_t)p : (uint64_t)n;
}

/* Directory blob: the *.prf files of a directory (name order), as records
 *   <u32 name length><name><u64 text length><text>
 * so rank 0 can read and broadcast it. Returns 0, or -1 with a message in err. */
int  pgmpi_read_profile_dir(const char *dir, char **blob, size_t *len, char *err, size_t errcap);
int  pgmpi_read_file(const char *path, char **text, size_t *len, size_t max);
/* Parses every record of a blob into s; returns the number of bad files. */
/* A datatype profile (*.dtprf; lib/docs/profile-format.md): its rules appended to s, or -1 after
 * reporting one error (the whole file is ignored then; the rest of the set still loads). */
int  pgmpi_dtprofile_parse(const char *file, const char *text, size_t len, pgmpi_profset_t *s,
                           pgmpi_diag_fn diag, void *ctx);
int  pgmpi_is_dtprofile_name(const char *path);   /* *.dtprf */
int  pgmpi_profset_load_blob(pgmpi_profset_t *s, const char *blob, size_t len,
                             pgmpi_diag_fn diag, void *ctx);

/* ---- options (options.c) -------------------------------------------------- */
typedef struct {
    int   forced[PGMPI_NCOLL];   /* -1 = not forced */
    char *ppath;                 /* --ppath= (argv or PGMPI_PARAMS), malloc'd or NULL */
    char *config;                /* --config= */
    int   nerrors;
    char  errors[8][512];        /* first errors, for rank 0's message */
} pgmpi_options_t;

void pgmpi_options_init(pgmpi_options_t *o);
void pgmpi_options_free(pgmpi_options_t *o);
/* One `--module=` value (without the prefix), either form. Returns 0 or -1 (error recorded in o). */
int  pgmpi_options_module(pgmpi_options_t *o, const char *spec, const char *origin);
/* One argv-like token; returns 1 if it is ours (--module=, --ppath=, --config=), else 0. */
int  pgmpi_options_token(pgmpi_options_t *o, const char *tok, const char *origin);
void pgmpi_options_from_params(pgmpi_options_t *o, const char *params);   /* PGMPI_PARAMS */
void pgmpi_options_from_modules(pgmpi_options_t *o, const char *mods);    /* PGMPITUNE_MODULES */
/* Parses and REMOVES our tokens from argv (argv[0] kept; argv[*argc] = NULL afterwards). */
void pgmpi_options_from_argv(pgmpi_options_t *o, int *argc, char ***argv);

/* Config file text -> pool sizes (unchanged where absent/bad; bad values reported through diag). */
void pgmpi_config_parse(const char *file, const char *text, size_t len, size_t *msg_bytes,
                        size_t *int_bytes, pgmpi_diag_fn diag, void *ctx);
/* Parses a size value; 0 on success. */
int  pgmpi_parse_size(const char *s, size_t len, uint64_t *out);

#define PGMPI_DEFAULT_MSG_POOL ((size_t)100000000)
#define PGMPI_DEFAULT_INT_POOL ((size_t)200000)

#pragma GCC visibility pop

#endif
