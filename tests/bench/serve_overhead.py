#!/usr/bin/env python3
"""What a `pgmpi-bench --serve` measurement costs outside the call: the race's and the confirmations' ways.

The quiet MPICH race of 2026-11-26 spent about 34 us per measurement outside the calls and the start-ups,
exhaustive about 10 us (docs/native-search-loss.md).  This script measures, in one --serve mpirun, one cheap
cell (allreduce 8 B; default, control arm and one native variant: 3 x nrep measurements) in four ways, in ABBA
order over the rounds, each as the driver sends it:

  interleaved   one command, the three arms repetition by repetition (the race's second stage, exhaustive)
  blocks=4      one command, each arm alone in alternating blocks of 4 (a confirmation)
  blocks=48     the same with blocks of 48
  commands      nrep / 16 commands of 16 repetitions interleaved (the race's first stage: one per cell)

and prints the median wall time per measurement of each (the driver's round trip included).

    .venv/bin/python tests/bench/serve_overhead.py [--mpi mpich] [--rounds 10] [--nrep 480]

Asserts nothing; gives the load (2 cores shared: > 1.2 is loaded).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "lib" / "python"))

from scheduler import launchers                      # noqa: E402
from scheduler.native_driver import Session          # noqa: E402

VARIANT = {"mpich": "native:recursive_doubling", "openmpi": "native:recursive_doubling"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mpi", default="mpich", choices=sorted(VARIANT))
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--nrep", type=int, default=480, help="repetitions per arm and way (a multiple of 48)")
    a = ap.parse_args()
    lib = launchers.library(a.mpi)
    env = lib.row.environment()
    env.update(lib.family.job_env(1, 2, False, os.geteuid() == 0, os.cpu_count() or 2))
    bench = ROOT / "build" / "install" / a.mpi / "bin" / "pgmpi-bench"
    var = VARIANT[a.mpi]
    arms = ["default_control", "default", var]
    d = Path(tempfile.mkdtemp(prefix="serve-overhead-"))
    argv = [lib.mpirun, "-np", "2", *lib.family.mpirun_args(1, 2, False), str(bench), "--serve",
            "--calls=allreduce", "--sizes=1,8", f"--algorithms=default,{var},default_control", "--no-barrier-rows",
            "--nrep=100", "--output=serve.txt"]
    load0 = open("/proc/loadavg").read().split()[0]
    s = Session(argv, d, d / "serve.log", env)
    s.cell("MPI_Allreduce", 1, ["default"], alone=True)          # the mpirun's first calls on no measured arm
    ways = {
        "interleaved": lambda: s.cell("MPI_Allreduce", 8, [var], nrep=a.nrep),
        "blocks=4": lambda: s.cell("MPI_Allreduce", 8, arms, nrep=a.nrep, blocks=4),
        "blocks=48": lambda: s.cell("MPI_Allreduce", 8, arms, nrep=a.nrep, blocks=48),
        "commands": lambda: [s.cell("MPI_Allreduce", 8, [var], nrep=16) for _ in range(a.nrep // 16)],
    }
    secs: dict = {k: [] for k in ways}
    names = list(ways)
    for i in range(a.rounds):
        for k in (names if i % 2 == 0 else names[::-1]):
            t0 = time.perf_counter()
            ways[k]()
            secs[k].append(time.perf_counter() - t0)
    s.close()
    n = 3 * a.nrep
    print(f"# {a.mpi}: allreduce 8 B, default + control + {var}, {n} measurements per way and round, "
          f"{a.rounds} rounds ABBA, one --serve mpirun; load {load0}-{open('/proc/loadavg').read().split()[0]}")
    for k, v in secs.items():
        print(f"{k:12} median {1e6 * statistics.median(v) / n:7.1f} us per measurement "
              f"(min {1e6 * min(v) / n:.1f}, max {1e6 * max(v) / n:.1f})")


if __name__ == "__main__":
    main()
