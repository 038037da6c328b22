#!/usr/bin/env python3
"""Do Intel MPI presets time the same interleaved in one mpirun (pgmpi-bench on hinted communicators, Intel's
"comm_id" hint) as forced alone at launch (one mpirun per preset, I_MPI_ADJUST_<COLL>=<p>, today's way)?
Issue 35: the race and the fills could use the first only if it measures what the second does.

Per round, per collective: one hinted mpirun (native:<p> for every preset of --presets, interleaved by
pgmpi-bench), one mpirun per preset forced at launch, and one default mpirun, in an order rotated each round;
pgmpi-bench with the same sizes and --nrep.  Per (collective, size, preset) the ratio hinted / forced of the
two medians of each round; printed: the geometric mean over rounds and the range, next to the control arm:
the forced preset's median of round r against round r-1 (how much one preset moves between mpiruns).  Also
per mpirun its wall time, the cost the race pays per mpirun.

    .venv/bin/python tests/bench/intel_hint_regime.py [--calls allreduce,reduce] [--sizes 8,4096,65536]
                                                       [--presets 1-8] [--rounds 3] [--nrep 50]
    .venv/bin/python tests/bench/intel_hint_regime.py --agreement --calls allreduce,bcast,reduce,allgather \
                                                       --sizes 8,512,32768,262144 --presets all --rounds 3

--agreement (issue 35, pruning): only the ranking matters.  Per cell the forced-alone best (lowest median of the
forced medians over rounds: what exhaustive would pick) and, per round (one hinted mpirun, what a pruning first
stage would see), its rank among the hinted presets and its hinted time over the hinted best; summed up as how
many (cell, round) pairs keep it in the hinted top k (k = 1, 3, 5) or within 10 % / 25 % of the hinted best.
--presets all takes every preset impi_info -v lists per collective.

Needs build/install/intelmpi (deploy/build-lib.sh intelmpi); 2 ranks.  Prints figures and the load; asserts
nothing.  Loaded figures say little: a quiet run is what can decide.
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "lib" / "python"))
from pgmpi_formats import mpi_libraries  # noqa: E402
from pgmpi_formats.results import read_file  # noqa: E402

YIELD = {"I_MPI_PIN": "0", "I_MPI_THREAD_YIELD": "2", "I_MPI_SPIN_COUNT": "1"}


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", default="allreduce,reduce")
    ap.add_argument("--sizes", default="8,4096,65536")
    ap.add_argument("--presets", default="1-8")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--nrep", type=int, default=50)
    ap.add_argument("--bench", type=Path, default=ROOT / "build" / "install" / "intelmpi" / "bin" / "pgmpi-bench")
    ap.add_argument("--agreement", action="store_true", help="print the rank agreement table (pruning)")
    a = ap.parse_args()
    bench = a.bench
    if not bench.exists():
        raise SystemExit(f"{bench} missing: deploy/build-lib.sh intelmpi")
    lib = mpi_libraries.mpi_library("intelmpi")
    base = {k: v for k, v in lib.environment().items() if not k.startswith(("I_MPI_ADJUST_", "I_MPI_TUNING"))}
    base.update(YIELD)
    if a.presets == "all":
        from pgmpi_formats import impi_adjust
        top = impi_adjust.discover(base).presets
        presets_of = {c: list(range(1, top[c] + 1)) for c in a.calls.split(",")}
    else:
        lo, hi = (int(x) for x in a.presets.split("-"))
        presets_of = {c: list(range(lo, hi + 1)) for c in a.calls.split(",")}
    agree: list[tuple[str, int, int, str, list[tuple[int, float]]]] = []
    work = Path(tempfile.mkdtemp(prefix="hintregime"))
    n = 0
    wall: dict[str, list[float]] = {"hinted": [], "forced": [], "default": []}

    def run(arm: str, call: str, algs: str, env: dict) -> dict[tuple[int, str], float]:
        """{(bytes, label): median seconds} of one pgmpi-bench mpirun"""
        nonlocal n
        n += 1
        out = work / f"r{n}.txt"
        t0 = time.monotonic()
        p = subprocess.run([str(lib.mpirun), "-n", "2", str(bench), f"--calls={call}", f"--sizes={a.sizes}",
                            f"--algorithms={algs}", f"--nrep={a.nrep}", "--no-barrier-rows", f"--output={out}"],
                           env={**base, **env}, capture_output=True, text=True, timeout=600)
        dt = time.monotonic() - t0
        if p.returncode != 0:
            raise SystemExit(f"{call} {algs} {env}: {p.stderr[-800:]}")
        wall[arm].append(dt)
        r = read_file(out)
        rows: dict[tuple[int, str], list[float]] = {}
        for t, m, al, x in zip(r.test, r.msize, r.algorithm, r.runtime):
            rows.setdefault((int(m), r.algorithms[al]), []).append(float(x))
        return {k: statistics.median(v) for k, v in rows.items()}

    print(f"# pgmpi-bench {bench}; Intel MPI {lib.version}, 2 ranks, sizes {a.sizes}, presets {a.presets}, "
          f"nrep {a.nrep}, {a.rounds} rounds; load before: {load()}")
    sizes = [int(s) for s in a.sizes.split(",")]
    for call in a.calls.split(","):
        C = call.upper()
        presets = presets_of[call]
        hinted, forced, default = [], [], []
        for r in range(a.rounds):
            arms = ["hinted", "default"] + [f"forced:{p}" for p in presets]
            arms = arms[r % len(arms):] + arms[:r % len(arms)]
            got: dict[str, dict] = {}
            for arm in arms:
                if arm == "hinted":
                    got[arm] = run("hinted", call, ",".join(f"native:{p}" for p in presets), {})
                elif arm == "default":
                    got[arm] = run("default", call, "default", {})
                else:
                    p = arm.split(":")[1]
                    got[arm] = run("forced", call, f"native:{p}", {f"I_MPI_ADJUST_{C}": p})
            hinted.append(got["hinted"])
            default.append(got["default"])
            forced.append({k: v for arm, d in got.items() if arm.startswith("forced:") for k, v in d.items()})
        print(f"\n== MPI_{call.capitalize()}: ratio hinted / forced (geometric mean over {a.rounds} rounds "
              f"[min, max]); control: forced round r / round r-1 [min, max]; load {load()}")
        for s in sizes:
            print(f"  {s:>7} B   default median {statistics.median(d[(s, 'default')] for d in default) * 1e6:8.1f} us")
            for p in presets:
                lab = f"native:{p}"
                q = [h[(s, lab)] / f[(s, lab)] for h, f in zip(hinted, forced)]
                c = [forced[i][(s, lab)] / forced[i - 1][(s, lab)] for i in range(1, len(forced))]
                g = math.exp(statistics.mean(math.log(x) for x in q))
                ctl = f"[{min(c):.2f}, {max(c):.2f}]" if c else "-"
                print(f"    {lab:9} hinted {statistics.median(h[(s, lab)] for h in hinted) * 1e6:8.1f} us  "
                      f"forced {statistics.median(f[(s, lab)] for f in forced) * 1e6:8.1f} us  "
                      f"ratio {g:5.2f} [{min(q):.2f}, {max(q):.2f}]  control {ctl}")
            labs = [f"native:{p}" for p in presets]
            fbest = min(labs, key=lambda lab: statistics.median(f[(s, lab)] for f in forced))
            per_round = []
            for h in hinted:
                order = sorted(labs, key=lambda lab: h[(s, lab)])
                per_round.append((order.index(fbest) + 1, h[(s, fbest)] / h[(s, order[0])]))
            agree.append((call, s, len(labs), fbest, per_round))
    if a.agreement:
        print(f"\n== rank agreement: forced-alone best (median over {a.rounds} rounds) in each round's hinted ranking; "
              f"load {load()}")
        print(f"  {'cell':>18} {'presets':>7} {'forced best':>11}   hinted rank per round   hinted time / hinted best")
        pairs = [x for *_, pr in agree for x in pr]
        for call, s, n_p, fbest, pr in agree:
            print(f"  {call:>10} {s:>7} {n_p:>7} {fbest:>11}   {' '.join(f'{r:>3}' for r, _ in pr):<22}  "
                  f"{' '.join(f'{m:5.2f}' for _, m in pr)}")
        for k in (1, 3, 5):
            print(f"  kept in hinted top {k}: {sum(r <= k for r, _ in pairs)}/{len(pairs)} (cell, round) pairs")
        for m in (1.10, 1.25):
            print(f"  kept within {round((m - 1) * 100)} % of the hinted best: {sum(x <= m for _, x in pairs)}/{len(pairs)}")
    print(f"\nwall time per mpirun (s, median): hinted {statistics.median(wall['hinted']):.2f} (all presets), "
          f"forced {statistics.median(wall['forced']):.2f} (one preset), "
          f"default {statistics.median(wall['default']):.2f}")
    print(f"load after: {load()}")


if __name__ == "__main__":
    main()
