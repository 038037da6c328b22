/* Statistics for pgmpi-bench's NREP rules (see bench_stats.h). */
#include "bench_stats.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

void series_init(series_t *s) { memset(s, 0, sizeof *s); }

void series_free(series_t *s)
{
    free(s->v); free(s->sorted); free(s->means); free(s->medians);
    series_init(s);
}

void series_clear(series_t *s) { s->n = 0; s->sum = 0.0; }

static int grow(double **p, size_t cap)
{
    double *q = realloc(*p, cap * sizeof **p);
    if (!q) return -1;
    *p = q;
    return 0;
}

int series_push(series_t *s, double x)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        if (grow(&s->v, cap) || grow(&s->sorted, cap) || grow(&s->means, cap) || grow(&s->medians, cap))
            return -1;
        s->cap = cap;
    }
    s->v[s->n] = x;
    /* insertion into the sorted copy: O(n), n <= a few thousand */
    size_t i = s->n;
    while (i > 0 && s->sorted[i - 1] > x) { s->sorted[i] = s->sorted[i - 1]; i--; }
    s->sorted[i] = x;
    s->n++;
    s->sum += x;
    s->means[s->n - 1] = s->sum / (double)s->n;
    size_t m = s->n / 2;
    s->medians[s->n - 1] = (s->n % 2) ? s->sorted[m] : 0.5 * (s->sorted[m - 1] + s->sorted[m]);
    return 0;
}

double series_mean(const series_t *s) { return s->n ? s->sum / (double)s->n : NAN; }

static double sd_of(const double *v, size_t n)
{
    if (n < 2) return INFINITY;
    double m = 0.0;
    for (size_t i = 0; i < n; i++) m += v[i];
    m /= (double)n;
    double q = 0.0;
    for (size_t i = 0; i < n; i++) q += (v[i] - m) * (v[i] - m);
    return sqrt(q / (double)(n - 1));
}

static double mean_of(const double *v, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++) m += v[i];
    return n ? m / (double)n : NAN;
}

double series_sd(const series_t *s) { return sd_of(s->v, s->n); }

double series_rse(const series_t *s)
{
    if (s->n < 2) return INFINITY;
    double m = series_mean(s);
    if (!(m > 0.0)) return INFINITY;
    return series_sd(s) / sqrt((double)s->n) / m;
}

double series_min(const series_t *s) { return s->n ? s->sorted[0] : NAN; }

static double cov_window(const double *hist, size_t n, size_t w)
{
    if (w < 2 || n < w) return INFINITY;
    double m = mean_of(hist + n - w, w);
    if (!(m > 0.0)) return INFINITY;
    return sd_of(hist + n - w, w) / m;
}

double series_cov_means(const series_t *s, size_t w) { return cov_window(s->means, s->n, w); }
double series_cov_medians(const series_t *s, size_t w) { return cov_window(s->medians, s->n, w); }
