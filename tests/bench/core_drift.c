/* How steady is this machine's core-to-core latency?  Two threads pinned to two CPUs bounce a cache
 * line (the shared-memory path every intra-node MPI message takes) for SECONDS; the mean round trip of
 * every 1 ms block is kept.  Printed: the spread of the block means, and the coefficient of variation
 * of averages over longer windows (10 ms ... 1 s).  If the CV of 1-second averages is above 2 %, no
 * benchmark whose mpiruns last about a second can reproduce its medians within 2 % between mpiruns:
 * the machine drifts, not the method.  No MPI involved.
 *   core_drift [SECONDS=20] [CPU_A=0] [CPU_B=1] */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <time.h>

static _Atomic long flag __attribute__((aligned(64)));
static _Atomic int stop;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    return pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static void *responder(void *arg)
{
    if (pin(*(int *)arg)) { perror("pin responder"); exit(2); }
    for (long i = 1;; i += 2) {
        long v;
        while ((v = atomic_load_explicit(&flag, memory_order_acquire)) != i)
            if (atomic_load_explicit(&stop, memory_order_relaxed)) return NULL;
        atomic_store_explicit(&flag, i + 1, memory_order_release);
    }
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* CV (%) of the means of non-overlapping windows of w blocks; -1 when fewer than 3 windows */
static double cv_windows(const double *v, long n, long w)
{
    long k = n / w;
    if (k < 3) return -1;
    double s = 0, q = 0;
    for (long j = 0; j < k; j++) {
        double m = 0;
        for (long i = 0; i < w; i++) m += v[j * w + i];
        m /= (double)w;
        s += m; q += m * m;
    }
    double mean = s / (double)k;
    return 100.0 * sqrt(fmax(0.0, (q - (double)k * mean * mean) / (double)(k - 1))) / mean;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 20.0;
    int cpu_a = argc > 2 ? atoi(argv[2]) : 0, cpu_b = argc > 3 ? atoi(argv[3]) : 1;
    if (pin(cpu_a)) { perror("pin"); return 2; }
    pthread_t t;
    pthread_create(&t, NULL, responder, &cpu_b);
    /* calibrate the round trips per 1 ms block */
    long i = 1, per_block = 1000;
    for (int pass = 0; pass < 3; pass++) {
        double t0 = now();
        for (long k = 0; k < per_block; k++, i += 2) {
            atomic_store_explicit(&flag, i, memory_order_release);
            while (atomic_load_explicit(&flag, memory_order_acquire) != i + 1) ;
        }
        per_block = (long)((double)per_block * 1e-3 / (now() - t0)) + 1;
    }
    long nblocks = (long)(seconds * 1000.0);
    double *rt = malloc(sizeof(double) * (size_t)nblocks), t_start = now();
    for (long b = 0; b < nblocks; b++) {
        double t0 = now();
        for (long k = 0; k < per_block; k++, i += 2) {
            atomic_store_explicit(&flag, i, memory_order_release);
            while (atomic_load_explicit(&flag, memory_order_acquire) != i + 1) ;
        }
        rt[b] = (now() - t0) / (double)per_block * 1e9;
    }
    double wall = now() - t_start;
    atomic_store(&stop, 1);
    pthread_join(t, NULL);

    double *s = malloc(sizeof(double) * (size_t)nblocks);
    for (long b = 0; b < nblocks; b++) s[b] = rt[b];
    qsort(s, (size_t)nblocks, sizeof *s, cmpd);
    double block_ms = wall / (double)nblocks * 1e3;
    printf("core_drift: CPUs %d<->%d, %.1f s, %ld blocks of %ld round trips (%.2f ms)\n", cpu_a, cpu_b, wall, nblocks,
           per_block, block_ms);
    printf("core_drift: round trip per block: min %.1f  p10 %.1f  median %.1f  p90 %.1f  max %.1f ns\n", s[0],
           s[nblocks / 10], s[nblocks / 2], s[nblocks * 9 / 10], s[nblocks - 1]);
    const long windows[] = {1, 10, 100, 1000};
    for (int w = 0; w < 4; w++) {
        double cv = cv_windows(rt, nblocks, windows[w]);
        if (cv < 0) continue;
        printf("core_drift: averages over %7.1f ms windows: CV %5.2f %% (%ld windows)\n", (double)windows[w] * block_ms,
               cv, nblocks / windows[w]);
    }
    free(rt); free(s);
    return 0;
}
