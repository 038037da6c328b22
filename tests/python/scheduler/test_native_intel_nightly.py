"""The nightly native chain reaches Intel MPI, hands-off: `pgmpi agent nightly` with a campaign file whose Intel
MPI module asks for presets 2 and 3 of MPI_Allreduce (`algorithms: [default, native:2, native:3]`) runs until
it is idle, and nobody types a command in between: the measurement job (per mpirun index the default mpirun
and one mpirun per preset, I_MPI_ADJUST_ALLREDUCE=<p> without ranges, order alternating: Intel MPI reads the
variable once at MPI_Init, so a preset cannot be interleaved with the default), the upload, the analysis, the
decision paired by mpirun index (POST /native/candidates -> native.impi), its validation job as users load it
(scheduler/native_validation.py), the verdict and the publication into the library's versioned set.

Through the local backend (Intel MPI's own hydra mpirun after `module load` of the site's module) on the
virtual clock of delay_interposer.py in its Intel mode: every preset but 3, and the library's default, is
slowed at 8 B and 64 KiB, so preset 3 wins at both measured sizes whatever the load; one range, no gap (a
gapped file fails, by Intel MPI's own behaviour: test_native_intel.py).  On the old code pgmpi-bench refused
native:3 on Intel MPI ("exposes no algorithm control variables"): the measurement job failed, nothing was
decided, nothing published."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

import delay_interposer
from plain_module import module_tree as tunelib_modules
from sched_helpers import ROOT, add_machine, campaign_file, tiny_campaign

pytestmark = [pytest.mark.postgres, pytest.mark.mpi, pytest.mark.lmod]

SIZES = (8, 65536)
VERSION = "2021.13"


def test_nightly_intel_campaign_measures_presets_alone_and_publishes_native_impi(tmp_path, service,
                                                                                  monkeypatch):
    from scheduler.cli import agent as agent_cli
    from scheduler.state import State
    from service.profiles import publish as pub
    if not (ROOT / "build" / "install" / "intelmpi" / "bin" / "pgmpi-bench").exists():
        pytest.fail("build/install/intelmpi missing: deploy/build-lib.sh intelmpi (make test does)")
    so = delay_interposer.build(tmp_path, "intelmpi")
    subprocess.run([sys.executable, str(ROOT / "deploy" / "modules.py"), "--root", str(tmp_path / "mods"), "intelmpi"],
                   check=True, capture_output=True)
    token = add_machine(service, "inight", role="agent")
    (tmp_path / "token").write_text(token)
    root = tmp_path / "profiles"
    monkeypatch.setitem(service.app.config, "PGMPI_PROFILE_ROOT", str(root))
    cdef = tiny_campaign(
        "in", "inight", tmp_path, ROOT / "build" / "install", backend="local",
        modules=[{"name": "intelmpi/2021.13.1", "mpi": "intelmpi", "modulepath": [str(tmp_path / "mods" / "Core")],
                  "env": {"LD_PRELOAD": str(so), "PGMPI_TEST_FAST_PRESET": "3",
                          "PGMPI_TEST_ALGORITHM_BYTES": ",".join(map(str, SIZES))}}],
        collectives={"allreduce": {"sizes": list(SIZES), "algorithms": ["default", "native:2", "native:3"]}},
        algorithms=["default"], mpiruns=2, repetitions={"policy": "fixed", "nrep": 5},
        service={"url": service.url, "token_file": str(tmp_path / "token")},
        validation={"enabled": True, "nrep": 5},
        native={"tunelib_module": "pgmpitunelib/0.1.0", "modulepath": [str(tunelib_modules(tmp_path / "tl", "intelmpi"))],
                "rounds": 3, "nrep": 3, "publish": True})
    f = campaign_file(tmp_path / "nightly.yaml", **cdef)
    r = CliRunner().invoke(agent_cli, ["nightly", "--campaign", str(f), "--state-dir", str(tmp_path / "state"),
                                       "--interval", "0.5", "--date", "20261126", "--max-hours", "0.2"])
    assert r.exit_code == 0, r.output

    jobs = {row["key"]: row for row in State(tmp_path / "state").jobs("in-20261126")}
    measure = [row for row in jobs.values() if row["kind"] == "measure"]
    assert [row["state"] for row in measure] == ["COMPLETED"], [(k, x["state"], x["reason"]) for k, x in jobs.items()]
    # per mpirun index: the default mpirun and one per preset, the same index, the order alternating
    spec = json.loads(measure[0]["spec"])
    order = [(ln["index"], ln["output"], ln["env"]) for ln in spec["launches"]]
    ev = {"PGMPI_NATIVE_EVIDENCE": "1"}        # the default mpirun fingerprints its reductions too
    assert order == [(0, "run-0.txt", ev), (0, "run-0-native-2.txt", {"I_MPI_ADJUST_ALLREDUCE": "2"}),
                     (0, "run-0-native-3.txt", {"I_MPI_ADJUST_ALLREDUCE": "3"}),
                     (1, "run-1-native-3.txt", {"I_MPI_ADJUST_ALLREDUCE": "3"}),
                     (1, "run-1-native-2.txt", {"I_MPI_ADJUST_ALLREDUCE": "2"}), (1, "run-1.txt", ev)], order
    adir = tmp_path / "state"
    default = next(p.read_text() for p in adir.rglob("run-1.txt"))
    assert "#@pgmpi fingerprint MPI_Allreduce 65536 default " in default, default[-2000:]
    raw = {p.name: p.read_text() for p in adir.rglob("run-1-native-3.txt")}
    assert raw, "no preset mpirun's raw file"
    text = next(iter(raw.values()))
    # pgmpi-bench labelled the rows itself, under the variable Intel MPI read at MPI_Init
    assert "#@mpirun_index=1" in text and "#@native_switch=preset_at_mpi_init" in text, text[:2000]
    # each preset's fingerprint per size, next to the default's: what shows a preset cannot stand in for the
    # default in a gap (impi_adjust.trim)
    assert "#@pgmpi fingerprint MPI_Allreduce 65536 native:3 " in text, text[-2000:]
    rows = [ln.split() for ln in text.splitlines() if ln.startswith("MPI_Allreduce ")]
    assert rows and {x[-1] for x in rows} == {"native:3"}, rows[:3]

    # the candidate decided from the paired mpiruns, validated as users load it and published
    native_jobs = sorted((row for row in jobs.values() if row["kind"] == "native-validate"), key=lambda x: x["key"])
    assert [(row["key"], row["state"]) for row in native_jobs] == [("native-intelmpi-2021.13.1-c1", "COMPLETED")], r.output
    live = pub.published_files(root, "inight", "intelmpi", VERSION)
    assert set(live) == {"native.impi"}, r.output
    assert "\nI_MPI_ADJUST_ALLREDUCE=3:0-2147483647@2-2\n" in live["native.impi"], live["native.impi"]

    def _records():
        from sqlalchemy import select
        from service.store.db import db
        from service.store.models import NativeValidation
        recs = db.session.scalars(select(NativeValidation).where(NativeValidation.machine == "inight")).all()
        return [(x.state, x.verdict["cells"]) for x in recs]
    recs = service.query(_records)
    assert [x[0] for x in recs] == ["passed"], recs
    cells = {c["msize"]: c for c in recs[0][1]}
    assert set(cells) == set(SIZES) and {c["label"] for c in cells.values()} == {"native:3"}, cells
    assert all(c["ratio"] > 1 and not c["problems"] for c in cells.values()), cells
