#!/usr/bin/env python3
"""How long must a confirmation's blocks be?  The control arm's spread and the variant's ratio per block length.

A native search confirms its choice at a cell by measuring the control arm, the default and the chosen
variant "alone" (scheduler/native_driver.py, Launcher.confirm): each a block of consecutive repetitions of one
algorithm, so no algorithm is measured next to another one repetition by repetition (Open MPI's
split_binary_tree bcast at 512 B looked 5x faster interleaved than alone: lib/bench/README.md).  Long blocks
(nrep / 2) carry the drift between blocks into the pair (MPICH's sub-microsecond cells: 20-30 %); short
alternating blocks average it out but cost one pgmpi-bench --serve command each.  This script measures, in one
--serve mpirun per library and round, every cell below with each scheme, in rotating order:

  interleaved  one command, default + control + variant interleaved repetition by repetition (the search's way)
  blocks<k>    control, default, variant alone in blocks of k repetitions, order A B C then C B A, until nrep,
               one --serve command per block (the driver's way until now: 2 passes, blocks of nrep / 2)
  serve<k>     the same blocks in one command ("cell ... blocks=<k>": pgmpi-bench alternates them itself)

and prints per scheme: the control arm's spread (|default / control - 1|, median and max over cells x rounds),
the variant's ratio default / variant (median over rounds) per cell, and the wall time per cell.  Own mpirun
(--own): the variant alone in an mpirun of its own and the default in another, the reference for "alone".

    .venv/bin/python tests/bench/confirm_blocks.py [--mpi mpich openmpi] [--rounds 3] [--nrep 100] [--blocks 50,10,5] [--serve-blocks 10,5,2]

Asserts nothing; gives the load with every figure (2 cores shared: > 1.2 is loaded).
"""
from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "lib" / "python"))

from scheduler.native_driver import Session   # noqa: E402
from pgmpi_formats.results import read_file  # noqa: E402

# the cells where the confirmation's noise decided (MPICH: allreduce 128 / 512 B recursive_doubling refused by
# the race, kept by exhaustive; small bcast / allgather where the control arm spread), and Open MPI's artefact
CELLS = {
    "mpich": [("allreduce", 128, "native:recursive_doubling"), ("allreduce", 512, "native:recursive_doubling"),
              ("allreduce", 32, "native:recursive_doubling"), ("bcast", 8, "native:binomial"),
              ("allgather", 32, "native:ring"), ("reduce", 64, "native:binomial")],
    "openmpi": [("bcast", 512, "native:split_binary_tree"), ("bcast", 4096, "native:split_binary_tree:seg=2048"),
                ("allreduce", 128, "native:recursive_doubling")],
}
CONTROL = "default_control"


def load() -> str:
    return open("/proc/loadavg").read().split()[0]


def launcher(lib_id: str):
    from scheduler import launchers
    lib = launchers.library(lib_id)
    env = lib.row.environment()
    env.update(lib.family.job_env(1, 2, False, os.geteuid() == 0, os.cpu_count() or 2))
    return [lib.mpirun, "-np", "2", *lib.family.mpirun_args(1, 2, False)], env


def scheme(sess: Session, name: str, call: str, size: int, variant: str, nrep: int, parity: int) -> dict:
    """One confirmation of one cell by scheme `name`: {label: median of the block medians (interleaved: the
    median)} and the wall seconds."""
    t0 = time.perf_counter()
    got: dict[str, list[float]] = {}
    if name == "interleaved":
        for a, x in sess.cell(call, size, [variant], nrep=nrep).items():
            got[a] = [x]
    elif name.startswith("serve"):
        # one command: pgmpi-bench --serve alternates the blocks itself ("cell ... blocks=<k>")
        order = [CONTROL, "default", variant] if parity % 2 == 0 else [variant, "default", CONTROL]
        for a, x in sess.cell(call, size, order, nrep=nrep, blocks=int(name[len("serve"):])).items():
            got[a] = [x]
    else:
        k = int(name[len("blocks"):])
        passes = max(1, nrep // k)
        for j in range(passes):
            order = [CONTROL, "default", variant] if (parity + j) % 2 == 0 else [variant, "default", CONTROL]
            for lab in order:
                for a, x in sess.cell(call, size, [lab], nrep=k, alone=True).items():
                    got.setdefault(a, []).append(x)
    return {a: statistics.median(xs) for a, xs in got.items()}, time.perf_counter() - t0


def own_mpirun(lib_id: str, bench: Path, tmp: Path, call: str, size: int, label: str, nrep: int) -> float:
    import subprocess
    argv, env = launcher(lib_id)
    out = tmp / f"own-{call}-{size}-{label.replace(':', '_')}-{time.time_ns()}.txt"
    algs = "default" if label == "default" else label
    p = subprocess.run(argv + [str(bench), f"--calls={call}", f"--sizes=1,{size}", f"--algorithms={algs}",
                               f"--nrep={nrep}", "--no-barrier-rows", f"--output={out}"],
                       capture_output=True, text=True, env=env)
    if p.returncode:
        sys.exit(f"{' '.join(argv)} failed: {p.stderr[-500:]}")
    run = read_file(out)
    xs = [float(x) for m, a, x in zip(run.msize, run.algorithm, run.runtime)
          if int(m) == size and run.algorithms[a] == label]
    if not xs:
        sys.exit(f"{lib_id} own mpirun {call} {size} {label}: no rows (failed its check?) in {out}")
    return statistics.median(xs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mpi", nargs="+", default=["mpich", "openmpi"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--nrep", type=int, default=100)
    ap.add_argument("--blocks", default="50,10,5", help="blocks<k> schemes")
    ap.add_argument("--serve-blocks", default="10,5,2", help="serve<k> schemes (one command per cell)")
    ap.add_argument("--own", action="store_true", help="also each variant and the default in mpiruns of their own")
    a = ap.parse_args()
    schemes = (["interleaved"] + [f"blocks{k}" for k in a.blocks.split(",") if k]
               + [f"serve{k}" for k in a.serve_blocks.split(",") if k])
    print(f"# confirm_blocks: 2 ranks, {a.rounds} rounds (one --serve mpirun each), nrep {a.nrep} per arm, "
          f"schemes {', '.join(schemes)}; load at start {load()}")
    for lib_id in a.mpi:
        bench = ROOT / "build" / "install" / lib_id / "bin" / "pgmpi-bench"
        cells = CELLS[lib_id]
        calls = sorted({c for c, _, _ in cells})
        sizes = sorted({s for _, s, _ in cells} | {1})
        labels = sorted({v for _, _, v in cells})
        res: dict = {}        # (scheme, cell) -> [(ratio variant, control ratio)]
        secs: dict = {}
        with tempfile.TemporaryDirectory(prefix=f"confirm-blocks-{lib_id}-") as tmp:
            for r in range(a.rounds):
                argv, env = launcher(lib_id)
                out = f"r{r}.txt"
                sess_argv = argv + [str(bench), "--serve", f"--calls={','.join(calls)}",
                                    f"--sizes={','.join(map(str, sizes))}",
                                    f"--algorithms=default,{','.join(labels)},{CONTROL}", "--no-barrier-rows",
                                    f"--nrep={a.nrep}", f"--output={out}"]
                old = dict(os.environ)
                os.environ.update(env)
                try:
                    sess = Session(sess_argv, Path(tmp), Path(tmp) / f"r{r}.log")
                finally:
                    os.environ.clear()
                    os.environ.update(old)
                sess.cell(cells[0][0], 1, ["default"], alone=True)          # warm-up, as a confirmation does
                for i, (call, size, variant) in enumerate(cells):
                    order = schemes[(i + r) % len(schemes):] + schemes[:(i + r) % len(schemes)]
                    for sc in order:
                        med, dt = scheme(sess, sc, call, size, variant, a.nrep, r)
                        if variant in med and "default" in med and CONTROL in med:
                            res.setdefault((sc, (call, size, variant)), []).append(
                                (med["default"] / med[variant], med["default"] / med[CONTROL] - 1, med["default"]))
                        secs.setdefault(sc, []).append(dt)
                if sess.close():
                    sys.exit(f"{lib_id} round {r}: pgmpi-bench --serve failed: {sess.tail()}")
            own = {}
            if a.own:
                for call, size, variant in cells:
                    for _ in range(a.rounds):
                        d = own_mpirun(lib_id, bench, Path(tmp), call, size, "default", a.nrep)
                        v = own_mpirun(lib_id, bench, Path(tmp), call, size, variant, a.nrep)
                        own.setdefault((call, size, variant), []).append((d / v, d))
        print(f"\n## {lib_id}, load {load()}: per cell default / variant (median over rounds; control arm "
              "|default / control - 1| max over rounds) and the default's median us")
        print(f"{'cell':48} " + " ".join(f"{sc:>24}" for sc in schemes) + ("   own mpiruns" if own else ""))
        for cell in cells:
            row = []
            for sc in schemes:
                xs = res.get((sc, cell), [])
                if xs:
                    row.append(f"{statistics.median(x[0] for x in xs):6.3f}x c{100 * max(abs(x[1]) for x in xs):5.1f}% "
                               f"{1e6 * statistics.median(x[2] for x in xs):6.2f}us")
                else:
                    row.append(f"{'-':>24}")
            o = own.get(cell)
            tail = (f"   {statistics.median(x[0] for x in o):6.3f}x {1e6 * statistics.median(x[1] for x in o):6.2f}us"
                    if o else "")
            print(f"{' '.join(map(str, cell)):48} " + " ".join(f"{x:>24}" for x in row) + tail)
        print(f"{'control spread median / max':48} " + " ".join(
            f"{100 * statistics.median(abs(x[1]) for c in cells for x in res.get((sc, c), [])):10.1f}% / "
            f"{100 * max(abs(x[1]) for c in cells for x in res.get((sc, c), [])):9.1f}%" for sc in schemes))
        print(f"{'seconds per cell (median)':48} " + " ".join(
            f"{statistics.median(secs[sc]):>24.4f}" for sc in schemes))
    print(f"# load at end {load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
