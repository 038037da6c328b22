#!/usr/bin/env python3
"""Real planted effects: how often the analysis finds a known slowdown of the MPI library (prints figures).

A test-only PMPI interposer (compiled here, LD_PRELOADed before libpgmpitune) makes the library's own
PMPI_<Call> slower by a chosen FACTOR at chosen sizes: it times the real call and then spins until
FACTOR x that time has passed, so the default becomes FACTOR x slower there while a mock-up that never calls
PMPI_<Call> (alltoall_as_alltoallv calls PMPI_Alltoallv) is untouched. Alltoall because its mock-up is
within 2-3 % of the default at 4-32 KiB on both MPIs here, untouched (--baseline shows it). Spinning, not sleeping: a sleep's
granularity (tens of us) is larger than the calls; the 2 ranks already poll their 2 cores.

Each campaign: R mpiruns of pgmpi-bench (2 ranks) measuring the collective at a handful of sizes with
`--algorithms=default,default_control,<mock-up>`, analysed by the service's own code path
(guidelines.analyze, then verdicts.redirect_refusal with the campaign's control, minimum gain 10 %), once with
the paired test (paired_t, the default) and once with an unpaired test (mannwhitney), each with BH across the
campaign as the service does. Printed per test: in how many campaigns each planted size was found (violated),
accepted as a redirection, and how many other sizes / control cells were flagged, with the machine load.

Usage: .venv/bin/python tests/bench/planted_effects.py [--mpi mpich] [--campaigns 20] [--runs 10]
       [--slow 4096:1.5,32768:1.15] [--sizes 512,4096,32768,131072] [--baseline]
--baseline measures without the interposer (what the mock-up is worth against the default untouched).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from pgmpi_formats.results import read_files  # noqa: E402
from service.analysis.guidelines import analyze  # noqa: E402
from service.analysis.verdicts import CONTROL, redirect_refusal  # noqa: E402

INTERPOSER = r"""
#define _GNU_SOURCE
#include <mpi.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

typedef int (*coll_fn)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
static coll_fn next_coll;
static long sizes[16];
static double factors[16];
static int nsizes = -1;

/* PGMPI_TEST_SLOW="bytes:factor,bytes:factor" */
static void setup(void) {
    const char *s = getenv("PGMPI_TEST_SLOW");
    nsizes = 0;
    while (s && *s && nsizes < 16) {
        char *end;
        long b = strtol(s, &end, 10);
        if (*end != ':') break;
        double f = strtod(end + 1, &end);
        sizes[nsizes] = b;
        factors[nsizes++] = f;
        if (*end != ',') break;
        s = end + 1;
    }
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* PMPI_CALL: PMPI_Alltoall or PMPI_Allgather (the same argument list), set by the compiler line */
int PMPI_CALL(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm) {
    if (!next_coll) next_coll = (coll_fn)dlsym(RTLD_NEXT, PMPI_NAME);
    if (nsizes < 0) setup();
    double factor = 1.0;
    if (st == MPI_BYTE)
        for (int i = 0; i < nsizes; i++)
            if ((long)sc == sizes[i]) factor = factors[i];
    if (factor == 1.0) return next_coll(sb, sc, st, rb, rc, rt, comm);
    double t0 = now();
    int err = next_coll(sb, sc, st, rb, rc, rt, comm);
    double until = t0 + factor * (now() - t0);
    while (now() < until) { }
    return err;
}
"""

MOCKS = {"alltoall": "alltoall_as_alltoallv", "allgather": "allgather_as_allgatherv"}


def launch(mpi: str, exe: list[str], rank_env: dict[str, str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "PGMPI", "PMI_", "PMIX_", "LD_PRELOAD"))}
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    if mpi == "openmpi":
        cmd = ["mpirun.openmpi", "-np", "2"]
        for k, v in rank_env.items():
            cmd += ["-x", f"{k}={v}"]
    else:
        cmd = ["mpirun.mpich", "-np", "2"]
        for k, v in rank_env.items():
            cmd += ["-genv", k, v]
    return subprocess.run(cmd + exe, env=env, capture_output=True, text=True, timeout=900)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpi", choices=["openmpi", "mpich"], default="mpich")
    ap.add_argument("--call", choices=sorted(MOCKS), default="alltoall")
    ap.add_argument("--campaigns", type=int, default=20)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--nrep", type=int, default=30)
    ap.add_argument("--sizes", default="512,4096,32768,131072")
    ap.add_argument("--slow", default="4096:1.5,32768:1.15")
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--gain", type=float, default=0.10)
    ap.add_argument("--baseline", action="store_true", help="no interposer")
    args = ap.parse_args()
    prefix = ROOT / "build" / "install" / args.mpi
    bench, lib = prefix / "bin" / "pgmpi-bench", prefix / "lib" / "libpgmpitune.so"
    if not bench.exists():
        sys.exit(f"no {bench}: run deploy/build-lib.sh {args.mpi}")
    slow = {} if args.baseline else {int(b): float(f) for b, f in (x.split(":") for x in args.slow.split(","))}
    sizes = [int(s) for s in args.sizes.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="planted-"))
    so = tmp / "libslow.so"
    (tmp / "slow.c").write_text(INTERPOSER)
    pname = "PMPI_" + args.call.capitalize()
    subprocess.run([f"mpicc.{args.mpi}", "-O1", f"-DPMPI_CALL={pname}", f'-DPMPI_NAME="{pname}"', "-shared", "-fPIC", "-o", str(so), str(tmp / "slow.c"), "-ldl"],
                   check=True)
    rank_env = {"LD_PRELOAD": f"{so}:{lib}" if slow else str(lib),
                "PGMPI_TEST_SLOW": ",".join(f"{b}:{f}" for b, f in slow.items())}
    tests = ("paired_t", "mannwhitney")
    mock = MOCKS[args.call]
    found = {t: {s: 0 for s in sizes} for t in tests}
    accepted = {t: {s: 0 for s in sizes} for t in tests}
    ctrl = {t: [0, 0] for t in tests}
    ratios = {s: [] for s in sizes}
    loads = [os.getloadavg()[0]]
    t0 = time.time()
    for c in range(args.campaigns):
        raw = tmp / f"c{c}"
        raw.mkdir()
        for r in range(args.runs):
            res = launch(args.mpi, [str(bench), f"--calls={args.call}", f"--sizes={args.sizes}",
                                    f"--algorithms=default,{CONTROL},{mock}", f"--nrep={args.nrep}",
                                    "--machine=planted", f"--mpirun-index={r}", f"--campaign=planted{c}",
                                    f"--output={raw / f'run{r}.txt'}"], rank_env)
            if res.returncode != 0:
                sys.exit(f"pgmpi-bench failed (exit {res.returncode}): {(res.stdout + res.stderr)[-800:]}")
        loads.append(os.getloadavg()[0])
        rs = read_files([raw])
        for t in tests:
            a = analyze(rs, alpha=args.alpha, test=t, fdr=True, kinds=("pattern",))
            ctrl[t][0] += a.control.flagged
            ctrl[t][1] += a.control.tested
            for v in a.verdicts:
                if v.kind != "pattern" or v.algorithm != mock:
                    continue
                found[t][v.msize] += bool(v.violated)
                accepted[t][v.msize] += bool(v.violated and redirect_refusal(v, a.control, args.gain) is None)
                if t == "paired_t" and v.paired_ratio:
                    ratios[v.msize].append(v.paired_ratio)
        print(f"  campaign {c + 1}/{args.campaigns} done ({time.time() - t0:.0f} s, load {loads[-1]:.2f})",
              file=sys.stderr, flush=True)
    lmax = max(loads)
    print(f"{args.mpi}: {args.campaigns} campaigns x {args.runs} mpiruns, {pname} default vs {mock}, "
          f"nrep {args.nrep}, 2 ranks, alpha {args.alpha} with BH per campaign, minimum gain {args.gain:.0%}; "
          f"planted {slow or 'nothing (baseline)'}")
    print(f"load average {min(loads):.2f}-{lmax:.2f}{' (loaded machine)' if lmax > 1.2 else ''}; "
          f"{time.time() - t0:.0f} s")
    print(f"{'size':>8s} {'planted':>8s} {'paired ratio (median of campaigns)':>36s} | "
          + " | ".join(f"{t:>11s} found  accepted" for t in tests))
    for s in sizes:
        rr = sorted(ratios[s])
        med = rr[len(rr) // 2] if rr else float("nan")
        print(f"{s:8d} {slow.get(s, 1.0):7.2f}x {med:28.3f} [{rr[0]:.2f}-{rr[-1]:.2f}] | "
              + " | ".join(f"{found[t][s]:>8d}/{args.campaigns} {accepted[t][s]:>5d}/{args.campaigns}"
                           for t in tests))
    for t in tests:
        print(f"control ({t}, BH): {ctrl[t][0]} of {ctrl[t][1]} control cells flagged")


if __name__ == "__main__":
    main()
