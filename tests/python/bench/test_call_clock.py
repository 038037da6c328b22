"""The call-clock control of tests/bench/reprompi_compare.py (issue 34): tests/bench/call_clock.c records every
measured call's entry and exit per rank on CLOCK_MONOTONIC; the reader turns them into per-measurement arrival
skew, own time and true global time, and the verdict names a cell "machine" or "start".  The reader and the
verdict on planted records (deterministic); the shim under real 2-rank runs of pgmpi-bench (through
libpgmpitune) and of tests/bench/min_loop.c (plain MPI calls, as ReproMPI makes them; ReproMPI itself is built
outside the tree, so its run under the shim is reprompi_compare.py's call-clock table, "mpiruns" and "extra")."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bench_scripts import bench_script

ROOT = Path(__file__).resolve().parents[3]
BOOT = "0b68cd93-4847-41d9-8600-8e69797d4c18"


def load():
    return bench_script("reprompi_compare", "reprompi_compare_cc")


def planted(tmp_path, lines, ids=((0, BOOT, "4026531834"), (1, BOOT, "4026531834")), lost=(0, 0)) -> Path:
    head = [f"clock {r} {b} {t} vm" for r, b, t in ids] + [f"lost {r} {n}" for r, n in enumerate(lost)]
    p = tmp_path / "cc.txt"
    p.write_text("\n".join(head + lines) + "\n")
    return p


# two measurements of Allreduce 8 B after one earlier MPI_BYTE call (not measured) and one MPI_DOUBLE agreement
# call (a tool's own message): rank 1 arrives 300 ns after rank 0 in the first, 100 ns before it in the second
LINES = ["0 allreduce 8 1 100 200", "1 allreduce 8 1 100 200",
         "0 allreduce 8 0 1000 1500", "1 allreduce 8 0 1000 1500",
         "0 allreduce 8 1 2000 2900", "1 allreduce 8 1 2300 2950",
         "0 allreduce 8 1 5100 5800", "1 allreduce 8 1 5000 5750"]


def test_the_reader_takes_skew_own_and_global_time_from_the_last_nrep_byte_calls(tmp_path):
    m = load()
    got, why = m.call_clock_read(planted(tmp_path, LINES), nrep=2)
    assert why is None
    w = got[("MPI_Allreduce", 8)]
    assert w.extra == 1
    assert w.skew == pytest.approx([300e-9, 100e-9])
    assert w.own == pytest.approx([650e-9, 700e-9])      # max exit - max entry
    assert w.glob == pytest.approx([950e-9, 800e-9])     # max exit - min entry


def test_the_reader_refuses_another_clock_lost_records_and_uneven_counts(tmp_path):
    m = load()
    other = ((0, BOOT, "4026531834"), (1, "another-kernel", "4026531834"))
    got, why = m.call_clock_read(planted(tmp_path, LINES, ids=other), 2)
    assert got == {} and "another clock" in why
    timens = ((0, BOOT, "4026531834"), (1, BOOT, "4026532999"))
    assert "another clock" in m.call_clock_read(planted(tmp_path, LINES, ids=timens), 2)[1]
    assert "lost" in m.call_clock_read(planted(tmp_path, LINES, lost=(0, 3)), 2)[1]
    uneven, why = m.call_clock_read(planted(tmp_path, LINES + ["0 allreduce 8 1 9000 9100"]), 2)
    assert why is None and ("MPI_Allreduce", 8) not in uneven
    short, _ = m.call_clock_read(planted(tmp_path, LINES), 4)
    assert short == {}


def witness(m, skew, own, n=20):
    return m.Witness([skew] * n, [own] * n, [skew + own] * n, 0)


RP_REP = [2.0e-6] * 4


def test_own_times_that_differ_as_the_reports_name_the_machine():
    m = load()
    rp = [witness(m, 0.5e-6, 1.0e-6)] * 4
    pg = [witness(m, 0.5e-6, 1.6e-6)] * 4
    reason, _ = m.call_clock_verdict(rp, pg, RP_REP, [x * 1.6 for x in RP_REP])
    assert reason is not None and reason.startswith("machine:")


def test_equal_own_times_and_a_larger_skew_name_that_tools_start():
    m = load()
    rp = [witness(m, 0.5e-6, 1.0e-6)] * 4
    pg = [witness(m, 1.5e-6, 1.0e-6)] * 4
    reason, _ = m.call_clock_verdict(rp, pg, RP_REP, [x * 1.5 for x in RP_REP])
    assert reason is not None and reason.startswith("start:") and "pgmpi-bench's start is worse" in reason
    # the other way round: ReproMPI's ranks arrive further apart and ReproMPI reports more
    reason, _ = m.call_clock_verdict(pg, rp, RP_REP, [x / 1.5 for x in RP_REP])
    assert reason is not None and "ReproMPI's start is worse" in reason


def test_nothing_is_named_where_the_witness_does_not_explain_the_reports():
    m = load()
    rp = [witness(m, 0.5e-6, 1.0e-6)] * 4
    # equal calls and equal skews, yet pgmpi-bench reports 1.5x: no reason
    reason, shown = m.call_clock_verdict(rp, rp, RP_REP, [x * 1.5 for x in RP_REP])
    assert reason is None and "own 1.00" in shown
    # a skew difference against the reports' direction names nothing either
    pg = [witness(m, 0.1e-6, 1.0e-6)] * 4
    assert m.call_clock_verdict(rp, pg, RP_REP, [x * 1.5 for x in RP_REP])[0] is None
    # own 1.6x where the reports differ 1.2x: not the same ratio
    pg = [witness(m, 0.5e-6, 1.6e-6)] * 4
    assert m.call_clock_verdict(rp, pg, RP_REP, [x * 1.2 for x in RP_REP])[0] is None


@pytest.fixture(scope="module")
def shim(bench, tmp_path_factory) -> Path:
    so = tmp_path_factory.mktemp("cc") / "libcall_clock.so"
    subprocess.run([f"mpicc.{bench.mpi}" if bench.mpi in ("openmpi", "mpich") else "mpicc", "-O2", "-shared",
                    "-fPIC", "-o", str(so), str(ROOT / "tests/bench/call_clock.c"), "-ldl"], check=True)
    return so


NREP = 40


@pytest.mark.parametrize("sync", [["--proc-sync=window", "--window-size=500"], ["--proc-sync=roundtime"]])
def test_pgmpi_bench_under_the_shim_shows_nrep_measured_calls_per_cell(bench, shim, tmp_path, sync):
    m = load()
    cc, out = tmp_path / "cc.txt", tmp_path / "out.txt"
    r = bench.run(["--calls=MPI_Allreduce,MPI_Bcast", "--algorithms=default", "--sizes=8,1024", f"--nrep={NREP}",
                   f"--output={out}", *sync], env={"LD_PRELOAD": str(shim), "CALL_CLOCK_FILE": str(cc)})
    assert r.rc == 0, r.stderr
    got, why = m.call_clock_read(cc, NREP)
    assert why is None
    assert set(got) == {(c, n) for c in ("MPI_Allreduce", "MPI_Bcast") for n in (8, 1024)}
    for w in got.values():
        assert len(w.own) == NREP and all(x > 0 for x in w.own)
        assert all(s >= 0 for s in w.skew) and all(g >= o for g, o in zip(w.glob, w.own))
    # pgmpi-bench ran through to its results file, every cell in it
    text = out.read_text()
    assert all(f"#@pgmpi alg {c} {n} default" in text for c in ("MPI_Allreduce", "MPI_Bcast") for n in (8, 1024))


def test_a_plain_mpi_loop_under_the_shim_has_exactly_nrep_calls(bench, shim, tmp_path):
    m = load()
    loop, cc = tmp_path / "min_loop", tmp_path / "cc.txt"
    subprocess.run([f"mpicc.{bench.mpi}" if bench.mpi in ("openmpi", "mpich") else "mpicc", "-O2", "-o", str(loop),
                    str(ROOT / "tests/bench/min_loop.c")], check=True)
    env = bench.env({"LD_PRELOAD": str(shim), "CALL_CLOCK_FILE": str(cc)})
    p = subprocess.run(bench.mpirun(2) + [str(loop), str(NREP), "allgather,bcast", "8"], capture_output=True,
                       text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    got, why = m.call_clock_read(cc, NREP)
    assert why is None
    assert {k: w.extra for k, w in got.items()} == {("MPI_Allgather", 8): 0, ("MPI_Bcast", 8): 0}
