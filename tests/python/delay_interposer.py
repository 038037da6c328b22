"""A test-only PMPI interposer that makes the MPI library's own MPI_Allreduce slow at one message size, so
that a test knows a violation is there (allreduce_as_reduce_bcast never calls PMPI_Allreduce).  Launch the
ranks with LD_PRELOAD=<the .so> and PGMPI_TEST_DELAY_BYTES=<count of MPI_BYTE>[,<count>...].

Built for Open MPI, it also wraps the library's own Allreduce algorithms (ompi_coll_base_allreduce_intra_*):
with PGMPI_TEST_FAST_ALGORITHM=<name> (e.g. redscat_allgather, Open MPI's rabenseifner) and
PGMPI_TEST_ALGORITHM_BYTES=<count>[,<count>...], every other of them is slowed by the delay at those counts, so
that algorithm wins a native search wherever it is measured or chosen, whatever the load (the nightly native
chain test).  At the counts of PGMPI_TEST_FILE_SLOW_BYTES that algorithm instead takes twice the delay when a
rules file is loaded (OMPI_MCA_coll_tuned_dynamic_rules_filename set): a choice that wins the search and then
loses in the validation job that loads the file as users do.

Built for Intel MPI (mpi="intelmpi"), whose algorithms are presets chosen by I_MPI_ADJUST_ALLREDUCE at
MPI_Init and whose internals export nothing to wrap, the delay follows the preset that variable gives this
call's size (a bare preset, or Intel's <preset>:<lo>-<hi>[@<pmin>-<pmax>][;...] ranges): with
PGMPI_TEST_FAST_PRESET=<id> and PGMPI_TEST_ALGORITHM_BYTES, every other preset (and the library's default) is
slowed at those counts; at PGMPI_TEST_FILE_SLOW_BYTES that preset takes twice the delay when it comes from
ranges (a native.impi as the module sets it), not when forced bare.  That the preset really ran is not the
interposer's to show: the validation's fingerprints (NaN payloads) come from Intel MPI's own algorithms.

Two clocks (`clock=`):
- "virtual" (the default): the interposer also defines MPI_Wtime / PMPI_Wtime as a per-process counter that
  advances by one tick (2^-20 s) per reading, by 4 ticks per MPI_BYTE PMPI_Allreduce / PMPI_Reduce /
  PMPI_Bcast (so the default Allreduce costs 5 ticks, the mock-up Reduce + Bcast 9, the barrier row 1: no
  barrier warning) and by the delay (in whole ticks) inside a slowed call; nothing sleeps. Every
  measurement of a cell is then the same number of ticks in every mpirun, whatever the load: a chain test (campaign -> analysis -> candidate ->
  validation) whose subject is the chain, not the machine's timing, gets the same figures every time. With
  PGMPI_TEST_JITTER_BYTES=<count>[,...] and PGMPI_TEST_JITTER_TICKS=<t0>,<t1>,... a call at those counts
  takes t_(i mod n) more ticks in the mpirun of pgmpi-bench's --mpirun-index=i (read from the command line):
  a cell whose mpiruns disagree, the same ones in every run (the sequential looks' test). The
  times are binary fractions, so differences and pgmpi-bench's "%.10f" rows are exact and equal (a control
  size's ratio is exactly 1.0, never 1 +- rounding). (A validation's control size measured 1.43x with the
  real clock once, at nrep 8 in one mpirun on this loaded machine: issue 34.)
- "real": MPI_Wtime is the library's; the slowed call sleeps (nanosleep, keeping the 2 cores free). For tests
  whose subject is a real measurement.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

SOURCE = r"""
#define _GNU_SOURCE
#include <mpi.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
typedef int (*fn_t)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
__attribute__((unused))
static int in_list(const char *s, long count) {       /* count in a comma-separated list */
    while (s && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s) return 0;
        if (v == count) return 1;
        s = (*end == ',') ? end + 1 : end;
    }
    return 0;
}
#ifdef VIRTUAL_CLOCK
/* ticks of 2^-20 s: every value and difference is exact in a double */
static int64_t vticks;
double MPI_Wtime(void) { return (double)(++vticks) / 1048576.0; }
double PMPI_Wtime(void) { return (double)(++vticks) / 1048576.0; }
#define CALL_TICKS(dt) do { if ((dt) == MPI_BYTE) vticks += 4; } while (0)
static long mpirun_index(void) {        /* pgmpi-bench's --mpirun-index=<i> on this process's command line */
    static long idx = -2;
    if (idx != -2) return idx;
    idx = -1;
    FILE *f = fopen("/proc/self/cmdline", "r");
    if (!f) return idx;
    char arg[4096];
    size_t n = 0;
    int ch;
    while ((ch = fgetc(f)) != EOF) {
        if (ch && n + 1 < sizeof arg) { arg[n++] = (char)ch; continue; }
        arg[n] = 0;
        if (!strncmp(arg, "--mpirun-index=", 15)) idx = strtol(arg + 15, NULL, 10);
        n = 0;
    }
    fclose(f);
    return idx;
}
static int64_t jitter_ticks(int count) {
    const char *t = getenv("PGMPI_TEST_JITTER_TICKS");
    long i = mpirun_index();
    if (!t || i < 0 || !in_list(getenv("PGMPI_TEST_JITTER_BYTES"), count)) return 0;
    long vals[64], n = 0;
    while (*t && n < 64) {
        char *end;
        long v = strtol(t, &end, 10);
        if (end == t) break;
        vals[n++] = v;
        t = (*end == ',') ? end + 1 : end;
    }
    return n ? vals[i % n] : 0;
}
typedef int (*red_t)(const void *, void *, int, MPI_Datatype, MPI_Op, int, MPI_Comm);
typedef int (*bc_t)(void *, int, MPI_Datatype, int, MPI_Comm);
int PMPI_Reduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm) {
    static red_t next;
    if (!next) next = (red_t)dlsym(RTLD_NEXT, "PMPI_Reduce");
    CALL_TICKS(dt);
    return next(sb, rb, count, dt, op, root, comm);
}
int PMPI_Bcast(void *b, int count, MPI_Datatype dt, int root, MPI_Comm comm) {
    static bc_t next;
    if (!next) next = (bc_t)dlsym(RTLD_NEXT, "PMPI_Bcast");
    CALL_TICKS(dt);
    return next(b, count, dt, root, comm);
}
#else
#define CALL_TICKS(dt) do { } while (0)
#endif
#ifdef IMPI_PRESETS
static int impi_delays(int count, MPI_Datatype dt);
#endif
int PMPI_Allreduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    static fn_t next;
    if (!next) next = (fn_t)dlsym(RTLD_NEXT, "PMPI_Allreduce");
    const char *s = getenv("PGMPI_TEST_DELAY_BYTES");
    CALL_TICKS(dt);
#ifdef VIRTUAL_CLOCK
    if (dt == MPI_BYTE) vticks += jitter_ticks(count);
#endif
    int slowed = 0;
    while (dt == MPI_BYTE && s && *s && !slowed) {      /* a comma-separated list of counts */
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s) break;
        slowed = (v == count);
        s = (*end == ',') ? end + 1 : end;
    }
#ifdef IMPI_PRESETS
    slowed += impi_delays(count, dt);
#endif
    for (; slowed > 0; slowed--) {
#ifdef VIRTUAL_CLOCK
        vticks += (int64_t)DELAY_NS * 1048576 / 1000000000;
#else
        struct timespec ts = {DELAY_NS / 1000000000, DELAY_NS % 1000000000};   /* sleep, not spin */
        nanosleep(&ts, NULL);
#endif
    }
    return next(sb, rb, count, dt, op, comm);
}
#ifdef OMPI_ALGORITHMS
/* Open MPI's own Allreduce algorithms (coll/base, called by coll/tuned through the PLT, so a preloaded
 * definition wins): at the counts of PGMPI_TEST_ALGORITHM_BYTES every one of them is slowed by the delay
 * except the one PGMPI_TEST_FAST_ALGORITHM names.  The delay follows the algorithm that really ran (forced,
 * chosen by a rules file, or the library's own decision), so a test knows which one wins and can see that
 * a decision file took effect. */
typedef int (*alg_t)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm, void *);
/* how many delays this call of algorithm `name` takes */
static int delays(const char *name, int count, MPI_Datatype dt) {
    const char *fast = getenv("PGMPI_TEST_FAST_ALGORITHM");
    if (!fast || dt != MPI_BYTE) return 0;
    if (strcmp(fast, name) != 0) return in_list(getenv("PGMPI_TEST_ALGORITHM_BYTES"), count);
    /* a choice that wins the search but loses where a rules file selects it, as users load it */
    return getenv("OMPI_MCA_coll_tuned_dynamic_rules_filename")
           && in_list(getenv("PGMPI_TEST_FILE_SLOW_BYTES"), count) ? 2 : 0;
}
#ifdef VIRTUAL_CLOCK
#define SLOW_DOWN() (vticks += (int64_t)DELAY_NS * 1048576 / 1000000000)
#else
#define SLOW_DOWN() do { struct timespec ts = {DELAY_NS / 1000000000, DELAY_NS % 1000000000}; nanosleep(&ts, NULL); } while (0)
#endif
#define ALGORITHM(NAME) \
int ompi_coll_base_allreduce_intra_##NAME(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, \
                                          MPI_Comm comm, void *module) { \
    static alg_t next; \
    if (!next) next = (alg_t)dlsym(RTLD_NEXT, "ompi_coll_base_allreduce_intra_" #NAME); \
    for (int k = delays(#NAME, count, dt); k > 0; k--) SLOW_DOWN(); \
    return next(sb, rb, count, dt, op, comm, module); \
}
ALGORITHM(basic_linear)
ALGORITHM(nonoverlapping)
ALGORITHM(recursivedoubling)
ALGORITHM(ring)
ALGORITHM(redscat_allgather)
#endif
#ifdef IMPI_PRESETS
/* the preset I_MPI_ADJUST_ALLREDUCE gives a call of `bytes` (0: the library's own choice); *ranged: from ranges */
static int impi_preset(long bytes, int *ranged) {
    const char *s = getenv("I_MPI_ADJUST_ALLREDUCE");
    *ranged = 0;
    if (!s || !*s) return 0;
    if (!strchr(s, ':')) return atoi(s);
    *ranged = 1;
    while (*s) {
        long p, lo, hi, a, b;
        /* libpgmpitune sets the ranges of the job's size without their @<pmin>-<pmax> (native_env.c) */
        if (sscanf(s, "%ld:%ld-%ld@%ld-%ld", &p, &lo, &hi, &a, &b) >= 3 && lo <= bytes && bytes <= hi) return (int)p;
        s = strchr(s, ';');
        if (!s) break;
        s++;
    }
    return 0;
}
static int impi_delays(int count, MPI_Datatype dt) {
    const char *fast = getenv("PGMPI_TEST_FAST_PRESET");
    int ranged;
    if (!fast || dt != MPI_BYTE) return 0;
    if (impi_preset(count, &ranged) != atoi(fast)) return in_list(getenv("PGMPI_TEST_ALGORITHM_BYTES"), count);
    return ranged && in_list(getenv("PGMPI_TEST_FILE_SLOW_BYTES"), count) ? 2 : 0;
}
#endif
"""

CLOCKS = ("virtual", "real")


def build(workdir: Path, mpi: str = "openmpi", delay_ms: int = 20, clock: str = "virtual") -> Path:
    """Compile the interposer with that MPI's compiler; returns the .so."""
    if clock not in CLOCKS:
        raise ValueError(f"clock {clock!r}; valid: {', '.join(CLOCKS)}")
    src, so = workdir / f"delay_{clock}.c", workdir / f"libdelay_{clock}.so"
    src.write_text(SOURCE)
    flags = ["-DVIRTUAL_CLOCK"] if clock == "virtual" else []
    if mpi == "openmpi":
        flags.append("-DOMPI_ALGORITHMS")
    mpicc, env = f"mpicc.{mpi}", None
    if mpi == "intelmpi":       # a registry install: its own mpicc, with its environment
        from pgmpi_formats import mpi_libraries
        lib = mpi_libraries.mpi_library("intelmpi")
        mpicc, env = str(lib.mpicc), lib.environment()
        flags.append("-DIMPI_PRESETS")
    subprocess.run([mpicc, "-O1", "-shared", "-fPIC", f"-DDELAY_NS={delay_ms * 1000 * 1000}LL", *flags,
                    "-o", str(so), str(src), "-ldl"], check=True, env=env)
    return so
