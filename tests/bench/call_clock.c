/* LD_PRELOAD shim for tests/bench/reprompi_compare.py (the `call-clock` control, issue 34): a witness of every
 * measured call that does not depend on either tool.  It wraps MPI_Allreduce, MPI_Bcast and MPI_Allgather and
 * records, per call and rank, its entry and exit on CLOCK_MONOTONIC: ranks of one kernel and one time namespace
 * read one CLOCK_MONOTONIC (on one node and on the virtual cluster's nodes; tests/bench/wtime_truth.c explains
 * why), so entries and exits of different ranks compare without any clock model.  From them the reader
 * (reprompi_compare.call_clock_*) takes per measurement the arrival skew (max entry - min entry), the
 * collective's own time from the last arrival (max exit - max entry) and the true global time (max exit - min
 * entry).
 * Each wrapper chains with dlsym(RTLD_NEXT), so libpgmpitune's own MPI_<call> still runs in pgmpi-bench, and
 * records only the outermost call (a library that calls MPI_<call> inside MPI_<call> is one call).  Records go
 * into a buffer allocated and written before main (CALL_CLOCK_MAX records, default 1<<20): nothing is
 * allocated or faulted in during a measurement; a call beyond the buffer is counted, not recorded.
 * At MPI_Finalize the ranks gather their records to rank 0, which writes $CALL_CLOCK_FILE:
 *   "clock <rank> <boot_id> <timens> <host>" per rank (what makes the clocks one; the reader refuses others),
 *   "lost <rank> <calls not recorded>" per rank,
 *   "<rank> <call> <bytes> <byte> <entry_ns> <exit_ns>" per call (call: allreduce|bcast|allgather; bytes =
 *   count x the datatype's size; byte = 1 when the datatype is MPI_BYTE, the tools' measured calls, where
 *   their own agreement messages use MPI_DOUBLE and the like).
 * Without CALL_CLOCK_FILE the wrappers only chain on.
 *   mpicc -O2 -shared -fPIC -o libcall_clock.so tests/bench/call_clock.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock_identity.h"

enum { C_ALLREDUCE, C_BCAST, C_ALLGATHER };
static const char *const NAMES[] = {"allreduce", "bcast", "allgather"};

struct rec {
    int64_t entry, exit, bytes;
    int32_t call, byte;
};

static struct rec *recs;
static long cap, used, lost;
static int depth;          /* > 0 inside a wrapped call: nested calls are part of it */

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

__attribute__((constructor)) static void call_clock_init(void)
{
    const char *path = getenv("CALL_CLOCK_FILE"), *max = getenv("CALL_CLOCK_MAX");
    if (!path || !*path) return;
    cap = max && *max ? atol(max) : 1L << 20;
    recs = malloc((size_t)cap * sizeof *recs);
    if (recs) memset(recs, 0, (size_t)cap * sizeof *recs);     /* fault the pages in now, not while timing */
    else cap = 0;
}

static void *next_fn(void **slot, const char *name)
{
    if (!*slot) *slot = dlsym(RTLD_NEXT, name);
    return *slot;
}

static void record(int call, int64_t t0, int64_t t1, long count, MPI_Datatype dt)
{
    if (used >= cap) { lost++; return; }
    int size = 0;
    PMPI_Type_size(dt, &size);
    recs[used++] = (struct rec){t0, t1, (int64_t)count * size, call, dt == MPI_BYTE};
}

#define WRAP(call_id, name, params, args, count, dt)                              \
    int name params                                                               \
    {                                                                             \
        static void *fn;                                                          \
        int (*next) params = (int (*) params)next_fn(&fn, #name);                 \
        if (!recs || depth) return next args;                                     \
        depth++;                                                                  \
        int64_t t0 = now_ns();                                                    \
        int rc = next args;                                                       \
        int64_t t1 = now_ns();                                                    \
        depth--;                                                                  \
        record(call_id, t0, t1, count, dt);                                       \
        return rc;                                                                \
    }

WRAP(C_ALLREDUCE, MPI_Allreduce,
     (const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm),
     (sbuf, rbuf, count, dt, op, comm), count, dt)
WRAP(C_BCAST, MPI_Bcast, (void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm),
     (buf, count, dt, root, comm), count, dt)
WRAP(C_ALLGATHER, MPI_Allgather,
     (const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount, MPI_Datatype rdt, MPI_Comm comm),
     (sbuf, scount, sdt, rbuf, rcount, rdt, comm), scount, sdt)


enum { ID = 192 };

int MPI_Finalize(void)
{
    int (*next)(void) = (int (*)(void))dlsym(RTLD_NEXT, "MPI_Finalize");
    const char *path = getenv("CALL_CLOCK_FILE");
    if (recs && path && *path) {
        int rank = 0, size = 1;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        PMPI_Comm_size(MPI_COMM_WORLD, &size);
        char who[160], id[ID];
        clock_identity_text(who, sizeof who);
        memset(id, 0, sizeof id);
        snprintf(id, sizeof id, "%s %ld", who, lost);
        int nbytes = (int)(used * (long)sizeof *recs);
        int *counts = rank == 0 ? calloc((size_t)size, sizeof *counts) : NULL;
        int *displs = rank == 0 ? calloc((size_t)size, sizeof *displs) : NULL;
        char *ids = rank == 0 ? malloc((size_t)size * ID) : NULL;
        PMPI_Gather(id, ID, MPI_CHAR, ids, ID, MPI_CHAR, 0, MPI_COMM_WORLD);
        PMPI_Gather(&nbytes, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
        long total = 0;
        if (rank == 0)
            for (int r = 0; r < size; r++) { displs[r] = (int)total; total += counts[r]; }
        char *all = rank == 0 ? malloc((size_t)total + 1) : NULL;
        PMPI_Gatherv(recs, nbytes, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD);
        if (rank == 0 && all && ids) {
            FILE *f = fopen(path, "w");
            if (f) {
                for (int r = 0; r < size; r++) {
                    char b[64], h[64];
                    unsigned long long t;
                    long l;
                    if (sscanf(ids + (size_t)r * ID, "%63s %llu %63s %ld", b, &t, h, &l) == 4)
                        fprintf(f, "clock %d %s %llu %s\nlost %d %ld\n", r, b, t, h, r, l);
                }
                for (int r = 0; r < size; r++) {
                    const struct rec *x = (const struct rec *)(all + displs[r]);
                    for (long i = 0; i < counts[r] / (long)sizeof *x; i++)
                        fprintf(f, "%d %s %lld %d %lld %lld\n", r, NAMES[x[i].call], (long long)x[i].bytes,
                                x[i].byte, (long long)x[i].entry, (long long)x[i].exit);
                }
                fclose(f);
            }
        }
        free(all);
        free(ids);
        free(counts);
        free(displs);
        free(recs);
        recs = NULL;
    }
    return next ? next() : PMPI_Finalize();
}
