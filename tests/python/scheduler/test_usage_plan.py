"""Campaigns from usage within a budget (scheduler/usage_plan.py): which cells a night measures, and the
sequential rule that stops a cell once decided -- on seeded synthetic data (behaviour, not timing)."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from scheduler.usage_plan import (Cell, CellState, CellUsage, CostModel, covering_cells, default_budget,
                                  plan_night)


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


def test_a_gain_just_below_the_minimum_is_not_redirected():
    rng = random.Random(11)
    x = [math.log(1.05) + rng.gauss(0, 0.02) for _ in range(10)]
    d = look_at_arm(x, 0.05, -math.log(1 - 0.1), final=True)
    assert d.state == "none" and d.lo < d.effect < d.hi < 1 / 0.9


# ---------------------------------------------------------------- the group-sequential design

from scheduler.usage_plan import (SequentialDesign, fixed_cell, group_sequential_levels,  # noqa: E402
                                  look_at_arm, sequential_cell)


def test_group_sequential_levels_spend_alpha_and_keep_the_last_look_near_alpha():
    # one look is the fixed design
    assert math.isclose(group_sequential_levels((1.0,), 0.05, 3.0)[0], 0.05, rel_tol=1e-9)
    lv = group_sequential_levels((0.5, 1.0), 0.05, 3.0)
    assert math.isclose(lv[0], 0.05 * 0.5 ** 3, rel_tol=1e-6)        # the first look spends alpha t^rho
    # the looks are correlated, so the last one runs above alpha - spent (a union bound would give 0.04375)
    assert 0.04375 < lv[1] < 0.05
    # the overall error of the two looks is alpha: a simulation of the joint normal law agrees
    rng = np.random.default_rng(3)
    z1 = rng.standard_normal(200_000)
    z2 = (z1 + rng.standard_normal(200_000)) / math.sqrt(2)        # corr sqrt(1/2)
    from scipy import stats as st
    c1, c2 = st.norm.isf(lv[0] / 2), st.norm.isf(lv[1] / 2)
    err = np.mean((np.abs(z1) > c1) | (np.abs(z2) > c2))
    assert abs(err - 0.05) < 0.003
    with pytest.raises(ValueError):
        group_sequential_levels((0.6, 0.5, 1.0))


def _cell(effects: dict[str, float], sd: float, n: int, rng) -> dict[str, list[float]]:
    return {a: [math.log(e) + rng.gauss(0, sd) for _ in range(n)] for a, e in effects.items()}


def test_a_clear_cell_stops_at_the_first_look_and_drops_the_slow_mockups():
    rng = random.Random(5)
    design = SequentialDesign(looks=(3, 4, 6))
    stops = []
    for _ in range(30):
        lr = _cell({"fast": 2.0, "slow": 0.5, "slower": 0.3}, 0.02, 6, rng)
        o = sequential_cell(lr, design, control=[rng.gauss(0, 0.02) for _ in range(6)])
        assert (o.decision, o.winner) == ("redirect", "fast")
        assert o.control.state != "redirect" and o.control.mpiruns == o.mpiruns   # no false alarm
        stops.append(o.mpiruns)
    assert max(stops) == 3
    # a mock-up decided slower is measured no further while another keeps the cell open
    lr = _cell({"slow": 0.3}, 0.02, 6, rng) | {"close": [math.log(1.11) + rng.gauss(0, 0.05) for _ in range(6)]}
    o = sequential_cell(lr, design)
    assert o.arm_mpiruns["slow"] == 3 and o.arm_mpiruns["close"] == 6 == o.mpiruns


def test_the_sequential_design_keeps_its_error_at_alpha_where_the_effect_sits_on_the_threshold():
    # a mock-up exactly at the minimum gain: a redirect is an error; over all looks it must stay <= alpha / 2
    # (one side of the two-sided interval) -- the fixed design's error, not more
    rng = random.Random(17)
    design = SequentialDesign(looks=(3, 4, 6), min_gain=0.1)
    at = 1 / (1 - 0.1)
    wrong = sum(sequential_cell(_cell({"m": at}, 0.1, 6, rng), design).decision == "redirect" for _ in range(1500))
    assert wrong / 1500 <= 0.025 + 0.012
    # planted defect: every look at alpha (no spending) errs more often
    class EveryLookAtAlpha(SequentialDesign):
        def levels(self):
            return (self.alpha,) * len(self.looks)
    naive = EveryLookAtAlpha(looks=(3, 4, 6), min_gain=0.1)
    rng = random.Random(17)
    naive_wrong = sum(sequential_cell(_cell({"m": at}, 0.1, 6, rng), naive).decision == "redirect" for _ in range(1500))
    assert naive_wrong > wrong
    # the union bound (every look at alpha / looks) would be stricter than needed; this design's last look is
    # close to the fixed design's, so a cell that goes the whole way is decided as the fixed campaign would
    assert design.levels()[-1] > 0.05 / 3 * 2


def test_a_real_effect_is_found_by_the_sequential_design_as_by_the_fixed_one():
    rng = random.Random(23)
    design = SequentialDesign(looks=(3, 4, 6))
    agree, early = 0, 0
    for _ in range(200):
        lr = _cell({"m": 1.6, "n": 0.8}, 0.08, 6, rng)
        s, f = sequential_cell(lr, design), fixed_cell(lr)
        agree += (s.decision, s.winner) == (f.decision, f.winner)
        early += s.mpiruns < 6
    assert agree >= 190 and early >= 150


def test_the_repeated_p_value_is_valid_under_the_null():
    # A/A: p-values a BH step sees must be (super-)uniform: P(p <= a) <= a
    rng = random.Random(29)
    design = SequentialDesign(looks=(3, 4, 6))
    ps = [sequential_cell({"m": [rng.gauss(0, 0.1) for _ in range(6)]}, design).p_value for _ in range(1000)]
    for a in (0.01, 0.05, 0.2):
        assert sum(p <= a for p in ps) / len(ps) <= a + 0.02


def test_one_mpirun_is_never_a_decision():
    lk = look_at_arm([math.log(3.0)], 0.05, math.log(1 / 0.9), final=True)
    assert lk.state == "inconclusive"


def test_look_by_look_as_the_agent_runs_it_gives_the_replays_outcome():
    """The agent (scheduler/looks.py) asks sequential_cell after each look with only what it measured so far
    (an alternative decided at a look is not measured further); look by look it must reach the outcome of
    the whole replay, and say after each look which alternatives the next look measures."""
    from scheduler.usage_plan import SequentialDesign, sequential_cell
    design = SequentialDesign()
    rng = np.random.default_rng(7)
    stopped_early = 0
    for trial in range(200):
        effects = {"a_as_x": rng.choice([0.0, 0.1, 0.5]), "a_as_y": rng.choice([-0.3, 0.05, 0.3])}
        full = {a: list(rng.normal(e, rng.choice([0.02, 0.2]), design.looks[-1])) for a, e in effects.items()}
        ctrl = list(rng.normal(0.0, 0.05, design.looks[-1]))
        whole = sequential_cell(full, design, ctrl)
        have = {a: [] for a in full}
        open_arms = set(full)
        for k, n in enumerate(design.looks, start=1):
            for a in open_arms:                          # the look's mpiruns measure the open alternatives only
                have[a] = full[a][:n]
            o = sequential_cell(have, design, ctrl[:n], looks_done=k)
            open_arms = set(o.open)
            if not open_arms:
                break
        assert (o.decision, o.winner, o.mpiruns, o.arm_mpiruns) == \
            (whole.decision, whole.winner, whole.mpiruns, whole.arm_mpiruns), trial
        assert o.open == () and whole.open == ()
        stopped_early += k < len(design.looks)
    assert 20 < stopped_early < 200      # both kinds of cell occur
