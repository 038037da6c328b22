"""Fault tests on the real Slurm + PostgreSQL service: agent killed and restarted, service down while
jobs finish, a job that fails (bad module name), one that times out, slurmctld restarted mid-campaign.
Every test checks: nothing lost (every expected run stored) and nothing uploaded twice."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from scheduler.runner import make_agent

from sched_helpers import ROOT, add_machine, campaign_file, tiny_campaign

pytestmark = [pytest.mark.slurm, pytest.mark.postgres, pytest.mark.mpi, pytest.mark.lmod]


def stored(service, campaign: str):
    """(runs as (library, mpirun_index, file), uploads, jobs {key: (state, reason)}) in the service."""
    from sqlalchemy import select
    from service.store.db import db
    from service.store.models import Campaign, Job, Run, Upload

    def _q():
        cid = db.session.scalar(select(Campaign.id).where(Campaign.name == campaign))
        runs = db.session.scalars(select(Run).where(Run.campaign_id == cid)).all()
        ups = db.session.scalars(select(Upload).where(Upload.campaign_id == cid)).all()
        jobs = db.session.scalars(select(Job).where(Job.campaign_id == cid)).all()
        return ([(r.library.name, r.mpirun_index, r.file_name) for r in runs], [u.upload_id for u in ups],
                {j.job_key: (j.state, j.reason, j.slurm_job_id) for j in jobs})
    return service.query(_q)


def slurm_jobs_named(env, needle: str) -> list[str]:
    out = subprocess.run(["scontrol", "show", "job", "-o"], capture_output=True, text=True, env=env).stdout
    ids = []
    for line in out.splitlines():
        f = dict(p.split("=", 1) for p in line.split() if "=" in p)
        if needle in f.get("JobName", ""):
            ids.append(f["JobId"])
    return ids


def slurm_job(env, job_id: str) -> dict:
    out = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True, env=env).stdout
    return dict(p.split("=", 1) for p in out.split() if "=" in p)


def setup_campaign(tmp_path, service, name, mpi_modulepath, bench_root, **over):
    machine = f"m-{name}"
    token = add_machine(service, machine)
    (tmp_path / "token").write_text(token)
    cdef = tiny_campaign(name, machine, mpi_modulepath, bench_root,
                         service={"url": service.url, "token_file": str(tmp_path / "token")}, **over)
    return campaign_file(tmp_path / f"{name}.yaml", **cdef)


def state_rows(state_dir: Path, campaign: str):
    if not (state_dir / "agent.db").exists():
        return []
    db = sqlite3.connect(state_dir / "agent.db", timeout=30)
    try:
        return db.execute("SELECT key, state, collected FROM jobs WHERE campaign=?", (campaign,)).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        db.close()


def wait_for(pred, timeout=120, step=0.2):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(step)
    return False


def test_agent_killed_and_restarted(tmp_path, slurm_env, mpi_modulepath, bench_root, service):
    name = "killed"
    cfile = setup_campaign(tmp_path, service, name, mpi_modulepath, bench_root,
                           modules=[{"name": "openmpi/4.1.4", "mpi": "openmpi", "modulepath": [str(mpi_modulepath)],
                                     "prologue": ["sleep 3"]},
                                    {"name": "mpich/4.0.2", "mpi": "mpich", "modulepath": [str(mpi_modulepath)],
                                     "prologue": ["sleep 3"]}])
    sd = tmp_path / "state"
    env = dict(slurm_env, PGMPI_AGENT_STATE=str(sd))
    cmd = [str(ROOT / ".venv/bin/pgmpi"), "campaign", "submit", str(cfile), "--watch", "--interval", "0.3"]
    # kill 1: while the jobs are queued or running
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert wait_for(lambda: any(s in ("PENDING", "RUNNING") for _, s, _ in state_rows(sd, name)), 60)
    p.send_signal(signal.SIGKILL)
    p.wait()
    # kill 2: as soon as a job was collected (its uploads may still be in the spool)
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert wait_for(lambda: any(c for *_, c in state_rows(sd, name)), 120)
    p.send_signal(signal.SIGKILL)
    p.wait()
    # restart and finish
    agent = make_agent(cfile, sd, env=slurm_env, log=None)
    s = agent.run(interval=0.5, timeout=300)
    assert s["done"] and s["rejected"] == 0 and s["states"] == {"COMPLETED": 2}, s
    assert len(slurm_jobs_named(slurm_env, f"pgmpi-{agent.tag}-{name}-")) == 2, "a restarted agent resubmitted a job"
    runs, ups, jobs = stored(service, name)
    assert sorted((lib, i) for lib, i, _ in runs) == [("mpich", 0), ("mpich", 1), ("openmpi", 0), ("openmpi", 1)]
    assert len(ups) == len(set(ups)) == 4
    assert all(st == "COMPLETED" for st, _, _ in jobs.values())


def test_crash_between_sbatch_and_record_is_adopted(tmp_path, slurm_env, mpi_modulepath, bench_root, service):
    name = "adopt"
    cfile = setup_campaign(tmp_path, service, name, mpi_modulepath, bench_root,
                           modules=[{"name": "openmpi/4.1.4", "mpi": "openmpi", "modulepath": [str(mpi_modulepath)]}])
    sd = tmp_path / "state"
    agent = make_agent(cfile, sd, env=slurm_env, log=None)
    row = agent.state.jobs(name)[0]
    from scheduler.agent import spec_from_json
    job = spec_from_json(json.loads(row["spec"]))
    jname, adir = agent.job_name(row["key"], 1), sd / "campaigns" / name / row["key"] / "attempt-1"
    # what submit_new does, interrupted right after sbatch returned
    with agent.state.tx():
        agent.state.update_job(name, row["key"], state="SUBMITTING", attempt=1, name=jname, attempt_dir=str(adir))
    bid = agent.backend.submit(job, adir, jname, agent.c.bench_for(job.module))
    agent.state.close()
    agent = make_agent(cfile, sd, env=slurm_env, log=None)
    s = agent.run(interval=0.5, timeout=300)
    assert s["done"] and s["rejected"] == 0 and s["states"] == {"COMPLETED": 1}, s
    assert agent.state.jobs(name)[0]["backend_id"] == bid
    assert slurm_jobs_named(slurm_env, f"pgmpi-{agent.tag}-{name}-") == [bid]
    runs, ups, _ = stored(service, name)
    assert len(runs) == 2 and len(set(ups)) == 2


def test_service_down_spools_then_drains(tmp_path, slurm_env, mpi_modulepath, bench_root, service):
    name = "spool"
    cfile = setup_campaign(tmp_path, service, name, mpi_modulepath, bench_root)
    service.stop()
    try:
        agent = make_agent(cfile, tmp_path / "state", env=slurm_env, log=None)
        end = time.time() + 300
        while not agent.jobs_final() and time.time() < end:
            agent.run_once()
            time.sleep(0.5)
        s = agent.summary()
        assert s["states"] == {"COMPLETED": 2} and s["uploaded"] == 0
        kinds = [r["kind"] for r in agent.state.outbox(name)]
        assert kinds.count("upload") == 4 and kinds.count("job") == 2 and kinds.count("campaign") == 1
        assert not agent.done()
    finally:
        service.start()
    s = agent.run(interval=0.5, timeout=120)
    def _campaigns():
        from sqlalchemy import select
        from service.store.db import db
        from service.store.models import Campaign
        return [(c.name, c.id) for c in db.session.scalars(select(Campaign))]
    assert s["done"] and s["spooled"] == 0 and s["uploaded"] == 4, (
        s, service.query(_campaigns), [dict(r) for r in agent.state.db.execute("SELECT id, sent_at FROM sent")],
        [(r["id"], r["last_error"][:100]) for r in agent.state.outbox()])
    runs, ups, jobs = stored(service, name)
    assert len(runs) == 4 and len(set(ups)) == 4
    assert all(st == "COMPLETED" for st, _, _ in jobs.values())
    # a re-send of everything (e.g. an agent that lost its 'sent' records) stores nothing twice
    from scheduler.uploader import drain, upload_id
    for row in agent.state.jobs(name):
        for f in sorted(Path(row["attempt_dir"]).glob("run-*.txt")):
            content = f.read_text()
            idx = int(f.name.split("-")[1].split(".")[0])
            uid = upload_id(name, row["key"], idx, content)
            agent.state.db.execute("DELETE FROM sent WHERE id=?", (uid,))
            agent.state.enqueue(uid, "upload", name, {"upload_id": uid, "campaign": name,
                                                      "files": [{"name": f"{row['key']}-a1-{f.name}", "content": content}]})
    out = drain(agent.state, agent.client)
    assert out["sent"] == 4 and out["duplicates"] == 4, out
    runs2, ups2, _ = stored(service, name)
    assert len(runs2) == 4 and sorted(ups2) == sorted(ups)


def test_bad_module_fails_and_timeout_is_recorded(tmp_path, slurm_env, mpi_modulepath, bench_root, service):
    name = "faulty"
    cfile = setup_campaign(
        tmp_path, service, name, mpi_modulepath, bench_root,
        modules=[{"name": "nosuchmpi/1.0", "mpi": "openmpi", "modulepath": [str(mpi_modulepath)]},
                 {"name": "openmpi/4.1.4", "mpi": "openmpi", "label": "sleepy",
                  "modulepath": [str(mpi_modulepath)], "prologue": ["sleep 600"]},
                 {"name": "mpich/4.0.2", "mpi": "mpich", "modulepath": [str(mpi_modulepath)]}],
        slurm={"partition": "debug", "walltime": "00:01:00"},
        retry={"max_attempts": 2, "states": ["FAILED", "NODE_FAIL"]})
    agent = make_agent(cfile, tmp_path / "state", env=slurm_env, log=None)
    limit = {}

    def end_the_minute_early(_summary):
        # Slurm's smallest --time is a minute, checked every 30 s: the job would hold the test 60-90 s. Once
        # it runs with the campaign's walltime, its limit drops to 0 and Slurm's own enforcement kills it at
        # its next check (TIMEOUT, reason TimeLimit), as it would at the end of the minute.
        row = next(r for r in agent.state.jobs(name) if r["key"] == "sleepy-n1x2")
        job = slurm_job(slurm_env, row["backend_id"]) if row["backend_id"] and not limit else {}
        if job.get("JobState") == "RUNNING":
            limit["campaign"] = job["TimeLimit"]
            subprocess.run(["scontrol", "update", f"JobId={row['backend_id']}", "TimeLimit=0"], env=slurm_env,
                           check=True, capture_output=True)

    s = agent.run(interval=1.0, timeout=240, on_cycle=end_the_minute_early)
    assert s["done"] and s["rejected"] == 0, s
    assert limit == {"campaign": "00:01:00"}, limit      # the campaign's walltime reached the job
    rows = {r["key"]: r for r in agent.state.jobs(name)}
    bad, sleepy, good = rows["nosuchmpi-1.0-n1x2"], rows["sleepy-n1x2"], rows["mpich-4.0.2-n1x2"]
    assert bad["state"] == "FAILED" and bad["attempt"] == 2, dict(bad)          # retried up to the limit
    assert "module load nosuchmpi/1.0 failed" in bad["reason"] and "NonZeroExitCode" in bad["reason"]
    assert sleepy["state"] == "TIMEOUT" and sleepy["attempt"] == 1 and "TimeLimit" in sleepy["reason"]
    assert good["state"] == "COMPLETED"
    runs, ups, jobs = stored(service, name)
    assert sorted(lib for lib, _, _ in runs) == ["mpich", "mpich"] and len(set(ups)) == 2
    assert jobs["nosuchmpi-1.0-n1x2"][0] == "FAILED" and "nosuchmpi" in jobs["nosuchmpi-1.0-n1x2"][1]
    assert jobs["sleepy-n1x2"][0] == "TIMEOUT" and "TimeLimit" in jobs["sleepy-n1x2"][1]
    assert len(slurm_jobs_named(slurm_env, f"pgmpi-{agent.tag}-{name}-nosuchmpi")) == 2


def test_slurmctld_restart_mid_campaign(tmp_path, slurm_env, mpi_modulepath, bench_root, service):
    name = "ctldrestart"
    cfile = setup_campaign(tmp_path, service, name, mpi_modulepath, bench_root,
                           modules=[{"name": "openmpi/4.1.4", "mpi": "openmpi", "modulepath": [str(mpi_modulepath)],
                                     "prologue": ["sleep 4"]},
                                    {"name": "mpich/4.0.2", "mpi": "mpich", "modulepath": [str(mpi_modulepath)],
                                     "prologue": ["sleep 4"]}])
    agent = make_agent(cfile, tmp_path / "state", env=slurm_env, log=None)
    agent.run_once()
    assert all(r["backend_id"] for r in agent.state.jobs(name))
    res = {}
    t = threading.Thread(target=lambda: res.update(rc=subprocess.run(
        [str(ROOT / "deploy/slurm.sh"), "restart-ctld"], env=slurm_env, capture_output=True).returncode))
    t.start()
    while t.is_alive():          # the agent keeps cycling while slurmctld goes away and comes back
        agent.run_once()
        time.sleep(0.2)
    assert res["rc"] == 0
    s = agent.run(interval=0.5, timeout=300)
    assert s["done"] and s["rejected"] == 0 and s["states"] == {"COMPLETED": 2}, s
    assert len(slurm_jobs_named(slurm_env, f"pgmpi-{agent.tag}-{name}-")) == 2
    runs, ups, _ = stored(service, name)
    assert len(runs) == 4 and len(set(ups)) == 4
