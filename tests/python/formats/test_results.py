"""The one raw-results reader on ReproMPI's per-process layouts (fixtures written from ReproMPI's documented
output: `process test nrep msize [errorcode] loc_tstart_sec loc_tend_sec [gl_tstart_sec gl_tend_sec]`)."""
from __future__ import annotations

from pathlib import Path

import pytest

from pgmpi_formats.results import format_results, parse_text, read_file

FIXTURES = Path(__file__).parent / "fixtures"


def test_global_clocks_span_from_first_start_to_last_end():
    """Window-based sync, --runtime-type=global: a measurement lasts from the earliest global start to the
    latest global end over the processes (not the longest single process), and one out-of-window process
    (errorcode != 0) drops the whole measurement."""
    run = read_file(FIXTURES / "reprompi_window_global_perproc.txt")
    assert run.tests == ["MPI_Allreduce"] and run.nrep.tolist() == [0, 1, 3] and set(run.msize.tolist()) == {8}
    assert run.runtime == pytest.approx([12e-6, 8e-6, 9e-6], abs=1e-12)
    # per process the longest duration would have been 10, 7 and 9 us: the definitions differ
    assert run.runtime[0] > 10e-6 and run.runtime[1] > 7e-6


def test_the_files_runtime_type_chooses_between_local_and_global_columns():
    """ReproMPI prints both kinds of columns whenever a clock sync ran, and computes its own figures by its
    --runtime-type (#@runtime_type): local = the longest process's own duration, whatever global columns
    are there."""
    text = (FIXTURES / "reprompi_window_global_perproc.txt").read_text()
    run = parse_text(text.replace("#@runtime_type=global", "#@runtime_type=local"), "local.txt")
    assert run.nrep.tolist() == [0, 1, 3] and run.runtime == pytest.approx([10e-6, 7e-6, 9e-6], abs=1e-12)
    with pytest.raises(ValueError, match="runtime_type='both'; valid: local, global"):
        parse_text(text.replace("#@runtime_type=global", "#@runtime_type=both"), "bad.txt")


def test_local_clocks_take_the_longest_process():
    run = read_file(FIXTURES / "reprompi_local_perproc.txt")
    assert run.runtime == pytest.approx([10e-6, 7e-6], abs=1e-12)


def test_writer_round_trips():
    text = format_results({"machine": "m1", "nprocs": 2}, [("MPI_Bcast", 0, 8, 1.5e-6, "default"),
                                                           ("MPI_Bcast", 1, 8, 2.5e-6, "bcast_as_allgatherv")],
                          footer=["#@pgmpi config size_msg_buffer_bytes 100"])
    run = parse_text(text, "w.txt")
    assert run.machine == "m1" and run.nprocs == 2 and run.runtime.tolist() == [1.5e-6, 2.5e-6]
    assert [run.algorithms[a] for a in run.algorithm] == ["default", "bcast_as_allgatherv"]
    assert run.config == {"size_msg_buffer_bytes": "100"}


@pytest.mark.parametrize("rtype", ["local", "global"])
def test_a_file_genuine_reprompi_wrote(rtype):
    """Written by ReproMPI (github.com/hunsa/reprompi at 2e73f3d, built outside the tree; Open MPI 4.1.4, 2
    ranks, `mpibenchmark --calls-list=MPI_Allreduce --msizes-list=8,1024 --nrep=10 --verbose=1
    --clock-sync=HCA3 --proc-sync=MPI_Barrier --runtime-type=<rtype>`, 2026-11-26): per-process rows with local
    and global columns and a `count` column. The reader gives, per measurement, exactly ReproMPI's run-time of
    that type, recomputed here from the columns."""
    path = FIXTURES / f"reprompi_hca3_barrier_{rtype}.txt"
    rows = [ln.split() for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    cols, data = rows[0], rows[1:]
    ix = {c: i for i, c in enumerate(cols)}
    by: dict = {}
    for r in data:
        by.setdefault((int(r[ix["count"]]), int(r[ix["nrep"]])), []).append([float(r[ix[c]]) for c in (
            "loc_tstart_sec", "loc_tend_sec", "gl_tstart_sec", "gl_tend_sec")])
    want = {k: (max(e - s for s, e, _, _ in ps) if rtype == "local" else
                max(ge for *_, ge in ps) - min(gs for _, _, gs, _ in ps)) for k, ps in by.items()}
    run = read_file(path)
    assert run.header["runtime_type"] == rtype and run.tests == ["MPI_Allreduce"]
    got = {(int(m), int(n)): float(t) for m, n, t in zip(run.msize, run.nrep, run.runtime)}
    assert set(got) == set(want) and len(got) == 20
    assert all(got[k] == pytest.approx(want[k], abs=1e-12) for k in want), (got, want)
