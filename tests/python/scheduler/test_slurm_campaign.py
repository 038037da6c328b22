"""A tiny campaign over an Open MPI module and an MPICH module (Lmod) on the real Slurm; results reach
the service on PostgreSQL; the agent asks the service's analysis for verdicts and candidate profiles and
plans a validation job for every candidate (tuned mode against the default).

On this 2-core machine at 2 ranks both MPIs keep the guidelines at these sizes inside Slurm (measured:
Open MPI's 256 KiB Allreduce ~0.1 ms, no faster mock-up), so the analysis normally finds no violation and
no candidate; the validation job itself is covered by test_validation.py and test_slurm_violation.py."""
from __future__ import annotations

import subprocess
import time

import pytest

from scheduler.runner import make_agent

from sched_helpers import add_machine, campaign_file, tiny_campaign

pytestmark = [pytest.mark.slurm, pytest.mark.postgres, pytest.mark.mpi, pytest.mark.lmod]

SIZES = [8, 1024, 262144]
R = 5          # mpiruns: the one-sided rank test over R medians needs R >= 4 to reach p < 0.05


def service_counts(service, campaign: str):
    from sqlalchemy import select
    from service.store.db import db
    from service.store.models import Campaign, Job, Run

    def _q():
        cid = db.session.scalar(select(Campaign.id).where(Campaign.name == campaign))
        # the measurement's runs: validation launches (repeated when inconclusive) upload theirs too, tagged
        # #@pgmpi_validation, which the analysis leaves out (service/workflows/analyse.py)
        runs = [r for r in db.session.scalars(select(Run).where(Run.campaign_id == cid))
                if not (r.headers or {}).get("pgmpi_validation")]
        jobs = db.session.scalars(select(Job).where(Job.campaign_id == cid)).all()
        ups = len({r.upload_pk for r in runs})
        return ([(r.library.name, r.mpirun_index, r.nprocs, r.slurm_job_id, r.headers.get("module"))
                 for r in runs],
                {j.job_key: (j.state, j.slurm_job_id, j.reason) for j in jobs}, ups)
    return service.query(_q)


@pytest.fixture(scope="module")
def integ(tmp_path_factory, slurm_env, mpi_modulepath, bench_root, service):
    tmp = tmp_path_factory.mktemp("integ")
    token = add_machine(service, "slurmbox")
    (tmp / "token").write_text(token)
    cdef = tiny_campaign("integ", "slurmbox", mpi_modulepath, bench_root,
                         collectives={"allreduce": {"sizes": SIZES}}, mpiruns=R,
                         repetitions={"policy": "fixed", "nrep": 8},
                         service={"url": service.url, "token_file": str(tmp / "token")},
                         validation={"enabled": True, "nrep": 8, "mpiruns": 1})
    agent = make_agent(campaign_file(tmp / "integ.yaml", **cdef), tmp / "state", env=slurm_env, log=print)
    t0 = time.time()
    s = agent.run(interval=1.0, timeout=600)
    print(f"\nintegration campaign wall time (with analysis + validation): {time.time() - t0:.1f} s")
    return agent, s, tmp


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


def test_campaign_on_slurm_reaches_service_and_profile_comes_out(integ, service):
    agent, s, tmp = integ
    measure = {r["key"]: r for r in agent.state.jobs("integ") if r["kind"] == "measure"}
    assert {k: r["state"] for k, r in measure.items()} == {"openmpi-4.1.4-n1x2": "COMPLETED",
                                                          "mpich-4.0.2-n1x2": "COMPLETED"}
    runs, jobs, ups = service_counts(service, "integ")
    assert sorted((lib, idx, n) for lib, idx, n, _, _ in runs) == sorted(
        (lib, i, 2) for lib in ("openmpi", "mpich") for i in range(R))
    assert ups == 2 * R
    assert all(sj for *_, sj, _ in runs), "each run carries its Slurm job id"
    assert {m for *_, m in runs} == {"openmpi/4.1.4", "mpich/4.0.2"}
    assert all(jobs[k][0] == "COMPLETED" and jobs[k][1] for k in measure), jobs
    for row in measure.values():
        script = (tmp / "state" / "campaigns" / "integ" / row["key"] / "attempt-1" / "job.sh").read_text()
        assert "#SBATCH --partition=debug" in script and "module load" in script
    # the agent asked the service for the analysis of each library once every upload had arrived
    import json
    analysis = json.loads(agent.state.campaign("integ")["analysis"])
    assert set(analysis) == {"openmpi-4.1.4", "mpich-4.0.2"} and all("error" not in a for a in analysis.values()), analysis
    assert all(isinstance(a["analysis_id"], int) and a["violations"] >= 0 for a in analysis.values())
    # every candidate the analysis returned got a validation job (tuned vs default)
    val = [r for r in agent.state.jobs("integ") if r["kind"] == "validate"]
    n_candidates = sum(len(a["profiles"]) for a in analysis.values())
    assert len(val) <= n_candidates and (n_candidates == 0 or val), (analysis, [dict(r) for r in val])
    assert s["done"] and s["rejected"] == 0, s
