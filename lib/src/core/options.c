/* Forced selections (--module= in both forms, PGMPI_PARAMS, PGMPITUNE_MODULES), --ppath=, --config=,
 * and the config file. Runs at MPI_Init only. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgmpi_internal.h"

void pgmpi_options_init(pgmpi_options_t *o)
{
    memset(o, 0, sizeof *o);
    for (int c = 0; c < PGMPI_NCOLL; c++) o->forced[c] = -1;
}

void pgmpi_options_free(pgmpi_options_t *o)
{
    free(o->ppath);
    free(o->config);
    o->ppath = o->config = NULL;
}

static int error(pgmpi_options_t *o, const char *fmt, ...)
{
    if (o->nerrors < (int)(sizeof o->errors / sizeof o->errors[0])) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(o->errors[o->nerrors], sizeof o->errors[0], fmt, ap);
        va_end(ap);
    }
    o->nerrors++;
    return -1;
}

/* spec: "<coll>=alg:<name>[,k:v...]" (PGMPITuneLib's parser) or "<coll>:alg=<name>[,k=v...]" (paper). */
int pgmpi_options_module(pgmpi_options_t *o, const char *spec, const char *origin)
{
    char list[1024];
    const char *eq = strchr(spec, '='), *co = strchr(spec, ':');
    const char *sep;
    char kv;                                     /* separator between option key and value */
    if (eq && (!co || eq < co)) { sep = eq; kv = ':'; }
    else if (co) { sep = co; kv = '='; }
    else {
        return error(o, "%s: --module=%s: expected <collective>=alg:<mock-up> or <collective>:alg=<mock-up>",
                     origin, spec);
    }
    int c = pgmpi_coll_lookup(spec, (size_t)(sep - spec));
    if (c < 0) {
        pgmpi_coll_list(list, sizeof list);
        return error(o, "%s: --module=%s: unknown collective '%.*s' (valid: %s)", origin, spec, (int)(sep - spec),
                     spec, list);
    }
    int alg = -1;
    const char *p = sep + 1;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t l = end ? (size_t)(end - p) : strlen(p);
        const char *k = memchr(p, kv, l);
        if (k && (size_t)(k - p) == 3 && !strncmp(p, "alg", 3)) {
            const char *v = k + 1;
            size_t vl = l - 4;
            alg = pgmpi_alg_lookup(c, v, vl);
            if (alg < 0) {
                pgmpi_alg_list(c, list, sizeof list);
                return error(o, "%s: --module=%s: unknown mock-up '%.*s' for %s (valid: %s)", origin, spec, (int)vl,
                             v, pgmpi_coll_keys[c], list);
            }
        } else if (l) {
            return error(o, "%s: --module=%s: unknown option '%.*s' (only alg%c<mock-up>)", origin, spec, (int)l, p,
                         kv);
        }
        p += l;
        if (*p == ',') p++;
    }
    if (alg < 0) return error(o, "%s: --module=%s: no alg%c<mock-up> given", origin, spec, kv);
    o->forced[c] = alg;
    return 0;
}

static void set_str(char **dst, const char *v)
{
    free(*dst);
    *dst = strdup(v);
}

int pgmpi_options_token(pgmpi_options_t *o, const char *tok, const char *origin)
{
    if (!strncmp(tok, "--module=", 9)) { pgmpi_options_module(o, tok + 9, origin); return 1; }
    if (!strncmp(tok, "--ppath=", 8)) { set_str(&o->ppath, tok + 8); return 1; }
    if (!strncmp(tok, "--config=", 9)) { set_str(&o->config, tok + 9); return 1; }
    return 0;
}

/* Calls fn for each token of s split at any char of seps. */
static void split(pgmpi_options_t *o, const char *s, const char *seps, int modules_only, const char *origin)
{
    char tok[4096];
    while (*s) {
        size_t l = strcspn(s, seps);
        if (l && l < sizeof tok) {
            memcpy(tok, s, l);
            tok[l] = 0;
            if (modules_only) {
                pgmpi_options_module(o, strncmp(tok, "--module=", 9) ? tok : tok + 9, origin);
            } else if (!pgmpi_options_token(o, tok, origin) && !strncmp(tok, "--module", 8)) {
                error(o, "%s: '%s': expected --module=<collective>=alg:<mock-up>", origin, tok);
            }
        } else if (l) {
            error(o, "%s: token too long", origin);
        }
        s += l;
        if (*s) s++;
    }
}

void pgmpi_options_from_params(pgmpi_options_t *o, const char *params)
{
    if (params) split(o, params, " \t\n", 0, "PGMPI_PARAMS");
}

void pgmpi_options_from_modules(pgmpi_options_t *o, const char *mods)
{
    if (mods) split(o, mods, " \t\n;", 1, "PGMPITUNE_MODULES");
}

void pgmpi_options_from_argv(pgmpi_options_t *o, int *argc, char ***argv)
{
    if (!argc || !argv || !*argv || *argc < 1) return;
    char **v = *argv;
    int w = 1;
    for (int r = 1; r < *argc; r++) {
        if (v[r] && pgmpi_options_token(o, v[r], "command line")) continue;   /* ours: drop it */
        v[w++] = v[r];
    }
    if (w < *argc) {
        for (int i = w; i < *argc; i++) v[i] = NULL;
        *argc = w;
    }
}

void pgmpi_config_parse(const char *file, const char *text, size_t len, size_t *msg_bytes, size_t *int_bytes,
                        pgmpi_diag_fn diag, void *ctx)
{
    const char *p = text, *end = text + len;
    int line = 0;
    char msg[512];
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        line++;
        const char *s = p;
        p = nl ? nl + 1 : end;
        while (s < le && (*s == ' ' || *s == '\t' || *s == '\r')) s++;
        if (s >= le || *s == '#') continue;
        const char *k = s;
        while (s < le && *s != ' ' && *s != '\t' && *s != '\r') s++;
        size_t kl = (size_t)(s - k);
        while (s < le && (*s == ' ' || *s == '\t')) s++;
        const char *v = s;
        while (s < le && *s != ' ' && *s != '\t' && *s != '\r' && *s != '#') s++;
        size_t vl = (size_t)(s - v);
        size_t *dst = NULL;
        if (kl == 21 && !strncmp(k, "size_msg_buffer_bytes", kl)) dst = msg_bytes;
        else if (kl == 21 && !strncmp(k, "size_int_buffer_bytes", kl)) dst = int_bytes;
        else {
            snprintf(msg, sizeof msg, "unknown key '%.*s' ignored (valid: size_msg_buffer_bytes, size_int_buffer_bytes)",
                     (int)(kl > 64 ? 64 : kl), k);
            if (diag) diag(ctx, 0, file, line, msg);
            continue;
        }
        uint64_t val;
        if (!vl || pgmpi_parse_size(v, vl, &val) != 0 || val > SIZE_MAX) {
            snprintf(msg, sizeof msg, "%.*s: '%.*s' is not a non-negative integer; keeping %zu", (int)kl, k,
                     (int)(vl > 64 ? 64 : vl), v, *dst);
            if (diag) diag(ctx, 1, file, line, msg);
            continue;
        }
        *dst = (size_t)val;
    }
}
