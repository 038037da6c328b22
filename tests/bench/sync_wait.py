#!/usr/bin/env python3
"""Does the wait before a measurement, not the global clock, make window-mode figures large? (issue 34)

pgmpi-bench alone, Open MPI by default, 2 ranks, alternating mpiruns of four arms that differ only in how
long each rank waits on the global clock before a measurement:
  rt-short   --proc-sync=roundtime                      (margin = 3 x the agreement, a few us)
  rt-long    --proc-sync=roundtime --rt-multiplier=M    (margin of milliseconds, as a window's wait)
  w-short    --proc-sync=window --window-size=SHORT     (waits < SHORT us)
  w-long     --proc-sync=window --window-size=LONG      (waits ~ LONG us, the agreement table's 3 ms)
Printed per arm and cell: the median over mpiruns of each mpirun's median of the valid measurements (us),
the invalid share, and the largest `#@pgmpi clockcheck` (the clock model's error after the cell, us). When
the long arms are large while their clock check stays small, the figure is the wait's, not the clock's.

  tests/bench/sync_wait.py [--mpi openmpi] [--runs 3] [--nrep 100] [--sizes 8,1K] [--calls allreduce,bcast]
Give `uptime` with every figure: on a loaded VM a rank that waits milliseconds is often descheduled.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def mpirun(mpi: str, np: int) -> list[str]:
    if mpi == "openmpi":
        return ["mpirun.openmpi", "--allow-run-as-root", "-np", str(np)]
    return ["mpirun.mpich", "-np", str(np)]


def cells(text: str) -> tuple[dict, dict, dict]:
    """(call, bytes) -> valid run-times; -> invalid count; -> clock check seconds."""
    rows, inv, clk = defaultdict(list), {}, {}
    for line in text.splitlines():
        f = line.split()
        if line.startswith("#@pgmpi invalid") and len(f) >= 7:
            inv[(f[2], int(f[3]))] = int(f[5])
        elif line.startswith("#@pgmpi clockcheck") and len(f) >= 5:
            clk[(f[2], int(f[3]))] = float(f[4])
        elif f and f[0].startswith("MPI_") and f[0] != "MPI_Barrier" and len(f) >= 4:
            rows[(f[0], int(f[2]))].append(float(f[3]))
    return rows, inv, clk


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pgmpi-bench", default=None, help="default: build/install/<mpi>/bin/pgmpi-bench")
    ap.add_argument("--mpi", default="openmpi", choices=["openmpi", "mpich"])
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--nrep", type=int, default=100)
    ap.add_argument("--calls", default="allreduce,bcast")
    ap.add_argument("--sizes", default="8,1024")
    ap.add_argument("--short-us", type=float, default=100)
    ap.add_argument("--long-us", type=float, default=3000)
    ap.add_argument("--rt-multiplier", type=float, default=1500,
                    help="rt-long's multiplier (x a few us of agreement: milliseconds)")
    a = ap.parse_args()
    bench = a.pgmpi_bench or str(ROOT / "build/install" / a.mpi / "bin/pgmpi-bench")
    arms = {"rt-short": ["--proc-sync=roundtime"],
            "rt-long": ["--proc-sync=roundtime", f"--rt-multiplier={a.rt_multiplier:g}"],
            "w-short": ["--proc-sync=window", f"--window-size={a.short_us:g}"],
            "w-long": ["--proc-sync=window", f"--window-size={a.long_us:g}"]}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PGMPI", "SLURM_"))}
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    print(f"# uptime: {uptime()}")
    med, invs, clks, margin = defaultdict(list), defaultdict(list), defaultdict(list), {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.runs):
            for label in (list(arms) if r % 2 == 0 else list(arms)[::-1]):
                out = Path(tmp) / f"{label}-{r}.txt"
                cmd = mpirun(a.mpi, a.np) + [bench, f"--calls={a.calls}", "--algorithms=default",
                                             f"--sizes={a.sizes}", f"--nrep={a.nrep}", "--no-barrier-rows",
                                             f"--output={out}", *arms[label]]
                p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
                if p.returncode != 0:
                    sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
                text = out.read_text()
                rows, inv, clk = cells(text)
                for line in text.splitlines():
                    if line.startswith("# roundtime margin"):
                        margin[label] = float(line.split()[3])
                for key in sorted(set(rows) | set(inv)):
                    xs = rows.get(key, [])
                    med[(label, key)].append(statistics.median(xs) if xs else float("nan"))
                    invs[(label, key)].append(inv.get(key, 0) / a.nrep)
                    clks[(label, key)].append(clk.get(key, float("nan")))
            print(f"# round {r + 1}/{a.runs} done", file=sys.stderr)
    print(f"\n{a.mpi}, {a.np} ranks, nrep {a.nrep}, {a.runs} mpiruns per arm, alternating; median over mpiruns of "
          "each mpirun's median (us) [min-max]; invalid share (median); clock check (largest, us)")
    print("round-time margins: " + ", ".join(f"{k} {v * 1e6:.1f} us" for k, v in margin.items()))
    print("| call, size | " + " | ".join(f"{lb} us | invalid | clockcheck" for lb in arms) + " |")
    print("|---|" + "---|---|---|" * len(arms))
    for key in sorted({k for _lb, k in med}):
        cols = [f"{key[0][4:]} {key[1]} B"]
        for lb in arms:
            xs = [x for x in med.get((lb, key), []) if x == x]
            cols.append(f"{statistics.median(xs) * 1e6:.2f} [{min(xs) * 1e6:.2f}-{max(xs) * 1e6:.2f}]" if xs else "-")
            cols.append(f"{statistics.median(invs.get((lb, key), [0])) * 100:.0f} %")
            cs = [c for c in clks.get((lb, key), []) if c == c]
            cols.append(f"{max(cs) * 1e6:.2f}" if cs else "-")
        print("| " + " | ".join(cols) + " |")
    print(f"# uptime: {uptime()}")


if __name__ == "__main__":
    main()
