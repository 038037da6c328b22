"""Verdicts that hold up: the control arm, the minimum effect above the noise, regimes, results checks and
the paired, per-range validation with repair. Fixtures in data/ have the shape pgmpi-bench writes
(default_control rows, `#@pgmpi check` lines, `--algorithms=default,tuned` interleaved)."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from service.analysis.guidelines import analyze
from service.analysis.profiles import Profile, generate_profiles, refuse_control, write_profiles
from pgmpi_formats.results import ResultSet, parse_text, read_file
from service.analysis.synthetic import Design, simulate
from service.analysis.validation import figures, judge
from pgmpi_formats.footer import Check, parse_line, records
from service.analysis.verdicts import CONTROL, ControlSummary, redirect_refusal

DATA = Path(__file__).parent / "data"
MOCK = "bcast_as_scatter_allgather"


def _runs_from_fixture(n=6, seed=1):
    """n mpiruns shaped like the fixture: its text with every time scaled by one drift per mpirun."""
    text = (DATA / "bench_control_check.txt").read_text()
    rng = np.random.default_rng(seed)
    runs = []
    for r in range(n):
        drift = float(np.exp(rng.normal(0, 0.15)))
        lines = []
        for ln in text.splitlines():
            parts = ln.split()
            if len(parts) == 5 and parts[0] == "MPI_Bcast":
                parts[3] = f"{float(parts[3]) * drift * float(np.exp(rng.normal(0, 0.01))):.10f}"
                ln = " ".join(parts)
            lines.append(ln.replace("#@mpirun_index=0", f"#@mpirun_index={r}"))
        runs.append(parse_text("\n".join(lines) + "\n", f"run{r}.txt"))
    return ResultSet.from_runs(runs)


def test_reader_keeps_control_rows_and_check_lines():
    run = read_file(DATA / "bench_control_check.txt")
    assert set(run.algorithms) == {"default", CONTROL, MOCK}
    checks = list(records(run.pgmpi_lines, Check))
    assert len(checks) == 6
    assert checks[-1] == Check("MPI_Bcast", 16384, MOCK, "fail", "rank 1: 12 of 16384 bytes differ from the reference")
    assert not isinstance(parse_line("#@pgmpi nrep MPI_Bcast 1024 3"), Check)


def test_failed_check_is_a_defect_and_never_chosen():
    a = analyze(_runs_from_fixture(), alpha=0.05)
    assert list(a.defects) == [(0, "MPI_Bcast", 16384, MOCK)]
    v16 = next(v for v in a.verdicts if v.kind == "pattern" and v.algorithm == MOCK and v.msize == 16384)
    assert v16.violated and v16.defect and v16.paired_ratio > 1.9    # 2x faster, but wrong
    profs = generate_profiles(a, gain=0.10)
    assert all(r[0] != 16384 for p in profs for r in p.ranges)
    assert a.to_dict()["defects"][0]["why"].startswith("rank 1")


def test_control_arm_is_tested_counted_apart_and_never_a_profile(tmp_path):
    a = analyze(_runs_from_fixture(), alpha=0.05)
    ctrl = [v for v in a.verdicts if v.control]
    assert len(ctrl) == 2 and a.control.tested == 2
    assert all(v.algorithm == CONTROL for v in ctrl)
    assert all(not v.control for v in a.violations())
    assert a.counts()["pattern"]["checks"] == 2          # the mock-up at two sizes; the control apart
    assert a.control.null_spread is not None and a.control.null_spread < 0.05
    assert "control: " in a.control.line() and "null ratio spread" in a.control.line()
    # even a control that "wins" is refused as a redirection, and no profile text may name it
    forced = dataclasses.replace(ctrl[0], violated=True, paired_ratio=2.0)
    assert "never" in redirect_refusal(forced, a.control, 0.10)
    with pytest.raises(ValueError, match="default_control"):
        refuse_control("MPI_Bcast\n2\n1\n1 default_control\n1\n1 8 1\n", "x.prf")
    bad = Profile(cfg=0, machine="vm1", library="mpich", version="4.0.2", nprocs=2, collective="bcast",
                  mpi_name="MPI_Bcast", ranges=[(8, 8, CONTROL)], text=f"MPI_Bcast\n2\n1\n1 {CONTROL}\n1\n8 8 1\n")
    with pytest.raises(ValueError, match="control"):
        write_profiles([bad], tmp_path)
    assert list(tmp_path.iterdir()) == []


def _design(**kw):
    sizes = kw.pop("sizes", [8, 1024, 65536])
    return Design(collectives=["allreduce"], sizes=sizes, mockups={"allreduce": ["allreduce_as_reduce_bcast"]},
                  nruns=kw.pop("nruns", 10), nrep=30, sigma_shared=0.15, sigma_run=0.02, p_outlier=0.0,
                  control=True, **kw)


def test_untrustworthy_control_gives_no_candidate():
    # the control arm measured 1.3x faster than the default: whatever flags it flags, the campaign is noise
    sizes = [8, 1024, 65536]
    fac = {("allreduce", CONTROL, s): 1 / 1.3 for s in sizes} | \
          {("allreduce", "allreduce_as_reduce_bcast", s): 1 / 1.5 for s in sizes}
    a = analyze(ResultSet.from_runs(simulate(_design(factors=fac), np.random.default_rng(3))), fdr=True)
    assert a.control.flagged == 3 and not a.control.trustworthy
    assert "UNTRUSTWORTHY" in a.control.line()
    assert a.violations(kind="pattern")          # the mock-up is "found" ...
    assert generate_profiles(a, gain=0.10) == []  # ... but nothing is proposed
    # the same campaign with a sound control arm proposes the 1.5x mock-up at every size
    fac2 = {k: v for k, v in fac.items() if k[1] != CONTROL}
    b = analyze(ResultSet.from_runs(simulate(_design(factors=fac2), np.random.default_rng(3))), fdr=True)
    assert b.control.trustworthy and b.control.flagged == 0
    assert [p.ranges for p in generate_profiles(b, gain=0.10)] == [[(8, 65536, "allreduce_as_reduce_bcast")]]


def test_minimum_effect_above_configured_gain_and_null_spread():
    fac = {("allreduce", "allreduce_as_reduce_bcast", s): 1 / 1.05 for s in [8, 1024, 65536]}
    a = analyze(ResultSet.from_runs(simulate(_design(factors=fac), np.random.default_rng(5))))
    v = next(v for v in a.verdicts if v.kind == "pattern" and not v.control)
    assert v.violated                                       # 1.05x is significant in pairs ...
    assert "gain" in redirect_refusal(v, a.control, 0.10)   # ... but below the 10 % minimum
    assert generate_profiles(a, gain=0.10) == []
    # the user lowered the minimum to 2 %: the point estimate (1.048x) clears it, the 95 % interval over the
    # 10 mpirun ratios (1.016-1.082x) does not guarantee it: refused on the interval's lower bound
    assert v.effect > 1.02 and v.ci_low < 1.02 < v.ci_high and v.ci_mpiruns == 10
    assert "interval's lower bound" in redirect_refusal(v, a.control, 0.02)
    assert redirect_refusal(v, a.control, 0.01) is None     # a minimum the interval guarantees
    wide = ControlSummary(tested=10, null_spread=0.08, null_run_spread=0.1)
    assert "null ratio spread" in redirect_refusal(v, wide, 0.01)


def test_a_mockup_that_loses_in_some_mpiruns_is_refused():
    """Wins 1.3x in 7 of 10 mpiruns and loses 2.7x in 3 (a slow regime): the median says 'faster', the
    per-mpirun view refuses it."""
    fac = {("allreduce", "allreduce_as_reduce_bcast", s): 1 / 1.3 for s in [8, 1024, 65536]}
    runs = simulate(_design(factors=fac), np.random.default_rng(9))
    mock = runs[0].algorithms.index("allreduce_as_reduce_bcast")
    for r in runs[7:]:
        r.runtime[r.algorithm == mock] *= 1.3 * 2.7
    a = analyze(ResultSet.from_runs(runs))
    v = next(v for v in a.verdicts if v.kind == "pattern" and not v.control and v.msize == 1024)
    assert v.paired_ratio > 1.2 and v.regime["slower"] == 3 and v.regime["faster"] == 7
    assert "slower in 3 of 10 mpiruns" in redirect_refusal(v, a.control, 0.10)
    assert generate_profiles(a, gain=0.10) == []


def test_monotony_and_split_are_paired():
    """The shared drift moves every size of an mpirun together: a default that is truly monotone is not
    flagged however much the mpiruns drift, because its sizes are compared inside each mpirun."""
    d = _design(sizes=[8, 16, 32, 64], nruns=10)
    d.sigma_shared = 0.30
    a = analyze(ResultSet.from_runs(simulate(d, np.random.default_rng(11))), kinds=("monotony", "split"))
    mono = [v for v in a.verdicts if v.kind == "monotony"]
    assert mono and all(v.run_ratios and len(v.run_ratios) == 10 for v in mono)
    assert not a.violations()


PRF = """# pgtune profile
MPI_Scan
2 # nb. of processes
1 # nb. of mock-up impl.
1 scan_as_exscan_reducelocal
3 # nb. of ranges
8 8 1
16384 16384 1
131072 131072 1
"""


def test_paired_validation_from_interleaved_fixture_repairs_the_profile():
    text = (DATA / "validation_interleaved.txt").read_text()
    other = text.replace("#@mpirun_index=0", "#@mpirun_index=1")
    figs = figures([("paired", text), ("paired", other)], 2)
    assert all(f["paired"] for f in figs) and [f["msize"] for f in figs] == [8, 16384, 131072, 1048576]
    v = judge({"scan_p2.prf": PRF}, figs)
    assert v["state"] == "repaired" and v["ok"]
    assert [d["range"] for d in v["dropped"]] == [[16384, 16384]]
    assert "slower" in v["dropped"][0]["why"] and v["dropped"][0]["figures"][0]["ratio"] < 0.8
    assert [c["msize"] for c in v["control"]] == [1048576] and v["control"][0]["ok"]
    kept = v["files"]["scan_p2.prf"]
    assert "16384 16384" not in kept and "8 8 1" in kept and "131072 131072 1" in kept
    from pgmpi_formats.prf import parse_prf
    assert [r[:2] for r in parse_prf(kept)["ranges"]] == [(8, 8), (131072, 131072)]
    # all-or-nothing: the same figures fail the whole candidate
    assert judge({"scan_p2.prf": PRF}, figs, all_or_nothing=True)["state"] == "failed"
    # the size left alone measured 30 % apart: the validation run itself is noise
    bad = [dict(f, run_ratios=[1.3, 1.3]) if f["msize"] == 1048576 else f for f in figs]
    nv = judge({"scan_p2.prf": PRF}, bad)
    assert nv["state"] == "inconclusive" and not nv["ok"] and nv["files"] == {}


def test_repair_splits_a_range_around_the_size_measured_slower():
    """One range 8-131072 B; the validation measured 16384 B slower: 8 B and 131072 B stay, 16384 B goes."""
    text = (DATA / "validation_interleaved.txt").read_text()
    figs = figures([("paired", text), ("paired", text.replace("#@mpirun_index=0", "#@mpirun_index=1"))], 2)
    one = PRF.replace("3 # nb. of ranges\n8 8 1\n16384 16384 1\n131072 131072 1\n", "1 # nb. of ranges\n8 131072 1\n")
    v = judge({"scan_p2.prf": one}, figs)
    assert v["state"] == "repaired"
    from pgmpi_formats.prf import parse_prf
    assert parse_prf(v["files"]["scan_p2.prf"])["ranges"] == [(8, 8, "scan_as_exscan_reducelocal"),
                                                              (131072, 131072, "scan_as_exscan_reducelocal")]
    assert [(d["range"], d["why"][:18]) for d in v["dropped"]] == [([16384, 16384], "tuned slower at 16")]
