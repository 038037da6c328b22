"""Intervals everywhere (issue 34): every verdict carries its effect with a 95 % interval over mpiruns, the
redirection rule reads the interval's lower bound, and exports state the interval and the reporting fields."""
from __future__ import annotations

import csv
import io
import math

import numpy as np
from scipy import stats as st

from pgmpi_formats.results import ResultSet
from service.analysis.api import run as run_analysis
from service.analysis.comparers import to_csv, to_json, view
from service.analysis.guidelines import analyze
from service.analysis.stats import ratio_ci
from service.analysis.synthetic import Design, simulate
from service.analysis.verdicts import redirect_refusal


def _design(nruns=10, factor=1.3):
    return Design(collectives=["allreduce"], sizes=[8, 1024], mockups={"allreduce": ["allreduce_as_reduce_bcast"]},
                  factors={("allreduce", "allreduce_as_reduce_bcast", s): 1 / factor for s in (8, 1024)},
                  nruns=nruns, nrep=20, sigma_shared=0.15, sigma_run=0.02, p_outlier=0.0, control=True)


def test_ratio_ci_is_scipys_t_interval_on_the_log_ratios():
    d = np.log([1.31, 1.52, 1.40, 1.47, 1.38, 1.44])
    ci = ratio_ci(d)
    lo, hi = st.ttest_1samp(d, 0.0).confidence_interval(0.95)
    assert math.isclose(ci.low, math.exp(lo)) and math.isclose(ci.high, math.exp(hi))
    assert math.isclose(ci.effect, math.exp(d.mean())) and ci.mpiruns == 6
    assert ratio_ci(d[:1]).low is None and ratio_ci([]).effect is None
    flat = ratio_ci(np.log([2.0, 2.0, 2.0]))
    assert flat.low == flat.high == flat.effect


def test_every_verdict_has_its_interval_and_the_truth_lies_in_it():
    a = analyze(ResultSet.from_runs(simulate(_design(), np.random.default_rng(4))))
    pats = [v for v in a.verdicts if v.kind == "pattern" and not v.control]
    assert pats and all(v.ci_mpiruns == 10 and v.ci_low < v.effect < v.ci_high for v in pats)
    assert all(v.ci_low < 1.3 < v.ci_high for v in pats)             # the planted 1.3x
    assert all(v.effect is not None for v in a.verdicts if v.kind in ("monotony", "split"))


def test_one_mpirun_gives_no_interval_and_no_redirection():
    a = analyze(ResultSet.from_runs(simulate(_design(nruns=2), np.random.default_rng(1))))
    v = next(v for v in a.verdicts if v.kind == "pattern" and not v.control)
    v.run_ratios, v.ci_low, v.ci_high, v.ci_mpiruns = v.run_ratios[:1], None, None, 1
    v.violated = True
    assert "no 95 % interval" in redirect_refusal(v, None, 0.10)


def test_exports_and_api_result_carry_interval_and_reporting_fields():
    rs = ResultSet.from_runs(simulate(_design(), np.random.default_rng(4)))
    a = analyze(rs)
    for name in ("violation", "detailed", "grouped", "guidelines"):
        v = view(a, name)
        header = next(csv.reader(io.StringIO(to_csv(v))))
        assert len(header) == len(set(header)), header          # one meaning per column name
        for col in ("effect", "ci95_low", "ci95_high", "ci_mpiruns", "sync", "mpiruns", "meas_per_mpirun",
                    "nrep_policy", "summary_statistic", "excluded"):
            assert col in header, (name, header)
    row = next(r for r in to_json(view(a, "detailed")) if r["mockup"] == "allreduce_as_reduce_bcast")
    assert row["ci95_low"] < row["effect"] < row["ci95_high"] and row["mpiruns"] == 10 and row["meas_per_mpirun"] == "20"
    out = run_analysis(rs)
    rep = out["reporting"]["0"]
    assert rep["mpiruns"] == 10 and rep["repetitions"]["per_mpirun_min"] == 20 and rep["interval"]["level"] == 0.95
    assert {"sync", "clock", "statistic", "exclusions"} <= set(rep)
    prof = out["profiles"][0]
    assert prof["ranges"][0]["ci95_low_min"] > 1.1 and "95 % CI" in prof["decisions"][0]["reason"]


def test_the_reporting_says_where_the_repetitions_came_from():
    from service.analysis.reporting import nrep_source
    assert nrep_source({"fixed:100"}) == "fixed count 100"
    assert nrep_source({"predict:rse<0.025;min:10;max:60;step:5"}) == "predicted (predict:rse<0.025;min:10;max:60;step:5)"
    # the pilot mpirun 0 predicts, the others read its file: one source
    assert nrep_source({"predict:rse<0.025;min:10;max:60;step:5", "from:run-0.txt"}) == \
        "campaign-wide: predicted by the pilot mpirun (run-0.txt)"
    # scheduler/nrep_history.py's copy of an earlier campaign's counts names that campaign
    assert nrep_source({"from:/var/lib/a/campaigns/n-20261125/nrep/n-20261124/openmpi-n1x2.txt"}) == \
        "counts of the earlier campaign n-20261124"
    assert nrep_source({"", None} - {None}) == "unknown"
