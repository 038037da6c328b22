"""search: race on Intel MPI (scheduler/intel_race.py), run by the search driver from the planner's own spec on the
installed Intel MPI: round 0 measures every preset in an mpirun of its own next to the round's default mpirun
(same --mpirun-index), later rounds only the presets that beat the default, and the decision (the rules the
exhaustive path's runs get) pairs them per round.  On delay_interposer.py's virtual clock in its Intel mode every
preset but 3, and the library's default, is slowed at 8 B and 64 KiB; at 1 KiB all take the same ticks -- so
what the race keeps is fixed whatever the load (no timing is asserted).  Old code: the campaign refused
search: race on an Intel MPI module."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

import delay_interposer
from sched_helpers import ROOT

pytestmark = [pytest.mark.mpi]

CAMPAIGN = """name: ir
machine: hydra
modules: [{mpi: intelmpi}]
layouts: [{nodes: 1, ppn: 2}]
collectives:
  allreduce: {sizes: [8, 1024, 65536], search: race}
repetitions: {policy: fixed, nrep: 12}
mpiruns: 2
"""


def test_intel_race_drops_presets_between_mpirun_rounds_and_the_decision_pairs_them(tmp_path):
    from pgmpi_formats.results import read_file
    from scheduler import launchers
    from scheduler.campaign import load_campaign
    from scheduler.planner import plan
    from service.analysis.native_decision import decide, runs_from_files
    bench = ROOT / "build" / "install" / "intelmpi" / "bin" / "pgmpi-bench"
    if not bench.exists():
        pytest.fail(f"{bench} missing: deploy/build-lib.sh intelmpi (make test does)")
    (tmp_path / "c.yaml").write_text(CAMPAIGN)
    (job,) = plan(load_campaign(tmp_path / "c.yaml"))
    (search,) = [ln for ln in job.launches if ln.role == "search"]
    spec = json.loads(search.argv[1])
    assert spec["intel"]["presets"]["allreduce"] == 32
    spec["intel"]["presets"]["allreduce"] = 3        # presets 1-3: four mpiruns in round 0 keep the test short
    lib = launchers.library("intelmpi")
    env = {**os.environ, **lib.row.environment(), **lib.family.job_env(1, 2, False, os.geteuid() == 0, 2),
           "LD_PRELOAD": str(delay_interposer.build(tmp_path, "intelmpi")), "PGMPI_TEST_FAST_PRESET": "3",
           "PGMPI_TEST_ALGORITHM_BYTES": "8,65536", "PYTHONPATH": str(ROOT)}
    out = tmp_path / "job"
    out.mkdir()
    p = subprocess.run([sys.executable, "-m", "scheduler.native_driver", "--spec", json.dumps(spec), "--launcher",
                        shlex.join([lib.mpirun, "-np", "2"]), "--bench", str(bench), "--output",
                        str(out / search.output)], cwd=out, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    rep = json.loads((out / search.output).read_text())
    files = rep["files"]
    # round 0: the default and each preset alone; then only preset 3 (the others never beat the default) against
    # the default, at the two sizes where it won (1 KiB: every preset tied with the default, dropped)
    assert sorted(files[:4]) == sorted(f"search-0-r0-{t}.txt" for t in ("default", "native-1", "native-2",
                                                                        "native-3")), files
    assert sorted(files[4:]) == ["search-0-r1-default.txt", "search-0-r1-native-3.txt"], files
    for name in files:
        run = read_file(out / name)
        assert run.header["mpirun_index"] == name.split("-r")[1][0], name
        if name.startswith("search-0-r1"):
            assert sorted({int(m) for m in run.msize}) == [8, 65536], name
    paths = rep["paths"]["allreduce"]
    assert paths["8"]["choice"] == "native:3" and paths["1024"]["choice"] is None, paths
    res = decide(runs_from_files([out / f for f in files]))
    got = {size: d.choice for (k, size, _p), d in res.decisions.items()}
    assert got == {8: "native:3", 1024: "default", 65536: "native:3"}, {c: d.reason for c, d in res.decisions.items()}
