/* What makes two ranks' CLOCK_MONOTONIC one clock: the kernel (boot_id) and the time namespace (inode).
 * Shared by the LD_PRELOAD shims of tests/bench (wtime_truth.c, call_clock.c), each built on its own. */
#ifndef PGMPI_CLOCK_IDENTITY_H
#define PGMPI_CLOCK_IDENTITY_H
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void clock_identity(char *boot, size_t blen, unsigned long long *timens)
{
    snprintf(boot, blen, "unknown");
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (fgets(boot, (int)blen, f)) boot[strcspn(boot, "\n")] = 0;
        fclose(f);
    }
    struct stat st;
    /* a kernel without time namespaces (< 5.6) has no such file: every process shares the one clock */
    *timens = stat("/proc/self/ns/time", &st) == 0 ? (unsigned long long)st.st_ino : 0ULL;
}

/* "<boot_id> <time namespace inode> <host>": the fields a shim's per-rank record begins (wtime_truth.c) or
 * ends (call_clock.c) with, which the Python side compares between ranks */
static void clock_identity_text(char *out, size_t n)
{
    char boot[64], host[64] = "unknown";
    unsigned long long timens;
    clock_identity(boot, sizeof boot, &timens);
    gethostname(host, sizeof host - 1);
    snprintf(out, n, "%s %llu %s", boot, timens, host);
}
#endif
