/* What the profile readers share (profile_text.h): diagnostics, tokens, whole files. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_text.h"

static void vdiag(const diag_t *d, int is_error, int line, const char *fmt, va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (d->diag) d->diag(d->ctx, is_error, d->file, line, msg);
}

int text_fail(const diag_t *d, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vdiag(d, 1, line, fmt, ap);
    va_end(ap);
    return -1;
}

void text_note(const diag_t *d, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vdiag(d, 0, line, fmt, ap);
    va_end(ap);
}

const char *text_token(const char **s, const char *e, size_t *tl)
{
    const char *q = *s;
    while (q < e && is_blank(*q)) q++;
    if (q >= e || *q == '#') { *s = q; return NULL; }
    const char *t = q;
    while (q < e && !is_blank(*q) && *q != '#') q++;
    *tl = (size_t)(q - t);
    *s = q;
    return t;
}

int text_int(const char *t, size_t l, long long *v)
{
    size_t i = 0;
    int neg = 0;
    if (l == 0) return -1;
    if (t[0] == '+' || t[0] == '-') { neg = t[0] == '-'; i = 1; }
    if (i == l) return -1;
    unsigned long long acc = 0;
    for (; i < l; i++) {
        if (t[i] < '0' || t[i] > '9') return -1;
        unsigned d = (unsigned)(t[i] - '0');
        if (acc > (0x7fffffffffffffffULL - d) / 10) return -1;
        acc = acc * 10 + d;
    }
    *v = neg ? -(long long)acc : (long long)acc;
    return 0;
}

int pgmpi_parse_size(const char *s, size_t len, uint64_t *out)
{
    while (len && is_blank(*s)) { s++; len--; }
    while (len && (is_blank(s[len - 1]) || s[len - 1] == '\n')) len--;
    long long v;
    if (text_int(s, len, &v) != 0 || v < 0) return -1;
    *out = (uint64_t)v;
    return 0;
}

int pgmpi_read_file(const char *path, char **text, size_t *len, size_t max)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) { fclose(f); errno = ENOMEM; return -1; }
    for (;;) {
        if (n == cap) {
            if (cap >= max) { free(buf); fclose(f); errno = EFBIG; return -1; }
            cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb) { free(buf); fclose(f); errno = ENOMEM; return -1; }
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) { free(buf); errno = EIO; return -1; }
    *text = buf;
    *len = n;
    return 0;
}

int text_has_suffix(const char *nm, const char *suffix)
{
    size_t l = strlen(nm), k = strlen(suffix);
    return l > k && strcmp(nm + l - k, suffix) == 0;
}
