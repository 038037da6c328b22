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
                                                       [--presets 1-8] [--rounds 3] [--nrep 50] [--keep 3]
    .venv/bin/python tests/bench/intel_hint_regime.py --calls allreduce,bcast,reduce,allgather \
                                                       --sizes 8,512,32768,262144 --presets all --rounds 3

--presets all takes every preset impi_info -v lists per collective (the Intel grid of native_search.py).

Also a rank table (issue 35, pruning): per cell, the rank of the forced-alone best in each single hinted
mpirun's ranking and, as the control, in each single forced round's ranking, and the loss of keeping the top k.

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
    ap.add_argument("--keep", type=int, default=3, help="survivors per cell of a pruning stage (rank table)")
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
    tally: dict[str, list] = {"hinted": [], "forced": []}
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
        ranks(call, sizes, presets, hinted, forced, a.keep, tally)
    print(f"\n== over all cells and rounds: the forced-alone best kept by a pruning stage of ONE mpirun "
          f"(hinted) or ONE forced round (control); load {load()}")
    for arm, xs in tally.items():
        print(f"  {arm:6} top 1 {sum(x[0] <= 1 for x in xs)}/{len(xs)}  top 3 {sum(x[0] <= 3 for x in xs)}/{len(xs)}"
              f"  top 5 {sum(x[0] <= 5 for x in xs)}/{len(xs)}  within 10 % of that round's best "
              f"{sum(x[1] <= 1.10 for x in xs)}/{len(xs)}  within 25 % {sum(x[1] <= 1.25 for x in xs)}/{len(xs)}")
        if xs:      # what a margin rule would keep: the share of a cell's presets within the margin of the round's best
            print(f"         a margin keeps (median share of the cell's presets): 10 % "
                  f"{statistics.median(x[2] / x[4] for x in xs) * 100:.0f} %, 25 % "
                  f"{statistics.median(x[3] / x[4] for x in xs) * 100:.0f} %")
    print(f"\nwall time per mpirun (s, median): hinted {statistics.median(wall['hinted']):.2f} (all presets), "
          f"forced {statistics.median(wall['forced']):.2f} (one preset), "
          f"default {statistics.median(wall['default']):.2f}")
    print(f"load after: {load()}")


def ranks(call: str, sizes: list[int], presets: list[int], hinted: list[dict], forced: list[dict],
          keep: int, total: dict[str, list]) -> None:
    """Pruning needs only the ranking: per cell, is the forced-alone best (median over all rounds) among the top
    `keep` of ONE hinted mpirun (what a race's first stage would be)?  Control: ONE forced round (today's first
    stage, one mpirun per preset) judged the same way.  "loss" is what keeping only the top `keep` would cost:
    the best forced median among them / the forced best - 1."""
    labs = [f"native:{p}" for p in presets]

    def order(d: dict, s: int) -> list[str]:
        return sorted(labs, key=lambda lab: d[(s, lab)])

    print(f"  rank of the forced-alone best in one round's ranking (1 = first; kept if <= {keep}); "
          f"loss = what pruning to the top {keep} costs against the forced best")
    tally = {"hinted": [0, 0], "forced": [0, 0]}
    for s in sizes:
        fmed = {lab: statistics.median(f[(s, lab)] for f in forced) for lab in labs}
        best = min(labs, key=fmed.get)
        line = []
        for arm, rounds in (("hinted", hinted), ("forced", forced)):
            rk, loss = [], []
            for d in rounds:
                top = order(d, s)[:keep]
                rk.append(order(d, s).index(best) + 1)
                lead = d[(s, order(d, s)[0])]
                total[arm].append((rk[-1], d[(s, best)] / lead,
                                   sum(d[(s, lab)] <= 1.10 * lead for lab in labs),
                                   sum(d[(s, lab)] <= 1.25 * lead for lab in labs), len(labs)))
                loss.append(min(fmed[lab] for lab in top) / fmed[best] - 1)
                tally[arm][0] += rk[-1] <= keep
                tally[arm][1] += 1
            line.append(f"{arm} ranks {','.join(map(str, rk)):<12} loss max {max(loss) * 100:5.1f} %")
        print(f"    {call} {s:>7} B best {best:9} ({fmed[best] * 1e6:.1f} us)  " + "   ".join(line))
    print(f"  kept in top {keep}: one hinted mpirun {tally['hinted'][0]}/{tally['hinted'][1]}, "
          f"one forced round (control) {tally['forced'][0]}/{tally['forced'][1]}")


if __name__ == "__main__":
    main()
