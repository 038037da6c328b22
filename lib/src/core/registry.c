/* The registry of collectives and their algorithms, built from collectives.def and the
 * descriptor tables pgmpi_desc_<ID> of lib/src/collectives/ (one file per collective); the public table API. */
#include <string.h>
#include <strings.h>
#include <stdio.h>

#include "pgmpi_internal.h"
#include "pgmpitune.h"

const pgmpi_coll_desc_t *const pgmpi_descs[PGMPI_NCOLL] = {
#define PGMPI_COLLECTIVE(ID, key, mpi_name, rule) &pgmpi_desc_##ID,
#include "collectives.def"
#undef PGMPI_COLLECTIVE
};

const char *const pgmpi_coll_keys[PGMPI_NCOLL] = {
#define PGMPI_COLLECTIVE(ID, key, mpi_name, rule) key,
#include "collectives.def"
#undef PGMPI_COLLECTIVE
};

const char *const pgmpi_coll_mpi_names[PGMPI_NCOLL] = {
#define PGMPI_COLLECTIVE(ID, key, mpi_name, rule) mpi_name,
#include "collectives.def"
#undef PGMPI_COLLECTIVE
};

static const char *const coll_rules[PGMPI_NCOLL] = {
#define PGMPI_COLLECTIVE(ID, key, mpi_name, rule) #rule,
#include "collectives.def"
#undef PGMPI_COLLECTIVE
};

/* PGMPITuneLib's CLI prefixes where they differ from our keys. */
static const struct { const char *alias; int coll; } coll_aliases[] = {
    {"reduce_scatter_block", PGMPI_COLL_REDUCE_SCATTER_BLOCK},
    {"reduce_scatter", PGMPI_COLL_REDUCE_SCATTER},
};

static int eq(const char *a, size_t alen, const char *b)
{
    return strlen(b) == alen && strncasecmp(a, b, alen) == 0;
}

int pgmpi_coll_lookup(const char *s, size_t len)
{
    if (!s) return -1;
    for (int c = 0; c < PGMPI_NCOLL; c++)
        if (eq(s, len, pgmpi_coll_keys[c]) || eq(s, len, pgmpi_coll_mpi_names[c])) return c;
    for (size_t i = 0; i < sizeof coll_aliases / sizeof coll_aliases[0]; i++)
        if (eq(s, len, coll_aliases[i].alias)) return coll_aliases[i].coll;
    return -1;
}

int pgmpi_alg_lookup(int c, const char *s, size_t len)
{
    if (c < 0 || c >= PGMPI_NCOLL || !s) return -1;
    const pgmpi_coll_desc_t *d = pgmpi_descs[c];
    for (int a = 0; a < d->nalgs; a++)
        if (strlen(d->algs[a].name) == len && strncmp(d->algs[a].name, s, len) == 0) return a;
    return -1;
}

static void append(char *buf, size_t cap, size_t *pos, const char *s)
{
    size_t l = strlen(s);
    if (*pos + l + 1 > cap) {
        if (cap > 4 && *pos + 4 <= cap) { memcpy(buf + *pos, "...", 4); *pos = cap; }
        return;
    }
    memcpy(buf + *pos, s, l + 1);
    *pos += l;
}

void pgmpi_alg_list(int c, char *buf, size_t cap)
{
    size_t pos = 0;
    if (cap) buf[0] = 0;
    const pgmpi_coll_desc_t *d = pgmpi_descs[c];
    for (int a = 0; a < d->nalgs; a++) {
        if (a) append(buf, cap, &pos, ", ");
        append(buf, cap, &pos, d->algs[a].name);
    }
}

void pgmpi_coll_list(char *buf, size_t cap)
{
    size_t pos = 0;
    if (cap) buf[0] = 0;
    for (int c = 0; c < PGMPI_NCOLL; c++) {
        if (c) append(buf, cap, &pos, ", ");
        append(buf, cap, &pos, pgmpi_coll_keys[c]);
    }
}

/* ---- public API ------------------------------------------------------------ */

int pgmpitune_ncollectives(void) { return PGMPI_NCOLL; }

const char *pgmpitune_collective_key(int c)
{
    return (c >= 0 && c < PGMPI_NCOLL) ? pgmpi_coll_keys[c] : NULL;
}

const char *pgmpitune_collective_mpi_name(int c)
{
    return (c >= 0 && c < PGMPI_NCOLL) ? pgmpi_coll_mpi_names[c] : NULL;
}

const char *pgmpitune_collective_size_rule(int c)
{
    return (c >= 0 && c < PGMPI_NCOLL) ? coll_rules[c] : NULL;
}

int pgmpitune_collective_lookup(const char *key_or_mpi_name)
{
    return key_or_mpi_name ? pgmpi_coll_lookup(key_or_mpi_name, strlen(key_or_mpi_name)) : -1;
}

int pgmpitune_nalgorithms(int c)
{
    return (c >= 0 && c < PGMPI_NCOLL) ? pgmpi_descs[c]->nalgs : 0;
}

const char *pgmpitune_algorithm_name(int c, int a)
{
    if (c < 0 || c >= PGMPI_NCOLL || a < 0 || a >= pgmpi_descs[c]->nalgs) return NULL;
    return pgmpi_descs[c]->algs[a].name;
}

int pgmpitune_algorithm_node_aware(int c, int a)
{
    if (c < 0 || c >= PGMPI_NCOLL || a < 0 || a >= pgmpi_descs[c]->nalgs) return 0;
    return pgmpi_descs[c]->algs[a].node_aware;
}

int pgmpitune_algorithm_lookup(int c, const char *name)
{
    return name ? pgmpi_alg_lookup(c, name, strlen(name)) : -1;
}

static size_t need(pgmpi_need_fn f, size_t n, size_t e, int p)
{
    return f ? f(n, e, p) : 0;
}

size_t pgmpitune_algorithm_msg_memory(int c, int a, size_t n, size_t e, int p)
{
    if (c < 0 || c >= PGMPI_NCOLL || a < 0 || a >= pgmpi_descs[c]->nalgs) return 0;
    return need(pgmpi_descs[c]->algs[a].msg_need, n, e, p);
}

size_t pgmpitune_algorithm_int_memory(int c, int a, size_t n, size_t e, int p)
{
    if (c < 0 || c >= PGMPI_NCOLL || a < 0 || a >= pgmpi_descs[c]->nalgs) return 0;
    return need(pgmpi_descs[c]->algs[a].int_need, n, e, p);
}

size_t pgmpitune_algorithm_memory(int c, int a, size_t n, size_t e, int p)
{
    size_t m = pgmpitune_algorithm_msg_memory(c, a, n, e, p);
    size_t i = pgmpitune_algorithm_int_memory(c, a, n, e, p);
    return m > SIZE_MAX - i ? SIZE_MAX : m + i;
}
