"""deploy/scheduler: the self-resubmitting nightly job queues exactly one successor for tomorrow, then runs
the agent; the systemd units and the scrontab line name the real command."""
from __future__ import annotations

import subprocess
import time
from datetime import date, timedelta

import pytest

from sched_helpers import ROOT

DEPLOY = ROOT / "deploy" / "scheduler"


@pytest.mark.slurm
def test_nightly_job_resubmits_itself(tmp_path, slurm_env):
    fake = tmp_path / "pgmpi"
    fake.write_text(f"#!/bin/bash\necho \"$@\" > {tmp_path}/args\n")
    fake.chmod(0o755)
    env = dict(slurm_env, PGMPI=str(fake), PGMPI_AGENT_STATE=str(tmp_path / "state"),
               PGMPI_CAMPAIGNS="a.yaml b.yaml", PGMPI_NIGHTLY_AT="02:00",
               PGMPI_NIGHTLY_SCRIPT=str(DEPLOY / "pgmpi-agent-nightly.sbatch"),
               PGMPI_AGENT_LOG=str(tmp_path / "%j.out"))
    first = subprocess.run(["sbatch", "--parsable", f"--output={tmp_path}/%j.out",
                            str(DEPLOY / "pgmpi-agent-nightly.sbatch")],
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    successors = []
    try:
        end = time.time() + 60
        while time.time() < end and not (tmp_path / "args").exists():
            time.sleep(0.3)
        assert (tmp_path / "args").read_text().split() == [
            "agent", "nightly", "--state-dir", str(tmp_path / "state"), "--campaign", "a.yaml", "--campaign", "b.yaml"]
        out = subprocess.run(["squeue", "-h", "-n", "pgmpi-agent", "-t", "PENDING", "-o", "%i %S"], env=env,
                             capture_output=True, text=True).stdout.split("\n")
        successors = [ln.split()[0] for ln in out if ln.strip()]
        assert len(successors) == 1, out
        start = [ln.split()[1] for ln in out if ln.strip()][0]
        assert start == f"{date.today() + timedelta(days=1)}T02:00:00"
    finally:
        for j in successors + [first]:
            subprocess.run(["scancel", j], env=env)


def test_units_and_scrontab_run_the_agent():
    svc = (DEPLOY / "pgmpi-agent.service").read_text()
    assert "ExecStart=/opt/pgmpi-site/.venv/bin/pgmpi agent nightly --campaign" in svc
    assert "OnCalendar=*-*-* 02:00:00" in (DEPLOY / "pgmpi-agent.timer").read_text()
    cron = [ln for ln in (DEPLOY / "scrontab").read_text().splitlines() if ln and not ln.startswith("#")]
    assert cron[0].startswith("0 2 * * * ") and "agent nightly" in cron[0]
    from scheduler.campaign import load_campaign
    c = load_campaign(DEPLOY / "nightly.example.yaml")
    assert c.retry.states == ["FAILED", "NODE_FAIL"] and c.mpiruns == 5
    # replication across nights: the nightly example proposes a redirection only when two nights found it,
    # the demo's one-off campaign when it found it itself
    assert c.validation.confirmations == 2


def test_demo_campaign_needs_one_confirming_campaign(tmp_path):
    import importlib.util
    from scheduler.campaign import load_campaign
    spec = importlib.util.spec_from_file_location("pgmpi_demo", ROOT / "deploy" / "demo.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    (tmp_path / "demo.yaml").write_text(demo.CAMPAIGN.format(name="demo", machine="m1"))
    assert load_campaign(tmp_path / "demo.yaml").validation.confirmations == 1
