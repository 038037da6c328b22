/* The .dtprf reader: datatype profiles, GL4 replacements keyed on the layout signature
 * (lib/docs/profile-format.md "Datatype profiles"); datatypes.c applies them. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_text.h"

#define PGMPI_DTPROFILE_VERSION 1

static int hex16(const char *t, size_t l, uint64_t *v)
{
    if (l != 16) return -1;
    uint64_t acc = 0;
    for (size_t i = 0; i < l; i++) {
        char ch = t[i];
        unsigned d = ch >= '0' && ch <= '9' ? (unsigned)(ch - '0') : ch >= 'a' && ch <= 'f' ? (unsigned)(ch - 'a' + 10) : 16u;
        if (d == 16) return -1;
        acc = acc << 4 | d;
    }
    *v = acc;
    return 0;
}

int pgmpi_dtprofile_parse(const char *file, const char *text, size_t len, pgmpi_profset_t *set,
                          pgmpi_diag_fn diagfn, void *ctx)
{
    diag_t d = {file, diagfn, ctx};
    lines_t L = {text, text + len, 0, NULL, NULL};
    char valid[256];
    size_t o = 0;
    for (int k = 0; k < PGMPI_DT_NDESC; k++)
        o += (size_t)snprintf(valid + o, sizeof valid - o, "%s%s", k ? ", " : "", pgmpi_dt_description_names[k]);
    pgmpi_dtrule_t *rules = NULL;
    int n = 0, version = 0;
    while (next_line(&L)) {
        const char *s = L.ls, *e = L.le, *t;
        size_t tl = 0;
        while (s < e && is_blank(*s)) s++;
        if (e - s >= 7 && !strncmp(s, "#@pgmpi", 7) && (e - s == 7 || is_blank(s[7]))) {
            s += 7;
            t = text_token(&s, e, &tl);
            long long v = 0;
            size_t vl = 0;
            const char *vt;
            if (!t || tl != 24 || strncmp(t, "datatype_profile_version", 24)) {
                free(rules);
                return text_fail(&d, L.lineno, "unknown #@pgmpi line in a datatype profile (valid: #@pgmpi datatype_profile_version 1)");
            }
            if (!(vt = text_token(&s, e, &vl)) || text_int(vt, vl, &v) || v < 1 || text_token(&s, e, &tl)) {
                free(rules);
                return text_fail(&d, L.lineno, "#@pgmpi datatype_profile_version needs one positive integer");
            }
            if (v > PGMPI_DTPROFILE_VERSION) {
                free(rules);
                return text_fail(&d, L.lineno, "datatype profile version %lld is newer than this library reads (%d)", v,
                            PGMPI_DTPROFILE_VERSION);
            }
            version = (int)v;
            continue;
        }
        if (!(t = text_token(&s, e, &tl))) continue;   /* blank or comment */
        if (tl != 7 || strncmp(t, "replace", 7)) {
            free(rules);
            return text_fail(&d, L.lineno, "unknown line '%.*s' (valid: replace <signature> <description> [key=value ...])",
                        (int)(tl > 40 ? 40 : tl), t);
        }
        if (!version) {
            free(rules);
            return text_fail(&d, L.lineno, "a replace line before '#@pgmpi datatype_profile_version 1'");
        }
        uint64_t sig;
        size_t sl = 0, dl = 0;
        const char *st = text_token(&s, e, &sl), *dt = st ? text_token(&s, e, &dl) : NULL;
        if (!st || hex16(st, sl, &sig)) {
            free(rules);
            return text_fail(&d, L.lineno, "replace: the signature must be 16 lowercase hex digits (pgmpi-dtbench's signature=)");
        }
        int desc = -1;
        for (int k = 0; dt && k < PGMPI_DT_NDESC; k++)
            if (strlen(pgmpi_dt_description_names[k]) == dl && !strncmp(dt, pgmpi_dt_description_names[k], dl)) desc = k;
        if (desc < 0) {
            free(rules);
            return text_fail(&d, L.lineno, "replace: unknown description '%.*s' (valid: %s)", dt ? (int)(dl > 40 ? 40 : dl) : 0,
                        dt ? dt : "", valid);
        }
        while ((t = text_token(&s, e, &tl)))   /* key=value evidence for people and tools; the library needs none */
            if (!memchr(t, '=', tl) || t[0] == '=') {
                free(rules);
                return text_fail(&d, L.lineno, "replace: '%.*s' is not key=value", (int)(tl > 40 ? 40 : tl), t);
            }
        for (int i = 0; i < set->ndtrules; i++)
            if (set->dtrules[i].sig == sig && set->dtrules[i].desc != desc) {
                free(rules);
                return text_fail(&d, L.lineno, "signature %016llx already has description %s in another file",
                            (unsigned long long)sig, pgmpi_dt_description_names[set->dtrules[i].desc]);
            }
        int dup = 0;
        for (int i = 0; i < n; i++)
            if (rules[i].sig == sig) {
                if (rules[i].desc != desc) {
                    free(rules);
                    return text_fail(&d, L.lineno, "signature %016llx listed twice with different descriptions",
                                (unsigned long long)sig);
                }
                dup = 1;
            }
        if (dup) continue;
        if (set->ndtrules + n >= PGMPI_DT_MAX_RULES) {
            free(rules);
            return text_fail(&d, L.lineno, "more than %d replacements in the profile set", PGMPI_DT_MAX_RULES);
        }
        pgmpi_dtrule_t *x = realloc(rules, (size_t)(n + 1) * sizeof *x);
        if (!x) { free(rules); return text_fail(&d, L.lineno, "out of memory"); }
        rules = x;
        rules[n].sig = sig;
        rules[n].desc = desc;
        n++;
    }
    if (!version) { free(rules); return text_fail(&d, 0, "not a datatype profile: no '#@pgmpi datatype_profile_version 1' line"); }
    if (n) {
        pgmpi_dtrule_t *x = realloc(set->dtrules, (size_t)(set->ndtrules + n) * sizeof *x);
        if (!x) { free(rules); return text_fail(&d, 0, "out of memory"); }
        set->dtrules = x;
        for (int i = 0; i < n; i++) {
            int known = 0;
            for (int j = 0; j < set->ndtrules; j++) known |= set->dtrules[j].sig == rules[i].sig;
            if (!known) set->dtrules[set->ndtrules++] = rules[i];
        }
    }
    set->ndtfiles++;
    free(rules);
    return 0;
}
