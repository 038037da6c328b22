"""Campaigns from usage within a budget (scheduler/usage_plan.py): which cells a night measures, and the
sequential rule that stops a cell once decided -- on seeded synthetic data (behaviour, not timing)."""
from __future__ import annotations

import math
import random

from scheduler.usage_plan import (Cell, CellState, CellUsage, CostModel, covering_cells, default_budget,
                                  plan_night, sequential_decision)


def zipf_usage(n_cells: int, seed: int = 1) -> list[CellUsage]:
    rng = random.Random(seed)
    cells = [Cell(c, 8 << (i % 18), p, f"{p // 64}x64") for i, (c, p) in enumerate(
        (rng.choice(["allreduce", "bcast", "allgather", "reduce", "alltoall"]), rng.choice([64, 128, 256, 512]))
        for _ in range(n_cells))]
    cells = list(dict.fromkeys(cells))
    return [CellUsage(c, 1000.0 / (k + 1) ** 1.2) for k, c in enumerate(cells)]


def test_covering_cells_hold_the_share_and_no_more():
    us = zipf_usage(400)
    total = sum(u.rank_seconds for u in us)
    cov = covering_cells(us, 0.9)
    held = sum(u.rank_seconds for u in cov)
    assert held >= 0.9 * total
    assert held - cov[-1].rank_seconds < 0.9 * total          # one cell fewer would not do
    assert [u.rank_seconds for u in cov] == sorted((u.rank_seconds for u in cov), reverse=True)


def test_a_night_stays_within_its_budget_and_spends_it_where_the_time_is():
    us = zipf_usage(400)
    cost = CostModel()
    budget = 0.5
    plan = plan_night(us, {}, budget, cost, night=3)
    assert plan.spent_node_hours <= budget
    assert plan.chosen, "nothing planned"
    over = [why for _, why in plan.kept if why.startswith("over budget")]
    assert over, "the budget should bind on 400 cells"
    # the heaviest cell is measured first; what is measured holds far more time than its share of cells
    heaviest = max(us, key=lambda u: u.rank_seconds).cell
    assert plan.chosen[0].cell == heaviest
    assert plan.share_of_time_measured(us) > 3 * len(plan.chosen) / len(us)
    # a larger budget measures more, never less
    bigger = plan_night(us, {}, 4 * budget, cost, night=3)
    assert len(bigger.chosen) > len(plan.chosen)


def test_decided_cells_keep_their_verdict_until_they_age():
    us = zipf_usage(50)
    top = max(us, key=lambda u: u.rank_seconds).cell
    states = {top: CellState(top, "none", age_nights=3)}
    plan = plan_night(us, states, 100.0, night=1, refresh_nights=30)
    assert top not in {c.cell for c in plan.chosen}
    assert any(c == top and "decided 3 night(s) ago" in why for c, why in plan.kept)
    states = {top: CellState(top, "none", age_nights=31)}
    assert top in {c.cell for c in plan_night(us, states, 100.0, night=1).chosen}


def test_the_rotating_sample_changes_from_night_to_night():
    us = zipf_usage(400)
    a = {c.cell for c in plan_night(us, {}, 1e9, night=1).chosen if c.reason == "rotating sample"}
    b = {c.cell for c in plan_night(us, {}, 1e9, night=2).chosen if c.reason == "rotating sample"}
    assert a and b and a != b


def test_budget_default_is_one_percent_of_the_partition():
    assert math.isclose(default_budget(1000), 240.0)


def test_sequential_rule_finds_a_planted_violation_early_and_keeps_the_null_clean():
    rng = random.Random(7)
    found, looks_used = 0, []
    for _ in range(40):
        ratios = []
        for look in range(1, 6):
            ratios += [1.5 * math.exp(rng.gauss(0, 0.05)) for _ in range(2)]
            d = sequential_decision(ratios, min_gain=0.1, max_looks=5, final=look == 5)
            if d.state != "undecided":
                break
        found += d.state == "violation"
        looks_used.append(look)
    assert found == 40
    assert max(looks_used) <= 2              # decided after the first or second round
    # A/A: the same code twice -> never a violation, at any look (error over looks bounded by alpha)
    false = 0
    for _ in range(200):
        ratios = []
        for look in range(1, 6):
            ratios += [math.exp(rng.gauss(0, 0.05)) for _ in range(2)]
            d = sequential_decision(ratios, min_gain=0.1, max_looks=5, final=look == 5)
            if d.state != "undecided":
                break
        false += d.state == "violation"
    assert false <= 0.05 * 200


def test_a_gain_just_below_the_minimum_is_not_redirected():
    rng = random.Random(11)
    ratios = [1.05 * math.exp(rng.gauss(0, 0.02)) for _ in range(10)]
    d = sequential_decision(ratios, min_gain=0.1, final=True)
    assert d.state == "none" and d.lo < d.ratio < d.hi < 1.1
