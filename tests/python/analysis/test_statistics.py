"""Known truth: power for 1.2x and 2x slowdowns at R=10, A/A violation rate, campaign-wide FDR with BH; and on
the noise structure measured here (a shared per-mpirun drift, MEASURED in synthetic.py) the paired default's
power at 1.1x and 1.2x against the unpaired test's, its A/A rate and the control arm's.

Noise (service/analysis/synthetic.py): 5 % mpirun-to-mpirun (log-normal), 5 % per measurement, 2 % outliers
with 1 + Exp(1) extra; 125 repetitions per mpirun; R = 10 mpiruns. Each simulated campaign is one config
(a distinct machine name), so one analysis evaluates many independent campaigns at once.
"""
import math

import numpy as np
import pytest

from service.analysis.guidelines import analyze
from service.analysis.reader import ResultSet
from service.analysis.synthetic import MEASURED, Design, simulate
from service.analysis.verdicts import CONTROL

SIZES = [8, 1024, 65536, 1048576]
M_SLOW12 = "allreduce_as_reduce_bcast"                 # the default is 1.2x slower than this one
M_SLOW2 = "allreduce_as_reducescatterblock_allgather"  # the default is 2x slower than this one
M_NULL = "allreduce_as_reducescatter_allgatherv"       # exactly as fast as the default (A/A)
CAMPAIGNS = 150


def _campaigns(n, seed, factors, nrep=125):
    rng = np.random.default_rng(seed)
    runs = []
    for c in range(n):
        d = Design(collectives=["allreduce"], sizes=SIZES,
                   mockups={"allreduce": [M_SLOW12, M_SLOW2, M_NULL]}, factors=factors, nruns=10, nrep=nrep,
                   machine=f"m{c:04d}")
        runs += simulate(d, rng)
    return ResultSet.from_runs(runs)


FACTORS = {("allreduce", M_SLOW12, s): 1 / 1.2 for s in SIZES} | {("allreduce", M_SLOW2, s): 0.5 for s in SIZES}


@pytest.fixture(scope="module")
def sim():
    return _campaigns(CAMPAIGNS, 20261122, FACTORS)


def _rate(verdicts, alg):
    vs = [v for v in verdicts if v.kind == "pattern" and v.algorithm == alg]
    return sum(v.violated for v in vs) / len(vs), len(vs)


@pytest.fixture(scope="module")
def aa_sim():
    """A/A: 400 campaigns x 4 sizes x 3 mock-ups that are exactly as fast as the default = 4800 tests."""
    rng = np.random.default_rng(99)
    runs = []
    for c in range(400):
        d = Design(collectives=["allreduce"], sizes=SIZES, mockups={"allreduce": [M_SLOW12, M_SLOW2, M_NULL]},
                   nrep=20, machine=f"aa{c}")
        runs += simulate(d, rng)
    return ResultSet.from_runs(runs)


@pytest.mark.parametrize("test", ["paired_t", "wilcoxon", "mannwhitney", "welch", "ks"])
def test_power(sim, test):
    a = analyze(sim, alpha=0.05, test=test, kinds=("pattern",))
    p12, n12 = _rate(a.verdicts, M_SLOW12)
    p2, n2 = _rate(a.verdicts, M_SLOW2)
    print(f"\n[{test}] power 1.2x = {p12:.3f} (n={n12}), power 2x = {p2:.3f} (n={n2}), R=10, alpha=0.05")
    assert n12 == n2 == CAMPAIGNS * len(SIZES)
    assert p12 >= 0.95 and p2 >= 0.95


@pytest.mark.parametrize("test", ["paired_t", "wilcoxon", "mannwhitney", "welch", "ks"])
def test_aa_rate(aa_sim, test):
    a = analyze(aa_sim, alpha=0.05, test=test, kinds=("pattern",))
    n = len(a.verdicts)
    rate = sum(v.violated for v in a.verdicts) / n
    print(f"\n[{test}] A/A violation rate = {rate:.4f} (n={n} tests, alpha=0.05)")
    assert n == 4800
    assert rate <= 0.05
    assert rate > 0.005        # the test is not simply blind


def test_aa_rate_at_other_alpha(aa_sim):
    a = analyze(aa_sim, alpha=0.01, kinds=("pattern",))
    n = len(a.verdicts)
    aa = sum(v.violated for v in a.verdicts) / n
    print(f"\nA/A violation rate at alpha=0.01: {aa:.4f} (n={n})")
    assert aa <= 0.01 + 2 * math.sqrt(0.01 * 0.99 / n)


def test_power_harsh_noise():
    """Harsher noise: 10 % mpirun-to-mpirun, 10 % per measurement, 5 % outliers, 50 repetitions."""
    rng = np.random.default_rng(4242)
    runs = []
    for c in range(CAMPAIGNS):
        d = Design(collectives=["allreduce"], sizes=SIZES, mockups={"allreduce": [M_SLOW12, M_SLOW2]},
                   factors=FACTORS, nrep=50, sigma_run=0.10, sigma_rep=0.10, p_outlier=0.05, machine=f"h{c}")
        runs += simulate(d, rng)
    a = analyze(ResultSet.from_runs(runs), alpha=0.05, kinds=("pattern",))
    p12, n12 = _rate(a.verdicts, M_SLOW12)
    p2, _ = _rate(a.verdicts, M_SLOW2)
    print(f"\n[{a.test}, harsh noise] power 1.2x = {p12:.3f} (n={n12}), power 2x = {p2:.3f}")
    assert p12 >= 0.95 and p2 >= 0.95


def test_no_false_pattern_in_wrong_direction(sim):
    # a mock-up that is SLOWER than the default never counts as a violation of the one-sided test
    rng = np.random.default_rng(5)
    d = Design(collectives=["bcast"], sizes=SIZES, mockups={"bcast": ["bcast_as_allgatherv"]},
               factors={("bcast", "bcast_as_allgatherv", s): 2.0 for s in SIZES})
    a = analyze(ResultSet.from_runs(simulate(d, rng)), kinds=("pattern",))
    assert a.verdicts and not a.violations()


def test_fdr_campaign_wide():
    """Each campaign: 4 sizes x (1 mock-up with a 1.2x truth + 2 A/A mock-ups) + monotony tests; BH at q=0.1
    per campaign (one analysis per campaign). FDR = mean over campaigns of false / max(1, discoveries)."""
    q = 0.10
    rng = np.random.default_rng(77)
    fdps, unadjusted = [], []
    fac = {("allreduce", M_SLOW12, s): 1 / 1.2 for s in SIZES}
    for c in range(120):
        d = Design(collectives=["allreduce"], sizes=SIZES, mockups={"allreduce": [M_SLOW12, M_SLOW2, M_NULL]},
                   factors=fac, nruns=10, nrep=40, machine=f"c{c}")
        rs = ResultSet.from_runs(simulate(d, rng))
        for fdr, store in ((True, fdps), (False, unadjusted)):
            a = analyze(rs, alpha=q, fdr=fdr, kinds=("pattern", "monotony"))
            found = a.violations()
            false = [v for v in found if v.kind == "monotony" or v.algorithm != M_SLOW12]
            store.append(len(false) / max(1, len(found)))
            if fdr:
                assert all(v.p_adjusted is not None for v in a.verdicts)
    fdr_bh, fdr_raw = float(np.mean(fdps)), float(np.mean(unadjusted))
    print(f"\ncampaign-wide FDR with BH (q={q}): {fdr_bh:.4f}; without adjustment: {fdr_raw:.4f}")
    assert fdr_bh <= q
    assert fdr_raw > fdr_bh   # the adjustment does something


@pytest.fixture(scope="module")
def measured_sim():
    """100 campaigns x 3 sizes, R = 10, shared drift 15 % + 2 % independent: the default 1.1x and 1.2x slower
    than two mock-ups, a third exactly as fast (A/A), and the control arm."""
    rng = np.random.default_rng(2611)
    m11, m12, m10 = M_SLOW12, M_SLOW2, M_NULL
    fac = {("allreduce", m11, s): 1 / 1.1 for s in SIZES[:3]} | {("allreduce", m12, s): 1 / 1.2 for s in SIZES[:3]}
    runs = []
    for c in range(100):
        d = Design(collectives=["allreduce"], sizes=SIZES[:3], mockups={"allreduce": [m11, m12, m10]},
                   factors=fac, nruns=10, nrep=30, control=True, machine=f"s{c}", **MEASURED)
        runs += simulate(d, rng)
    return ResultSet.from_runs(runs), (m11, m12, m10)


def test_paired_beats_unpaired_under_shared_drift(measured_sim):
    rs, (m11, m12, m10) = measured_sim
    rates = {}
    for test in ("paired_t", "mannwhitney"):
        a = analyze(rs, alpha=0.05, test=test, kinds=("pattern",))
        rates[test] = {m: _rate(a.verdicts, m)[0] for m in (m11, m12, m10, CONTROL)}
        print(f"\n[{test}, shared drift 15 %, 2 % independent, R=10] power 1.1x = {rates[test][m11]:.3f}, "
              f"1.2x = {rates[test][m12]:.3f}, A/A = {rates[test][m10]:.3f}, control = {rates[test][CONTROL]:.3f}")
    p, u = rates["paired_t"], rates["mannwhitney"]
    assert p[m11] >= 0.95 and p[m12] >= 0.95
    assert u[m11] < 0.5                      # the drift hides a 10 % effect from the unpaired test
    assert p[m10] <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 300) and p[CONTROL] <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 300)
    assert p[m10] + p[CONTROL] > 0.005       # not simply blind


def test_control_arm_measures_the_false_alarm_rate(measured_sim):
    """Per campaign (one analysis each, BH on): the control arm's flags estimate alpha; no sound campaign is
    called untrustworthy more often than alpha."""
    rs, _ = measured_sim
    a = analyze(rs, alpha=0.05, kinds=("pattern",))
    assert a.control.tested == 300 and a.control.false_alarm_rate <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 300)
    assert a.control.null_spread is not None and a.control.null_spread < 0.10
    untrusted = sum(not analyze(ResultSet.from_runs([rs.runs[i] for i in range(10 * c, 10 * c + 10)]),
                                alpha=0.05, fdr=True, kinds=("pattern",)).control.trustworthy for c in range(100))
    print(f"\ncontrol: {a.control.line()}; untrustworthy campaigns {untrusted} of 100")
    assert untrusted <= 5
