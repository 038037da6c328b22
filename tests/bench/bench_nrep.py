#!/usr/bin/env python3
"""NREP prediction vs fixed nrep: reproducibility between mpiruns and the time it costs.

For Allreduce and Bcast at 8 B, 1 KiB, 64 KiB, 1 MiB on 2 ranks, with Open MPI and with MPICH, runs
pgmpi-bench R times (default 5 mpiruns) per nrep policy and prints, per (call, size):
  - the coefficient of variation (sd/mean) of the R per-mpirun medians,
  - the measuring time: the seconds pgmpi-bench spent on that (call, size) incl. synchronisation,
    summed over the R mpiruns (the '# nrep ... elapsed_sec=' footer), and the mean nrep;
  - that CV split into the sampling error of one mpirun's median (bootstrap; shrinks as nrep grows) and the
    variation between mpirun launches (what is left; no nrep removes it),
  - the CV of the medians of only the first 50 / 300 measurements of the same fixed-nrep mpiruns,
and per policy the wall-clock time of the R mpiruns (launch and MPI_Init included).
Goal: prediction reaches CV <= 2 % in <= 30 % of the fixed-nrep (1000) time.

Usage: .venv/bin/python tests/bench/bench_nrep.py [--runs 5] [--mpis openmpi,mpich] [--keep DIR]
       [--predict-args "--predict=covmean,covmedian"] [--time-rule] [--bench-args "--sync=mpi_barrier"]
       [--drift-seconds 10]
It starts with tests/bench/core_drift.sh: if the machine's core-to-core latency already varies by more than
2 % between 10-100 ms windows, no policy can reach the goal there (lib/bench/README.md, "Figures").
Needs deploy/build-lib.sh (build/install/<mpi>/bin/pgmpi-bench).  The machine is shared: timing noise.
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from pgmpi_formats import results as reader  # noqa: E402  (the analysis reads the benchmark's files)

CALLS = ("MPI_Allreduce", "MPI_Bcast")
SIZES = (8, 1024, 65536, 1048576)
PREFIXES = (50, 300)   # the medians of the first n measurements of each fixed-nrep mpirun
ELAPSED = re.compile(r"^# nrep (\S+) (\d+) (\d+) stop=(\S+) elapsed_sec=([0-9.]+)")


def mpirun(mpi: str, np_: int) -> list[str]:
    if mpi == "openmpi":
        return ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", str(np_)]
    return ["mpirun.mpich", "-np", str(np_)]


def run_policies(mpi: str, policies, runs: int, outdir: Path, extra: list[str]):
    """R mpiruns per policy, the policies alternating (fixed 0, predict 0, fixed 1, ...) so that slow drift
    of the machine does not land on one policy.  Returns {policy: (files, wall seconds)}."""
    exe = ROOT / "build/install" / mpi / "bin/pgmpi-bench"
    if not exe.exists():
        sys.exit(f"{exe} missing: run deploy/build-lib.sh {mpi}")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    out_of = {tag: ([], 0.0) for tag, _ in policies}
    for i in range(runs):
        for tag, policy_args in policies:
            out = outdir / f"{mpi}-{tag}-{i}.txt"
            out.unlink(missing_ok=True)
            cmd = mpirun(mpi, 2) + [str(exe), "--calls=allreduce,bcast", "--algorithms=default",
                                    "--sizes=8,1K,64K,1M", "--no-barrier-rows", f"--mpirun-index={i}",
                                    f"--output={out}", f"--campaign=bench_nrep-{tag}"] + extra + policy_args
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
            files, wall = out_of[tag]
            out_of[tag] = (files + [out], wall + time.perf_counter() - t0)
    return out_of


def median_se(v: np.ndarray, rng: np.random.Generator, boot: int = 200) -> float:
    """Bootstrap standard error of the median of one mpirun's measurements."""
    idx = rng.integers(0, len(v), size=(boot, len(v)))
    return float(np.median(v[idx], axis=1).std(ddof=1))


def summarise(files):
    """(call, size) -> (cv of medians, measuring seconds summed, mean nrep, stop reasons, median of medians,
    sampling cv, mpirun cv).  The variance of the R medians splits into the sampling error of each median
    (bootstrap, shrinks with nrep) and what is left: the variance between mpirun launches, which no number of
    repetitions inside one mpirun removes.  cv = sqrt(sampling^2 + mpirun^2), estimated from R runs."""
    med, ses, prefix = {}, {}, {}
    elapsed, nreps, stops = {}, {}, {}
    rng = np.random.default_rng(1)
    for f in files:
        run = reader.read_file(f)
        for ci, call in enumerate(run.tests):
            for size in SIZES:
                sel = (run.test == ci) & (run.msize == size)
                if sel.any():
                    v = run.runtime[sel]
                    med.setdefault((call, size), []).append(float(np.median(v)))
                    ses.setdefault((call, size), []).append(median_se(v, rng))
                    for n in PREFIXES:      # file order is measurement order
                        prefix.setdefault((call, size, n), []).append(float(np.median(v[:n])))
        for line in Path(f).read_text().splitlines():
            m = ELAPSED.match(line)
            if m:
                key = (m.group(1), int(m.group(2)))
                elapsed[key] = elapsed.get(key, 0.0) + float(m.group(5))
                nreps.setdefault(key, []).append(int(m.group(3)))
                stops.setdefault(key, set()).add(m.group(4))
    res = {}
    for key, ms in med.items():
        a = np.array(ms)
        mean = a.mean()
        cv = float(a.std(ddof=1) / mean) if len(a) > 1 else float("nan")
        samp_var = float(np.mean(np.square(ses[key])))
        samp = float(np.sqrt(samp_var) / mean)
        between = float(np.sqrt(max(0.0, a.var(ddof=1) - samp_var)) / mean) if len(a) > 1 else float("nan")
        pcv = [float(np.std(prefix[key + (n,)], ddof=1) / np.mean(prefix[key + (n,)])) for n in PREFIXES]
        res[key] = (cv, elapsed[key], float(np.mean(nreps[key])), "/".join(sorted(stops[key])), float(np.median(a)),
                    samp, between, pcv)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--mpis", default="openmpi,mpich")
    ap.add_argument("--fixed-nrep", type=int, default=1000)
    # COV of the last 50 running medians < 0.2 %: the predictor's own sampling error of a median is then
    # about 0.4-1.8 % (README figures) -- below the 2 % goal -- at about 20 % of the fixed-nrep time; the
    # looser 1 % / 20 stops after 30-140 measurements with a 1-5 % sampling error of its own.
    ap.add_argument("--predict-args", default="--predict=covmedian --covmedian-thres=0.002 --covmedian-window=50 "
                                              "--pred-params=min=50,max=1000,step=10")
    ap.add_argument("--time-rule", action="store_true", help="also run the time-based rule of PGMPITuneLib")
    ap.add_argument("--keep", default=None, help="keep the raw files in this directory")
    ap.add_argument("--bench-args", default="", help="more pgmpi-bench options for every run, e.g. --sync=mpi_barrier")
    ap.add_argument("--drift-seconds", type=float, default=10.0,
                    help="first measure the machine's core-to-core latency drift (tests/bench/core_drift.sh) for "
                         "this long; 0 skips it")
    a = ap.parse_args()
    outdir = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="bench_nrep-"))
    outdir.mkdir(parents=True, exist_ok=True)
    policies = [("fixed", [f"--nrep={a.fixed_nrep}"]), ("predict", shlex.split(a.predict_args))]
    if a.time_rule:
        policies.append(("timerule", ["--time-rule"]))
    print(f"# bench_nrep: {a.runs} mpiruns per policy, 2 ranks, Allreduce+Bcast interleaved, dissemination barrier;"
          f" shared 2-core machine (other engineers' jobs run too): expect timing noise")
    for name, args in policies:
        print(f"# policy {name}: {' '.join(args)}")
    if a.drift_seconds > 0:
        # The floor no repetition policy gets under: how much the machine itself drifts over windows as
        # long as one (call, size) cell of an mpirun lasts (a few ms to a few hundred ms).
        drift = subprocess.run(["bash", str(ROOT / "tests/bench/core_drift.sh"), str(a.drift_seconds)],
                               check=True, capture_output=True, text=True).stdout
        for line in drift.splitlines():
            print(f"# machine {line}")
    ok_all = True
    for mpi in a.mpis.split(","):
        runs = run_policies(mpi, policies, a.runs, outdir, shlex.split(a.bench_args))
        results = {name: summarise(files) for name, (files, _) in runs.items()}
        walls = {name: wall for name, (_, wall) in runs.items()}
        print(f"\n## {mpi}: CV of the {a.runs} per-mpirun medians (= sampling error of a median (+) variation "
              f"between mpiruns), measuring time summed over the mpiruns")
        hdr = f"{'call':<14} {'size':>8} | " + " | ".join(f"{n:>8} cv% samp% mprun% {'time s':>7} {'nrep':>5}"
                                                         for n, _ in policies) \
            + " | fixed, first " + "/".join(map(str, PREFIXES)) + " cv%" + " | pred/fixed time  goal(cv<=2%, <=30%)"
        print(hdr)
        tot = {n: 0.0 for n, _ in policies}
        floors = []
        for call in CALLS:
            for size in SIZES:
                cells = []
                for n, _ in policies:
                    cv, el, nr, st, md, samp, between, _ = results[n][(call, size)]
                    tot[n] += el
                    cells.append(f"{'':>4}{100 * cv:7.2f} {100 * samp:5.2f} {100 * between:6.2f} {el:7.3f} {nr:5.0f}")
                floors.append(results["fixed"][(call, size)][6])
                cvp, elp = results["predict"][(call, size)][:2]
                ratio = elp / results["fixed"][(call, size)][1]
                goal = cvp <= 0.02 and ratio <= 0.30
                ok_all &= goal
                pcv = results["fixed"][(call, size)][7]
                print(f"{call:<14} {size:>8} | " + " | ".join(cells) + " | " + "/".join(f"{100 * c:.2f}" for c in pcv)
                      + f" | {100 * ratio:6.1f} %        "
                      f"{'met' if goal else 'MISSED'}")
        print("measuring time total: " + ", ".join(f"{n} {tot[n]:.2f} s" for n, _ in policies)
              + f"; predict/fixed = {100 * tot['predict'] / tot['fixed']:.1f} %")
        print("wall-clock of the mpiruns (incl. launch): " + ", ".join(f"{n} {walls[n]:.2f} s" for n, _ in policies))
        print(f"between-mpirun variation alone (fixed nrep): {sum(f > 0.02 for f in floors)} of {len(floors)} cells "
              f"above 2 % (median {100 * float(np.median(floors)):.2f} %) -- no repetition count inside an mpirun "
              f"removes it; the medians of only the first {PREFIXES[0]} measurements of the same mpiruns vary as "
              f"much (column 'first')")
    print(f"\n# raw files: {outdir}")
    print(f"# goal met everywhere: {'yes' if ok_all else 'no'}")


if __name__ == "__main__":
    main()
