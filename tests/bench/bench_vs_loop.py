#!/usr/bin/env python3
"""pgmpi-bench against tests/bench/min_loop.c, arm by arm, mpirun by mpirun (issue 34: the 8-byte cells).

Each round runs every arm once (2 ranks, one mpirun each) in a rotated order, so every arm sees the
machine's drift as often first as last; printed per round the load and every arm's median (max over ranks,
us) per (call, size), then per arm the median of its per-mpirun medians and the paired ratio to the
reference arm (the median of the per-round ratios, with how many rounds lie above 1.1 and below 1/1.1).
Asserts nothing: this is where the timing figure of tests/python/bench/test_bench_vs_min_loop.py went.

  .venv/bin/python tests/bench/bench_vs_loop.py [--mpi mpich] [--rounds 10] [--nrep 400]
      [--calls bcast] [--sizes 8,65536] [--stat median|trimmed] [--bind]
      [--arm 'label=bench ARGS' | 'label=loop' | 'label=loop+lib'
      | 'label=env:VAR=VALUE,... bench ARGS' ...] [--ref loop]

Arm kinds: `bench ARGS` runs build/install/<mpi>/bin/pgmpi-bench with the test's options
(--algorithms=default --nrep=N --sync=mpi_barrier --no-barrier-rows, the calls and sizes) and then ARGS
(`bench@PREFIX ARGS`: the pgmpi-bench of another installation, e.g. a copy of an older build);
`loop` runs min_loop.c (the listed calls, one cell at a time, sizes ascending); `loop+lib` the same loop with
libpgmpitune preloaded; words after a loop kind are compiler flags (`loop -DDELAY_MS=50`, `-DPRINT_BYTES=N`,
`-DSPLIT_START`: min_loop.c's start-up controls); a `loop:FILE.c` arm compiles another loop of the same
command line and output (a control). An `env:VAR=VALUE,...` prefix sets variables for that arm's mpirun; `--output=@FILE` in a bench arm
writes its rows into a file (read afterwards) instead of stdout.
Without --arm: loop, loop+lib, bench (the test's three calls), bench-bcast (--calls=bcast alone),
bench-nocheck (--check=no), bench-method (--method=reprompi).
"""
from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CALLS = {"allreduce": "MPI_Allreduce", "bcast": "MPI_Bcast", "allgather": "MPI_Allgather"}
DEFAULT_ARMS = ["loop=loop", "loop+lib=loop+lib", "bench=bench --calls=allreduce,bcast,allgather",
                "bench-bcast=bench", "bench-nocheck=bench --calls=allreduce,bcast,allgather --check=no",
                "bench-method=bench --calls=allreduce,bcast,allgather --method=reprompi"]


def mpirun(mpi: str, bind: bool = False) -> list[str]:
    """The test suite's launch line; bind=True: each rank on a core of its own.  For Open MPI at 2 ranks both
    launches bind a rank per core and neither yields when idle (lib/bench/README.md, "Which launches
    compare"), so --bind changes the launch line only; for MPICH it binds ranks that are otherwise free."""
    if mpi == "openmpi":
        return ["mpirun.openmpi", "--allow-run-as-root"] + ([] if bind else ["--oversubscribe"]) + ["-np", "2"]
    return ["mpirun.mpich"] + (["-bind-to", "core"] if bind else []) + ["-np", "2"]


def uptime() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def trimmed_mean(xs: list[float]) -> float:
    """The mean of the middle 80 %: MPI_Wtime steps by 10 ns on this VM, so an 8-byte median of 0.2 us moves
    in 5 % steps; this resolves a few ns and ignores the descheduled outliers."""
    xs = sorted(xs)
    k = len(xs) // 10
    return statistics.fmean(xs[k:len(xs) - k])


STATS = {"median": statistics.median, "trimmed": trimmed_mean}


def medians(text: str, reprompi_layout: bool, stat=statistics.median) -> dict[tuple[str, int], float]:
    xs: dict[tuple[str, int], list[float]] = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 4 and f[0].startswith("MPI_") and (reprompi_layout or (len(f) >= 5 and f[4] == "default")):
            xs.setdefault((f[0], int(f[2])), []).append(float(f[3]))
    return {k: stat(v) for k, v in xs.items()}


class Arm:
    def __init__(self, spec: str, a, workdir: Path):
        self.label, _, rest = spec.partition("=")
        self.env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        if rest.startswith("env:"):
            assigns, _, rest = rest[4:].partition(" ")
            for kv in assigns.split(","):
                k, _, v = kv.partition("=")
                self.env[k] = v
        words = shlex.split(rest)
        kind, args = words[0], words[1:]
        prefix = ROOT / "build" / "install" / a.mpi
        sizes = ",".join(map(str, a.sizes))
        if kind == "bench" or kind.startswith("bench@"):
            if kind != "bench":                                       # another installation (an older build)
                prefix = Path(kind.split("@", 1)[1])
            self.cmd = [str(prefix / "bin" / "pgmpi-bench"), f"--calls={','.join(a.calls)}", "--algorithms=default",
                        f"--sizes={sizes}", f"--nrep={a.nrep}", "--sync=mpi_barrier", "--no-barrier-rows"] + args
            self.reprompi_layout = False
        elif kind in ("loop", "loop+lib") or kind.startswith("loop:"):
            src = ROOT / "tests/bench/min_loop.c" if ":" not in kind else Path(kind.split(":", 1)[1])
            exe = workdir / (src.stem + "_" + str(abs(hash(str(src) + " ".join(args)))))
            if not exe.exists():
                subprocess.run([f"mpicc.{a.mpi}", "-O2", "-o", str(exe), str(src)] + args, check=True)
            self.cmd = [str(exe), str(a.nrep), ",".join(a.calls), sizes]
            if kind == "loop+lib":
                self.env["LD_PRELOAD"] = str(prefix / "lib" / "libpgmpitune.so")
            self.reprompi_layout = True
        else:
            sys.exit(f"bench_vs_loop: arm {spec!r}: kind must be bench, loop, loop+lib or loop:FILE.c")

    def run(self, mpi: str, stat, bind: bool) -> dict[tuple[str, int], float]:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "rows.txt"
            cmd = [str(out) if w == "@FILE" else w.replace("=@FILE", f"={out}") for w in self.cmd]
            p = subprocess.run(mpirun(mpi, bind) + cmd, capture_output=True, text=True, env=self.env, timeout=600)
            if p.returncode:
                sys.exit(f"bench_vs_loop: arm {self.label} failed ({p.returncode}): {p.stderr[-2000:]}")
            return medians(out.read_text() if out.exists() else p.stdout, self.reprompi_layout, stat)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mpi", default="mpich", choices=["mpich", "openmpi"])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--nrep", type=int, default=400)
    ap.add_argument("--calls", default="bcast")
    ap.add_argument("--sizes", default="8,65536")
    ap.add_argument("--arm", action="append", help="label=KIND [ARGS] (see above); repeatable")
    ap.add_argument("--stat", default="median", choices=sorted(STATS),
                    help="per mpirun: the median (the test's former figure) or the 10-90 %% trimmed mean")
    ap.add_argument("--bind", action="store_true",
                    help="ranks bound to cores (Open MPI without --oversubscribe; MPICH -bind-to core)")
    ap.add_argument("--ref", default=None, help="the arm every other is paired with (default: the first)")
    a = ap.parse_args()
    a.calls = a.calls.split(",")
    a.sizes = sorted(int(s) for s in a.sizes.split(","))
    specs = a.arm or DEFAULT_ARMS
    work = Path(tempfile.mkdtemp(prefix="bench_vs_loop-"))
    arms = [Arm(s, a, work) for s in specs]
    ref = a.ref or arms[0].label
    cells = [(CALLS[c], s) for c in a.calls for s in a.sizes]
    print(f"# {a.mpi}, 2 ranks{' bound' if a.bind else ''}, nrep {a.nrep}, MPI_Barrier, per mpirun the {a.stat}; "
          "arms: " + "; ".join(specs))
    med: dict[str, list[dict]] = {arm.label: [] for arm in arms}
    for r in range(a.rounds):
        order = arms[r % len(arms):] + arms[:r % len(arms)]
        load = uptime()
        for arm in order:
            med[arm.label].append(arm.run(a.mpi, STATS[a.stat], a.bind))
        print(f"round {r + 1} ({load}): " + "  ".join(
            f"{arm.label} " + "/".join(f"{med[arm.label][-1].get(c, float('nan')) * 1e6:.3f}" for c in cells)
            for arm in arms), flush=True)
    print(f"# after: {uptime()}")
    for c in cells:
        print(f"\n{c[0]} {c[1]} B: median of per-mpirun {a.stat}s (us), paired ratio to {ref} "
              "(median of per-round ratios; rounds above 1.1 / below 1/1.1)")
        for arm in arms:
            xs = [m[c] for m in med[arm.label]]
            ratios = [x / m[c] for x, m in zip(xs, med[ref])]
            rm = statistics.median(ratios)
            up = sum(q > 1.1 for q in ratios)
            down = sum(q < 1 / 1.1 for q in ratios)
            print(f"  {arm.label:18s} {statistics.median(xs) * 1e6:9.3f} [{min(xs) * 1e6:.3f}-{max(xs) * 1e6:.3f}]"
                  f"  paired {rm:5.2f} ({up} up, {down} down)  " + " ".join(f"{q:.2f}" for q in ratios))


if __name__ == "__main__":
    main()
