/* MPI_Alltoall: the library default and its mock-up (GL8; rules in ../core/pgmpitune_core.h).
 * n = recvcount x size(recvtype) bytes, the block per destination. */
#include "mockups.h"

typedef int (*alltoall_fn)(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                           MPI_Comm comm);

/* GL8: Alltoallv with equal byte counts (vectors from the int pool), in bytes on every rank (rule 3):
 * a rank sends its buffer as it is when its type is contiguous, else a packed copy (first n x p bytes
 * of the message pool), and receives straight into a contiguous receive buffer, else into the pool's
 * second half and unpacks. MPI_IN_PLACE (used by all ranks or none) works on the receive buffer or its
 * packed copy. */
static int alltoall_as_alltoallv(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt,
                                 MPI_Comm comm)
{
    if (pm_inter(comm)) return PGMPI_FALLBACK;
    int p = pm_size(comm);
    size_t n = (size_t)rc * pgmpi_type_bytes(rt), all = n * (size_t)p;   /* n: the same on every rank */
    if (n == 0) return MPI_SUCCESS;
    if (!pm_fits_int(all) || !pgmpi_pack_is_raw()) return PGMPI_FALLBACK;
    char *packed = pgmpi_pool_msg(), *V = pm_landing(rb, rt, packed + all);
    int *counts = pgmpi_pool_int(), *displs = counts + p;
    for (int i = 0; i < p; i++) { counts[i] = (int)n; displs[i] = i * (int)n; }
    if (sb == MPI_IN_PLACE) {
        if (V != (char *)rb) PM_TRY(pm_pack(rb, rc * p, rt, V, all, comm));
        PM_TRY(PMPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_BYTE, V, counts, displs, MPI_BYTE, comm));
    } else {
        const void *send;
        PM_TRY(pm_send_bytes(sb, sc * p, st, packed, all, comm, &send));
        PM_NOALIAS(send, all, V, all);
        PM_TRY(PMPI_Alltoallv(send, counts, displs, MPI_BYTE, V, counts, displs, MPI_BYTE, comm));
    }
    return V == (char *)rb ? MPI_SUCCESS : pm_unpack(V, all, rb, rc * p, rt, comm);
}


static const pgmpi_alg_t alltoall_algs[] = {
    {"default", NULL, NULL, NULL, 0},
    {"alltoall_as_alltoallv", (void (*)(void))alltoall_as_alltoallv, pm_need_2pn, pm_need_2p_ints, 0},
};

const pgmpi_coll_desc_t pgmpi_desc_ALLTOALL = {
    PGMPI_COLL_ALLTOALL, alltoall_algs, (int)(sizeof alltoall_algs / sizeof alltoall_algs[0])
};

int MPI_Alltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm)
{
    size_t n = (size_t)(rc > 0 ? rc : 0) * pgmpi_type_bytes(rt);
    PGMPI_DISPATCH(ALLTOALL, alltoall_algs, alltoall_fn, comm, n, 1, PMPI_Alltoall, (sb, sc, st, rb, rc, rt, comm));
}
