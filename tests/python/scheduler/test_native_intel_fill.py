"""A filled native.impi in a real Intel MPI job, loaded as users load it (the site's intelmpi module and the
pgmpitunelib module naming the file; libpgmpitune's MPI_Init sets its variables at the job's size).

Stored measurements (planted): preset 3 of MPI_Allreduce wins at 8 B and 64 KiB; at 4 KiB the default won, preset
3 is slower there and preset FILLER was measured as fast as the default (paired interval within the control arm's
spread).  Before fills the gapless file left allreduce to the library; now decide(library="intelmpi") fills 4 KiB
with FILLER and the file covers every size.  The validation job (scheduler/native_validation.py, local backend)
then shows, judged by service/analysis/native_validation.judge: every result bit-exact on exact data under the
file, the default and each preset, a non-commutative user operation correct under the file in every round, and
at 4 KiB the reduction's fingerprint under the file equals the forced FILLER's and differs from the default's:
the fill ran.  The ranks carry delay_interposer.py's virtual clock (preset 3 fast at 8 B and 64 KiB, every
preset equal at 4 KiB), so no timing decides the outcome, whatever the load."""
from __future__ import annotations

import subprocess
import sys

import pytest

import delay_interposer
from plain_module import module_tree as tunelib_modules
from sched_helpers import ROOT

pytestmark = [pytest.mark.mpi, pytest.mark.lmod]

VERSION, FAST, FILLER, WINS, FILL = "2021.13", 3, 8, (8, 65536), 4096
# per stored mpirun: default / FILLER at 4 KiB, and default / default_control everywhere (the spread: 2 %)
AS_FAST, CONTROL = (1.01, 0.995, 1.005, 1.0), (1.01, 0.99, 1.02, 0.985)


def _cells():
    from service.analysis.native_decision import Run
    cells = {}
    for size in (*WINS, FILL):
        for i in range(4):
            d = 2e-4 * (1 + 0.01 * i)
            m = {"default": d, "default_control": d / CONTROL[i], f"native:{FAST}": d / 2 if size in WINS else d * 1.5}
            if size == FILL:
                m[f"native:{FILLER}"] = d / AS_FAST[i]
            cells.setdefault(("allreduce", size, 2), []).append(Run(m))
    return cells


def test_a_filled_intel_file_runs_its_fill_with_correct_results(tmp_path):
    from pgmpi_formats import impi_adjust, native_file
    from pgmpi_formats import native_validation as nv
    from scheduler.backends import make_backend
    from scheduler.native_validation import NativeValidationJob
    from service.analysis.native_decision import decide
    from service.analysis.native_validation import judge
    bench = ROOT / "build" / "install" / "intelmpi" / "bin" / "pgmpi-bench"
    if not bench.exists():
        pytest.fail(f"{bench} missing: deploy/build-lib.sh intelmpi (make test does)")
    cells = _cells()
    res = decide(cells, library="intelmpi")
    assert res.left_to_library == {} and res.decisions[("allreduce", FILL, 2)].fill
    name, text = native_file.render("intelmpi", res.native_decisions(), version=VERSION)
    assert (f"\nI_MPI_ADJUST_ALLREDUCE={FAST}:0-4095@2-2;{FILLER}:4096-65535@2-2;{FAST}:65536-2147483647@2-2\n"
            in text), text

    subprocess.run([sys.executable, str(ROOT / "deploy" / "modules.py"), "--root", str(tmp_path / "mods"), "intelmpi"],
                   check=True, capture_output=True)
    modulepath = [str(tmp_path / "mods" / "Core"), str(tunelib_modules(tmp_path / "tunelib", "intelmpi"))]
    so = delay_interposer.build(tmp_path, "intelmpi")
    clock = [f"export LD_PRELOAD={so}", f"export PGMPI_TEST_FAST_PRESET={FAST}",
             f"export PGMPI_TEST_ALGORITHM_BYTES={','.join(map(str, WINS))}"]
    decided = [[k, s, p] for k, s, p in sorted(cells)]
    job = NativeValidationJob(tmp_path / "job", "ibox", "intelmpi", VERSION, name, text, "intelmpi/2021.13.1",
                              "pgmpitunelib/0.1.0", modulepath, rounds=3, nrep=5, extra_lines=clock,
                              decided_at=decided)
    backend = make_backend(None, "local")
    job.write(backend)
    job.submit(backend=backend, timeout=300)
    figs = job.figures()
    verdict = judge(nv.at_decided(nv.cells_of_impi(impi_adjust.parse(text, name, native_file.intel_target(VERSION)),
                                                   2), decided), figs, "intelmpi")
    assert verdict["state"] == "passed", verdict["problems"]
    by = {c["msize"]: c for c in verdict["cells"]}
    assert {s: c["label"] for s, c in by.items()} == {8: f"native:{FAST}", FILL: f"native:{FILLER}",
                                                      65536: f"native:{FAST}"}
    fill = figs[f"allreduce:{FILL}"]
    # correct: every check bit-exact (file, the library's default, the forced filler), a non-commutative
    # operation under the file in every round
    assert set(fill["checks"]) == {"file", "default", f"native:{FILLER}"}, fill["checks"]
    assert all(c == "ok" for arm in fill["checks"].values() for c in arm) and sorted(fill["noncommutative"]) == [1, 2, 3]
    # the filler ran: under the file the reduction leaves the forced filler's fingerprint, not the default's
    fp = fill["fingerprints"]
    assert set(fp["file"]) == set(fp[f"native:{FILLER}"]) != set(fp["default"]), fp
    assert by[FILL]["evidence"] == "fingerprint" and by[FILL]["separable"], by[FILL]
    # and preset 3 ran where it won: by its fingerprint at 64 KiB, by its time at 8 B (the virtual clock slows
    # every other preset there, in exact ticks; 3 rounds are too few for the judge's sign test to call it)
    assert by[65536]["evidence"] == "fingerprint" and by[65536]["separable"], by[65536]
    assert by[8]["file_time"] == by[8]["forced_time"] < by[8]["default_time"] / 2, by[8]
