"""pgmpi-dtbench (lib/bench/pgmpi_dtbench.c, bench_datatypes.c): every layout x description x pattern passes
its check round at 3 ranks on both MPIs, the raw file is read by pgmpi_formats with no special case, the
GL verdicts come out of it, a corrupted MPI_Unpack is caught by the check round, and bad options are refused."""
from __future__ import annotations

import copy
import subprocess

import pytest

from pgmpi_formats import footer
from pgmpi_formats.results import ResultSet, read_file


SMALL = ["--layouts=all", "--variants=1,2", "--blocksizes=2", "--sizes=3200", "--nrep=1"]

UNPACK_CORRUPTER = r"""
#include <mpi.h>
/* test-only: every MPI_Unpack flips the first byte it wrote */
int MPI_Unpack(const void *in, int insize, int *pos, void *out, int outcount, MPI_Datatype dt, MPI_Comm comm) {
    int rc = PMPI_Unpack(in, insize, pos, out, outcount, dt, comm);
    if (outcount > 0) ((unsigned char *)out)[0] ^= 0xFF;
    return rc;
}
"""


def _run(bench, args, np=3, env=None, timeout=240):
    dt = copy.copy(bench)            # the same launcher and environment as pgmpi-bench's tests
    dt.exe = bench.prefix / "bin" / "pgmpi-dtbench"
    if not dt.exe.exists():
        pytest.fail(f"{dt.exe} missing: run `deploy/build-lib.sh {bench.mpi}`")
    return dt.run(args, np=np, env=env, timeout=timeout)


def _checks(text: str) -> list[footer.Check]:
    return list(footer.records(text.splitlines(), footer.Check))


def test_every_case_checks_and_reads(bench, tmp_path):
    out = tmp_path / "dt.txt"
    p = _run(bench, SMALL + ["--datatype=MPI_DOUBLE", f"--output={out}"])
    assert p.rc == 0, p.stderr
    text = out.read_text()
    checks = _checks(text)
    fails = [c for c in checks if not c.ok]
    assert not fails, fails[:5]
    r = read_file(out)
    # every case of the plan: 3 patterns x (contiguous + 4 layouts x 2 variants + altrep + rowcol)
    assert len(set(r.tests)) == 3 * (1 + 8 + 2)
    descs = set(r.algorithms)
    assert {"typed", "contig", "packed", "vector", "nested", "tiled_struct", "indexed_block", "indexed",
            "struct_flat", "struct", "typed_control", "repaired"} <= descs
    # one row per measurement: --nrep=1 row per timed (test, msize, description) = per ok check line
    assert len(r) == len(checks)
    # the count column: tiled v1 A=2 at 3200 B of doubles = 400 elements in 200 blocks
    rows = [ln.split() for ln in text.splitlines() if ln.startswith("dt_pingpong_double_tiled_v1_a2 ")]
    counts = {(int(f[2]), f[5]): int(f[3]) for f in rows}
    assert counts[(3200, "typed")] == 200 and counts[(3200, "contig")] == 1 and counts[(3200, "tiled_struct")] == 40
    assert r.header["datatype"] == "MPI_DOUBLE" and r.nprocs == 3
    # layout signatures (libpgmpitune's, #@pgmpi dtsig): every description of a cell describes one message
    # (one `message=` signature per cell), the same layout has it in every pattern, different layouts differ
    sigs = [ln.split() for ln in text.splitlines() if ln.startswith("#@pgmpi dtsig ")]
    assert "dtsig_differs" not in text and len(sigs) >= len(checks) - 3 * 11   # packed etc. have one too
    per_layout: dict[tuple[str, int], set[str]] = {}
    for f in sigs:
        assert len(f[5]) == 16 and f[6].startswith("count=") and f[7].startswith("message=")
        layout = "_".join(f[2].split("_")[2:])                  # dt_<pattern>_<layout part>: pattern dropped
        per_layout.setdefault((layout, int(f[3])), set()).add(f[7][len("message="):])
    assert all(len(v) == 1 for v in per_layout.values()), per_layout
    assert len({next(iter(v)) for v in per_layout.values()}) == len(per_layout)
    cases = [ln.split() for ln in text.splitlines() if ln.startswith("#@pgmpi dtcase ")]
    assert all(any(x.startswith("signature=") for x in c) != ("layout=rowcol" in c) for c in cases)

    from service.analysis.datatypes import dt_verdicts
    vs = dt_verdicts(ResultSet.from_runs([r]))
    assert {v.guideline for v in vs} == {"GL1", "GL2/3", "GL4", "control", "repair"}
    assert all(v.verdict == "n/a" for v in vs)       # one mpirun: no paired sample
    from service.analysis.datatypes_report import render
    page = render(ResultSet.from_runs([r]), vs)
    # one heatmap per (library, pattern, base type), one detail table per layout of each
    assert page.count("Plotly.newPlot(") == 3 and page.count("<h3 id=") == 3 * 11


def test_corrupted_unpack_is_caught(bench, tmp_path):
    src, so = tmp_path / "corrupt.c", tmp_path / "libcorrupt.so"
    src.write_text(UNPACK_CORRUPTER)
    subprocess.run([f"mpicc.{bench.mpi}", "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    out = tmp_path / "dt.txt"
    p = _run(bench, ["--layouts=tiled,rowcol", "--variants=1", "--blocksizes=2", "--sizes=3200", "--nrep=2",
                     f"--output={out}"], env={"LD_PRELOAD": str(so)})
    assert p.rc == 0, p.stderr
    checks = _checks(out.read_text())
    bad = {(c.call, c.algorithm) for c in checks if c.status == "fail"}
    assert bad and all(alg == "packed" for _, alg in bad), bad
    assert len(bad) == 6                             # 3 patterns x (tiled, rowcol)
    assert all(c.why.split()[0] == "wrong_result" for c in checks if c.status == "fail")
    r = read_file(out)
    assert "packed" not in r.algorithms             # a description that failed its check is not timed


@pytest.mark.parametrize("args, needle", [
    (["--layouts=tiles"], "--layouts: unknown value 'tiles'; valid: all, contiguous, tiled"),
    (["--descriptions=vectr"], "--descriptions: unknown value 'vectr'"),
    (["--blocksizes=0"], "--blocksizes: bad value '0'"),
    (["--algorithms=default"], "--algorithms is pgmpi-bench's"),
    (["--interleave=size"], "one cell at a time"),
])
def test_bad_options_are_refused(bench, args, needle):
    p = _run(bench, args, np=0, timeout=60)
    assert p.rc == 2 and needle in p.stderr, (p.rc, p.stderr)
