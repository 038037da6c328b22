"""The usage-driven, sequential campaign replayed on an exhaustive one, many times (prints figures; not a test).

Input: raw files of exhaustive campaigns recorded once (tests/bench/usage_adaptive_record.sh: every collective x
21 sizes x every mock-up + the default + the control arm, 2 ranks, R mpiruns of nrep each; or any guideline
campaign's run-*.txt), one directory per library. The grid is every (library, collective, size) of them.

The exhaustive campaign: every grid cell, every mpirun, every repetition, every mock-up; a cell's decision is
the interval rule at alpha = 0.05 on its R per-mpirun log ratios default/mock-up (usage_plan.fixed_cell).

One replay (seeded; --replays of them):
- a usage mix: a fraction --hit of the grid is what the users' jobs call, their time Zipf(1.1) over those
  cells in a random order (as docs/usage.md section 4 models a site); scheduler/usage_plan.plan_night (no
  budget limit) picks the cells holding 90 % of the time plus its rotating sample of the rest;
- a resampled campaign: the R recorded mpiruns in a random order (which ones come first), each measured with
  the first `nrep` repetitions of the design (what an mpirun with that nrep measures: its first rounds);
- each picked cell runs the sequential design (usage_plan.sequential_cell): looks after 3, 4, ... mpiruns at
  the group-sequential levels, a mock-up dropped once decided, the cell stopped once all are; the default
  and the control arm are measured in every mpirun the cell gets.
Measuring time = the run-times of the measurements a design takes (the cells' own time; the mpiruns' start-up
is shared by all cells of an mpirun and left out of both sides). Printed per design: the adaptive campaign's
time as a fraction of the exhaustive one's (median, 90th percentile, max over replays), the part due to the
choice of cells alone, the decisions on the cells holding 90 % that differ from the exhaustive campaign's
(how many replays, each cell with both sides' effect and interval), and the control arm's false alarms.
    .venv/bin/python tests/bench/usage_adaptive_replay.py DIR [DIR ...] [--replays 200] [--hit 0.2]
"""
from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pgmpi_formats.results import read_file  # noqa: E402
from scheduler.usage_plan import (Cell, CellUsage, SequentialDesign, fixed_cell, plan_night,  # noqa: E402
                                  sequential_cell)

CONTROL = "default_control"
SKIP = {"tuned"}


class Grid:
    """runtimes[(lib, test, msize)][algorithm][mpirun] -> the mpirun's run-times in execution order."""

    def __init__(self, dirs: list[Path]):
        self.times: dict[tuple, dict[str, list[np.ndarray]]] = {}
        self.R: dict[str, int] = {}
        self._cache: dict = {}
        for d in dirs:
            runs = sorted(d.rglob("run-*.txt"))
            lib = d.name
            per = defaultdict(lambda: defaultdict(list))
            for f in runs:
                r = read_file(f)
                groups = defaultdict(list)
                for t, a, m, x in zip(r.test, r.algorithm, r.msize, r.runtime):
                    groups[(r.tests[t], int(m), r.algorithms[a])].append(float(x))
                for (test, m, alg), xs in groups.items():
                    if alg not in SKIP and test != "MPI_Barrier":
                        per[(lib, test, m)][alg].append(np.asarray(xs))
            self.R[lib] = len(runs)
            for k, algs in per.items():
                if "default" in algs and all(len(v) == len(runs) for v in algs.values()):
                    self.times[k] = dict(algs)

    def _per_mpirun(self, key, nrep):
        """(medians, sums) per algorithm: arrays over the recorded mpiruns, of the first nrep repetitions."""
        ck = (key, nrep)
        if ck not in self._cache:
            algs = self.times[key]
            self._cache[ck] = ({a: np.array([np.median(x[:nrep]) for x in v]) for a, v in algs.items()},
                               {a: np.array([x[:nrep].sum() for x in v]) for a, v in algs.items()})
        return self._cache[ck]

    def log_ratios(self, key, order: list[int], nrep: int | None) -> tuple[dict[str, list[float]], list[float] | None]:
        med, _ = self._per_mpirun(key, nrep)
        with np.errstate(divide="ignore", invalid="ignore"):
            d = med["default"][order]
            lr = {a: list(np.log(d / x[order])) for a, x in med.items() if a not in ("default", CONTROL)}
            ctrl = list(np.log(d / med[CONTROL][order])) if CONTROL in med else None
        return lr, ctrl

    def cost(self, key, order: list[int], nrep: int | None, mpiruns: int, arm_mpiruns: dict[str, int]) -> float:
        """Seconds of measuring: default and control in every mpirun the cell got, a mock-up in its own."""
        _, sums = self._per_mpirun(key, nrep)
        s = 0.0
        for a, v in sums.items():
            n = mpiruns if a in ("default", CONTROL) else arm_mpiruns.get(a, 0)
            s += float(v[order[:n]].sum())
        return s


def cell_of(key) -> Cell:
    lib, test, m = key
    return Cell(f"{lib}/{test}", m, 2)


def fmt(o) -> str:
    if o.decision == "redirect":
        lk = o.arms[o.winner]
        return f"{o.winner} {lk.effect:.2f}x [{lk.lo:.2f}, {lk.hi:.2f}] decided after {lk.mpiruns} mpiruns"
    best = max(o.arms.items(), key=lambda kv: kv[1].effect, default=None)
    if best is None:
        return "default (no mock-up)"
    a, lk = best
    return f"default (best {a} {lk.effect:.2f}x [{lk.lo:.2f}, {lk.hi:.2f}] {lk.state} after {lk.mpiruns} mpiruns)"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--replays", type=int, default=200)
    ap.add_argument("--hit", type=float, default=0.2, help="share of the grid the users' jobs call")
    ap.add_argument("--share", type=float, default=0.9)
    ap.add_argument("--sample", type=float, default=0.1, help="plan_night's rotating sample of the rest")
    ap.add_argument("--gain", type=float, default=0.1)
    ap.add_argument("--designs", default="3,4:30:3;3,4:10:3;3,4:10:1;3:30:3",
                    help="designs 'looks:nrep:rho' separated by ';' (the last look is each library's R)")
    a = ap.parse_args()
    g = Grid(a.dirs)
    keys = sorted(g.times)
    exh = {k: fixed_cell(g.log_ratios(k, list(range(g.R[k[0]])), None)[0], 0.05, a.gain,
                         g.log_ratios(k, list(range(g.R[k[0]])), None)[1]) for k in keys}
    exh_cost = {k: g.cost(k, list(range(g.R[k[0]])), None, g.R[k[0]], {x: g.R[k[0]] for x in g.times[k]}) for k in keys}
    total = sum(exh_cost.values())
    libs = Counter(k[0] for k in keys)
    print(f"grid: {len(keys)} cells ({', '.join(f'{l} {n} cells R={g.R[l]}' for l, n in sorted(libs.items()))}); "
          f"exhaustive measuring time {total:.1f} s; exhaustive redirects "
          f"{sum(o.decision == 'redirect' for o in exh.values())}, control false alarms "
          f"{sum(1 for o in exh.values() if o.control and o.control.state == 'redirect')} of "
          f"{sum(1 for o in exh.values() if o.control)}")
    print(f"usage: {a.hit:.0%} of the grid called, Zipf 1.1, cells holding {a.share:.0%} + a {a.sample:.0%} "
          f"rotating sample of the rest; {a.replays} replays")
    for spec in a.designs.split(";"):
        looks_s, nrep_s, rho_s = spec.split(":")
        first_looks = tuple(int(x) for x in looks_s.split(","))
        nrep, rho = int(nrep_s), float(rho_s)
        fracs, sel_fracs, differ, n_cov, ctrl_false, ctrl_n = [], [], Counter(), [], 0, 0
        example = {}
        stop_at = Counter()
        undecided = 0
        for rep in range(a.replays):
            rng = random.Random(rep)
            hit = rng.sample(keys, max(1, round(a.hit * len(keys))))
            usages = [CellUsage(cell_of(k), 1.0 / (i + 1) ** 1.1) for i, k in enumerate(hit)]
            by_cell = {cell_of(k): k for k in keys}
            plan = plan_night(usages, {}, math.inf, share=a.share, sample_fraction=a.sample, night=rep)
            chosen = [(by_cell[c.cell], c.reason) for c in plan.chosen]
            n_cov.append(sum(1 for _, why in chosen if why == "covers usage"))
            used = 0.0
            for k, why in chosen:
                R = g.R[k[0]]
                order = list(range(R))
                rng.shuffle(order)
                design = SequentialDesign(looks=tuple(x for x in first_looks if x < R) + (R,), nrep=nrep, rho=rho,
                                          min_gain=a.gain)
                lr, ctrl = g.log_ratios(k, order, nrep)
                o = sequential_cell(lr, design, ctrl)
                used += g.cost(k, order, nrep, o.mpiruns, o.arm_mpiruns)
                stop_at[o.mpiruns] += 1
                undecided += o.decision == "default" and any(lk.state == "inconclusive" for lk in o.arms.values())
                if o.control is not None:
                    ctrl_n += 1
                    ctrl_false += o.control.state == "redirect"
                if why != "covers usage":
                    continue
                e = exh[k]
                if (e.decision, e.winner) != (o.decision, o.winner):
                    differ[k] += 1
                    example.setdefault(k, (fmt(e), fmt(o)))
            fracs.append(used / total)
            sel_fracs.append(sum(exh_cost[k] for k, _ in chosen) / total)
        fr = sorted(fracs)
        print(f"\ndesign looks {','.join(map(str, first_looks))},R  nrep {nrep}  rho {rho:g}: adaptive time / exhaustive "
              f"median {statistics.median(fr):.1%}, p90 {fr[int(0.9 * (len(fr) - 1))]:.1%}, max {fr[-1]:.1%}, "
              f"<= 20 % in {sum(f <= 0.2 for f in fr)} of {len(fr)} replays "
              f"(the cells chosen, measured exhaustively: median {statistics.median(sel_fracs):.1%}); "
              f"{statistics.median(n_cov):.0f} cells hold {a.share:.0%} (median)")
        print(f"  cells stopped after m mpiruns: " + ", ".join(f"{m}: {n}" for m, n in sorted(stop_at.items()))
              + f"; inconclusive (the default stays): {undecided} of {sum(stop_at.values())}")
        print(f"  control arm false alarms: {ctrl_false} of {ctrl_n} cell measurements")
        nd = sum(differ.values())
        print(f"  decisions on the cells holding {a.share:.0%} that differ from the exhaustive campaign: {nd} of "
              f"{sum(n_cov)} cell decisions ({nd / max(1, sum(n_cov)):.2%}); in {len(differ)} distinct cells:")
        for k, n in differ.most_common():
            ex, ad = example[k]
            print(f"    {k[0]} {k[1]} {k[2]} B ({n} replays): exhaustive {ex}; adaptive e.g. {ad}")


if __name__ == "__main__":
    main()
