/* pgmpi-bench's running statistics against a brute-force reference: after every push of a random
 * series (ties, sorted, reverse-sorted, constant, heavy-tailed), the running median equals the median
 * of a sorted copy exactly, and mean, sd, min and the window COVs match a two-pass computation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_stats.h"

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int close_rel(double a, double b) { return a == b || fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b)); }

static int check(const char *name, const double *x, size_t n)
{
    series_t s;
    series_init(&s);
    double *sorted = malloc(n * sizeof *sorted), *med = malloc(n * sizeof *med), *mean = malloc(n * sizeof *mean);
    int bad = 0;
    for (size_t k = 0; k < n && !bad; k++) {
        if (series_push(&s, x[k])) { printf("%s: out of memory\n", name); return 1; }
        memcpy(sorted, x, (k + 1) * sizeof *x);
        qsort(sorted, k + 1, sizeof *sorted, cmpd);
        size_t m = (k + 1) / 2;
        med[k] = (k + 1) % 2 ? sorted[m] : 0.5 * (sorted[m - 1] + sorted[m]);
        double sum = 0, q = 0;
        for (size_t i = 0; i <= k; i++) sum += x[i];
        mean[k] = sum / (double)(k + 1);
        for (size_t i = 0; i <= k; i++) q += (x[i] - mean[k]) * (x[i] - mean[k]);
        double sd = k ? sqrt(q / (double)k) : INFINITY;
        if (series_median(&s) != med[k] || s.medians[k] != med[k]) { printf("%s: median at %zu: %g != %g\n", name, k, series_median(&s), med[k]); bad = 1; }
        if (!close_rel(series_mean(&s), mean[k])) { printf("%s: mean at %zu\n", name, k); bad = 1; }
        if (!(k == 0 ? isinf(series_sd(&s)) : close_rel(series_sd(&s), sd) || fabs(series_sd(&s) - sd) < 1e-12 * mean[k]))
            { printf("%s: sd at %zu: %.17g != %.17g\n", name, k, series_sd(&s), sd); bad = 1; }
        if (series_min(&s) != sorted[0]) { printf("%s: min at %zu\n", name, k); bad = 1; }
        if (!close_rel(s.sum, sum)) { printf("%s: sum at %zu\n", name, k); bad = 1; }
    }
    /* window COVs of the running medians / means, w = 20 */
    size_t w = 20;
    if (!bad && n >= w) {
        const double *hist[2] = {med, mean};
        double got[2] = {series_cov_medians(&s, w), series_cov_means(&s, w)};
        for (int h = 0; h < 2; h++) {
            double m = 0, q = 0;
            for (size_t i = n - w; i < n; i++) m += hist[h][i];
            m /= (double)w;
            for (size_t i = n - w; i < n; i++) q += (hist[h][i] - m) * (hist[h][i] - m);
            double ref = sqrt(q / (double)(w - 1)) / m;
            if (!(close_rel(got[h], ref) || fabs(got[h] - ref) < 1e-12)) { printf("%s: cov window %d: %g != %g\n", name, h, got[h], ref); bad = 1; }
        }
    }
    if (!bad && (series_cov_medians(&s, n + 1) != INFINITY || series_cov_means(&s, 1) != INFINITY)) { printf("%s: cov undefined\n", name); bad = 1; }
    /* clear keeps the buffers and restarts the statistics */
    series_clear(&s);
    if (!bad && (s.n != 0 || series_push(&s, 3.0) || series_median(&s) != 3.0 || series_min(&s) != 3.0 || series_mean(&s) != 3.0))
        { printf("%s: clear\n", name); bad = 1; }
    series_free(&s);
    free(sorted); free(med); free(mean);
    printf("%s: n=%zu %s\n", name, n, bad ? "FAILED" : "ok");
    return bad;
}

int main(void)
{
    enum { N = 1500 };
    static double x[N];
    int bad = 0;
    unsigned long long h = 0x9E3779B97F4A7C15ull;
#define RND() (h ^= h << 13, h ^= h >> 7, h ^= h << 17, (double)(h >> 11) / 9007199254740992.0)
    for (size_t i = 0; i < N; i++) x[i] = 1e-6 * (1.0 + RND());
    bad |= check("uniform", x, N);
    for (size_t i = 0; i < N; i++) x[i] = 1e-6 * (double)(1 + (int)(RND() * 7));      /* many ties */
    bad |= check("ties", x, N);
    for (size_t i = 0; i < N; i++) x[i] = 1e-6 * (double)(i + 1);
    bad |= check("ascending", x, N);
    for (size_t i = 0; i < N; i++) x[i] = 1e-6 * (double)(N - i);
    bad |= check("descending", x, N);
    for (size_t i = 0; i < N; i++) x[i] = 2.5e-6;
    bad |= check("constant", x, N);
    for (size_t i = 0; i < N; i++) x[i] = 1e-6 / pow(1.0 - 0.999 * RND(), 1.5);      /* heavy tail */
    bad |= check("heavy-tail", x, N);
    bad |= check("single", x, 1);
    printf("%s\n", bad ? "stats_check: FAILED" : "stats_check: OK");
    return bad;
}
