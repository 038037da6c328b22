"""A test-only PMPI interposer that makes the MPI library's own MPI_Allreduce slow at one message size, so
that a test knows a violation is there (allreduce_as_reduce_bcast never calls PMPI_Allreduce).  Launch the
ranks with LD_PRELOAD=<the .so> and PGMPI_TEST_DELAY_BYTES=<count of MPI_BYTE>."""
from __future__ import annotations

import subprocess
from pathlib import Path

SOURCE = r"""
#define _GNU_SOURCE
#include <mpi.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>
typedef int (*fn_t)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
int PMPI_Allreduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    static fn_t next;
    if (!next) next = (fn_t)dlsym(RTLD_NEXT, "PMPI_Allreduce");
    const char *s = getenv("PGMPI_TEST_DELAY_BYTES");
    if (dt == MPI_BYTE && s && count == atoi(s)) {
        struct timespec ts = {0, DELAY_NS};   /* sleep, not spin: keep the 2 cores free */
        nanosleep(&ts, NULL);
    }
    return next(sb, rb, count, dt, op, comm);
}
"""


def build(workdir: Path, mpi: str = "openmpi", delay_ms: int = 20) -> Path:
    """Compile the interposer with that MPI's compiler; returns the .so."""
    src, so = workdir / "delay.c", workdir / "libdelay.so"
    src.write_text(SOURCE)
    subprocess.run([f"mpicc.{mpi}", "-O1", "-shared", "-fPIC", f"-DDELAY_NS={delay_ms * 1000 * 1000}", "-o",
                    str(so), str(src), "-ldl"], check=True)
    return so
