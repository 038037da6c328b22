"""Comparer views, quality score, profiles (validated by the real pgmpitune-check), the CLI."""
import csv
import io
import json
import subprocess

import numpy as np
import pytest
from click.testing import CliRunner

from service.analysis import api
from service.commands.analysis import analyze as analyze_cli
from service.analysis.comparers import VIEWS, fmt_bytes, fmt_time, heatmap, render_table, to_csv, to_json, view
from service.analysis.guidelines import analyze
from service.analysis.memory import KNOWN, MemoryModel
from pgmpi_formats.checker import find_checker
from service.analysis.profiles import check_profiles, generate_profiles, write_profiles
from service.analysis.quality import quality
from pgmpi_formats.results import ResultSet
from service.analysis.synthetic import Design, simulate, to_text

SIZES = [8, 64, 512, 4096, 32768, 262144]
RB = "allreduce_as_reduce_bcast"
RSA = "allreduce_as_reducescatterblock_allgather"
SA = "bcast_as_scatter_allgather"
# truth: Allreduce default 1.5x slower than RB at 512 and 4096 (-> one merged range), 2x slower than RSA at
# 262144; Bcast default 2x slower than SA at 32768 only; RB 1.05x faster at 8 (below the 10 % gain).
FACTORS = {("allreduce", RB, 512): 1 / 1.5, ("allreduce", RB, 4096): 1 / 1.5, ("allreduce", RSA, 262144): 0.5,
           ("bcast", SA, 32768): 0.5, ("allreduce", RB, 8): 1 / 1.05}


@pytest.fixture(scope="module")
def runs():
    d = Design(collectives=["allreduce", "bcast"], sizes=SIZES, mockups={"allreduce": [RB, RSA], "bcast": [SA]},
               factors=FACTORS, barrier_time=5.2e-6, nrep=40, sigma_run=0.02, sigma_rep=0.02, nprocs=4,
               machine="box")
    return simulate(d, np.random.default_rng(11))


@pytest.fixture(scope="module")
def a(runs):
    return analyze(ResultSet.from_runs(runs), alpha=0.01)


def _pairs(a, kind="pattern"):
    return {(v.collective, v.msize, v.algorithm) for v in a.violations(kind)}


def test_pattern_truth(a):
    assert _pairs(a) == {("allreduce", 512, RB), ("allreduce", 4096, RB), ("allreduce", 262144, RSA),
                         ("bcast", 32768, SA), ("allreduce", 8, RB)}


def test_barrier_warnings_brave_and_cautious(a):
    # the barrier (5.2 us) is slower than the small-size calls (~5 us): those checks carry warnings
    c = a.counts()
    assert c["pattern"]["barrier_warnings"] > 0
    assert c["pattern"]["cautious"] < c["pattern"]["brave"]
    warned = {(v.collective, v.msize) for v in a.violations("pattern") if v.barrier_warning}
    assert ("allreduce", 262144) not in warned and ("allreduce", 512) in warned
    assert len(a.violations("pattern", cautious=True)) == c["pattern"]["cautious"]


def test_views_all_formats(a):
    for name in VIEWS:
        v = view(a, name)
        assert v.rows, name
        assert all(len(r) == len(v.columns) for r in v.rows)
        rows = list(csv.reader(io.StringIO(to_csv(v))))
        assert len(rows) == len(v.rows) + 1
        js = to_json(v)
        json.dumps(js)
        assert len(js) == len(v.rows)
        render_table(v)
    g = to_json(view(a, "grouped"))
    hit = [r for r in g if r["collective"] == "MPI_Bcast" and r["msize"] == 32768][0]
    assert hit["mockup"] == SA and hit["slowdown"] == pytest.approx(2.0, rel=0.1)
    rel = to_json(view(a, "relative"))
    assert all(r["relative_runtime"] == 1.0 for r in rel if r["algorithm"] == "default")
    hm = heatmap(a, 0)
    assert hm["collectives"] == ["MPI_Allreduce", "MPI_Bcast"] and hm["sizes"] == SIZES
    assert hm["slowdown"][1][SIZES.index(32768)] == pytest.approx(2.0, rel=0.1)
    assert hm["slowdown"][1][0] == 1.0


def test_units():
    assert fmt_time(1.23456e-5) == "12.35 us" and fmt_time(0.002) == "2 ms" and fmt_time(3e-8) == "30 ns"
    assert fmt_bytes(8) == "8 B" and fmt_bytes(1024) == "1 KiB" and fmt_bytes(1536) == "1.5 KiB"
    assert fmt_bytes(1 << 20) == "1 MiB"


def test_quality(a, runs):
    q = quality(a)
    assert len(q) == 1 and q[0]["nprocs"] == 4
    assert 0 < q[0]["score"] < 100
    clean = Design(collectives=["bcast"], sizes=SIZES, mockups={"bcast": [SA]},
                   factors={("bcast", SA, s): 1.5 for s in SIZES}, nprocs=4)
    q2 = quality(analyze(ResultSet.from_runs(simulate(clean, np.random.default_rng(2)))))
    assert q2[0]["score"] == 100.0


def test_profiles_ranges_gain_memory(a, tmp_path):
    profs = generate_profiles(a, gain=0.10, created="2026-11-22T00:00:00Z")
    by = {p.collective: p for p in profs}
    assert by["allreduce"].ranges == [(512, 4096, RB), (262144, 262144, RSA)]   # 8 B: gain 5 % < 10 %
    assert by["bcast"].ranges == [(32768, 32768, SA)]
    d8 = [d for d in by["allreduce"].decisions if d.msize == 8][0]
    assert d8.winner == "default" and "gain" in d8.reason
    # cautious: 512 B and 4096 B carry barrier warnings -> dropped
    caut = {p.collective: p for p in generate_profiles(a, cautious=True)}
    assert all(r[0] > 4096 for r in caut["allreduce"].ranges)
    # memory (the library's figures): SA stages the padded vector, 32 KiB at 32 KiB; a 1000-byte budget drops
    # that range, RB and RSA (p divides the count: no padding) need no message pool and stay
    assert MemoryModel.auto().needs(SA, 32768, 4) == (32768, 0)
    refused: list = []
    tight = {p.collective: p for p in generate_profiles(a, msg_budget=1000, refused=refused)}
    assert "bcast" not in tight and tight["allreduce"].ranges == by["allreduce"].ranges
    assert any(r["mockup"] == SA and "32768 B msg" in r["why"] and "(library)" in r["why"] for r in refused)
    paths = write_profiles(profs, tmp_path)
    assert sorted(p.name for p in paths) == ["allreduce_p4.prf", "bcast_p4.prf"]
    text = (tmp_path / "allreduce_p4.prf").read_text()
    assert text.startswith("# pgtune profile\n#@pgmpi profile_version 1\n")
    assert "\nMPI_Allreduce\n4 # nb. of processes\n2 # nb. of mock-up impl.\n1 " + RB + "\n2 " + RSA + "\n2 #" in text
    assert "\n512 4096 1 #" in text and "\n262144 262144 2 #" in text and "\n\n" not in text


@pytest.mark.mpi
def test_profiles_pass_pgmpitune_check(a, tmp_path):
    chk = find_checker()
    assert chk is not None, "pgmpitune-check not built: run deploy/build-lib.sh"
    paths = write_profiles(generate_profiles(a), tmp_path)
    ok, out = check_profiles(paths)
    assert ok, out
    # and the checker rejects a broken one (so the check can fail)
    bad = tmp_path / "broken.prf"
    bad.write_text(paths[0].read_text().replace(RB, "allreduce_as_nonsense"))
    ok, out = check_profiles([bad])
    assert ok is False and "broken.prf" in out


@pytest.mark.mpi
def test_memory_figures_are_the_librarys():
    """The model's figures are the library's listing (no copy): every guideline mock-up is one of the library's,
    and a need that grows with p and n reads as the library computes it (allgather_as_alltoall: 2 p n)."""
    mm = MemoryModel.auto()
    lib = mm.listing(16, 1024, 1).algorithms()
    assert set(KNOWN) <= set(lib), set(KNOWN) - set(lib)
    assert mm.needs("allgather_as_alltoall", 1024, 16) == (2 * 16 * 1024, 0)
    assert mm.needs("alltoall_as_alltoallv", 1024, 16) == (2 * 16 * 1024, 2 * 16 * 4)
    with pytest.raises(KeyError, match="no algorithm"):
        mm.needs("allgather_as_nonsense", 1024, 16)


def test_memory_model_without_library_says_how_to_build_it(monkeypatch, tmp_path):
    """No built library: a clear error naming the build, never figures from elsewhere."""
    monkeypatch.setenv("PGMPITUNE_CHECK", str(tmp_path / "no-such-pgmpitune-check"))
    with pytest.raises(RuntimeError, match="deploy/build-lib.sh"):
        MemoryModel.auto().needs("allgather_as_alltoall", 1024, 4)


def test_api_run_json(runs):
    out = api.run(runs, alpha=0.01, gain=0.1)
    json.dumps(out)
    assert out["counts"]["pattern"]["brave"] == 5
    assert {p["collective"] for p in out["profiles"]} == {"allreduce", "bcast"}
    assert out["quality"][0]["score"] < 100 and len(out["heatmaps"]) == 1


def test_cli(runs, tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    for r in runs:
        (raw / r.source).write_text(to_text(r))
    cli = CliRunner()
    res = cli.invoke(analyze_cli, ["violations", str(raw), "--view", "grouped", "--format", "json", "--alpha", "0.01"])
    assert res.exit_code == 0, res.output
    js = json.loads(res.output)
    assert js["counts"]["pattern"]["brave"] == 5
    res = cli.invoke(analyze_cli, ["violations", str(raw), "--view", "detailed", "--format", "csv", "--test", "ks"])
    assert res.exit_code == 0 and res.output.startswith("machine,library,p,N,ppn,collective,mockup,msize")
    res = cli.invoke(analyze_cli, ["violations", str(raw), "--view", "violation", "--fdr"])
    assert res.exit_code == 0 and "pattern" in res.output and "brave" in res.output
    res = cli.invoke(analyze_cli, ["quality", str(raw)])
    assert res.exit_code == 0 and "box" in res.output
    res = cli.invoke(analyze_cli, ["profile", str(raw), "--out", str(tmp_path / "prf"), "--alpha", "0.01",
                                   "--no-check"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "prf" / "allreduce_p4.prf").exists()
    # bad input: file:line, nothing written
    bad = tmp_path / "bad.txt"
    bad.write_text("test nrep msize runtime_sec\nMPI_Bcast 0 8 oops\n")
    res = cli.invoke(analyze_cli, ["profile", str(bad), "--out", str(tmp_path / "prf2")])
    assert res.exit_code == 1 and f"{bad}:2:" in res.output and not (tmp_path / "prf2").exists()
    res = cli.invoke(analyze_cli, ["violations", str(raw), "--test", "nope"])
    assert res.exit_code == 2 and "mannwhitney" in res.output


def test_pgmpi_entry_point_has_analyze(repo_root):
    r = subprocess.run([str(repo_root / ".venv/bin/pgmpi"), "analyze", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "violations" in r.stdout and "profile" in r.stdout


def test_table1_names_cover_mockup_names(repo_root):
    doc = (repo_root / "lib/docs/mockup-names.md").read_text()
    import re
    names = set(re.findall(r"`([a-z]+_as_[a-z_]+)`", doc))
    assert set(KNOWN) <= names
