"""pgmpi-bench's check round, control arm, default-vs-tuned interleaving and buffer parameters."""
from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest

from pgmpi_formats import results as reader

from test_pgmpi_bench import pgmpi_lines, strict_parse

pytestmark = pytest.mark.mpi

# A test-only interposer in front of the MPI library: MPI_Bcast of 1000 MPI_BYTEs comes back with one
# byte flipped, of 2000 MPI_BYTEs with MPI_ERR_COUNT (on every rank, so nobody waits).  libpgmpitune's
# default path and bcast_as_packed_bcast call PMPI_Bcast on the n bytes, the other mock-ups do not, so
# only those two are wrong.
PLANTED = {"default", "bcast_as_packed_bcast"}
PLANT = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
int PMPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    static int (*real)(void *, int, MPI_Datatype, int, MPI_Comm);
    if (!real) real = (int (*)(void *, int, MPI_Datatype, int, MPI_Comm))dlsym(RTLD_NEXT, "PMPI_Bcast");
    if (dt == MPI_BYTE && count == 2000) return MPI_ERR_COUNT;
    int rc = real(buf, count, dt, root, comm);
    if (dt == MPI_BYTE && count == 1000) ((unsigned char *)buf)[7] ^= 0x10;
    return rc;
}
"""


@pytest.fixture(scope="module")
def plant(bench, tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp(f"plant-{bench.mpi}")
    (d / "plant.c").write_text(PLANT)
    subprocess.run([f"mpicc.{bench.mpi}", "-shared", "-fPIC", "-o", str(d / "plant.so"), str(d / "plant.c"), "-ldl"],
                   check=True, capture_output=True)
    return d / "plant.so"


def test_check_round_records_wrong_results_and_errors_and_skips_those_algorithms(bench, plant, tmp_path):
    out = tmp_path / "check.txt"
    r = bench.run(["--calls=bcast", "--sizes=8,1000,2000", "--nrep=4", "--no-barrier-rows", f"--output={out}"],
                  env={"LD_PRELOAD": str(plant)})
    assert r.rc == 0, r.stderr
    header, rows, footer = strict_parse(out.read_text())
    assert header["check"] == "yes"
    checks = {(c, int(n), a): rest for c, n, a, *rest in pgmpi_lines(footer, "check")}
    mockups = bench.algorithms()["MPI_Bcast"]
    assert set(checks) == {("MPI_Bcast", n, a) for n in (8, 1000, 2000) for a in mockups}
    for a in PLANTED:
        wrong = checks[("MPI_Bcast", 1000, a)]
        assert wrong[:2] == ["fail", "wrong_result"] and "byte=7" in wrong, wrong
        err = checks[("MPI_Bcast", 2000, a)]
        assert err[:2] == ["fail", "error"], err
    assert all(v == ["ok"] for k, v in checks.items() if k[1] == 8 or k[2] not in PLANTED)
    timed = Counter((n, a) for _, _, n, _, a in rows)
    for n in (8, 1000, 2000):
        for a in mockups:
            failed = a in PLANTED and n != 8
            assert timed[(n, a)] == (0 if failed else 4), (n, a, timed[(n, a)])
    assert "failed its check" in r.stderr
    # the analysis still reads the file; the failed cells simply have no default rows
    assert len(reader.read_file(out)) == len(rows)


def test_check_passes_for_every_call_and_algorithm_with_typed_reductions(bench):
    """Every mock-up and the default give the exact result on 3 ranks (uneven Reduce_scatter blocks),
    for a signed narrow sum and a floating product -- else the check would refuse them."""
    for dt, op in (("MPI_SIGNED_CHAR", "MPI_SUM"), ("MPI_DOUBLE", "MPI_PROD")):
        r = bench.run(["--nrep=1", "--sizes=24,1000", f"--datatype={dt}", f"--operation={op}", "--root=1"], np=3)
        assert r.rc == 0, r.stderr
        _h, _rows, footer = strict_parse(r.stdout)
        checks = pgmpi_lines(footer, "check")
        assert checks and all(c[3] == "ok" for c in checks), [c for c in checks if c[3] != "ok"]


def test_check_can_be_switched_off(bench):
    r = bench.run(["--calls=bcast", "--sizes=8", "--nrep=2", "--check=no"])
    assert r.rc == 0, r.stderr
    h, rows, footer = strict_parse(r.stdout)
    assert h["check"] == "no" and not pgmpi_lines(footer, "check")
    # the report counts untimed calls only: without a check round two untimed calls still say what the
    # library ran for every algorithm measured
    measured = {a for *_, a in rows}
    assert "default" in measured and len(measured) > 1
    assert sorted(a for _c, _n, a in pgmpi_lines(footer, "alg")) == sorted(measured), footer


def test_control_arm_and_tuned_interleave_with_default_in_every_round(bench, tmp_path):
    """default, default_control and tuned (the profile's choice) are measured round by round in one
    mpirun; default_control is the forced default under its own label."""
    pdir = tmp_path / "profiles"
    pdir.mkdir()
    (pdir / "allreduce_p2.prf").write_text(
        "#@pgmpi profile_version 1\nMPI_Allreduce\n2\n1\n1 allreduce_as_reduce_bcast\n1\n1024 1024 1\n")
    out = tmp_path / "ctl.txt"
    r = bench.run(["--calls=allreduce", "--sizes=1K", "--nrep=6", "--algorithms=default,default_control,tuned",
                   "--no-barrier-rows", f"--output={out}"], env={"PGMPITUNE_PROFILE_DIR": str(pdir)})
    assert r.rc == 0, r.stderr
    _h, rows, footer = strict_parse(out.read_text())
    seq = [a for *_, a in rows]
    rounds = [seq[i:i + 3] for i in range(0, len(seq), 3)]
    assert len(rounds) == 6 and all(sorted(x) == ["default", "default_control", "tuned"] for x in rounds)
    counts = {(c, int(n), a): int(k) for c, n, a, k in pgmpi_lines(footer, "count")}
    # the library ran its default for default and default_control, the mock-up for tuned; it counts the
    # untimed calls (the report is suspended in the 6 timed ones): 1 check + 1 call that makes the cell's
    # 7 calls even (bench_measure.c, even_out_runs)
    assert counts[("MPI_Allreduce", 1024, "default")] == 2 * 2
    assert counts[("MPI_Allreduce", 1024, "allreduce_as_reduce_bcast")] == 2
    run = reader.read_file(out)
    assert "default_control" in run.algorithms


def test_buffer_parameters_are_recorded_and_checked(bench):
    r = bench.run(["--calls=allreduce", "--sizes=1M", "--nrep=2", "--buffers=once", "--buffer-align=page"])
    assert r.rc == 0, r.stderr
    h, _r, _f = strict_parse(r.stdout)
    assert (h["buffers"], h["buffer_align"], h["buffer_touch"], h["buffer_page_offsets"]) == ("once", "4096", "yes", "0,0")
    # the default: a fresh pair per (call, size), as an application allocates; each recorded in the footer
    r = bench.run(["--calls=allreduce,allgather", "--sizes=64K,1M", "--nrep=2"])
    assert r.rc == 0, r.stderr
    h, _r, footer = strict_parse(r.stdout)
    assert (h["buffers"], h["buffer_align"], h["buffer_touch"], h["interleave"]) == ("cell", "malloc", "yes", "cell")
    cells = {(c, int(n)): kv for c, n, *kv in pgmpi_lines(footer, "buffers")}
    assert set(cells) >= {(c, n) for c in ("MPI_Allreduce", "MPI_Allgather") for n in (65536, 1048576)}
    for kv in cells.values():
        so, ro = map(int, kv[0].removeprefix("page_offsets=").split(","))
        assert 0 <= so < 4096 and 0 <= ro < 4096 and kv[1] == "touched=yes"
    # ReproMPI writes zeros into Allreduce's and Bcast's buffers and leaves Allgather's as calloc gives them
    r = bench.run(["--method=reprompi", "--calls=bcast,allgather", "--sizes=8", "--nrep=2"])
    h, _r, footer = strict_parse(r.stdout)
    assert (h["buffers"], h["buffer_touch"], h["check"], h["sync"], h["interleave"]) == \
        ("cell", "reprompi", "no", "MPI_Barrier", "cell")
    touched = {c: kv[1] for c, _n, *kv in pgmpi_lines(footer, "buffers")}
    assert touched == {"MPI_Bcast": "touched=yes", "MPI_Allgather": "touched=no", "MPI_Barrier": "touched=yes"}
    r = bench.run(["--buffers=once", "--buffer-touch=reprompi"], np=0)
    assert r.rc == 2 and "--buffers=cell" in r.stderr
    r = bench.run(["--buffer-align=3000"], np=0)
    assert r.rc == 2 and "--buffer-align" in r.stderr and "power of two" in r.stderr
