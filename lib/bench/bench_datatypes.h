/* pgmpi-dtbench's cases (bench_datatypes.c): patterns, layouts and the helpers its main uses. */
#ifndef PGMPI_BENCH_DATATYPES_H
#define PGMPI_BENCH_DATATYPES_H
#include <stddef.h>

enum { PAT_PINGPONG, PAT_BCAST, PAT_ALLGATHER, PAT_COUNT };
enum { L_CONTIG, L_TILED, L_BLOCK, L_BUCKET, L_ALTERNATING, L_ALTREP, L_ROWCOL, L_COUNT };
extern const char *const dt_layout_names[L_COUNT];
extern const char *const dt_pattern_names[PAT_COUNT];

/* a rowcol matrix grows with n x A: cells whose whole-message extent exceeds this are skipped */
#define DT_MAX_EXTENT ((size_t)64 << 20)

typedef struct dtcase {
    int pattern, layout, variant;   /* variant: table 2 of the paper (1 or 2) */
    long A;                         /* blocksize parameter */
    char name[96];                  /* the raw format's test name: dt_<pattern>_<base>_<layout>[_v<variant>]_a<A> */
} dtcase_t;

int dt_ndescriptions(void);
const char *dt_description_name(int d);
const char *dt_description_what(int d);
int dt_description_lookup(const char *name);
int dt_layout_has(int layout, int d);
int dt_reference(int layout);
const char *dt_case_check(const dtcase_t *d);    /* NULL, or why the parameters make no layout */
void dt_case_name(dtcase_t *d);
void dt_case_signature(const dtcase_t *d, char hex[17]);   /* the typed description's block type */
void dt_plan(const call_t *c, size_t req, int p, cplan_t *cp);
void dt_release(void);
#endif
