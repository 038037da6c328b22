"""Detection delay and false-alarm rate of service/analysis/nightly.py on planted nightly data (prints figures).

    .venv/bin/python tests/bench/nightly_regressions.py [--cells 300] [--months 40] [--spread 0.01]

Each simulated machine x library has `cells` cells (collective x size x p); a night's value of a cell is its
median over 10 mpiruns: log-normal around the cell's level with a night-to-night spread `spread` (1 % in log;
the demo's per-mpirun spread is ~3 %, so a 10-mpirun median is ~1 %). A/A months: nothing changes for 30
nights, every alarm is false. Planted: at a random night one cell gets 5 % slower; the delay is the number of
nights from the shift to its first alarm (1 = flagged the night it happened). A false alarm is an alarm episode (a cell flagged on consecutive
nights is one alarm, as the notifications send it).
"""
from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from service.analysis import nightly  # noqa: E402


def night_values(rnd, n, spread, shift_at=None, shift=0.05):
    return [math.exp(rnd.gauss(0, spread) + (math.log1p(shift) if shift_at is not None and i >= shift_at else 0))
            for i in range(n)]


def false_alarms_per_month(rnd, cells, spread, months):
    counts = []
    alpha = nightly.level(cells)
    for _ in range(months):
        n = 0
        # 30 nights, each judged with the nights before it (REFERENCE + 2 of warm-up before the month)
        warm = nightly.REFERENCE + 2
        # one cell at a time, independently; the same alpha as a library with `cells` cells
        for _c in range(cells):
            vals = night_values(rnd, warm + 30, spread)
            flags = [nightly.check(vals[:warm + i + 1], alpha) is not None for i in range(30)]
            # an alarm episode: flagged, and not the night before (the notifications send a cell once)
            n += sum(f and (i == 0 or not flags[i - 1]) for i, f in enumerate(flags))
        counts.append(n)
    return counts


def delays(rnd, cells, spread, trials, shift):
    alpha = nightly.level(cells)
    out = []
    warm = nightly.REFERENCE + 2
    for _ in range(trials):
        at = warm + rnd.randrange(0, 5)
        vals = night_values(rnd, at + 6, spread, shift_at=at, shift=shift)
        d = next((i - at + 1 for i in range(at, at + 6) if nightly.check(vals[:i + 1], alpha) is not None), None)
        out.append(d)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", type=int, default=300)
    ap.add_argument("--months", type=int, default=20)
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--spread", type=float, default=0.01)
    ap.add_argument("--shift", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    fa = false_alarms_per_month(rnd, a.cells, a.spread, a.months)
    d = delays(rnd, a.cells, a.spread, a.trials, a.shift)
    within2 = sum(x is not None and x <= 2 for x in d) / len(d)
    print(f"detector: reference {nightly.REFERENCE} nights, budget {nightly.BUDGET:g} false alarm per month, "
          f"{a.cells} cells -> alpha {nightly.level(a.cells):.2e} per cell and night")
    print(f"A/A: {sum(fa)} false alarm(s) in {a.months} months x {a.cells} cells -> "
          f"{sum(fa) / a.months:.2f} per machine x library per month (months with any: "
          f"{sum(1 for x in fa if x)}/{a.months})")
    hist = {k: sum(1 for x in d if x == k) for k in (1, 2, 3, 4, 5, 6)}
    print(f"planted {100 * a.shift:.0f} % slowdown, night-to-night spread {100 * a.spread:.1f} %: flagged within "
          f"2 nights in {100 * within2:.1f} % of {len(d)} trials; delay (nights) 1: {hist[1]}, 2: {hist[2]}, "
          f"3: {hist[3]}, later: {hist[4] + hist[5] + hist[6]}, never (6 nights): {sum(1 for x in d if x is None)}")


if __name__ == "__main__":
    main()
