"""Regimes: per-mpirun paired ratios cluster into cost regimes; a redirection must win in every one
(service/analysis/regimes.py, verdicts.redirect_refusal, validation.judge), on synthetic bimodal data."""
import numpy as np

from pgmpi_formats.prf import format_prf
from pgmpi_formats.results import ResultSet
from service.analysis.guidelines import analyze
from service.analysis.profiles import generate_profiles
from service.analysis.regimes import split_regimes
from service.analysis.synthetic import Design, simulate
from service.analysis.validation import judge
from service.analysis.verdicts import redirect_refusal


def test_one_regime_under_the_measured_noise():
    # per-mpirun ratios of one regime: 1-3 % spread (the ratio of two interleaved algorithms in one mpirun)
    rng = np.random.default_rng(7)
    counts = [split_regimes(np.exp(rng.normal(np.log(r0), 0.03, 10))).count
              for r0 in (0.8, 1.0, 1.25) for _ in range(300)]
    assert counts.count(1) == len(counts)


def test_bimodal_ratios_split_with_their_counts():
    rng = np.random.default_rng(8)
    fast = list(np.exp(rng.normal(np.log(1.25), 0.02, 6)))
    slow = list(np.exp(rng.normal(np.log(0.37), 0.02, 4)))
    order = [fast[0], slow[0], fast[1], fast[2], slow[1], fast[3], slow[2], fast[4], fast[5], slow[3]]
    reg = split_regimes(order, 0.05)
    assert reg.count == 2 and [r.n for r in reg.regimes] == [6, 4]
    assert sorted(reg.regimes[1].runs) == [1, 4, 6, 9]           # mpirun positions kept
    assert reg.regimes[0].ratio > 1.2 and reg.regimes[1].ratio < 0.4
    assert reg.losing(0.05) == [reg.regimes[1]]
    assert reg.line().startswith("2 regimes: 6 of 10 mpiruns at 1.2") and "4 of 10 mpiruns at 0.3" in reg.line()


def test_a_mockup_that_loses_in_some_launches_is_not_redirected():
    # allgather_as_alltoall: 1.5x faster in 8 of 10 mpiruns, 1.4x slower in the other 2 (a regime switch; it
    # wins on the median and the paired test flags it); allgather_as_allreduce: 1.3x faster in every mpirun.
    # Shared per-mpirun drift 15 %, 2 % independent.
    switch, steady = "allgather_as_alltoall", "allgather_as_allreduce"
    size = 16384
    d = Design(collectives=["allgather"], sizes=[size], mockups={"allgather": [switch, steady]},
               factors={("allgather", switch, size): 1 / 1.5, ("allgather", steady, size): 1 / 1.3},
               regimes={("allgather", switch, size): [1, 1, 1, 1, 2.1, 1, 1, 1, 1, 2.1]},
               nruns=10, nrep=40, sigma_shared=0.15, sigma_run=0.02, control=True)
    a = analyze(ResultSet.from_runs(simulate(d, np.random.default_rng(3))), fdr=True, kinds=("pattern",))
    v = {x.algorithm: x for x in a.verdicts if x.kind == "pattern"}
    assert v[switch].violated and v[switch].paired_ratio > 1.4             # the median hides the loss
    assert [c["n"] for c in v[switch].regime["clusters"]] == [8, 2]
    assert v[switch].regime["line"].startswith("2 regimes: 8 of 10 mpiruns at 1.")
    assert 1.4 < v[switch].regime["clusters"][0]["ratio"] < 1.6 and 0.6 < v[switch].regime["clusters"][1]["ratio"] < 0.8
    why = redirect_refusal(v[switch], a.control, 0.10)
    assert why and "2 regimes" in why and "every regime" in why
    assert redirect_refusal(v[steady], a.control, 0.10) is None
    assert v[switch].regime["losing_regimes"] == 1
    assert v[steady].regime["line"].startswith("1 regime: 10 of 10")
    [prof] = generate_profiles(a, gain=0.10)
    [dec] = prof.decisions
    assert dec.winner == steady and "1 regime" in dec.reason


def test_validation_drops_a_range_that_loses_in_one_regime():
    prf = format_prf("MPI_Bcast", 2, [(16384, 16384, "bcast_as_scatter_allgather")])
    base = {"collective": "bcast", "nprocs": 2, "paired": True, "default_time": 5e-6}
    figs = [base | {"msize": 8192, "tuned_time": 5e-6, "run_ratios": [1.0, 0.99, 1.01, 1.0, 1.0]},
            base | {"msize": 16384, "tuned_time": 4e-6, "run_ratios": [1.25, 0.37, 1.24, 1.26, 0.38]}]
    v = judge({"MPI_Bcast-p2.prf": prf}, figs, null_spread=0.03)
    assert v["state"] == "failed" and not v["files"]
    assert "2 regimes: 3 of 5 mpiruns at 1.25x" in v["dropped"][0]["why"]
