/* Statistics of one series of run-times (one call, size, algorithm) for the NREP stopping rules. */
#ifndef PGMPI_BENCH_STATS_H
#define PGMPI_BENCH_STATS_H
#include <stddef.h>

typedef struct {
    double *v;        /* values in measurement order */
    double *sorted;   /* the same values, sorted (running median) */
    double *means;    /* running mean after each measurement */
    double *medians;  /* running median after each measurement */
    size_t n, cap;
    double sum;
} series_t;

void   series_init(series_t *s);
void   series_free(series_t *s);
void   series_clear(series_t *s);
int    series_push(series_t *s, double x);   /* 0, or -1 when out of memory */
double series_mean(const series_t *s);
double series_sd(const series_t *s);         /* sample standard deviation (n-1) */
double series_rse(const series_t *s);        /* sd / sqrt(n) / mean; +inf when undefined */
double series_min(const series_t *s);
/* Coefficient of variation (sd/mean) of the last w running means / running medians; +inf when n < w. */
double series_cov_means(const series_t *s, size_t w);
double series_cov_medians(const series_t *s, size_t w);
#endif
