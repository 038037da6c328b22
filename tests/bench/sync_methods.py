#!/usr/bin/env python3
"""How pgmpi-bench's four synchronisation methods differ, and which matches a timing independent of any of
them (tests/bench/long_loop.c: L calls back to back per rank, the longest rank's time / L).

Per mpirun index r the five arms run one after the other in a rotated order (interleaved across r): pgmpi-bench
--proc-sync=dissem, mpi_barrier, window, roundtime (default algorithm only, no barrier rows) and long_loop.
Printed per (call, size): the median over mpiruns of each mpirun's median (us) per arm, the share of
measurements window / round-time invalidated (a rank started late), and each method's ratio to long_loop.

  tests/bench/sync_methods.py --where one-node            (mpirun -np 2 on this machine)
  tests/bench/sync_methods.py --where cluster              (srun -N2, one rank per node, deploy/cluster.sh's)
      [--mpi openmpi] [--runs 3] [--nrep 200] [--loop 20] [--blocks 25] [--window-us 3000] [--sizes 8,1K,64K,1M]
The cluster is the shared one (PGMPI_STATE_DIR=/work/main/.state): never brought down here.
Every figure is from this loaded machine: the load is printed before and after.
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
sys.path.insert(0, str(ROOT / "lib" / "python"))
from pgmpi_formats.results import parse_text  # noqa: E402

CALLS = {"bcast": "MPI_Bcast", "allreduce": "MPI_Allreduce", "allgather": "MPI_Allgather"}
METHODS = ["dissem", "mpi_barrier", "window", "roundtime"]


def parse_size(s: str) -> int:
    s = s.strip().upper().removesuffix("IB").removesuffix("B")
    mult = {"K": 1024, "M": 1024 ** 2}.get(s[-1:], 1)
    return int(s[:-1] if s[-1:] in "KM" else s) * mult


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def launcher(where: str, mpi: str) -> tuple[list[str], dict]:
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    if where == "one-node":
        return ([f"mpirun.{mpi}", "--allow-run-as-root", "-np", "2"] if mpi == "openmpi"
                else [f"mpirun.{mpi}", "-np", "2"]), env
    env["PGMPI_STATE_DIR"] = env.get("PGMPI_STATE_DIR", "/work/main/.state")
    out = subprocess.run([str(ROOT / "deploy/cluster.sh"), "env"], capture_output=True, text=True, env=env, check=True)
    for line in out.stdout.splitlines():
        for kv in line.removeprefix("export ").split():
            k, _, v = kv.partition("=")
            env[k] = v
    plugin = "pmix" if mpi == "openmpi" else "pmi2"
    return ["srun", "-N2", "--ntasks-per-node=1", f"--mpi={plugin}"], env


def run(cmd, env) -> str:
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    return p.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--where", choices=["one-node", "cluster"], required=True)
    ap.add_argument("--mpi", default="openmpi")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--nrep", type=int, default=200)
    ap.add_argument("--loop", type=int, default=20, help="L of long_loop")
    ap.add_argument("--blocks", type=int, default=25, help="blocks of long_loop (the figure: their median; "
                    "a block's mean over L calls keeps every descheduling of a loaded machine, the median of "
                    "many short blocks leaves most of them out, as the per-measurement medians of pgmpi-bench do)")
    ap.add_argument("--window-us", type=float, default=3000)
    ap.add_argument("--sizes", default="8,1K,64K,1M")
    ap.add_argument("--calls", default="bcast,allreduce,allgather")
    a = ap.parse_args()
    sizes = [parse_size(s) for s in a.sizes.split(",")]
    bench = ROOT / "build" / "install" / a.mpi / "bin" / "pgmpi-bench"
    loop = Path(tempfile.mkdtemp()) / "long_loop"
    subprocess.run([f"mpicc.{a.mpi}", "-O2", "-o", str(loop), str(ROOT / "tests/bench/long_loop.c")], check=True)
    pre, env = launcher(a.where, a.mpi)
    common = [f"--calls={a.calls}", f"--sizes={','.join(map(str, sizes))}", "--algorithms=default",
              "--no-barrier-rows", f"--nrep={a.nrep}"]
    arms = METHODS + ["long_loop"]
    med: dict[tuple, list[float]] = defaultdict(list)       # (arm, call, size) -> per-mpirun medians
    invalid: dict[tuple, list[float]] = defaultdict(list)   # (arm, call, size) -> invalid share per mpirun
    load0 = load()
    print(f"sync_methods: {a.where}, {a.mpi}, 2 ranks, {a.runs} mpiruns per arm, nrep {a.nrep}, long loop "
          f"L={a.loop} x {a.blocks} blocks, window {a.window_us:g} us; load before {load0}", flush=True)
    for r in range(a.runs):
        for arm in arms[r % len(arms):] + arms[:r % len(arms)]:
            if arm == "long_loop":
                out = run(pre + [str(loop), str(a.loop), str(a.blocks), a.calls, ",".join(map(str, sizes))], env)
                per = defaultdict(list)
                for line in out.splitlines():
                    f = line.split()
                    if len(f) == 4 and f[0].startswith("MPI_"):
                        per[(f[0], int(f[2]))].append(float(f[3]))
                for k, v in per.items():
                    med[(arm, *k)].append(statistics.median(v))
                continue
            extra = [f"--proc-sync={arm}"] + ([f"--window-size={a.window_us:g}"] if arm == "window" else [])
            text = run(pre + [str(bench), *common, *extra], env)
            rr = parse_text(text, f"{arm}-{r}.txt")
            assert rr.sync == {"dissem": "dissem_barrier", "mpi_barrier": "MPI_Barrier"}.get(arm, arm), rr.sync
            for ti, t in enumerate(rr.tests):
                for s in sizes:
                    sel = (rr.test == ti) & (rr.msize == s)
                    if sel.any():
                        med[(arm, t, s)].append(float(statistics.median(rr.runtime[sel].tolist())))
                    bad = [ln.split() for ln in rr.pgmpi_lines if ln.split()[1:2] == ["invalid"]
                           and ln.split()[2:4] == [t, str(s)]]
                    n_bad = sum(int(b[5]) for b in bad)
                    invalid[(arm, t, s)].append(n_bad / a.nrep)
    print(f"load after {load()}")
    hdr = f"{'call':14} {'bytes':>8} " + " ".join(f"{m:>12}" for m in arms) + "   " + \
        " ".join(f"{m[:6] + '/loop':>12}" for m in METHODS) + "   invalid window/roundtime"
    print(hdr)
    for call in a.calls.split(","):
        name = CALLS[call]
        for s in sizes:
            vals = {m: (statistics.median(med[(m, name, s)]) if med[(m, name, s)] else float("nan")) for m in arms}
            ref = vals["long_loop"]
            inv = [statistics.median(invalid[(m, name, s)]) if invalid[(m, name, s)] else 0.0
                   for m in ("window", "roundtime")]
            print(f"{name:14} {s:>8} " + " ".join(f"{vals[m] * 1e6:>12.2f}" for m in arms) + "   "
                  + " ".join(f"{vals[m] / ref:>12.2f}" for m in METHODS)
                  + f"   {inv[0] * 100:5.0f} % / {inv[1] * 100:3.0f} %")
    print("us = median over mpiruns of each mpirun's median; a method's cell with every measurement invalid is nan")


if __name__ == "__main__":
    main()
