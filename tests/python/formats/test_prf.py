"""The .prf writer stays inside PGMPITuneLib's reader and means what it means.

`pgmpitunelib_accepts` restates the anchor's reader as documented in pgmpi_formats/prf.py (a 100-byte line
buffer, only lines starting with `#` skipped, the MPI name into 40 bytes, a mock-up name into 60, sizes as
C ints, at least one range); the C library reads the same files in tests/c/core (profile_rsb_block_*)."""
from __future__ import annotations

import pytest

from pgmpi_formats import prf
from service.analysis.profiles import generate_profiles


def pgmpitunelib_accepts(text: str) -> dict:
    data = []
    for line in text.splitlines(keepends=True):
        assert len(line.encode()) + (0 if line.endswith("\n") else 1) + 1 <= 100, f"line too long: {line!r}"
        if not line.startswith("#"):
            assert line.strip(), "a blank line is data to PGMPITuneLib"
            data.append(line.split())
    name, nprocs, nalg = data[0][0], int(data[1][0]), int(data[2][0])
    assert len(name) < 40 and nprocs > 0
    algs = {int(t[0]): t[1] for t in data[3:3 + nalg]}
    assert all(len(a) < 60 for a in algs.values())
    nranges = int(data[3 + nalg][0])
    assert nranges > 0
    ranges = [tuple(int(x) for x in t[:3]) for t in data[4 + nalg:4 + nalg + nranges]]
    assert all(0 <= lo <= hi <= 2**31 - 1 and i in algs for lo, hi, i in ranges)
    return {"name": name, "nprocs": nprocs, "ranges": [(lo, hi, algs[i]) for lo, hi, i in ranges]}


LONG = "m" * 120


def test_every_line_fits_pgmpitunelibs_buffer():
    text = prf.format_prf("MPI_Allreduce", 16, [(8, 1024, "allreduce_as_reducescatterblock_allgather"),
                                               (2**31 - 1, 2**31 - 1, "allreduce_as_reduce_bcast")],
                          meta={"machine": LONG, "generator": "pgmpi-site analysis 0.1"},
                          comments=["one-sided mannwhitney + BH, alpha=0.05, gain>=10%, memory budget "
                                    "100000000 B msg / 200000 B int (table1 figures) " + LONG],
                          range_notes=["x" * 200, "short"])
    got = pgmpitunelib_accepts(text)
    assert got["ranges"] == [(8, 1024, "allreduce_as_reducescatterblock_allgather"),
                             (2**31 - 1, 2**31 - 1, "allreduce_as_reduce_bcast")]
    assert prf.parse_prf(text)["ranges"] == got["ranges"]


def test_generated_profiles_fit():
    """What `pgmpi analyze profile` writes (service/analysis/profiles.py -> format_prf), from simulated runs
    with long provenance; its longest line was 110 characters before."""
    import numpy as np
    from pgmpi_formats.results import ResultSet
    from service.analysis.guidelines import analyze
    from service.analysis.synthetic import Design, simulate
    rb, rsb = "allreduce_as_reduce_bcast", "reducescatterblock_as_allreduce"
    d = Design(collectives=["allreduce", "reducescatterblock"], sizes=[64, 4096],
               mockups={"allreduce": [rb], "reducescatterblock": [rsb]},
               factors={("allreduce", rb, 4096): 0.5, ("reducescatterblock", rsb, 4096): 0.5}, nrep=30,
               nruns=6, sigma_run=0.02, sigma_rep=0.02, nprocs=4, machine="m" * 90, version="4.1.4-" + "v" * 90)
    a = analyze(ResultSet.from_runs(simulate(d, np.random.default_rng(3))), alpha=0.01)
    profs = {p.collective: p for p in generate_profiles(a, gain=0.10, campaign="nightly-" + "x" * 100)}
    assert set(profs) == {"allreduce", "reducescatterblock"}
    assert pgmpitunelib_accepts(profs["allreduce"].text)["ranges"] == [(4096, 4096, rb)]
    # Reduce_scatter_block measured at n = 4096 B (the vector of 4 blocks) is a 1024 B block in the file
    assert pgmpitunelib_accepts(profs["reducescatterblock"].text)["ranges"] == [(1024, 1024, rsb)]
    assert prf.parse_prf(profs["reducescatterblock"].text)["ranges"] == [(4096, 4096, rsb)]


@pytest.mark.parametrize("bad", [
    dict(mpi_name="MPI_Allsum", nprocs=2, ranges=[(1, 2, "default")]),
    dict(mpi_name="MPI_Allreduce", nprocs=2, ranges=[]),
    dict(mpi_name="MPI_Allreduce", nprocs=0, ranges=[(1, 2, "allreduce_as_reduce_bcast")]),
    dict(mpi_name="MPI_Allreduce", nprocs=2, ranges=[(1, 2**31, "allreduce_as_reduce_bcast")]),
    dict(mpi_name="MPI_Allreduce", nprocs=2, ranges=[(1, 2, "allreduce_as_" + "y" * 60)]),
])
def test_writer_refuses_what_pgmpitunelib_cannot_read(bad):
    with pytest.raises(prf.ProfileFormatError):
        prf.format_prf(bad["mpi_name"], bad["nprocs"], bad["ranges"])


def test_reduce_scatter_block_files_hold_the_received_block():
    """One meaning in files: PGMPITuneLib's block (recvcount x type size); inside pgmpi-site the
    collectives.def n (the whole vector) -- converted here, both ways, whoever wrote the file."""
    vector = [(4 * 64, 4 * 1024, "reducescatterblock_as_allreduce")]
    text = prf.format_prf("MPI_Reduce_scatter_block", 4, vector)
    assert pgmpitunelib_accepts(text)["ranges"] == [(64, 1024, "reducescatterblock_as_allreduce")]
    assert prf.parse_prf(text)["ranges"] == vector
    genuine = "MPI_Reduce_scatter_block\n4\n1\n1 reducescatterblock_as_allreduce\n1\n64 1024 1\n"
    assert prf.parse_prf(genuine)["ranges"] == vector
    # other collectives: the file's bytes are n
    assert prf.parse_prf(genuine.replace("Reduce_scatter_block", "Allreduce")
                         .replace("reducescatterblock_as_allreduce", "allreduce_as_reduce_bcast"))["ranges"] \
        == [(64, 1024, "allreduce_as_reduce_bcast")]
    # a vector range holds exactly the calls whose block is in [ceil(lo/p), floor(hi/p)]
    text = prf.format_prf("MPI_Reduce_scatter_block", 4, [(6, 6, "reducescatterblock_as_allreduce"),
                                                        (10, 33, "reducescatterblock_as_allreduce")])
    assert pgmpitunelib_accepts(text)["ranges"] == [(3, 8, "reducescatterblock_as_allreduce")]
    with pytest.raises(prf.ProfileFormatError, match="no range that covers a call"):
        prf.format_prf("MPI_Reduce_scatter_block", 4, [(6, 6, "reducescatterblock_as_allreduce")])


def test_reader_names_file_and_line():
    with pytest.raises(prf.ProfileFormatError, match=r"^a\.prf:2: number of processes: 'x'"):
        prf.parse_prf("MPI_Allreduce\nx\n", "a.prf")
    with pytest.raises(prf.ProfileFormatError, match=r"^a\.prf:6: range names algorithm id 9"):
        prf.parse_prf("MPI_Allreduce\n2\n1\n1 allreduce_as_reduce_bcast\n1\n1 2 9\n", "a.prf")
