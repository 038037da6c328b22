#!/usr/bin/env python3
"""What more confirmation rounds (native_driver's confirm_max) cost in false passes and buy in power, with the
driver's own rules (confirm_rounds, can_still_win) on simulated cells: each round's alone pair default /
variant is log-normal around the true ratio.  Per true ratio and spread between mpiruns, the share of cells
whose pairs pass the decision's interval rule at the 5 % minimum gain, and the rounds they took, with the
campaign's 3 rounds and with up to 6.  No MPI; asserts nothing.

    .venv/bin/python tests/bench/confirm_stopping.py [--cells 2000] [--seed 1]

Printed 2026-11-26 (seed 1, 2000 cells): a variant exactly 5 % faster passes 2.2-2.9 % (3 rounds) / 6.4-6.6 %
(up to 6); one no faster than the default 0.0-0.8 % / 0.0-1.0 %; 20 % faster with 10 % spread 25.4 % / 79.5 %
(docs/native-search-loss.md).
"""
from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "lib" / "python"))

from scheduler.native_driver import can_still_win, confirm_rounds  # noqa: E402


def share(true: float, spread: float, most: int, cells: int, rng: random.Random) -> tuple[float, float]:
    """(share of cells that pass, mean rounds measured) with the campaign's 3 rounds and up to `most`."""
    passed = rounds = 0
    for _ in range(cells):
        pairs = [math.exp(math.log(true) + rng.gauss(0, spread)) for _ in range(most)]
        done = confirm_rounds({"c": {1: "v"}}, 3, lambda c, i: ({("c", 1): 1.0}, {("c", 1): 1.0 / pairs[i]}), most)
        rounds += len(done)
        passed += can_still_win(pairs[:len(done)], 0)
    return passed / cells, rounds / cells


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    print("true ratio  spread  | 3 rounds: pass  rounds | up to 6: pass  rounds")
    for true in (1.0, 1.05, 1.10, 1.20):
        for spread in (0.03, 0.1):
            p3, r3 = share(true, spread, 3, a.cells, rng)
            p6, r6 = share(true, spread, 6, a.cells, rng)
            print(f"{true:10.2f}  {spread:6.2f}  | {100 * p3:13.1f} %  {r3:5.2f} | {100 * p6:12.1f} %  {r6:5.2f}")


if __name__ == "__main__":
    main()
