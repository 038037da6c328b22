"""pgmpi-bench's clock-based synchronisations (--proc-sync=window, roundtime; lib/bench/bench_clock.c): valid
output on 2 and 4 ranks, the method recorded and read back, every measurement accounted for (written, or
counted invalid because a rank started it late), the clock model checked after every cell. Behaviour only:
how many measurements a loaded machine invalidates is measured by tests/bench/sync_methods.py."""
from __future__ import annotations

import math

import pytest

from pgmpi_formats.results import parse_text

NREP = 12
SIZES = (8, 1024)


@pytest.mark.parametrize("np_", [2, 4])
@pytest.mark.parametrize("method", ["window", "roundtime"])
def test_clock_methods_write_valid_output(bench, method, np_):
    # 20 ms windows: 4 ranks share 2 loaded cores here
    extra = ["--window-size=20000", "--wait-time=2000"] if method == "window" else []
    r = bench.run(["--calls=allreduce,bcast", f"--sizes={','.join(map(str, SIZES))}", "--algorithms=default",
                   "--no-barrier-rows", f"--nrep={NREP}", f"--proc-sync={method}", *extra], np=np_, timeout=300)
    assert r.rc == 0, r.stderr
    run = parse_text(r.stdout, f"{method}.txt")
    h = run.header
    assert run.sync == method and h["sync"] == method
    assert (h["clocktype"], h["runtime_type"], h["clocksync"]) == ("global", "global", "HCA_offset_ref0")
    assert int(h["nprocs"]) == np_ and (method != "window" or float(h["window_size_sec"]) == 0.02)
    lines = [ln.split() for ln in run.pgmpi_lines]
    for call in ("MPI_Allreduce", "MPI_Bcast"):
        ti = run.tests.index(call) if call in run.tests else -1    # every measurement of a call may be late
        for s in SIZES:
            sel = (run.test == ti) & (run.msize == s)
            rt = run.runtime[sel]
            assert all(math.isfinite(x) and 0 < x < 1.0 for x in rt.tolist()), rt
            invalid = sum(int(x[5]) for x in lines if x[1] == "invalid" and x[2:4] == [call, str(s)])
            assert len(rt) + invalid == NREP, (call, s, len(rt), invalid)
            # the model was checked after the cell: a finite error under a window
            err = [float(x[4]) for x in lines if x[1] == "clockcheck" and x[2:4] == [call, str(s)]]
            assert len(err) == 1 and 0 <= err[0] < 0.02, err
            # the model's offset of every rank > 0 after the cell (the clock control of reprompi_compare.py)
            offs = [ln.split()[4:] for ln in r.stdout.splitlines() if ln.startswith(f"# clockmodel {call} {s} ")]
            assert len(offs) == 1 and len(offs[0]) == np_ - 1 and all(math.isfinite(float(v)) for v in offs[0]), offs
    if method == "roundtime":       # a start agreed before each measurement: late ones are the exception
        assert len(run) > 0


def test_clock_options_are_refused_with_the_barriers(bench):
    r = bench.run(["--calls=bcast", "--sizes=8", "--nrep=2", "--proc-sync=mpi_barrier", "--window-size=100"], np=0)
    assert r.rc == 2 and "--window-size/--wait-time belong to --proc-sync=window (now MPI_Barrier)" in r.stderr
    r = bench.run(["--calls=bcast", "--sizes=8", "--nrep=2", "--proc-sync=hca"], np=0)
    assert r.rc == 2 and "valid: dissem, mpi_barrier, window, roundtime" in r.stderr


def test_start_agreement_is_refused_with_the_barriers_and_named_choices(bench):
    r = bench.run(["--calls=bcast", "--sizes=8", "--nrep=2", "--proc-sync=mpi_barrier", "--start-agreement=reprompi"], np=0)
    assert r.rc == 2 and "--start-agreement belongs to --proc-sync=window or roundtime (now MPI_Barrier)" in r.stderr
    r = bench.run(["--calls=bcast", "--sizes=8", "--nrep=2", "--proc-sync=roundtime", "--start-agreement=bcast"], np=0)
    assert r.rc == 2 and "valid: allreduce, reprompi" in r.stderr
