/* The library's #@pgmpi report, read back by the matrices of tests/c/matrix (rank 0 only): their
 * predicted served / fell-back counts are checked against it. */
#ifndef PGMPI_TEST_REPORT_H
#define PGMPI_TEST_REPORT_H

#include <stdio.h>
#include <string.h>

#include "pgmpitune.h"

/* One `count` or `fallback` line: collective c and algorithm a as the library's tables index them (-1 when
 * unknown), n bytes, v calls. */
typedef void (*report_line_fn)(void *ctx, int c, int a, size_t n, int fell_back, long v, const char *line);

/* Writes the report to a temporary file and calls fn for each count / fallback line. Returns how many
 * such lines there were (-1 without a temporary file); *other gets the number of other #@pgmpi lines. */
static long report_read(report_line_fn fn, void *ctx, long *other)
{
    FILE *f = tmpfile();
    if (!f) { perror("tmpfile"); return -1; }
    pgmpitune_report(f);
    rewind(f);
    char line[1024], mpi[128], alg[256];
    unsigned long long n, v;
    long lines = 0;
    *other = 0;
    while (fgets(line, sizeof line, f)) {
        int fell_back;
        if (sscanf(line, "#@pgmpi count %127s %llu %255s %llu", mpi, &n, alg, &v) == 4) fell_back = 0;
        else if (sscanf(line, "#@pgmpi fallback %127s %llu %255s %llu", mpi, &n, alg, &v) == 4) fell_back = 1;
        else { if (!strncmp(line, "#@pgmpi", 7)) (*other)++; continue; }
        lines++;
        int c = pgmpitune_collective_lookup(mpi), a = c < 0 ? -1 : pgmpitune_algorithm_lookup(c, alg);
        fn(ctx, c, a, (size_t)n, fell_back, (long)v, line);
    }
    fclose(f);
    return lines;
}

#endif
