/* Profile sets: a directory's profiles read in one blob (rank 0 reads, every rank parses the same
 * bytes), parsed by the .prf and .dtprf readers and kept per collective, process ranges non-overlapping. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "profile_text.h"

int pgmpi_profset_add(pgmpi_profset_t *s, pgmpi_profile_t *p, pgmpi_diag_fn diagfn, void *ctx)
{
    diag_t d = {p->file, diagfn, ctx};
    int c = p->coll, n = s->nprofs[c];
    if (p->lnodes) {
        int m = s->nlprofs[c];
        for (int i = 0; i < m; i++) {
            const pgmpi_profile_t *q = &s->lprofs[c][i];
            if (q->lnodes == p->lnodes && q->lppn == p->lppn) {
                text_fail(&d, p->line, "%s profile for layout %dx%d conflicts with %s, which is used instead",
                     pgmpi_coll_mpi_names[c], p->lnodes, p->lppn, q->file);
                pgmpi_profile_free(p);
                return -1;
            }
        }
        pgmpi_profile_t *nl = realloc(s->lprofs[c], (size_t)(m + 1) * sizeof *nl);
        if (!nl) {
            text_fail(&d, 0, "out of memory");
            pgmpi_profile_free(p);
            return -1;
        }
        nl[m] = *p;
        s->lprofs[c] = nl;
        s->nlprofs[c] = m + 1;
        return 0;
    }
    for (int i = 0; i < n; i++) {
        const pgmpi_profile_t *q = &s->profs[c][i];
        if (p->plo <= q->phi && q->plo <= p->phi) {
            text_fail(&d, p->line, "%s profile for p=%d..%d conflicts with %s (p=%d..%d), which is used instead",
                 pgmpi_coll_mpi_names[c], p->plo, p->phi, q->file, q->plo, q->phi);
            pgmpi_profile_free(p);
            return -1;
        }
    }
    pgmpi_profile_t *np = realloc(s->profs[c], (size_t)(n + 1) * sizeof *np);
    if (!np) {
        text_fail(&d, 0, "out of memory");
        pgmpi_profile_free(p);
        return -1;
    }
    int i = n;
    while (i > 0 && np[i - 1].plo > p->plo) { np[i] = np[i - 1]; i--; }
    np[i] = *p;
    s->profs[c] = np;
    s->nprofs[c] = n + 1;
    return 0;
}

void pgmpi_profset_free(pgmpi_profset_t *s)
{
    for (int c = 0; c < PGMPI_NCOLL; c++) {
        for (int i = 0; i < s->nprofs[c]; i++) pgmpi_profile_free(&s->profs[c][i]);
        free(s->profs[c]);
        s->profs[c] = NULL;
        s->nprofs[c] = 0;
        for (int i = 0; i < s->nlprofs[c]; i++) pgmpi_profile_free(&s->lprofs[c][i]);
        free(s->lprofs[c]);
        s->lprofs[c] = NULL;
        s->nlprofs[c] = 0;
    }
    free(s->dtrules);
    s->dtrules = NULL;
    s->ndtrules = s->ndtfiles = 0;
}

const pgmpi_profile_t *pgmpi_profset_find(const pgmpi_profset_t *s, int c, int p)
{
    const pgmpi_profile_t *v = s->profs[c];
    int lo = 0, hi = s->nprofs[c] - 1, best = -1;
    while (lo <= hi) {
        int mid = (lo + hi) >> 1;
        if (v[mid].plo <= p) { best = mid; lo = mid + 1; }
        else hi = mid - 1;
    }
    return (best >= 0 && p <= v[best].phi) ? &v[best] : NULL;
}

/* The profile set: PGMPITuneLib's *.prf files and our datatype profiles (*.dtprf, which readers of the
 * .prf format never open). */
static int is_profile_name(const char *nm)
{
    return nm[0] != '.' && (text_has_suffix(nm, ".prf") || text_has_suffix(nm, ".dtprf"));
}
int pgmpi_is_dtprofile_name(const char *path) { return text_has_suffix(path, ".dtprf"); }

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int blob_put(char **blob, size_t *len, size_t *cap, const void *data, size_t n)
{
    if (*len + n > *cap) {
        size_t nc = *cap ? *cap : 4096;
        while (nc < *len + n) nc *= 2;
        char *nb = realloc(*blob, nc);
        if (!nb) return -1;
        *blob = nb;
        *cap = nc;
    }
    memcpy(*blob + *len, data, n);
    *len += n;
    return 0;
}

int pgmpi_read_profile_dir(const char *dir, char **blob, size_t *len, char *err, size_t errcap)
{
    *blob = NULL;
    *len = 0;
    DIR *dp = opendir(dir);
    if (!dp) {
        snprintf(err, errcap, "cannot open profile directory %s: %s", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t nn = 0, cn = 0;
    struct dirent *ent;
    while ((ent = readdir(dp))) {
        if (!is_profile_name(ent->d_name)) continue;
        if (nn == cn) {
            cn = cn ? 2 * cn : 16;
            char **x = realloc(names, cn * sizeof *x);
            if (!x) break;
            names = x;
        }
        names[nn++] = strdup(ent->d_name);
    }
    closedir(dp);
    if (nn) qsort(names, nn, sizeof *names, cmp_str);
    size_t cap = 0;
    for (size_t i = 0; i < nn; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat sb;
        char *text = NULL;
        size_t tl = 0;
        int ok = stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && pgmpi_read_file(path, &text, &tl, MAX_PROFILE_BYTES) == 0;
        if (!ok) {
            /* unreadable: an empty record with a marker text the parser reports */
            static const char marker[] = "\0unreadable";
            text = malloc(sizeof marker);
            memcpy(text, marker, sizeof marker);
            tl = sizeof marker - 1;
        }
        uint32_t nl = (uint32_t)strlen(path);
        uint64_t l64 = tl;
        if (blob_put(blob, len, &cap, &nl, sizeof nl) || blob_put(blob, len, &cap, path, nl) ||
            blob_put(blob, len, &cap, &l64, sizeof l64) || blob_put(blob, len, &cap, text, tl)) {
            snprintf(err, errcap, "out of memory reading %s", dir);
            free(text);
            for (size_t j = i; j < nn; j++) free(names[j]);
            free(names);
            return -1;
        }
        free(text);
        free(names[i]);
    }
    free(names);
    return 0;
}

int pgmpi_profset_load_blob(pgmpi_profset_t *s, const char *blob, size_t len, pgmpi_diag_fn diag, void *ctx)
{
    size_t pos = 0;
    int bad = 0;
    while (pos + sizeof(uint32_t) <= len) {
        uint32_t nl;
        uint64_t tl;
        memcpy(&nl, blob + pos, sizeof nl);
        pos += sizeof nl;
        if (pos + nl + sizeof tl > len) break;
        char name[4097];
        size_t cl = nl < 4096 ? nl : 4096;
        memcpy(name, blob + pos, cl);
        name[cl] = 0;
        pos += nl;
        memcpy(&tl, blob + pos, sizeof tl);
        pos += sizeof tl;
        if (pos + tl > len) break;
        const char *text = blob + pos;
        pos += tl;
        if (tl >= 1 && text[0] == '\0') {
            diag_t d = {name, diag, ctx};
            text_fail(&d, 0, "cannot read this profile file");
            bad++;
            continue;
        }
        if (pgmpi_is_dtprofile_name(name)) {
            if (pgmpi_dtprofile_parse(name, text, (size_t)tl, s, diag, ctx) != 0) bad++;
            continue;
        }
        pgmpi_profile_t p;
        if (pgmpi_profile_parse(name, text, (size_t)tl, &p, diag, ctx) != 0) { bad++; continue; }
        if (pgmpi_profset_add(s, &p, diag, ctx) != 0) bad++;
    }
    return bad;
}
