"""A datatype campaign end to end on the real Slurm: a campaign file with a `datatypes:` section -> the agent
submits pgmpi-dtbench under the Open MPI module -> the uploads reach the service on PostgreSQL with every case
recorded -> the agent's analysis stores GL1-GL4 verdicts -> the datatype pages show them.  Lean: one module,
one pattern, two layouts, one size, three mpiruns (timings are not judged here, only that the chain carries
them)."""
from __future__ import annotations

import pytest

from scheduler.runner import make_agent

from sched_helpers import add_machine, campaign_file, tiny_campaign

pytestmark = [pytest.mark.slurm, pytest.mark.postgres, pytest.mark.mpi, pytest.mark.lmod]


def test_datatype_campaign_reaches_verdicts_and_pages(tmp_path, slurm_env, mpi_modulepath, bench_root, service):
    token = add_machine(service, "dtbox")
    (tmp_path / "token").write_text(token)
    cdef = tiny_campaign("dtc1", "dtbox", mpi_modulepath, bench_root,
                         modules=[{"name": "openmpi/4.1.4", "mpi": "openmpi", "modulepath": [str(mpi_modulepath)]}],
                         collectives={}, mpiruns=3, repetitions={"policy": "fixed", "nrep": 10},
                         datatypes={"patterns": ["bcast"], "layouts": ["contiguous", "bucket"], "variants": [1],
                                    "blocksizes": [2], "sizes": [3200], "basetypes": ["MPI_INT"],
                                    "descriptions": ["typed", "contig", "packed", "indexed", "repaired"]},
                         service={"url": service.url, "token_file": str(tmp_path / "token")},
                         validation={"enabled": True, "nrep": 10, "mpiruns": 1, "interleaved": True})
    cdef.pop("algorithms")
    agent = make_agent(campaign_file(tmp_path / "dtc1.yaml", **cdef), tmp_path / "state", env=slurm_env, log=print)
    s = agent.run(interval=1.0, timeout=300)
    assert s["done"] and s["states"].get("COMPLETED", 0) >= 1 and set(s["states"]) == {"COMPLETED"}, s

    from sqlalchemy import select
    from service.store.db import db
    from service.store.models import Analysis, Campaign, DtCase, DtVerdict, Run

    def _q():
        cid = db.session.scalar(select(Campaign.id).where(Campaign.name == "dtc1"))
        # the measurement's runs: when the analysis finds a candidate, its validation launches upload theirs
        # too, tagged #@pgmpi_validation (scheduler/agent.py), which the analysis leaves out
        runs = [r for r in db.session.scalars(select(Run).where(Run.campaign_id == cid)).all()
                if not (r.headers or {}).get("pgmpi_validation")]
        cases = db.session.scalars(select(DtCase).where(DtCase.run_id.in_([r.id for r in runs]))).all()
        a = db.session.scalar(select(Analysis).where(Analysis.campaign_id == cid).order_by(Analysis.id.desc()))
        vs = db.session.scalars(select(DtVerdict).where(DtVerdict.analysis_id == a.id)).all() if a else []
        return ([(r.mpirun_index, r.nprocs, r.slurm_job_id, r.headers.get("module")) for r in runs],
                [(c.pattern, c.dt_layout, c.basetype, c.counts) for c in cases],
                [(v.guideline, v.dt_layout, v.msize, v.slower, v.faster, v.runs, v.verdict, v.p_value) for v in vs])
    runs, cases, vs = service.query(_q)
    assert sorted(r[0] for r in runs) == [0, 1, 2] and {r[1] for r in runs} == {2}
    assert all(r[2] and r[3] == "openmpi/4.1.4" for r in runs), runs       # measured inside Slurm, module loaded
    assert sorted({c[:3] for c in cases}) == [("bcast", "bucket", "MPI_INT"), ("bcast", "contiguous", "MPI_INT")]
    bucket = next(c[3] for c in cases if c[1] == "bucket")
    assert bucket["typed"] == {"3200": 200} and bucket["contig"] == {"3200": 1} and bucket["indexed"] == {"3200": 1}
    got = {(g, lay) for g, lay, *_ in vs}
    assert {("GL1", "bucket v1 A=2"), ("GL2/3", "bucket v1 A=2"), ("GL4", "bucket v1 A=2"),
            ("control", "bucket v1 A=2"), ("repair", "bucket v1 A=2"), ("GL2/3", "contiguous")} <= got, got
    assert all(v[2] == 3200 and v[5] == 3 and v[6] in ("holds", "violated") and 0 <= v[7] <= 1 for v in vs), vs

    client = service.app.test_client()
    page = client.get("/m/dtbox/openmpi-4.1.4/datatypes").get_data(as_text=True)
    assert "Which guidelines hold" in page and "bucket v1 A=2" in page and "control:" in page
    lay = client.get("/m/dtbox/openmpi-4.1.4/datatypes/layout?pattern=bcast&basetype=MPI_INT&p=2"
                     "&layout=bucket v1 A=2").get_data(as_text=True)
    for desc in ("typed", "contig", "packed", "indexed", "repaired", "typed_control"):
        assert f"<th>{desc}</th>" in lay, desc
    assert "count 200" in lay
