/* Small helpers shared by the mock-up files of lib/src/collectives/ (header only, static inline).
 * The rules they serve are in ../core/pgmpitune_core.h. */
#ifndef PGMPI_MOCKUPS_H
#define PGMPI_MOCKUPS_H

#include "pgmpitune_core.h"
#include <limits.h>
#include <string.h>

/* Return the first MPI error code of a composition (rule 6). */
#define PM_TRY(call)                                   \
    do {                                               \
        int pm_rc_ = (call);                           \
        if (pm_rc_ != MPI_SUCCESS) return pm_rc_;      \
    } while (0)

/* Tag for local (MPI_COMM_SELF) typed copies. */
#define PM_SELF_TAG 0x5047

/* Chunk (bytes) of the Reduce_scatter based mock-ups (PGMPITuneLib's chunk size C, paper appendix A,
 * GL7/GL16): the reduced vector is dealt out to the ranks in blocks that are whole chunks, so that no
 * rank receives a handful of bytes. */
#define PM_CHUNK_BYTES 64u

static inline size_t pm_ceil_div(size_t a, size_t b) { return b ? (a + b - 1) / b : 0; }

/* Elements per chunk for an element of elem bytes. */
static inline size_t pm_chunk_elems(size_t elem)
{
    if (elem == 0 || elem >= PM_CHUNK_BYTES) return 1;
    return PM_CHUNK_BYTES / elem;
}

/* Deal count elements to p ranks in chunks of C elements, lowest ranks first, one contiguous range per
 * rank (rank order = vector order, so non-commutative reductions keep their order). Fills counts[p] and
 * displs[p] when they are not NULL; returns the largest block (elements). */
static inline size_t pm_chunked_split(size_t count, size_t elem, int p, int *counts, int *displs)
{
    size_t C = pm_chunk_elems(elem);
    size_t nchunks = pm_ceil_div(count, C);
    size_t per = nchunks / (size_t)p, extra = nchunks % (size_t)p;
    size_t maxblk = 0, off = 0;
    for (int i = 0; i < p; i++) {
        size_t c = (per + ((size_t)i < extra ? 1 : 0)) * C;
        if (off + c > count) c = count > off ? count - off : 0;
        if (counts) counts[i] = (int)c;
        if (displs) displs[i] = (int)off;
        off += c;
        if (c > maxblk) maxblk = c;
    }
    return maxblk;
}

/* Contiguous and starting at the buffer address: byte copies and byte offsets are valid. */
static inline int pm_contig(MPI_Datatype t) { return pgmpi_type_is_contiguous(t); }

static inline int pm_size(MPI_Comm comm) { int p = 1; PMPI_Comm_size(comm, &p); return p; }
static inline int pm_rank(MPI_Comm comm) { int r = 0; PMPI_Comm_rank(comm, &r); return r; }

static inline MPI_Aint pm_extent(MPI_Datatype t)
{
    MPI_Aint lb = 0, ext = 0;
    PMPI_Type_get_extent(t, &lb, &ext);
    return ext;
}

/* Typed local copy src(sc, st) -> dst(rc, rt): memcpy when both are contiguous, else through
 * MPI_COMM_SELF (any datatypes, no scratch memory). */
static inline int pm_local_copy(const void *src, int sc, MPI_Datatype st, void *dst, int rc, MPI_Datatype rt)
{
    if (sc == 0 && rc == 0) return MPI_SUCCESS;
    if (pm_contig(st) && pm_contig(rt)) {
        size_t nb = (size_t)sc * pgmpi_type_bytes(st);
        if (src != dst && nb) memmove(dst, src, nb);
        return MPI_SUCCESS;
    }
    if (src == dst) return MPI_SUCCESS;
    return PMPI_Sendrecv(src, sc, st, 0, PM_SELF_TAG, dst, rc, rt, 0, PM_SELF_TAG, MPI_COMM_SELF,
                         MPI_STATUS_IGNORE);
}

/* Widest unsigned integer MPI type whose size divides nbytes (bitwise-or tricks work on raw bytes; the
 * width only depends on a byte count all ranks agree on). */
static inline MPI_Datatype pm_bor_type(size_t nbytes, size_t *width)
{
    if (nbytes % 8 == 0) { *width = 8; return MPI_UINT64_T; }
    if (nbytes % 4 == 0) { *width = 4; return MPI_UINT32_T; }
    if (nbytes % 2 == 0) { *width = 2; return MPI_UINT16_T; }
    *width = 1;
    return MPI_UINT8_T;
}

/* Common early checks: intercommunicators always go to the default. */
static inline int pm_inter(MPI_Comm comm) { return pgmpi_comm_is_inter(comm); }

static inline int pm_fits_int(size_t v) { return v <= (size_t)INT_MAX; }

#endif
