"""The cost model of a usage-driven nightly campaign as the machine grows (prints figures; not a test).

A simulated site: machines of 100, 1,000 and 10,000 nodes x 64 processes. Jobs use 1 to 1/8 of the
machine (p a power of two, nodes x 64), ten collectives, 21 size buckets (1 B-1 MiB); the users' time per
cell follows a Zipf law (exponent 1.1) over the cells jobs actually hit, as per-job usage records show
on real machines (a few collectives at a few sizes hold most of the time). The grid an admin would list
exhaustively is every collective x bucket x p x the layouts of p.

Each night: scheduler/usage_plan.plan_night picks the cells within the budget (default 1 % of the
partition's node-hours), with the cost model of usage_plan.CostModel scaled by the cell's nodes (launch
time grows with log2 nodes). A measured cell needs 1-3 rounds (the sequential rule stops it early: the
replay in tests/bench/usage_adaptive_replay.py measures how often). Printed per machine size: the
exhaustive grid's cells and node-hours, the cells holding 90 % of the time, nights until they are all
decided, and the share of the users' time whose cells carry a verdict after 1, 7 and 30 nights.
    .venv/bin/python tests/bench/usage_budget.py [--nights 30] [--seed 1]
"""
from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from scheduler.usage_plan import Cell, CellState, CellUsage, CostModel, covering_cells, default_budget, plan_night  # noqa: E402

COLLECTIVES = ["allreduce", "bcast", "allgather", "reduce", "alltoall", "gather", "scatter", "reducescatter",
               "reducescatterblock", "scan"]
BUCKETS = [1 << k for k in range(21)]
PPN = 64


class ScaledCost(CostModel):
    def round_node_hours(self, cell, call_seconds=None):
        launch = self.launch_seconds + 2.0 * math.log2(max(cell.nodes, 1))
        t = call_seconds if call_seconds is not None else 2e-6 * math.log2(cell.p) + cell.bytes_lo / 5e9
        per_mpirun = launch + self.nrep * self.arms * (t + self.overhead_seconds)
        return per_mpirun * self.mpiruns_per_round * cell.nodes / 3600.0


def site(nodes: int, rng: random.Random) -> tuple[list[CellUsage], list[Cell]]:
    ps = [PPN * (1 << k) for k in range(int(math.log2(nodes)) + 1) if (1 << k) <= max(1, nodes // 8)]
    grid = [(c, b, p) for c in COLLECTIVES for b in BUCKETS for p in ps]
    # the cells jobs actually hit: about a fifth of the grid, weights Zipf(1.1) in a random order
    hit = rng.sample(grid, max(1, len(grid) // 5))
    weights = [1.0 / (k + 1) ** 1.1 for k in range(len(hit))]
    machine_rank_seconds_per_night = nodes * PPN * 86400 * 0.7 * 0.08   # 70 % busy, 8 % in collectives
    total = sum(weights)
    usages = [CellUsage(Cell(c, b, p, f"{p // PPN}x{PPN}"), machine_rank_seconds_per_night * w / total)
              for (c, b, p), w in zip(hit, weights)]
    return usages, [Cell(c, b, p, f"{p // PPN}x{PPN}") for c, b, p in grid]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nights", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    cost = ScaledCost()
    print("machine        grid cells  exhaustive node-h  budget/night  cells@90%  nights to decide 90%  "
          "time with a verdict after 1 / 7 / 30 nights")
    for nodes in (100, 1000, 10000):
        rng = random.Random(a.seed)
        usages, grid = site(nodes, rng)
        grid_cells = len(grid)
        budget = default_budget(nodes)
        cov = covering_cells(usages, 0.9)
        ex_nh = sum(3 * cost.round_node_hours(c) for c in grid)   # every grid cell, three rounds
        states: dict[Cell, CellState] = {}
        total = sum(u.rank_seconds for u in usages)
        decided_at, shares = None, {}
        for night in range(1, a.nights + 1):
            plan = plan_night(usages, states, budget, cost, night=night)
            for ch in plan.chosen:
                # the sequential rule decides most cells in the planned rounds (the replay's figure)
                if rng.random() < 0.9:
                    states[ch.cell] = CellState(ch.cell, "violation" if rng.random() < 0.15 else "none", 0, 0.2)
            states = {k: CellState(v.cell, v.verdict, v.age_nights + 1, v.gain) for k, v in states.items()}
            with_verdict = sum(u.rank_seconds for u in usages if u.cell in states) / total
            if night in (1, 7, 30):
                shares[night] = with_verdict
            if decided_at is None and all(u.cell in states for u in cov):
                decided_at = night
        print(f"{nodes:5d} x {PPN:<4d}  {grid_cells:10d}  {ex_nh:17.0f}  {budget:12.0f}  {len(cov):9d}  "
              f"{decided_at if decided_at else '> %d' % a.nights:>20}  "
              f"{shares.get(1, 0):.0%} / {shares.get(7, 0):.0%} / {shares.get(30, 0):.0%}")


if __name__ == "__main__":
    main()
