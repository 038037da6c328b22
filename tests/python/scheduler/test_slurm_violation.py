"""End to end with a violation that is known to be there: a campaign on the real Slurm whose Open MPI
launches carry a test-only interposer that delays the library's PMPI_Allreduce at 1024 bytes (the
mock-up allreduce_as_reduce_bcast never calls it). The agent (with an agent-role token) uploads the
results, asks the service's analysis, gets a candidate profile that redirects 1024 bytes, runs the
validation job (tuned mode with the candidate against the default) and posts its figures; the service
marks the candidate validated, so it may be published.

The subject is the chain, not the machine's timing: the interposer's virtual clock (delay_interposer.py) gives
every cell the same figure in every mpirun, so the validation's control sizes come out at exactly 1.0 under the
service's own tolerance and the first validation decides (issue 34: a control size once measured 1.43x with the
real clock at nrep 8 and the run stayed inconclusive)."""
from __future__ import annotations

import json

import pytest

import delay_interposer
from scheduler.runner import make_agent

from sched_helpers import add_machine, campaign_file, tiny_campaign

pytestmark = [pytest.mark.slurm, pytest.mark.postgres, pytest.mark.mpi, pytest.mark.lmod]

SLOWED = 1024
def test_violation_becomes_a_validated_candidate(tmp_path, slurm_env, mpi_modulepath, bench_root, service):
    so = delay_interposer.build(tmp_path)
    token = add_machine(service, "violbox", role="agent")
    (tmp_path / "token").write_text(token)
    launcher = f"mpirun -x LD_PRELOAD={so} -x PGMPI_TEST_DELAY_BYTES={SLOWED}"
    cdef = tiny_campaign(
        "viol", "violbox", mpi_modulepath, bench_root,
        modules=[{"name": "openmpi/4.1.4", "mpi": "openmpi", "modulepath": [str(mpi_modulepath)],
                  "mpirun": launcher}],
        collectives={"allreduce": {"sizes": [64, SLOWED, 8192]}},
        algorithms=["default", "allreduce_as_reduce_bcast"], mpiruns=5,
        repetitions={"policy": "fixed", "nrep": 8},
        service={"url": service.url, "token_file": str(tmp_path / "token")},
        validation={"enabled": True, "nrep": 8, "mpiruns": 1})
    agent = make_agent(campaign_file(tmp_path / "viol.yaml", **cdef), tmp_path / "state", env=slurm_env, log=print)
    # the service's own tolerance (the 5 % floor: no control arm in this campaign); the inconclusive path is
    # tested in test_verdicts.py
    summary = agent.run(interval=1.0, timeout=600)
    assert summary["done"] and summary["rejected"] == 0, summary

    analysis = json.loads(agent.state.campaign("viol")["analysis"])["openmpi-4.1.4"]
    assert "error" not in analysis, analysis
    assert len(analysis["profiles"]) == 1, analysis
    version_id = analysis["profiles"][0]          # the agent keeps the candidate's version id
    jobs = {r["key"]: r for r in agent.state.jobs("viol")}
    val = [r for r in jobs.values() if r["kind"] == "validate"]
    # the virtual clock leaves the sizes the candidate does not touch at exactly 1.0: one validation decides
    assert len(val) == 1 and val[0]["state"] == "COMPLETED", [dict(r) for r in jobs.values()]

    def _version():
        from service.store.db import db
        from service.store.models import ProfileVersion
        v = db.session.get(ProfileVersion, version_id)
        return v.state, dict(v.files), [(f.collective, f.msize, f.default_time, f.tuned_time) for f in v.figures]
    state, files, figures = service.query(_version)
    text = "\n".join(files.values())
    assert f"{SLOWED} {SLOWED}" in text and "allreduce_as_reduce_bcast" in text, text
    at_slowed = [f for f in figures if f[1] == SLOWED]
    assert at_slowed and all(t < d for _, _, d, t in at_slowed), figures
    assert state == "validated", (state, figures)
