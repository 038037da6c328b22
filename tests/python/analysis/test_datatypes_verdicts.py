"""GL1-GL4 verdicts (service/analysis/datatypes.py) on raw files written with the format's own writer:
a planted 2x GL2/3 violation and a 1.5x GL4 one are found with their direction, equal descriptions and
the control arm hold, one mpirun gives no verdict, and the CLI prints the table."""
from __future__ import annotations

import numpy as np
from click.testing import CliRunner

from pgmpi_formats.results import ResultSet, format_results, parse_text
from service.analysis.datatypes import dt_verdicts

TEST = "dt_allgather_int_bucket_v1_a2"
FACTOR = {"typed": 1.0, "typed_control": 1.0, "contig": 1.0, "packed": 0.5, "indexed": 1.5}


def _run(idx: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    regime = 1.0 + 0.2 * idx              # mpirun-to-mpirun drift shared by every description (paired design)
    rows = []
    for msize, base in ((3200, 10e-6), (2560000, 2e-3)):
        for k in range(10):
            for alg, f in FACTOR.items():
                f = f if msize == 3200 else 1.0          # the large size: every description equal
                rows.append((TEST, k, msize, base * regime * f * (1 + 0.01 * rng.standard_normal()), alg))
    header = {"machine": "box", "mpi_library": "openmpi", "mpi_version": "4.1.4", "nprocs": 2, "nodes": 1, "ppn": 2,
              "mpirun_index": idx}
    footer = [f"#@pgmpi dtcase {TEST} pattern=allgather layout=bucket variant=1 A=2 basetype=MPI_INT"]
    return format_results(header, rows, footer)


def _set(n: int) -> ResultSet:
    return ResultSet.from_runs([parse_text(_run(i, 100 + i), f"r{i}.txt") for i in range(n)])


def test_planted_violations_found_with_direction():
    vs = {(v.guideline, v.msize, frozenset((v.slower, v.faster))): v for v in dt_verdicts(_set(4))}
    gl2 = vs[("GL2/3", 3200, frozenset(("typed", "packed")))]
    assert gl2.verdict == "violated" and gl2.slower == "typed" and 1.9 < gl2.ratio < 2.1 and gl2.p < 0.01
    gl4 = vs[("GL4", 3200, frozenset(("typed", "indexed")))]
    assert gl4.verdict == "violated" and gl4.slower == "indexed" and 1.4 < gl4.ratio < 1.6
    assert vs[("GL1", 3200, frozenset(("typed", "contig")))].verdict == "holds"
    assert vs[("control", 3200, frozenset(("typed", "typed_control")))].verdict == "holds"
    big = [v for v in vs.values() if v.msize == 2560000]
    assert big and all(v.verdict == "holds" for v in big)


def test_one_mpirun_gives_no_verdict():
    assert {v.verdict for v in dt_verdicts(_set(1))} == {"n/a"}


def test_cli_prints_the_table(tmp_path):
    from service.analysis.cli import analyze
    for i in range(3):
        (tmp_path / f"r{i}.txt").write_text(_run(i, 7 + i))
    r = CliRunner().invoke(analyze, ["datatypes", str(tmp_path), "--html", str(tmp_path / "rep.html")])
    assert r.exit_code == 0, r.output
    assert "GL2/3" in r.output and "typed slower than packed" in r.output
    assert "Plotly.newPlot(" in (tmp_path / "rep.html").read_text()
