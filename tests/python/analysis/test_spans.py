"""Profiles for process counts between measured ones (service/analysis/spans.py): a span only where the
measured neighbours agree, confirmed only by a validation at an unmeasured count inside (python-only: the
profiles and the validation figures are built here; the .prf text goes through the one reader)."""
from __future__ import annotations

import os

import pytest

from pgmpi_formats.prf import parse_prf
from service.analysis.spans import agreed_ranges, confirm, span_candidates

LIB = ("m", "openmpi", "4.1.4")


def prof(coll: str, mpi_name: str, p: int, ranges, layout: str = "") -> dict:
    return {"machine": LIB[0], "library": LIB[1], "version": LIB[2], "collective": coll, "mpi_name": mpi_name,
            "nprocs": p, "layout": layout, "ranges": [{"first": a, "last": b, "mockup": m} for a, b, m in ranges]}


def fig(p: int, msize: int, ratios, coll: str = "allreduce") -> dict:
    return {"collective": coll, "nprocs": p, "msize": msize, "layout": "", "run_ratios": list(ratios),
            "default_time": 1e-5, "tuned_time": 1e-5 / ratios[0], "paired": True}


def measured(coll: str, *ps: int) -> dict:
    return {LIB + (coll,): set(ps)}


def test_agreeing_neighbours_give_one_candidate_for_the_counts_between_them():
    profs = [prof("allreduce", "MPI_Allreduce", 2, [(8, 1024, "allreduce_as_reduce_bcast")]),
             prof("allreduce", "MPI_Allreduce", 8, [(64, 4096, "allreduce_as_reduce_bcast"),
                                                    (8192, 65536, "allreduce_as_reducescatterblock_allgather")])]
    cands, refused = span_candidates(profs, measured("allreduce", 2, 8))
    assert not refused and len(cands) == 1
    c = cands[0]
    assert (c.lo, c.hi, c.at, c.neighbours) == (3, 7, 5, (2, 8))
    assert c.ranges == [(64, 1024, "allreduce_as_reduce_bcast")]        # only where both agree
    prf = parse_prf(c.text, c.filename)
    assert prf["nprocs"] == 5 and prf["meta"]["nprocs_range"] == "3 7"
    assert prf["ranges"] == [(64, 1024, "allreduce_as_reduce_bcast")]
    assert c.filename == "allreduce_p3-7.prf"


def test_no_span_where_the_neighbours_disagree_or_nothing_lies_between():
    a2 = prof("bcast", "MPI_Bcast", 2, [(8, 64, "bcast_as_scatter_allgather")])
    other = prof("bcast", "MPI_Bcast", 8, [(8, 64, "bcast_as_scatterv_allgatherv")])
    cands, refused = span_candidates([a2, other], measured("bcast", 2, 8))
    assert not cands and "no size to the same mock-up" in refused[0]["why"]
    # the default won at p=8 (no profile there): the counts between keep the default
    cands, refused = span_candidates([a2], measured("bcast", 2, 8))
    assert not cands and "default won at p=8" in refused[0]["why"]
    # a count measured between them breaks the gap in two; each part needs its own agreement
    cands, refused = span_candidates([a2, prof("bcast", "MPI_Bcast", 8, [(8, 64, "bcast_as_scatter_allgather")])],
                                     measured("bcast", 2, 4, 8))
    assert not cands and {tuple(r["between"]) for r in refused} == {(2, 4), (4, 8)}
    # neighbours 2 and 3: nothing unmeasured between them
    cands, refused = span_candidates([a2, prof("bcast", "MPI_Bcast", 3, [(8, 64, "bcast_as_scatter_allgather")])],
                                     measured("bcast", 2, 3))
    assert not cands and not refused


def test_layout_profiles_and_per_block_sizes_never_span():
    lay = [prof("allreduce", "MPI_Allreduce", 4, [(8, 64, "allreduce_as_reduce_bcast")], layout="2x2"),
           prof("allreduce", "MPI_Allreduce", 8, [(8, 64, "allreduce_as_reduce_bcast")], layout="2x4")]
    cands, _ = span_candidates(lay, measured("allreduce", 4, 8))
    assert not cands
    rsb = [prof("reducescatterblock", "MPI_Reduce_scatter_block", p, [(64, 1024, "reducescatterblock_as_reducescatter")])
           for p in (2, 8)]
    cands, refused = span_candidates(rsb, measured("reducescatterblock", 2, 8))
    assert not cands and "per block" in refused[0]["why"]


def test_agreed_ranges_are_intersections_per_mockup():
    assert agreed_ranges([(1, 100, "a"), (200, 300, "b")], [(50, 250, "a"), (250, 400, "b")]) == \
        [(50, 100, "a"), (250, 300, "b")]
    assert agreed_ranges([(1, 100, "a")], [(1, 100, "default")]) == []


def _cand():
    profs = [prof("allreduce", "MPI_Allreduce", p, [(64, 1024, "allreduce_as_reduce_bcast")]) for p in (2, 8)]
    return span_candidates(profs, measured("allreduce", 2, 8))[0][0]


def test_a_validation_at_the_unmeasured_count_confirms_the_span():
    c = _cand()
    figs = [fig(5, 64, [1.4, 1.5, 1.3]), fig(5, 1024, [1.2, 1.25, 1.3]), fig(5, 8, [1.0, 1.01, 0.99])]
    v = confirm(c, figs, measured_counts={2, 8})
    assert v["state"] == "passed" and v["files"] == {c.filename: c.text}


def test_a_span_the_unmeasured_count_contradicts_keeps_the_default():
    c = _cand()
    # slower at the range's end in one regime: the size is dropped, the rest kept (validation's repair)
    figs = [fig(5, 64, [1.4, 1.5, 1.3]), fig(5, 1024, [1.2, 0.7, 1.3]), fig(5, 8, [1.0, 1.0, 1.0])]
    v = confirm(c, figs, measured_counts={2, 8})
    assert v["state"] == "repaired"
    kept = parse_prf(v["files"][c.filename])
    assert kept["ranges"] and all(hi < 1024 for _, hi, _ in kept["ranges"])
    assert kept["meta"]["nprocs_range"] == "3 7"
    # slower everywhere: nothing kept, the default stays between the measured counts
    figs = [fig(5, 64, [0.8, 0.9, 0.85]), fig(5, 1024, [0.9, 0.8, 0.9]), fig(5, 8, [1.0, 1.0, 1.0])]
    v = confirm(c, figs, measured_counts={2, 8})
    assert not v["ok"] and v["files"] == {}


def test_evidence_from_a_measured_count_does_not_confirm_a_span():
    c = _cand()
    figs = [fig(2, 64, [1.4, 1.5, 1.3]), fig(2, 1024, [1.2, 1.25, 1.3])]
    v = confirm(c, figs, measured_counts={2, 8})
    assert not v["ok"] and "must run at p=5" in v["why"]
    figs = [fig(5, 64, [1.4, 1.5, 1.3]), fig(8, 64, [1.4, 1.5, 1.3])]
    assert not confirm(c, figs, measured_counts={2, 8})["ok"]


def test_the_analysis_offers_a_span_between_measured_counts_only_as_a_candidate():
    import numpy as np
    from service.analysis import api
    from service.analysis.synthetic import Design, simulate
    m = "allreduce_as_reduce_bcast"
    runs = []
    for p, seed in ((2, 1), (8, 2)):
        d = Design(["allreduce"], [64, 1024], {"allreduce": [m]}, factors={("allreduce", m, s): 0.5 for s in (64, 1024)},
                   nruns=5, nrep=40, nprocs=p, control=True)
        runs += simulate(d, np.random.default_rng(seed))
    out = api.run(runs, gain=0.1)
    assert {(p["nprocs"], p["filename"]) for p in out["profiles"]} == {(2, "allreduce_p2.prf"), (8, "allreduce_p8.prf")}
    assert [(s["nprocs_range"], s["validate_at"]) for s in out["spans"]] == [([3, 7], 5)]
    assert all(p["filename"] != out["spans"][0]["filename"] for p in out["profiles"])   # never published as is


@pytest.mark.mpi
def test_a_real_validation_at_an_unmeasured_count_of_three_ranks(tmp_path):
    """Profiles at p=2 and p=4 agree; the span file for p=3 is installed and validated by pgmpi-bench with
    3 ranks (default and tuned interleaved, 3 mpiruns): the library applies the span at the unmeasured count
    (the tuned arm is served by the mock-up inside the range, by the default outside), and the verdict is
    the validation's own on those figures."""
    import subprocess

    from pgmpi_formats.footer import Alg, records
    from pgmpi_formats.validation import figures
    from pathlib import Path

    bench = Path(__file__).resolve().parents[3] / "build" / "install" / "openmpi" / "bin" / "pgmpi-bench"
    if not bench.exists():
        pytest.fail(f"{bench} missing: deploy/build-lib.sh openmpi (make test does)")

    def mpirun_cmd(mpi, np):
        return ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", str(np)]

    m = "allreduce_as_reduce_bcast"
    profs = [prof("allreduce", "MPI_Allreduce", p, [(64, 4096, m)]) for p in (2, 4)]
    cand = span_candidates(profs, measured("allreduce", 2, 4))[0][0]
    assert (cand.lo, cand.hi, cand.at) == (3, 3, 3)
    pdir = tmp_path / "profiles"
    pdir.mkdir()
    (pdir / cand.filename).write_text(cand.text)
    files = []
    for i in range(3):
        out = tmp_path / f"validate-{i}.txt"
        env = dict(os.environ, PGMPITUNE_PROFILE_DIR=str(pdir), OMPI_MCA_mpi_yield_when_idle="1")
        r = subprocess.run(mpirun_cmd("openmpi", 3) + [str(bench), "--calls=allreduce", "--sizes=8,64,1K,4K",
                           "--nrep=20", "--algorithms=default,tuned", "--no-barrier-rows", f"--mpirun-index={i}",
                           f"--output={out}"], env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
        files.append(("paired", out.read_text()))
    algs = {(x.call, x.msize, x.algorithm) for x in records(files[0][1].splitlines(), Alg)}
    assert ("MPI_Allreduce", 1024, m) in algs and ("MPI_Allreduce", 8, m) not in algs
    figs = figures(files, 3)
    assert {f["nprocs"] for f in figs} == {3} and {f["msize"] for f in figs} == {8, 64, 1024, 4096}
    v = confirm(cand, figs, measured_counts={2, 4})
    print("validation at p=3:", v["why"])
    from service.analysis.validation import judge
    assert v["state"] == judge({cand.filename: cand.text}, figs)["state"]
    assert v["checked"] == 3                   # the three sizes inside the range, measured at p=3
    # the planted defect: the same file without its process range is not applied at p=3
    (pdir / cand.filename).write_text(cand.text.replace("#@pgmpi nprocs_range 3 3\n", "").replace("\n3 # nb.", "\n2 # nb."))
    out = tmp_path / "unapplied.txt"
    env = dict(os.environ, PGMPITUNE_PROFILE_DIR=str(pdir), OMPI_MCA_mpi_yield_when_idle="1")
    r = subprocess.run(mpirun_cmd("openmpi", 3) + [str(bench), "--calls=allreduce", "--sizes=1K", "--nrep=3",
                       "--algorithms=tuned", "--no-barrier-rows", f"--output={out}"], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert m not in {x.algorithm for x in records(out.read_text().splitlines(), Alg)}
