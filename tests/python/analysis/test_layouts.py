"""The same p on different layouts: separate configs, verdicts and profiles (service/analysis/profiles.py,
"Layouts"). Synthetic truth: on 1x4 Allreduce's default loses to reduce+bcast at 4096 B, on 2x2 to the
node-aware mock-up at 65536 B; an uneven 3+2 and an interleaved 2x2 are measured too and get no profile."""
import numpy as np
import pytest

from pgmpi_formats.prf import parse_prf, profile_layout
from pgmpi_formats.results import ResultSet
from service.analysis.guidelines import analyze
from service.analysis.profiles import check_profiles, generate_profiles, write_profiles
from service.analysis.quality import quality
from service.analysis.synthetic import Design, simulate

RB = "allreduce_as_reduce_bcast"
NA = "allreduce_as_nodereduce_leaderallreduce_nodebcast"
SIZES = [64, 4096, 65536]


def _design(nodes: int, factors: dict, nprocs: int = 4, placement: str = "") -> Design:
    return Design(collectives=["allreduce"], sizes=SIZES, mockups={"allreduce": [RB, NA]}, factors=factors,
                  nrep=30, nruns=8, sigma_run=0.02, sigma_rep=0.02, nprocs=nprocs, nodes=nodes,
                  placement=placement, machine="vc")


@pytest.fixture(scope="module")
def a():
    rng = np.random.default_rng(5)
    runs = (simulate(_design(1, {("allreduce", RB, 4096): 0.5}), rng)
            + simulate(_design(2, {("allreduce", NA, 65536): 0.5}), rng)
            + simulate(_design(2, {("allreduce", RB, 64): 0.5}, nprocs=5, placement="0:3,1:2"), rng)
            + simulate(_design(2, {("allreduce", RB, 64): 0.5}, placement="0:1,1:1,0:1,1:1"), rng))
    return analyze(ResultSet.from_runs(runs), alpha=0.01)


def test_configs_and_violations_are_kept_apart_by_layout(a):
    assert sorted(c.layout for c in a.configs) == ["1x4", "2x2", "2x2-interleaved", "3+2"]
    found = {(a.configs[v.cfg].layout, v.msize, v.algorithm) for v in a.violations("pattern")}
    assert found == {("1x4", 4096, RB), ("2x2", 65536, NA), ("3+2", 64, RB), ("2x2-interleaved", 64, RB)}
    assert {(q["nprocs"], q["layout"]) for q in quality(a)} == {(4, "1x4"), (4, "2x2"), (4, "2x2-interleaved"),
                                                                (5, "3+2")}


def test_one_profile_per_layout_the_multi_node_one_keyed_by_layout(a, tmp_path):
    profs = {p.filename: p for p in generate_profiles(a, gain=0.10)}
    assert sorted(profs) == ["allreduce_p4.prf", "allreduce_p4_2x2.prf"]    # none for 3+2 or interleaved
    one, two = parse_prf(profs["allreduce_p4.prf"].text), parse_prf(profs["allreduce_p4_2x2.prf"].text)
    assert (profile_layout(one), one["ranges"]) == ("", [(4096, 4096, RB)])
    assert (profile_layout(two), two["ranges"]) == ("2x2", [(65536, 65536, NA)])
    paths = write_profiles(list(profs.values()), tmp_path)
    ok, out = check_profiles(paths)
    assert ok is True, out          # the library's own checker reads both (layout and plain for p=4)
