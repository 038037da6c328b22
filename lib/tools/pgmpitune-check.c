/* pgmpitune-check FILE|DIR...   validate tuning profiles with libpgmpitune's own reader
 * pgmpitune-check --list [--json] [--p=P] [--bytes=N] [--elem=E]
 *                                 collectives, message-size rule, algorithms, memory needs */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgmpitune.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: pgmpitune-check [-v|--verbose] FILE|DIR...\n"
            "       pgmpitune-check --list [--json] [--p=P] [--bytes=N] [--elem=E]\n"
            "Validates libpgmpitune profiles (*.prf) exactly as the library reads them at MPI_Init;\n"
            "prints file:line messages and exits 1 when anything is wrong, 0 when all is valid.\n"
            "--list prints the collectives, their message-size rule and algorithms with the pool memory\n"
            "they need for P ranks and N message bytes (defaults: P=4, N=1024, E=4).\n");
}

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20) printf("\\u%04x", *s);
        else putchar(*s);
    }
    putchar('"');
}

static int parse_num(const char *s, unsigned long long *v)
{
    char *end;
    if (!*s) return -1;
    *v = strtoull(s, &end, 10);
    return *end ? -1 : 0;
}

static int list(int json, int p, size_t n, size_t e)
{
    int nc = pgmpitune_ncollectives();
    if (json) printf("{\"p\": %d, \"bytes\": %zu, \"elem_bytes\": %zu, \"collectives\": [", p, n, e);
    for (int c = 0; c < nc; c++) {
        if (json) {
            printf("%s\n  {\"key\": ", c ? "," : "");
            json_str(pgmpitune_collective_key(c));
            printf(", \"mpi_name\": ");
            json_str(pgmpitune_collective_mpi_name(c));
            printf(", \"size_rule\": ");
            json_str(pgmpitune_collective_size_rule(c));
            printf(", \"algorithms\": [");
        } else {
            printf("%s %s size=%s\n", pgmpitune_collective_key(c), pgmpitune_collective_mpi_name(c),
                   pgmpitune_collective_size_rule(c));
        }
        for (int a = 0; a < pgmpitune_nalgorithms(c); a++) {
            size_t m = pgmpitune_algorithm_msg_memory(c, a, n, e, p);
            size_t i = pgmpitune_algorithm_int_memory(c, a, n, e, p);
            if (json) {
                printf("%s{\"index\": %d, \"name\": ", a ? ", " : "", a);
                json_str(pgmpitune_algorithm_name(c, a));
                printf(", \"msg_pool_bytes\": %zu, \"int_pool_bytes\": %zu, \"node_aware\": %s}", m, i,
                       pgmpitune_algorithm_node_aware(c, a) ? "true" : "false");
            } else {
                printf("  %d %s msg_pool_bytes=%zu int_pool_bytes=%zu%s\n", a, pgmpitune_algorithm_name(c, a), m, i,
                       pgmpitune_algorithm_node_aware(c, a) ? " node_aware" : "");
            }
        }
        if (json) printf("]}");
    }
    if (json) printf("\n]}\n");
    return 0;
}

int main(int argc, char **argv)
{
    int do_list = 0, json = 0, verbose = 0, np = 0;
    unsigned long long p = 4, n = 1024, e = 4;
    const char **paths = calloc((size_t)argc + 1, sizeof *paths);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--list")) do_list = 1;
        else if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) verbose = 1;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else if (!strncmp(a, "--p=", 4)) {
            if (parse_num(a + 4, &p) || p < 1 || p > 0x7fffffff) { fprintf(stderr, "pgmpitune-check: bad %s\n", a); return 2; }
        } else if (!strncmp(a, "--bytes=", 8)) {
            if (parse_num(a + 8, &n)) { fprintf(stderr, "pgmpitune-check: bad %s\n", a); return 2; }
        } else if (!strncmp(a, "--elem=", 7)) {
            if (parse_num(a + 7, &e) || e < 1) { fprintf(stderr, "pgmpitune-check: bad %s\n", a); return 2; }
        } else if (a[0] == '-' && a[1]) { fprintf(stderr, "pgmpitune-check: unknown option %s\n", a); usage(stderr); return 2; }
        else paths[np++] = a;
    }
    if (do_list) return list(json, (int)p, (size_t)n, (size_t)e);
    if (!np) { usage(stderr); return 2; }
    int errors = pgmpitune_check_paths(np, paths, stdout, verbose);
    if (errors) fprintf(stdout, "pgmpitune-check: %d error(s)\n", errors);
    free(paths);
    return errors ? 1 : 0;
}
