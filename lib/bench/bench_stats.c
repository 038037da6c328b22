/* Statistics for pgmpi-bench's NREP rules (see bench_stats.h). */
#include "bench_stats.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

void series_init(series_t *s) { memset(s, 0, sizeof *s); }

void series_free(series_t *s)
{
    free(s->lo); free(s->hi); free(s->means); free(s->medians);
    series_init(s);
}

void series_clear(series_t *s) { s->n = s->nlo = s->nhi = 0; s->mean = s->m2 = s->sum = 0.0; }

static int grow(double **p, size_t cap)
{
    double *q = realloc(*p, cap * sizeof **p);
    if (!q) return -1;
    *p = q;
    return 0;
}

/* Binary heaps on arrays; sign = +1 keeps the largest on top, -1 the smallest. */
static void heap_push(double *h, size_t *n, double x, double sign)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!(sign * x > sign * h[parent])) break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = x;
}

static double heap_pop(double *h, size_t *n, double sign)
{
    double top = h[0], x = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && sign * h[c + 1] > sign * h[c]) c++;
        if (!(sign * h[c] > sign * x)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = x;
    return top;
}

int series_push(series_t *s, double x)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        /* lo holds at most n/2 + 1, hi at most n/2 values: cap/2 + 1 each would do, cap is simpler */
        if (grow(&s->lo, cap) || grow(&s->hi, cap) || grow(&s->means, cap) || grow(&s->medians, cap))
            return -1;
        s->cap = cap;
    }
    if (s->nlo == 0 || x <= s->lo[0]) heap_push(s->lo, &s->nlo, x, +1.0);
    else heap_push(s->hi, &s->nhi, x, -1.0);
    if (s->nlo > s->nhi + 1) heap_push(s->hi, &s->nhi, heap_pop(s->lo, &s->nlo, +1.0), -1.0);
    else if (s->nhi > s->nlo) heap_push(s->lo, &s->nlo, heap_pop(s->hi, &s->nhi, -1.0), +1.0);
    s->min = s->n == 0 || x < s->min ? x : s->min;
    s->n++;
    s->sum += x;
    double d = x - s->mean;
    s->mean += d / (double)s->n;
    s->m2 += d * (x - s->mean);
    s->means[s->n - 1] = s->mean;
    s->medians[s->n - 1] = series_median(s);
    return 0;
}

double series_mean(const series_t *s) { return s->n ? s->mean : NAN; }

double series_median(const series_t *s)
{
    if (!s->n) return NAN;
    return s->n % 2 ? s->lo[0] : 0.5 * (s->lo[0] + s->hi[0]);
}

double series_sd(const series_t *s) { return s->n < 2 ? INFINITY : sqrt(s->m2 / (double)(s->n - 1)); }

double series_rse(const series_t *s)
{
    if (s->n < 2) return INFINITY;
    double m = series_mean(s);
    if (!(m > 0.0)) return INFINITY;
    return series_sd(s) / sqrt((double)s->n) / m;
}

double series_min(const series_t *s) { return s->n ? s->min : NAN; }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double series_quantile(const series_t *s, double p)
{
    if (!s->n) return NAN;
    double *v = malloc(s->n * sizeof *v);
    if (!v) return NAN;
    memcpy(v, s->lo, s->nlo * sizeof *v);          /* the values are the two heaps' union */
    memcpy(v + s->nlo, s->hi, s->nhi * sizeof *v);
    qsort(v, s->n, sizeof *v, cmp_double);
    double h = p * (double)(s->n - 1);
    size_t i = (size_t)h;
    double q = i + 1 < s->n ? v[i] + (h - (double)i) * (v[i + 1] - v[i]) : v[s->n - 1];
    free(v);
    return q;
}

static double cov_window(const double *hist, size_t n, size_t w)
{
    if (w < 2 || n < w) return INFINITY;
    const double *v = hist + n - w;
    double m = 0.0, q = 0.0;
    for (size_t i = 0; i < w; i++) m += v[i];
    m /= (double)w;
    if (!(m > 0.0)) return INFINITY;
    for (size_t i = 0; i < w; i++) q += (v[i] - m) * (v[i] - m);
    return sqrt(q / (double)(w - 1)) / m;
}

double series_cov_means(const series_t *s, size_t w) { return cov_window(s->means, s->n, w); }
double series_cov_medians(const series_t *s, size_t w) { return cov_window(s->medians, s->n, w); }
