"""The cost model of a usage-driven nightly campaign as the machine grows (prints figures; not a test).

A simulated site: machines of 100, 1,000 and 10,000 nodes x 64 processes. Jobs use 1 to 1/8 of the
machine (p a power of two, nodes x 64), ten collectives, 21 size buckets (1 B-1 MiB); the users' time per
cell follows a Zipf law (exponent 1.1) over the cells jobs actually hit, as per-job usage records show
on real machines (a few collectives at a few sizes hold most of the time). The grid an admin would list
exhaustively is every collective x bucket x p x the layouts of p.

Each night: scheduler/usage_plan.plan_night picks the cells within the budget (default 1 % of the
partition's node-hours), each planned at the worst case of the sequential design (usage_plan.SequentialDesign:
every look, 6 mpiruns of nrep 30, `arms` algorithms), with the cost model of usage_plan.CostModel scaled by the
cell's nodes (launch time grows with log2 nodes). What a measured cell really costs and whether it is decided
comes from the replay of real measurements (tests/bench/usage_adaptive_replay.py, --stops and --decided: the
share of cells that stopped after 3, 4, 5, 6 mpiruns, and the share decided, not inconclusive); the budget a
cell did not use goes back to the night (the agent fills it with the next candidates). The exhaustive
campaign is every grid cell at 6 mpiruns. Printed per machine size: the grid's cells and exhaustive
node-hours, the budget, the cells holding 90 % of the time, node-hours the first night really spent, nights
until every cell holding 90 % was measured, what measuring them cost as a share of the exhaustive campaign,
and the share of the users' time whose cells carry a verdict after 1, 7 and 30 nights.
    .venv/bin/python tests/bench/usage_budget.py [--nights 30] [--seed 1] [--stops 3:0.15,4:0.27,5:0.19,6:0.39] [--decided 0.68]
"""
from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from scheduler.usage_plan import (Cell, CellState, CellUsage, CostModel, SequentialDesign, covering_cells,  # noqa: E402
                                  default_budget, plan_night)

COLLECTIVES = ["allreduce", "bcast", "allgather", "reduce", "alltoall", "gather", "scatter", "reducescatter",
               "reducescatterblock", "scan"]
BUCKETS = [1 << k for k in range(21)]
PPN = 64


class ScaledCost(CostModel):
    def mpirun_node_hours(self, cell) -> float:
        launch = self.launch_seconds + 2.0 * math.log2(max(cell.nodes, 1))
        t = 2e-6 * math.log2(cell.p) + cell.bytes_lo / 5e9
        return (launch + self.nrep * self.arms * (t + self.overhead_seconds)) * cell.nodes / 3600.0

    def round_node_hours(self, cell, call_seconds=None):
        return self.mpirun_node_hours(cell) * self.mpiruns_per_round


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
    ap.add_argument("--stops", default="3:0.15,4:0.27,5:0.19,6:0.39",
                    help="share of measured cells stopped after m mpiruns (the replay's 'cells stopped after')")
    ap.add_argument("--decided", type=float, default=0.68,
                    help="share of measured cells decided (redirect or none) rather than inconclusive")
    a = ap.parse_args()
    design = SequentialDesign(looks=(3, 4, 5, 6), nrep=30)
    stops = [(int(m), float(w)) for m, w in (x.split(":") for x in a.stops.split(","))]
    cost = ScaledCost(nrep=design.nrep, mpiruns_per_round=design.looks[-1])    # one "round": the worst case
    print("machine        grid cells  exhaustive node-h  budget/night  cells@90%  night-1 spent node-h  "
          "nights to measure 90%  their cost / exhaustive  time with a verdict after 1 / 7 / 30 nights")
    for nodes in (100, 1000, 10000):
        rng = random.Random(a.seed)
        usages, grid = site(nodes, rng)
        budget = default_budget(nodes)
        cov = covering_cells(usages, 0.9)
        cov_cells = {u.cell for u in cov}
        ex_nh = sum(cost.round_node_hours(c) for c in grid)     # every grid cell, 6 mpiruns
        states: dict[Cell, CellState] = {}
        total = sum(u.rank_seconds for u in usages)
        decided_at, shares, spent_first, spent_cov = None, {}, None, 0.0
        for night in range(1, a.nights + 1):
            left = budget
            spent = 0.0
            tonight: set[Cell] = set()
            while left > 0:
                plan = plan_night([u for u in usages if u.cell not in tonight], states, left, cost, night=night,
                                  rounds=1)
                if not plan.chosen:
                    break
                for ch in plan.chosen:
                    # the replay's figures: after how many mpiruns a cell stops, and whether it was decided
                    m = rng.choices([s for s, _ in stops], [w for _, w in stops])[0]
                    nh = m * cost.mpirun_node_hours(ch.cell)
                    spent += nh
                    if ch.cell in cov_cells and ch.cell not in states:
                        spent_cov += nh
                    verdict = (("violation" if rng.random() < 0.05 else "none") if rng.random() < a.decided
                               else "inconclusive")
                    states[ch.cell] = CellState(ch.cell, verdict, -1, 0.2)
                    tonight.add(ch.cell)
                left = budget - spent
                if left < min(c.node_hours for c in plan.chosen):
                    break
            if spent_first is None:
                spent_first = spent
            states = {k: CellState(v.cell, v.verdict, v.age_nights + 1, v.gain) for k, v in states.items()}
            with_verdict = sum(u.rank_seconds for u in usages if u.cell in states
                               and states[u.cell].verdict != "inconclusive") / total
            if night in (1, 7, 30):
                shares[night] = with_verdict
            if decided_at is None and all(u.cell in states for u in cov):
                decided_at = night
        print(f"{nodes:5d} x {PPN:<4d}  {len(grid):10d}  {ex_nh:17.0f}  {budget:12.0f}  {len(cov):9d}  "
              f"{spent_first:20.0f}  {decided_at if decided_at else '> %d' % a.nights:>21}  "
              f"{spent_cov / ex_nh:23.1%}  "
              f"{shares.get(1, 0):.0%} / {shares.get(7, 0):.0%} / {shares.get(30, 0):.0%}")


if __name__ == "__main__":
    main()
