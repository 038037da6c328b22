/* pgmpitune_check_paths: the validator behind pgmpitune-check, built on the library's own reader. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pgmpi_internal.h"
#include "pgmpitune.h"

typedef struct {
    FILE *out;
    int verbose;
    int errors;
} check_ctx_t;

static void check_diag(void *vctx, int is_error, const char *file, int line, const char *text)
{
    check_ctx_t *c = vctx;
    if (is_error) c->errors++;
    else if (!c->verbose) return;
    if (line > 0) fprintf(c->out, "%s:%d: %s: %s\n", file, line, is_error ? "error" : "note", text);
    else fprintf(c->out, "%s: %s: %s\n", file, is_error ? "error" : "note", text);
}

int pgmpitune_check_paths(int npaths, const char *const *paths, FILE *out, int verbose)
{
    check_ctx_t ctx = {out ? out : stderr, verbose, 0};
    pgmpi_profset_t set;
    memset(&set, 0, sizeof set);
    for (int i = 0; i < npaths; i++) {
        const char *path = paths[i];
        struct stat sb;
        if (stat(path, &sb) != 0) {
            fprintf(ctx.out, "%s: error: %s\n", path, strerror(errno));
            ctx.errors++;
            continue;
        }
        if (S_ISDIR(sb.st_mode)) {
            char *blob = NULL, err[1200];
            size_t len = 0;
            if (pgmpi_read_profile_dir(path, &blob, &len, err, sizeof err) != 0) {
                fprintf(ctx.out, "%s: error: %s\n", path, err);
                ctx.errors++;
                continue;
            }
            if (len == 0 && verbose) fprintf(ctx.out, "%s: note: no *.prf files\n", path);
            pgmpi_profset_load_blob(&set, blob, len, check_diag, &ctx);
            free(blob);
        } else {
            char *text = NULL;
            size_t len = 0;
            if (pgmpi_read_file(path, &text, &len, (size_t)64 << 20) != 0) {
                fprintf(ctx.out, "%s: error: cannot read: %s\n", path, strerror(errno));
                ctx.errors++;
                continue;
            }
            pgmpi_profile_t p;
            if (pgmpi_is_dtprofile_name(path)) pgmpi_dtprofile_parse(path, text, len, &set, check_diag, &ctx);
            else if (pgmpi_profile_parse(path, text, len, &p, check_diag, &ctx) == 0)
                pgmpi_profset_add(&set, &p, check_diag, &ctx);
            free(text);
        }
    }
    if (verbose) {
        for (int c = 0; c < PGMPI_NCOLL; c++)
            for (int i = 0; i < set.nprofs[c]; i++) {
                const pgmpi_profile_t *p = &set.profs[c][i];
                fprintf(ctx.out, "%s: ok: %s p=%d..%d, %d range(s)%s\n", p->file, pgmpi_coll_mpi_names[c], p->plo,
                        p->phi, p->nranges, p->version ? "" : " (PGMPITuneLib format)");
            }
        for (int c = 0; c < PGMPI_NCOLL; c++)
            for (int i = 0; i < set.nlprofs[c]; i++) {
                const pgmpi_profile_t *p = &set.lprofs[c][i];
                fprintf(ctx.out, "%s: ok: %s p=%d layout %dx%d, %d range(s)\n", p->file, pgmpi_coll_mpi_names[c],
                        p->nprocs, p->lnodes, p->lppn, p->nranges);
            }
        if (set.ndtfiles)
            fprintf(ctx.out, "datatype profiles: ok: %d file(s), %d replacement(s)\n", set.ndtfiles, set.ndtrules);
    }
    pgmpi_profset_free(&set);
    return ctx.errors;
}
