#!/usr/bin/env python3
"""Does an MPI library's own algorithm cost the same interleaved with the others in one mpirun as alone?

The native search measures every variant of a round interleaved with the default in one mpirun (Open MPI: one
duplicated communicator per forced variant; MPICH: the MPI_T control variable written before each call;
lib/bench/README.md).  An application runs one algorithm per call site, over and over.  This script measures
both ways with pgmpi-bench's own forcing, so only the context differs:

  interleaved  one mpirun per collective: default and every variant (order-safe ones), all sizes;
  alone        one mpirun per variant (and one for the default), nothing else in it.

    .venv/bin/python tests/bench/native_interleave.py [--mpi openmpi|mpich|both] [--rounds 3] [--nrep 50]

Rounds alternate which way runs first.  Printed per (collective, size, variant): the medians over the rounds of
the per-mpirun medians interleaved and alone, and alone / interleaved.  The default's own ratio is the control:
it runs the same code both ways, so a variant whose ratio departs from the default's by more than --tolerance
(and by more than 0.05 us) is context-dependent: its interleaved time does not predict what an application sees.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "lib" / "python"))

from pgmpi_formats import native  # noqa: E402
from pgmpi_formats.results import read_file  # noqa: E402

CELLS = {"bcast": [512, 4096, 65536], "allreduce": [64, 65536], "reduce": [4096, 65536], "allgather": [1024, 16384]}


def mpirun(mpi: str) -> list[str]:
    return [f"mpirun.{mpi}", "-np", "2"] + (["--oversubscribe"] if mpi == "openmpi" else [])


def medians(path: Path) -> dict[tuple[int, str], float]:
    run = read_file(path)
    rows: dict[tuple[int, str], list[float]] = {}
    for m, a, x in zip(run.msize, run.algorithm, run.runtime):
        rows.setdefault((int(m), run.algorithms[a]), []).append(float(x))
    return {k: statistics.median(v) for k, v in rows.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mpi", choices=["openmpi", "mpich", "both"], default="both")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--nrep", type=int, default=50)
    ap.add_argument("--tolerance", type=float, default=0.20)
    args = ap.parse_args()
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    print(f"# load: {open('/proc/loadavg').read().split()[0]} (loaded machine when > 1.2); 2 ranks, "
          f"{args.rounds} rounds, nrep {args.nrep}")
    for mpi in (["openmpi", "mpich"] if args.mpi == "both" else [args.mpi]):
        bench = ROOT / "build" / "install" / mpi / "bin" / "pgmpi-bench"
        d = native.FALLBACK[mpi]
        inter: dict = {}
        alone: dict = {}
        with tempfile.TemporaryDirectory(prefix=f"interleave-{mpi}-") as tmp:
            n = 0

            def launch(key: str, algs: list[str]) -> dict:
                nonlocal n
                n += 1
                out = Path(tmp) / f"r{n}.txt"
                argv = mpirun(mpi) + [str(bench), f"--calls={key}", f"--sizes={','.join(map(str, CELLS[key]))}",
                                      f"--algorithms={','.join(algs)}", f"--nrep={args.nrep}", "--no-barrier-rows",
                                      f"--output={out}"]
                p = subprocess.run(argv, capture_output=True, text=True, env=env)
                if p.returncode != 0:
                    sys.exit(f"{' '.join(argv)} failed: {p.stderr[-600:]}")
                return medians(out)

            for r in range(args.rounds):
                for key in CELLS:
                    labels = [f"native:{x}" for x in d.names(key) if (key, x) not in native.ORDER_UNSAFE[mpi]]
                    ways = ["interleaved", "alone"] if r % 2 == 0 else ["alone", "interleaved"]
                    for way in ways:
                        if way == "interleaved":
                            for k, t in launch(key, ["default", *labels]).items():
                                inter.setdefault((key, *k), []).append(t)
                        else:
                            for lab in ["default", *labels]:
                                for k, t in launch(key, [lab]).items():
                                    alone.setdefault((key, *k), []).append(t)
        print(f"\n## {mpi}: {n} mpiruns")
        print(f"{'collective':10} {'bytes':>7} {'variant':34} {'interleaved us':>14} {'alone us':>9} {'alone/inter':>11}"
              f" {'default':>8}  verdict")
        odd = total = 0
        for (key, m, lab) in sorted(inter, key=lambda k: (k[0], k[1], k[2] != "default", k[2])):
            if (key, m, lab) not in alone:
                continue
            ti, ta = statistics.median(inter[(key, m, lab)]), statistics.median(alone[(key, m, lab)])
            di, da = statistics.median(inter[(key, m, "default")]), statistics.median(alone[(key, m, "default")])
            ratio, control = ta / ti, da / di
            verdict = ""
            if lab != "default":
                total += 1
                if abs(ratio / control - 1) > args.tolerance and abs(ta - ti * control) > 5e-8:
                    odd += 1
                    verdict = "CONTEXT-DEPENDENT"
            print(f"{key:10} {m:>7} {lab:34} {ti * 1e6:>14.3f} {ta * 1e6:>9.3f} {ratio:>10.2f}x {control:>7.2f}x  "
                  f"{verdict}")
        print(f"{mpi}: {odd} of {total} variant cells context-dependent (alone/interleaved departs from the "
              f"default's by more than {100 * args.tolerance:.0f} % and 0.05 us)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
