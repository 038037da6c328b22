/* Statistics of one series of run-times (one call, size, algorithm) for the NREP stopping rules.
 * A push is O(log n) (running median from two heaps, running mean and variance by Welford), so a
 * fixed --nrep of 10^5..10^6 costs no more per measurement than 100. */
#ifndef PGMPI_BENCH_STATS_H
#define PGMPI_BENCH_STATS_H
#include <stddef.h>

typedef struct {
    double *means;    /* running mean after each measurement */
    double *medians;  /* running median after each measurement */
    double *lo, *hi;  /* max-heap of the lower half, min-heap of the upper half (|lo| = |hi| or |hi| + 1) */
    size_t nlo, nhi;
    size_t n, cap;
    double mean, m2, min;   /* Welford: running mean and sum of squared deviations; minimum */
    double sum;             /* total run-time (the time rule's t_nrep1) */
} series_t;

void   series_init(series_t *s);
void   series_free(series_t *s);
void   series_clear(series_t *s);
int    series_push(series_t *s, double x);   /* 0, or -1 when out of memory */
double series_mean(const series_t *s);
double series_median(const series_t *s);
double series_sd(const series_t *s);         /* sample standard deviation (n-1) */
double series_rse(const series_t *s);        /* sd / sqrt(n) / mean; +inf when undefined */
double series_min(const series_t *s);
/* The p-quantile (0 <= p <= 1) of the values, linear between order statistics (numpy's default); NAN when
 * empty.  O(n log n): for an answer per cell, not per measurement. */
double series_quantile(const series_t *s, double p);
/* Coefficient of variation (sd/mean) of the last w running means / running medians; +inf when n < w. */
double series_cov_means(const series_t *s, size_t w);
double series_cov_medians(const series_t *s, size_t w);
#endif
