"""The usage-driven, adaptive campaign replayed on an exhaustive one (prints figures; not a test).

Input: the raw files of an exhaustive guideline campaign (R mpiruns, every collective x size, all mock-ups).
A usage mix (the users' time over those cells, Zipf 1.1 in a seeded random order; several seeds) picks the
cells that hold 90 % of the time; each is replayed with the sequential rule of scheduler/usage_plan.py
(looks after 2, 3, ..., R mpiruns at alpha / (R - 1) each), stopping once decided. Printed per mix: the
measuring time the adaptive campaign used (the cells' own measurements in the mpiruns it looked at) as a
fraction of the exhaustive campaign's (every cell, every mpirun), and every cell whose decision differs from
the exhaustive one (all R mpiruns, the same interval rule at alpha).
    .venv/bin/python tests/bench/usage_adaptive_replay.py CAMPAIGN_DIR [CAMPAIGN_DIR ...] [--gain 0.1]
"""
from __future__ import annotations

import argparse
import math
import random
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pgmpi_formats.results import read_file  # noqa: E402
from scheduler.usage_plan import Cell, CellUsage, covering_cells, sequential_decision  # noqa: E402

SKIP = {"default_control", "tuned"}


def cells_of(campaign: Path):
    """{(test, msize): {algorithm: [median per mpirun]}}, {(test, msize): [measuring seconds per mpirun]}"""
    med = defaultdict(lambda: defaultdict(list))
    cost = defaultdict(list)
    runs = sorted(campaign.rglob("run-*.txt"))
    for f in runs:
        r = read_file(f)
        per = defaultdict(float)
        groups = defaultdict(list)
        for t, a, m, x in zip(r.test, r.algorithm, r.msize, r.runtime):
            groups[(r.tests[t], int(m), r.algorithms[a])].append(x)
        for (test, m, alg), xs in groups.items():
            per[(test, m)] += float(np.sum(xs))
            if alg not in SKIP:
                med[(test, m)][alg].append(float(np.median(xs)))
        for k, s in per.items():
            cost[k].append(s)
    return med, cost, len(runs)


def decide(ratios_by_alg: dict[str, list[float]], upto: int, gain: float, looks: int, final: bool, exhaustive: bool):
    best = None
    for alg, rs in ratios_by_alg.items():
        d = sequential_decision(rs[:upto], min_gain=gain, max_looks=1 if exhaustive else looks, final=final)
        if d.state == "violation" and (best is None or d.ratio > best[1].ratio):
            best = (alg, d)
        elif best is None and d.state == "undecided":
            best = ("", d)
    if best is None:
        return "none", ""
    return best[1].state if best[1].state != "undecided" or not final else "inconclusive", best[0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("campaigns", nargs="+", type=Path)
    ap.add_argument("--gain", type=float, default=0.1)
    ap.add_argument("--seeds", type=int, default=5)
    a = ap.parse_args()
    for camp in a.campaigns:
        med, cost, nruns = cells_of(camp)
        R = min(len(v) for v in cost.values())
        ratios = {}
        for k, algs in med.items():
            d = algs.get("default")
            if not d or len(d) < R:
                continue
            ratios[k] = {alg: [d[i] / v[i] for i in range(R) if v[i] > 0]
                         for alg, v in algs.items() if alg != "default" and len(v) >= R}
        exh = {k: decide(r, R, a.gain, 1, True, True) for k, r in ratios.items()}
        total = sum(sum(cost[k][:R]) for k in ratios)
        print(f"{camp}: {len(ratios)} cells, R = {R} mpiruns, exhaustive measuring time {total:.3f} s; "
              f"exhaustive decisions: {sum(s == 'violation' for s, _ in exh.values())} violations")
        for seed in range(1, a.seeds + 1):
            rng = random.Random(seed)
            keys = sorted(ratios)
            rng.shuffle(keys)
            usages = [CellUsage(Cell(t, m, 2), 1.0 / (i + 1) ** 1.1) for i, (t, m) in enumerate(keys)]
            cov = [(u.cell.collective, u.cell.bytes_lo) for u in covering_cells(usages, 0.9)]
            used, differ = 0.0, []
            for k in cov:
                for look in range(2, R + 1):
                    state, alg = decide(ratios[k], look, a.gain, R - 1, look == R, False)
                    if state not in ("undecided",):
                        break
                used += sum(cost[k][:look])
                want = exh[k][0]
                got = "violation" if state == "violation" else "none"
                if (want == "violation") != (got == "violation"):
                    differ.append(f"{k[0]} {k[1]} B: exhaustive {want} {exh[k][1]}, adaptive {state} {alg} after {look}")
            print(f"  mix {seed}: {len(cov)} of {len(ratios)} cells hold 90 % of the time; adaptive used "
                  f"{used / total:.1%} of the exhaustive measuring time; decisions that differ: {len(differ)}")
            for d in differ:
                print(f"    {d}")


if __name__ == "__main__":
    main()
