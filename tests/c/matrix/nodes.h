/* What the node-aware mock-ups of libpgmpitune (pm_nodes in lib/src/collectives/mockups.h) see of
 * MPI_COMM_WORLD, measured here on its own, to predict when they fall back: one node, or a
 * non-commutative op when the ranks are not numbered node by node. */
#ifndef PGMPI_TEST_NODES_H
#define PGMPI_TEST_NODES_H
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "pgmpitune.h"
#include <string.h>

static int g_nnodes = 1, g_node_contig = 1;

/* Collective over MPI_COMM_WORLD. A node is named by its lowest world rank. */
static void nodes_measure(void)
{
    int p, r, first, lr;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, r, MPI_INFO_NULL, &node);
    MPI_Allreduce(&r, &first, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_rank(node, &lr);
    int lead = lr == 0, *firsts = malloc(sizeof(int) * (size_t)p);
    MPI_Allreduce(&lead, &g_nnodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allgather(&first, 1, MPI_INT, firsts, 1, MPI_INT, MPI_COMM_WORLD);
    g_node_contig = 1;
    for (int i = 1; i < p; i++) if (firsts[i] < firsts[i - 1]) g_node_contig = 0;
    free(firsts);
    MPI_Comm_free(&node);
}

/* The library's flag (pgmpitune_algorithm_node_aware) for a mock-up "<key>_as_<parts>". */
static int node_aware(const char *name)
{
    const char *as = strstr(name, "_as_");
    char key[64];
    if (!as || as - name >= (long)sizeof key) return 0;
    snprintf(key, sizeof key, "%.*s", (int)(as - name), name);
    int c = pgmpitune_collective_lookup(key);
    return c >= 0 && pgmpitune_algorithm_node_aware(c, pgmpitune_algorithm_lookup(c, name));
}

/* noncommutative: the call's op is a user op created with commute = 0 */
static int node_falls_back(const char *name, int noncommutative)
{
    if (!node_aware(name)) return 0;
    return g_nnodes < 2 || (noncommutative && !g_node_contig);
}
#endif
