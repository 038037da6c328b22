"""pgmpi-bench times what an independent minimal timing loop (tests/bench/min_loop.c) times, and nothing else.

Checked on the calls, not on the clock (issue 34: a timing assertion here failed a clean-clone CI on MPICH's
8-byte Bcast, paired ratios 1.12-2.36 against the loop): an LD_PRELOAD shim (call_trace.c, next to this file)
logs every MPI and PMPI call of each rank with its nesting depth, and in every (call, size) cell of
pgmpi-bench (three calls at 8 B and 64 KiB, `--sync=mpi_barrier`, the test's former options) the timed loop
must be what min_loop.c runs: nrep consecutive measurements of `Barrier, Wtime, <the cell's call>, Wtime`,
with nothing between two of them, one cell after the other, and inside the timed call one communication:
the library's own PMPI_<call> (libpgmpitune's default path; it may ask local questions such as
PMPI_Type_size). Stricter still, the timed call of the default takes the path an application takes with
libpgmpitune preloaded (report off): one PMPI_<call> and nothing else, not even PMPI_Type_size, which the
library asks only with its report on (issue 34: pgmpi-bench set PGMPITUNE_VERBOSE=1, and every timed call
ran the report's accounting; pgmpi-bench now suspends the report inside its timed loops, and the report's
alg/count lines come from the untimed calls). The two artefacts the old timing assertion guarded against fail this check by
construction: a clock read before the barrier (0b12df1 removed one: Open MPI's 8-byte Bcast 0.71x) breaks
every run of measurements into runs of one, and `--interleave=size` (every call of a size interleaved on
shared buffers: 1.42-1.52x at 64 KiB) mixes calls inside a run -- the test runs that option and expects the
check to find it. The shim must see every MPI function pgmpi-bench and libpgmpitune import (nm), or
"nothing else" would be unproven. The timing figure itself is printed by tests/bench/bench_vs_loop.py.
"""
from __future__ import annotations

import re
from collections import Counter
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.mpi

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
NREP = 10
CALLS = ("allreduce", "bcast", "allgather")
SIZES = "8,65536"
MPI_NAME = {"allreduce": "MPI_Allreduce", "bcast": "MPI_Bcast", "allgather": "MPI_Allgather"}
EXPECTED_CELLS = [(MPI_NAME[c], NREP) for _size in SIZES.split(",") for c in CALLS]
# local questions a call may ask inside a measurement: no message moves
LOCAL = re.compile(r"MPI_(Type_(size|get_extent|get_true_extent|get_envelope|get_name)|Comm_(rank|size|test_inter)"
                   r"|Op_commutative|Query_thread|Comm_get_attr)$")
BENCH_ARGS = [f"--calls={','.join(CALLS)}", "--algorithms=default", f"--sizes={SIZES}", f"--nrep={NREP}",
              "--sync=mpi_barrier", "--no-barrier-rows"]


def _build(bench, tmp_path) -> tuple[Path, Path]:
    shim, loop = tmp_path / "call_trace.so", tmp_path / "min_loop"
    for cmd in ([f"mpicc.{bench.mpi}", "-O2", "-shared", "-fPIC", "-o", str(shim), str(HERE / "call_trace.c"), "-ldl"],
                [f"mpicc.{bench.mpi}", "-O2", "-o", str(loop), str(ROOT / "tests/bench/min_loop.c")]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
    return shim, loop


def _mpi_symbols(path: Path, defined: bool) -> set[str]:
    out = subprocess.run(["nm", "-D", "--defined-only" if defined else "--undefined-only", str(path)],
                         capture_output=True, text=True, check=True).stdout
    return {f[-1] for f in (line.split() for line in out.splitlines()) if f and re.match(r"P?MPI_[A-Z]", f[-1])}


def _traced(bench, tmp_path: Path, name: str, program: list, shim: Path, preload: str = "",
            stdout: list | None = None) -> list[list[tuple[int, str]]]:
    """Runs program (pgmpi-bench's arguments, or another program) under the shim (then preload, when given);
    (depth, name) per rank. stdout, when given, gets the program's output."""
    out = tmp_path / name
    out.mkdir()
    env = bench.env({"LD_PRELOAD": ":".join(x for x in (str(shim), preload) if x), "PGMPI_CALL_TRACE_DIR": str(out)})
    cmd = bench.mpirun(2)
    if bench.mpi == "openmpi":   # Open MPI's mpirun passes only the variables it is told to
        cmd += ["-x", "LD_PRELOAD", "-x", "PGMPI_CALL_TRACE_DIR"]
    p = subprocess.run(cmd + [str(a) for a in program], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    if stdout is not None:
        stdout.append(p.stdout)
    traces = []
    for rank in (0, 1):
        lines = (out / f"trace.{rank}").read_text().split("\n")
        assert "OVERFLOW" not in lines
        traces.append([(int(d), n) for d, n in (line.split() for line in lines if line)])
    return traces


def timed_cells(trace: list[tuple[int, str]], local: re.Pattern | None = LOCAL) -> tuple[list[tuple[str, int]], list[str]]:
    """The runs of measurements in a rank's trace: (call, consecutive measurements) in order, where a
    measurement is `Barrier, Wtime, <call>, Wtime` at depth 0 (MPI_ and PMPI_ names alike); and what ran
    inside the timed calls besides local questions (local=None: besides nothing), one entry per call that
    did anything but one PMPI_<call>."""
    top, inner, cur = [], [], None
    for depth, name in trace:
        plain = name[1:] if name.startswith("PMPI_") else name
        if depth == 0:
            cur = []
            top.append((plain, cur))
        elif depth == 1 and cur is not None and not (local and local.search(plain)):
            cur.append(name)
    names = [n for n, _ in top]
    cells, odd, i = [], [], 0
    while i + 3 < len(names):
        call = names[i + 2]
        block = ["MPI_Barrier", "MPI_Wtime", call, "MPI_Wtime"]
        if names[i:i + 4] != block or call in ("MPI_Barrier", "MPI_Wtime"):
            i += 1
            continue
        n = 0
        while names[i:i + 4] == block:
            inside = top[i + 2][1]
            if inside not in ([], ["P" + call]) or top[i][1]:   # the loop's own call; one PMPI_<call> in libpgmpitune
                odd.append(f"{call}: {' '.join(top[i][1] + inside)}")
            n += 1
            i += 4
        cells.append((call, n))
    return cells, odd


def test_pgmpi_bench_times_only_what_a_minimal_loop_times(bench, tmp_path):
    shim, loop = _build(bench, tmp_path)
    lib = bench.prefix / "lib" / "libpgmpitune.so"
    imported = set().union(*(_mpi_symbols(x, False) for x in (bench.exe, lib, loop)))
    unseen = imported - _mpi_symbols(shim, True)
    assert not unseen, f"call_trace.c does not wrap {sorted(unseen)}: add them, or 'nothing else' is unproven"

    # the control: the independent loop is seen as the plain loop it is
    for rank, trace in enumerate(_traced(bench, tmp_path, "loop", [loop, NREP, ",".join(CALLS), SIZES], shim)):
        assert timed_cells(trace) == (EXPECTED_CELLS, []), f"min_loop rank {rank}: {timed_cells(trace)}"

    # an application's path: the same loop with libpgmpitune preloaded, its report off (the default)
    for rank, trace in enumerate(_traced(bench, tmp_path, "app", [loop, NREP, ",".join(CALLS), SIZES], shim,
                                         preload=str(lib))):
        assert timed_cells(trace, local=None) == (EXPECTED_CELLS, []), f"application rank {rank}: {timed_cells(trace)}"

    report: list[str] = []
    for rank, trace in enumerate(_traced(bench, tmp_path, "bench", [bench.exe] + BENCH_ARGS, shim, stdout=report)):
        cells, odd = timed_cells(trace)
        assert cells == EXPECTED_CELLS, (f"rank {rank}: pgmpi-bench's timed loops are not {NREP} plain measurements "
                                         f"per cell, one cell after the other: {len(cells)} runs, {cells[:6]} ...")
        assert not odd, f"rank {rank}: more than the cell's call inside a measurement: {odd[:5]}"
        _, asked = timed_cells(trace, local=None)
        assert not asked, f"rank {rank}: a timed call took more than an application's path (report on?): {asked[:5]}"
    # ... while the report still names what ran in every cell, counted on the untimed calls only: the check
    # round's one and the one that evens the cell's NREP + 1 calls out (bench_measure.c, even_out_runs)
    counts = {(f[2], int(f[3]), f[4]): int(f[5]) for f in (ln.split() for ln in report[0].splitlines())
              if f[:2] == ["#@pgmpi", "count"]}
    assert counts == {(MPI_NAME[c], int(n), "default"): 2 for c in CALLS for n in SIZES.split(",")}, counts

    # the check has teeth: every call of a size interleaved (the 64 KiB artefact) is not a plain loop
    for rank, trace in enumerate(_traced(bench, tmp_path, "interleaved", [bench.exe, "--interleave=size"]
                                         + BENCH_ARGS, shim)):
        assert timed_cells(trace)[0] != EXPECTED_CELLS, f"rank {rank}: --interleave=size went unseen"


def _between_measurements(trace: list[tuple[int, str]], call: str) -> Counter:
    """What a rank calls between two consecutive calls of `call` (depth 0; clock reads and local questions
    left out), counted by sequence: the most common one is what runs between two measurements of a cell."""
    names = [n for d, n in trace if d == 0 and n not in ("MPI_Wtime", "PMPI_Wtime")
             and not LOCAL.search(n[1:] if n.startswith("PMPI_") else n)]
    at = [i for i, n in enumerate(names) if n == call]
    return Counter(tuple(names[a + 1:b]) for a, b in zip(at, at[1:]))


def test_start_agreement_reprompi_sends_reprompis_messages_and_the_default_none_one_way(bench, tmp_path):
    """--start-agreement=reprompi (issue 34's control for the round-time and window cells that disagree with
    ReproMPI): round-time agrees on every start with ReproMPI's messages -- MPI_Barrier, rank 0's start sent
    down a tree, the flags exchanged after the measurement -- where the default sends one MPI_Allreduce and no
    one-way message; window shares T0 by MPI_Bcast where the default reduces.  Checked on the calls."""
    shim, _ = _build(bench, tmp_path)
    args = ["--calls=allgather", "--algorithms=default", "--sizes=8,1024", "--nrep=12", "--no-barrier-rows"]
    expect = {
        "allreduce": [("PMPI_Allreduce",)] * 2,
        "reprompi": [("PMPI_Sendrecv", "PMPI_Barrier", "PMPI_Send"), ("PMPI_Sendrecv", "PMPI_Barrier", "PMPI_Recv")],
    }
    for how, per_rank in expect.items():
        out: list[str] = []
        traces = _traced(bench, tmp_path, f"rt-{how}", [bench.exe, "--proc-sync=roundtime",
                                                        f"--start-agreement={how}"] + args, shim, stdout=out)
        assert f"#@start_agreement={how}" in out[0]
        for rank, trace in enumerate(traces):
            (seq, n), = _between_measurements(trace, "MPI_Allgather").most_common(1)
            assert (seq, n >= 2 * (12 - 1)) == (per_rank[rank], True), f"round-time {how}, rank {rank}: {seq} x{n}"
        win = _traced(bench, tmp_path, f"win-{how}", [bench.exe, "--proc-sync=window", "--window-size=200",
                                                       f"--start-agreement={how}"] + args, shim)
        for rank, trace in enumerate(win):
            (seq, _n), = _between_measurements(trace, "MPI_Allgather").most_common(1)
            assert seq == (), f"window {how}, rank {rank}: between two measurements {seq}"
            bcasts = sum(1 for d, n in trace if d == 0 and n == "PMPI_Bcast")
            assert (bcasts > 0) == (how == "reprompi"), f"window {how}, rank {rank}: {bcasts} PMPI_Bcast"

