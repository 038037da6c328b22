/* The node structure of a communicator for the node-aware mock-ups (pgmpi_nodes_t in pgmpitune_core.h):
 * built once per communicator, collectively, and cached as an attribute whose delete callback frees it
 * with the communicator. */
#include "pgmpitune_core.h"
#include <stdlib.h>

static int g_keyval = MPI_KEYVAL_INVALID;

static void nodes_free(pgmpi_nodes_t *N)
{
    if (!N) return;
    if (N->node_comm != MPI_COMM_NULL) PMPI_Comm_free(&N->node_comm);
    if (N->leaders != MPI_COMM_NULL) PMPI_Comm_free(&N->leaders);
    free(N->node_of);
    free(N);
}

static int nodes_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm; (void)keyval; (void)extra;
    nodes_free(attr);
    return MPI_SUCCESS;
}

/* Every step is collective over comm and taken by every rank alike; a failure of one step is
 * agreed (one Allreduce) so that all ranks return NULL together and fall back together. */
static pgmpi_nodes_t *nodes_build(MPI_Comm comm)
{
    int p = 1, r = 0, ok = 1, all_ok = 0;
    PMPI_Comm_size(comm, &p);
    PMPI_Comm_rank(comm, &r);
    pgmpi_nodes_t *N = calloc(1, sizeof *N);
    int *ints = calloc((size_t)(5 * p + 2), sizeof(int));
    if (!N || !ints) { ok = 0; free(N); N = NULL; free(ints); ints = NULL; }
    MPI_Comm node_comm = MPI_COMM_NULL, leaders = MPI_COMM_NULL;
    if (PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, r, MPI_INFO_NULL, &node_comm) != MPI_SUCCESS) ok = 0;
    int lrank = 0, lsize = 1, node = 0;
    if (node_comm != MPI_COMM_NULL) { PMPI_Comm_rank(node_comm, &lrank); PMPI_Comm_size(node_comm, &lsize); }
    if (PMPI_Comm_split(comm, lrank == 0 ? 0 : MPI_UNDEFINED, r, &leaders) != MPI_SUCCESS) ok = 0;
    if (leaders != MPI_COMM_NULL) PMPI_Comm_rank(leaders, &node);
    if (node_comm != MPI_COMM_NULL && PMPI_Bcast(&node, 1, MPI_INT, 0, node_comm) != MPI_SUCCESS) ok = 0;
    int mine[2] = {node, lrank}, *pairs = ints ? ints + 3 * p : NULL, dummy[2];
    if (PMPI_Allgather(mine, 2, MPI_INT, pairs ? pairs : dummy, pairs ? 2 : 0, MPI_INT, comm) != MPI_SUCCESS)
        ok = 0;
    PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
    if (!all_ok) {
        if (node_comm != MPI_COMM_NULL) PMPI_Comm_free(&node_comm);
        if (leaders != MPI_COMM_NULL) PMPI_Comm_free(&leaders);
        free(N);
        free(ints);
        return NULL;
    }
    N->node_comm = node_comm;
    N->leaders = leaders;
    N->node = node; N->lrank = lrank; N->lsize = lsize;
    N->node_of = ints;            /* one allocation: node_of, lrank_of, order, pairs (2p), first/count */
    N->lrank_of = ints + p;
    N->order = ints + 2 * p;
    N->nnodes = 0;
    N->contiguous = 1;
    for (int i = 0; i < p; i++) {
        N->node_of[i] = pairs[2 * i];
        N->lrank_of[i] = pairs[2 * i + 1];
        if (N->node_of[i] + 1 > N->nnodes) N->nnodes = N->node_of[i] + 1;
        if (i > 0 && N->node_of[i] < N->node_of[i - 1]) N->contiguous = 0;
    }
    /* first/count reuse the pairs area (2p ints >= 2 nnodes) once node_of/lrank_of hold its content */
    N->first = pairs;
    N->count = pairs + N->nnodes;
    for (int k = 0; k < N->nnodes; k++) N->count[k] = 0;
    for (int i = 0; i < p; i++) N->count[N->node_of[i]]++;
    for (int k = 0, pos = 0; k < N->nnodes; k++) { N->first[k] = pos; pos += N->count[k]; }
    for (int i = 0; i < p; i++) N->order[N->first[N->node_of[i]] + N->lrank_of[i]] = i;
    return N;
}

const pgmpi_nodes_t *pgmpi_nodes(MPI_Comm comm)
{
    if (g_keyval == MPI_KEYVAL_INVALID &&
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, nodes_delete, &g_keyval, NULL) != MPI_SUCCESS)
        return NULL;   /* local, but the same on every rank: keyval creation does not depend on comm */
    void *attr = NULL;
    int found = 0;
    PMPI_Comm_get_attr(comm, g_keyval, &attr, &found);
    if (found) return attr;
    pgmpi_nodes_t *N = nodes_build(comm);
    if (N && PMPI_Comm_set_attr(comm, g_keyval, N) != MPI_SUCCESS) { nodes_free(N); N = NULL; }
    return N;
}
