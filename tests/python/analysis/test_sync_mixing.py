"""Verdicts never mix cells measured by different synchronisation methods (issue 34): the method is part of
a config (service/analysis/stats.py), and a profile or a stored analysis refuses runs of two methods for one
(library, p, layout)."""
from __future__ import annotations

import numpy as np
import pytest

from pgmpi_formats.results import ResultSet, parse_text, sync_method
from service.analysis import api
from service.analysis.guidelines import analyze
from service.analysis.profiles import generate_profiles
from service.analysis.synthetic import Design, simulate, to_text

FIX = __import__("pathlib").Path(__file__).resolve().parents[1] / "formats" / "fixtures"


def _runs(methods: list[str]):
    """10 mpiruns with a planted 1.5x faster mock-up; run r measured with methods[r % len(methods)]."""
    d = Design(collectives=["allreduce"], sizes=[1024], mockups={"allreduce": ["allreduce_as_reduce_bcast"]},
               factors={("allreduce", "allreduce_as_reduce_bcast", 1024): 1 / 1.5}, nruns=10, nrep=20)
    runs = simulate(d, np.random.default_rng(7))
    out = []
    for r, run in enumerate(runs):
        text = to_text(run).replace("#@pgmpi_format=1\n", f"#@pgmpi_format=1\n#@procsync={methods[r % len(methods)]}\n")
        out.append(parse_text(text, run.source))
    return out


def test_method_line_is_read_in_one_canonical_spelling():
    assert sync_method({"procsync": "dissem_barrier"}) == "dissem_barrier"
    assert sync_method({"procsync": "mpi_barrier"}) == "MPI_Barrier"
    assert sync_method({"sync": "MPI_Barrier"}) == "MPI_Barrier"          # pgmpi-bench's older key
    assert sync_method({"procsync": "roundtime", "sync": "roundtime"}) == "roundtime"
    assert sync_method({}) == ""
    # genuine ReproMPI files say it the same way
    assert parse_text((FIX / "reprompi_window_global_perproc.txt").read_text(), "w.txt").sync == "window"
    assert parse_text((FIX / "reprompi_hca3_barrier_local.txt").read_text(), "b.txt").sync == "MPI_Barrier"


def test_runs_of_two_methods_are_two_configs_and_never_paired():
    rs = ResultSet.from_runs(_runs(["dissem_barrier", "window"]))
    a = analyze(rs)
    assert sorted(c.sync for c in a.configs) == ["dissem_barrier", "window"]
    assert "[window]" in next(c.label for c in a.configs if c.sync == "window")
    pattern = [v for v in a.verdicts if v.kind == "pattern"]
    assert len(pattern) == 2                          # one verdict per method, each on its own 5 mpiruns
    for v in pattern:
        method = a.configs[v.cfg].sync
        assert len(v.run_ratios) == 5
        assert {rs.runs[i].sync for i in a.cells.config_runs[v.cfg]} == {method}


def test_profiles_and_the_analysis_entry_point_refuse_mixed_methods():
    rs = ResultSet.from_runs(_runs(["dissem_barrier", "roundtime"]))
    with pytest.raises(ValueError, match="different synchronisation methods .*dissem_barrier and roundtime"):
        generate_profiles(analyze(rs))
    with pytest.raises(ValueError, match="different synchronisation methods"):
        api.run(rs)
    # one method: the planted redirection is made
    one = api.run(ResultSet.from_runs(_runs(["window"])))
    assert any(p.get("text") for p in one["profiles"])
