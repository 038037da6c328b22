"""`pgmpi campaign|agent` commands: dry run prints the plan and node-hours, bad files name the field,
budget refusal, status/cancel by name on the local backend."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from service.cli import main

from sched_helpers import ROOT


def test_dry_run_and_errors(tmp_path, mpi_modulepath, monkeypatch):
    monkeypatch.setenv("MODULEPATH", str(mpi_modulepath))     # the site's openmpi/4.1.4 and mpich/4.0.2
    r = CliRunner().invoke(main, ["campaign", "submit", str(ROOT / "deploy/scheduler/nightly.example.yaml"),
                                  "--dry-run", "--state-dir", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "estimate: 6 job(s), 120 mpirun launch(es)" in r.output and "node-hours" in r.output
    assert not (tmp_path / "agent.db").exists()          # a dry run submits and records nothing
    bad = tmp_path / "bad.yaml"
    bad.write_text((ROOT / "deploy/scheduler/nightly.example.yaml").read_text().replace("mpiruns: 5", "mpiruns: 0"))
    r = CliRunner().invoke(main, ["campaign", "submit", str(bad), "--dry-run"])
    assert r.exit_code != 0 and "bad.yaml:" in r.output and "mpiruns: Input should be greater than or equal to 1" in r.output
    # pre-flight: a module Lmod does not know, or an MPI flavour the launcher does not know, fails the dry run
    nomod = tmp_path / "nomod.yaml"
    nomod.write_text((ROOT / "deploy/scheduler/nightly.example.yaml").read_text().replace("mpich/4.0.2", "mpich/9.9"))
    r = CliRunner().invoke(main, ["campaign", "submit", str(nomod), "--dry-run", "--state-dir", str(tmp_path)])
    assert r.exit_code != 0 and "'mpich/9.9' (mpi mpich) is not available" in r.output and "estimate" not in r.output
    flav = tmp_path / "flav.yaml"
    flav.write_text((ROOT / "deploy/scheduler/nightly.example.yaml").read_text().replace("mpi: mpich", "mpi: mvapich"))
    r = CliRunner().invoke(main, ["campaign", "submit", str(flav), "--dry-run"])
    assert r.exit_code != 0 and "flav.yaml:" in r.output and "unknown MPI library 'mvapich'; valid: openmpi, mpich, openmpi5, mpich5, intelmpi" in r.output
    over = tmp_path / "over.yaml"
    over.write_text((ROOT / "deploy/scheduler/nightly.example.yaml").read_text().replace("node_hours: 40", "node_hours: 0.01"))
    r = CliRunner().invoke(main, ["campaign", "submit", str(over), "--state-dir", str(tmp_path)])
    assert r.exit_code != 0 and "above budget.node_hours = 0.01" in r.output
    assert not (tmp_path / "agent.db").exists()


@pytest.mark.mpi
def test_submit_status_cancel_local(tmp_path):
    c = tmp_path / "c.yaml"
    c.write_text(f"""name: clitest
machine: box
backend: local
modules: [{{mpi: openmpi, prologue: ["sleep 60"]}}]
layouts: [{{nodes: 1, ppn: 2}}]
collectives: {{allreduce: {{sizes: [8]}}}}
mpiruns: 1
bench_root: {ROOT / 'build/install'}
""")
    sd = str(tmp_path / "state")
    r = CliRunner().invoke(main, ["campaign", "submit", str(c), "--state-dir", sd])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["campaign", "status", "clitest", "--state-dir", sd, "--json"])
    st = json.loads(r.output)
    assert st["jobs"] == 1 and set(st["states"]) <= {"PENDING", "RUNNING"}
    assert r.exit_code == 3 and st["exit_code"] == 3 and st["state_dir"] == sd      # in progress
    r = CliRunner().invoke(main, ["campaign", "status", "clitest", "--state-dir", sd])
    assert r.exit_code == 3 and f"state dir: {sd}" in r.stderr
    r = CliRunner().invoke(main, ["campaign", "cancel", "clitest", "--state-dir", sd])
    assert r.exit_code == 0 and "cancelled 1 job(s) of clitest" in r.output
    r = CliRunner().invoke(main, ["campaign", "status", "clitest", "--state-dir", sd, "--json"])
    assert json.loads(r.output)["states"] == {"CANCELLED": 1} and r.exit_code == 4   # ended, not completed
