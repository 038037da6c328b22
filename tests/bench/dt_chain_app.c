/* An application that communicates a non-contiguous layout (tests/bench/dt_chain.py app): rank 0 broadcasts
 * (or every rank allgathers) one derived datatype, ITER times after a warm-up, and prints the median time
 * per call and a checksum of every rank's whole receive side (layout bytes and gaps) -- identical with and
 * without libpgmpitune, or the repair changed a result.
 *
 *   dt_chain_app bcast|allgather typed|nested BYTES ITER
 *     typed:  the tiled layout as count x contiguous(2 ints) resized to 4 ints (the paper's static type)
 *     nested: the same layout as ONE hvector(c/4, 1, 16 ints) of vector(4, 2, 4, MPI_INT), resized to the
 *             whole message (pgmpi-dtbench's `nested` description of tiled A=2, variant 1)
 * BYTES = the layout's bytes (c x 2 ints); c is rounded down to a multiple of 4. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 5) {
        if (!rank) fprintf(stderr, "usage: dt_chain_app bcast|allgather typed|nested BYTES ITER\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int bcast = !strcmp(argv[1], "bcast"), nested = !strcmp(argv[2], "nested");
    long c = atol(argv[3]) / 8 / 4 * 4;       /* blocks of 2 ints, a multiple of 4 */
    int iter = atoi(argv[4]);
    MPI_Datatype t, u, blk;
    int count;
    if (nested) {
        MPI_Type_vector(4, 2, 4, MPI_INT, &u);
        MPI_Type_create_hvector((int)(c / 4), 1, (MPI_Aint)(16 * sizeof(int)), u, &blk);
        MPI_Type_create_resized(blk, 0, (MPI_Aint)(c * 4 * sizeof(int)), &t);
        MPI_Type_free(&u);
        MPI_Type_free(&blk);
        count = 1;
    } else {
        MPI_Type_contiguous(2, MPI_INT, &blk);
        MPI_Type_create_resized(blk, 0, (MPI_Aint)(4 * sizeof(int)), &t);
        MPI_Type_free(&blk);
        count = (int)c;
    }
    MPI_Type_commit(&t);
    size_t ext = (size_t)c * 4 * sizeof(int);          /* one message's extent */
    size_t nrecv = bcast ? 1 : (size_t)size;
    int *send = malloc(ext), *recv = malloc(ext * nrecv);
    for (size_t i = 0; i < ext / sizeof(int); i++) send[i] = (int)(i * 2654435761u) ^ (rank * 7919);
    double *times = malloc(sizeof(double) * (size_t)iter);
    uint64_t sum = 0;
    for (int k = -3; k < iter; k++) {       /* 3 warm-up calls: a type's first communication is slower */
        for (size_t i = 0; i < ext * nrecv / sizeof(int); i++) recv[i] = -1 - (int)i;   /* gaps: a known pattern */
        if (bcast && rank == 0) memcpy(recv, send, ext);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (bcast) MPI_Bcast(recv, count, t, 0, MPI_COMM_WORLD);
        else MPI_Allgather(send, count, t, recv, count, t, MPI_COMM_WORLD);
        double dt = MPI_Wtime() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (k >= 0) times[k] = dt;
        if (k == iter - 1) {
            const unsigned char *b = (const unsigned char *)recv;
            for (size_t i = 0; i < ext * nrecv; i++) sum = (sum ^ b[i]) * 1099511628211ull;
        }
    }
    uint64_t all = 0;
    MPI_Reduce(&sum, &all, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    qsort(times, (size_t)iter, sizeof(double), cmp);
    if (!rank) printf("median_sec=%.9f checksum=%016llx count=%d bytes=%ld\n", times[iter / 2],
                      (unsigned long long)all, count, c * 8);
    MPI_Type_free(&t);
    free(send); free(recv); free(times);
    MPI_Finalize();
    return 0;
}
