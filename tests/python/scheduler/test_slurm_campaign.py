"""A tiny campaign over an Open MPI module and an MPICH module (Lmod) on the real Slurm; results reach
the service on PostgreSQL; the analysis runs on them and returns its candidate profiles."""
from __future__ import annotations

import json
import subprocess
import time

import pytest

from scheduler.runner import make_agent

from sched_helpers import add_machine, campaign_file, tiny_campaign

pytestmark = [pytest.mark.slurm, pytest.mark.postgres, pytest.mark.mpi, pytest.mark.lmod]


def service_counts(service, campaign: str):
    from sqlalchemy import func, select
    from service.db import db
    from service.models import Campaign, Job, Run, Upload

    def _q():
        cid = db.session.scalar(select(Campaign.id).where(Campaign.name == campaign))
        runs = db.session.scalars(select(Run).where(Run.campaign_id == cid)).all()
        jobs = db.session.scalars(select(Job).where(Job.campaign_id == cid)).all()
        ups = db.session.scalar(select(func.count()).select_from(Upload).where(Upload.campaign_id == cid))
        return ([(r.library.name, r.mpirun_index, r.nprocs, r.slurm_job_id, r.headers.get("module"))
                 for r in runs],
                {j.job_key: (j.state, j.slurm_job_id, j.reason) for j in jobs}, ups)
    return service.query(_q)


def test_lmod_modules_select_each_mpi(mpi_modulepath, lmod_init):
    """The modulefiles the tests write put each MPI's unsuffixed launcher first on PATH."""
    for mod, target in (("openmpi/4.1.4", "orterun"), ("mpich/4.0.2", "mpiexec.hydra")):
        script = (f". {lmod_init}; module use {mpi_modulepath}; module load {mod} && "
                  f"readlink -f $(command -v mpirun) && echo $LMOD_FAMILY_MPI && command -v hydra_pmi_proxy")
        out = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.split()
        assert lines[0].endswith(target), out.stdout
        assert lines[1] == mod.split("/")[0]
    # family("mpi"): loading the second swaps out the first
    out = subprocess.run(["bash", "-c", f". {lmod_init}; module use {mpi_modulepath}; module load openmpi/4.1.4; "
                          f"module load mpich/4.0.2; echo $LOADEDMODULES"], capture_output=True, text=True)
    assert out.stdout.strip() == "mpich/4.0.2", out.stdout + out.stderr


def test_campaign_on_slurm_reaches_service_and_analysis(tmp_path, slurm_env, mpi_modulepath, bench_root, service):
    token = add_machine(service, "slurmbox")
    tok = tmp_path / "token"
    tok.write_text(token)
    cdef = tiny_campaign("integ", "slurmbox", mpi_modulepath, bench_root,
                         service={"url": service.url, "token_file": str(tok)},
                         validation={"enabled": True, "nrep": 10, "mpiruns": 1})
    cfile = campaign_file(tmp_path / "integ.yaml", **cdef)
    agent = make_agent(cfile, tmp_path / "state", env=slurm_env)
    t0 = time.time()
    s = agent.run(interval=1.0, timeout=600)
    wall = time.time() - t0
    assert s["done"] and s["rejected"] == 0, s
    print(json.dumps([{k: r[k] for k in r.keys() if k != "spec"} for r in agent.state.jobs("integ")], indent=1))
    print(agent.state.campaign("integ")["analysis"])
    assert s["states"] == {"COMPLETED": 2}, [dict(r) for r in agent.state.jobs("integ")]
    runs, jobs, ups = service_counts(service, "integ")
    # 2 modules x R=2 launches, one file each (allreduce and bcast share their sizes)
    assert sorted((lib, idx, n) for lib, idx, n, _, _ in runs) == [
        ("mpich", 0, 2), ("mpich", 1, 2), ("openmpi", 0, 2), ("openmpi", 1, 2)]
    assert ups == 4
    assert all(sj for *_, sj, _ in runs), "each run carries its Slurm job id"
    assert {m for *_, m in runs} == {"openmpi/4.1.4", "mpich/4.0.2"}
    assert set(jobs) == {"openmpi-4.1.4-n1x2", "mpich-4.0.2-n1x2"}
    assert all(st == "COMPLETED" and sj for st, sj, _ in jobs.values()), jobs
    # each Slurm job is the one the agent recorded, and it ran the module's own mpirun
    for row in agent.state.jobs("integ"):
        script = (tmp_path / "state" / "campaigns" / "integ" / row["key"] / "attempt-1" / "job.sh").read_text()
        assert "#SBATCH --partition=debug" in script and "module load" in script
    # analysis on what arrived: the service answers with verdicts and its candidate profiles
    for lib in ("openmpi", "mpich"):
        _, data = agent.client.request("POST", "/api/v1/analyses",
                                       {"machine": "slurmbox", "library": lib, "campaign": "integ"})
        assert "profiles" in data
    print(f"\nintegration campaign wall time: {wall:.1f} s")
