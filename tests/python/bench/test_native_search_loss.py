"""tests/bench/native_search.py's honest loss (issue 35, docs/native-search-loss.md): a decision judged on the
evaluation's fresh mpiruns, against the fastest arm measured there -- never the control arm (the default again),
never an arm that failed -- with the evaluation's own noise floor and the paired ratio of two decisions that
differ.  Python only, on planted evaluations."""
from __future__ import annotations

import math

import pytest
from bench_scripts import bench_script


@pytest.fixture(scope="module")
def ns():
    return bench_script("native_search", "native_search_bench")


def test_a_decision_is_judged_against_the_fastest_arm_of_the_fresh_mpiruns(ns):
    ev = {"t": {
        # ring is faster than the default in every mpirun; the control arm, faster still by luck, is no choice
        ("allgather", 8): {"default": [1.0, 1.1, 1.2, 1.0], "default_control": [0.8, 0.8, 0.8, 0.8],
                           "native:ring": [0.9, 1.0, 1.0, 0.9]},
        # a failed arm (no median: inf) is never the fastest
        ("bcast", 8): {"default": [2.0, 2.0, 2.0, 2.0], "default_control": [2.0, 2.0, 2.0, 2.0],
                       "native:binomial": [math.inf] * 4},
    }}
    got = ns.evaluation_losses(ev, {("allgather", 8): "default", ("bcast", 8): "default",
                                    ("reduce", 8): "default"})          # a cell the evaluation lacks: not judged
    assert got == pytest.approx({("allgather", 8): 1.05 / 0.95 - 1, ("bcast", 8): 0.0})
    assert ns.evaluation_losses(ev, {("allgather", 8): "native:ring"}) == {("allgather", 8): 0.0}
    assert ns.evaluation_losses(ev, {("bcast", 8): "native:binomial"}) == {}
    # the floor: the control arm judged as a choice against the default (median 0.8 against 1.05)
    assert ns.evaluation_floor(ev) == pytest.approx({("allgather", 8): 1.05 / 0.8 - 1, ("bcast", 8): 0.0})


def test_two_decisions_that_differ_are_paired_within_each_evaluation_mpirun(ns):
    ev = {"t": {("allgather", 8): {"default": [1.0, 2.0], "native:ring": [0.8, 1.8]},
                ("bcast", 8): {"default": [1.0, 1.0], "native:binomial": [1.0, 1.0]}}}
    mine = {("allgather", 8): "default", ("bcast", 8): "default"}
    theirs = {("allgather", 8): "native:ring", ("bcast", 8): "default"}     # bcast: the same choice, no pair
    got = ns.paired_against(ev, mine, theirs)
    assert list(got) == [("allgather", 8)]
    assert got[("allgather", 8)] == pytest.approx(math.sqrt(1.0 / 0.8 * 2.0 / 1.8) - 1)   # geometric mean


def test_where_two_decisions_differ_the_refusing_rule_and_the_drivers_path_are_named(ns):
    """refusals: at a cell where the race kept the default and exhaustive took recursive_doubling, the line
    names the rule that refused it in the race's decision (rule 4 here: every pair 15-28 % faster, but the
    95 % interval over 3 mpiruns reaches below 1.05), its pairs and interval, the search's choice and the
    confirmation rounds that measured the cell; a label the race never measured says so."""
    from service.analysis.native_decision import decide
    rd = "native:recursive_doubling"

    def runs(ratios, extra=None):
        return [{"default": 1.0, rd: 1 / r, "default_control": 1.0, **(extra or {})} for r in ratios]
    mine = decide({("allreduce", 128, 2): runs([1.282, 1.150, 1.171]), ("bcast", 8, 2): runs([1.0, 1.0])})
    theirs = decide({("allreduce", 128, 2): runs([1.30, 1.28, 1.29]),
                     ("bcast", 8, 2): [{"default": 1.0, "native:binomial": 0.5, "default_control": 1.0}] * 3})
    assert mine.decisions[("allreduce", 128, 2)].choice == "default"
    g = {"paths": {"allreduce": {"128": {"choice": rd, "times": {rd: 0.8e-6}, "reference": 1.0e-6}}},
         "confirm_rounds": [{"allreduce": {"128": rd}}, {"allreduce": {"128": rd}}, {"allreduce": {"128": rd}}]}
    got = ns.refusals(mine, theirs, g, [("allreduce", 128), ("bcast", 8)])
    assert got[0].startswith(f"allreduce 128: {rd} here: gain at the 95 % interval's lower bound")
    assert "1.282/1.150/1.171" in got[0] and "CI 1.038-" in got[0]
    assert f"search chose {rd} (8e-07 s against the default's 1e-06 s), confirmation rounds [0, 1, 2]" in got[0]
    assert got[1] == "bcast 8: native:binomial here: not measured"


def test_the_floor_prices_confirming_exhaustives_variant_cells_alone_at_its_medians(ns):
    table = {("reduce", 524288): {"default": 0.86e-3, "native:binomial": 0.67e-3, "native:smp": 0.9e-3},
             ("bcast", 8): {"default": 2e-6, "native:binomial": 3e-6},
             ("allgather", 8): {"default": 1e-6}}
    decision = {("reduce", 524288): "native:binomial", ("bcast", 8): "default",
                ("allgather", 8): "native:ring"}          # a choice the table lacks (failed there): not priced
    # 3 rounds x the cell's count x (default + control arm + variant)
    assert ns.confirmation_floor(table, decision, None, 100, 3) == pytest.approx(
        {("reduce", 524288): 3 * 100 * (2 * 0.86e-3 + 0.67e-3)})
    # a campaign-wide count per cell replaces nrep
    assert ns.confirmation_floor(table, decision, {("reduce", 524288): 10}, 100, 3) == pytest.approx(
        {("reduce", 524288): 3 * 10 * (2 * 0.86e-3 + 0.67e-3)})
    assert ns.confirmation_floor(table, {c: "default" for c in table}, None, 100, 3) == {}
    # a scan's first stage: every variant of every cell once at a sixth of the count (at least 2), or first_nrep
    every = sum(sum(t.values()) for t in table.values())
    assert ns.scan_floor(table, None, 100, 0) == pytest.approx(16 * every)
    assert ns.scan_floor(table, None, 6, 0) == pytest.approx(2 * every)
    assert ns.scan_floor(table, None, 100, 5) == pytest.approx(5 * every)
