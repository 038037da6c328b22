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
