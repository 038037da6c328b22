/* What the profile readers share (profile_text.c): diagnostics with file:line, a line cursor, tokens.
 * The readers: profile_prf.c (PGMPITuneLib .prf + our #@pgmpi extensions), profile_set.c (the set of
 * a directory's profiles), profile_dtprf.c (datatype profiles). lib/docs/profile-format.md. */
#ifndef PGMPI_PROFILE_TEXT_H
#define PGMPI_PROFILE_TEXT_H
#include <string.h>

#include "pgmpi_internal.h"

#define MAX_PROFILE_BYTES ((size_t)64 << 20)

typedef struct {
    const char *file;
    pgmpi_diag_fn diag;
    void *ctx;
} diag_t;

/* An error (returns -1) or a note at file:line through the caller's diagnostic function. */
PGMPI_INTERNAL int text_fail(const diag_t *d, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
PGMPI_INTERNAL void text_note(const diag_t *d, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static inline int is_blank(char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f'; }

/* A line cursor over the text. */
typedef struct {
    const char *p, *end;
    int lineno;
    const char *ls, *le;   /* current line, without '\n' */
} lines_t;

static inline int next_line(lines_t *L)
{
    if (L->p >= L->end) return 0;
    L->ls = L->p;
    const char *nl = memchr(L->p, '\n', (size_t)(L->end - L->p));
    L->le = nl ? nl : L->end;
    L->p = nl ? nl + 1 : L->end;
    L->lineno++;
    return 1;
}

/* Token reader within [s, e). Returns token start and sets *tl; NULL at end of line or '#'. */
PGMPI_INTERNAL const char *text_token(const char **s, const char *e, size_t *tl);
/* Whole-token signed integer: 0, or -1 when it is not one. */
PGMPI_INTERNAL int text_int(const char *t, size_t l, long long *v);
PGMPI_INTERNAL int text_has_suffix(const char *nm, const char *suffix);
#endif
