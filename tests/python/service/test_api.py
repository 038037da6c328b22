"""API round trips and access control, on SQLite and on the real PostgreSQL."""
from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import func, select

from service.store.db import db
from service.store.models import (AuditLog, BarrierSeries, Campaign, Job, Machine, MpiLibrary, Run, Series,
                            Upload)

from svc_data import results_file


def counts(app) -> dict:
    with app.app_context():
        return {m.__name__: db.session.scalar(select(func.count()).select_from(m))
                for m in (Upload, Run, Series, BarrierSeries, MpiLibrary, Job, Campaign, Machine)}


def test_health_and_openapi(client):
    assert client.get("/healthz").json["status"] == "ok"
    doc = client.get("/api/v1/openapi.json").json
    assert doc["openapi"].startswith("3.")
    assert "/uploads" in doc["paths"] and "UploadIn" in doc["components"]["schemas"]


def test_machine_library_campaign_job_round_trip(client, seeded, app):
    admin, agent1 = seeded["admin"], seeded["agent1"]
    r = client.post("/api/v1/machines", headers=admin, json={"name": "vsc5", "nodes": 700, "cores_per_node": 128,
                                                             "interconnect": "InfiniBand HDR", "notes": "AMD"})
    assert r.status_code == 201, r.json
    assert client.post("/api/v1/machines", headers=admin,
                       json={"name": "vsc5", "nodes": 1, "cores_per_node": 1}).status_code == 409
    got = client.get("/api/v1/machines/vsc5", headers=seeded["viewer"]).json
    assert got["nodes"] == 700 and got["interconnect"] == "InfiniBand HDR" and got["libraries"] == []
    names = [m["name"] for m in client.get("/api/v1/machines", headers=seeded["viewer"]).json["items"]]
    assert names == ["m1", "m2", "vsc5"]

    lib = {"name": "openmpi", "version": "4.1.4", "module": "openmpi/4.1.4"}
    assert client.post("/api/v1/machines/vsc5/libraries", headers=admin, json=lib).status_code == 201
    assert client.post("/api/v1/machines/vsc5/libraries", headers=admin, json=lib).status_code == 200
    libs = client.get("/api/v1/machines/vsc5/libraries", headers=seeded["viewer"]).json["items"]
    assert [(x["name"], x["version"], x["module"]) for x in libs] == [("openmpi", "4.1.4", "openmpi/4.1.4")]

    camp = {"name": "nightly-2026-11-22", "machine": "m1", "definition": {"collectives": ["allreduce"]},
            "schedule": "02:00"}
    r = client.post("/api/v1/campaigns", headers=agent1, json=camp)
    assert r.status_code == 201, r.json
    assert client.post("/api/v1/campaigns", headers=agent1, json=camp).status_code == 200  # idempotent
    assert client.get("/api/v1/campaigns/nightly-2026-11-22", headers=seeded["viewer"]).json["definition"] == \
        {"collectives": ["allreduce"]}

    job = {"slurm_job_id": "4711", "library": "openmpi", "module": "openmpi/4.1.4", "nodes": 1, "ppn": 2,
           "state": "PENDING", "submitted_at": "2026-11-22T02:00:00Z"}
    url = "/api/v1/campaigns/nightly-2026-11-22/jobs/openmpi-n1-p2"
    assert client.put(url, headers=agent1, json=job).status_code == 201
    job.update(state="FAILED", reason="NonZeroExitCode", ended_at="2026-11-22T02:05:00+00:00", log_tail="boom")
    r = client.put(url, headers=agent1, json=job)
    assert r.status_code == 200 and r.json["state"] == "FAILED" and r.json["reason"] == "NonZeroExitCode"
    jobs = client.get("/api/v1/campaigns/nightly-2026-11-22/jobs", headers=seeded["viewer"]).json["items"]
    assert len(jobs) == 1 and jobs[0]["log_tail"] == "boom" and jobs[0]["slurm_job_id"] == "4711"
    assert client.get("/api/v1/campaigns/nightly-2026-11-22", headers=seeded["viewer"]).json["jobs_by_state"] == \
        {"FAILED": 1}
    bad = client.put(url, headers=agent1, json={**job, "state": "DONE"})
    assert bad.status_code == 422 and bad.json["error"]["field"] == "state"
    with app.app_context():  # every write is audited
        actions = db.session.execute(select(AuditLog.action, AuditLog.entity)).all()
    assert ("create", "machine") in actions and ("upsert", "job") in actions and ("create", "campaign") in actions


def test_upload_round_trip_and_duplicate(client, seeded, app):
    text = results_file(nrep=7)
    body = {"upload_id": "u-1", "files": [{"name": "run0.txt", "content": text}]}
    r = client.post("/api/v1/uploads", headers=seeded["agent1"], json=body)
    assert r.status_code == 201, r.json
    assert r.json["duplicate"] is False and r.json["timings"] == 2 * 2 * 7 + 2 * 7
    before = counts(app)
    r2 = client.post("/api/v1/uploads", headers=seeded["agent1"], json=body)
    assert r2.status_code == 200 and r2.json["duplicate"] is True and r2.json["runs"] == r.json["runs"]
    assert counts(app) == before and before["Upload"] == 1 and before["Run"] == 1

    run_id = r.json["runs"][0]
    run = client.get(f"/api/v1/runs/{run_id}", headers=seeded["viewer"]).json
    assert run["machine"] == "m1" and run["library"] == "openmpi" and run["nprocs"] == 2
    assert run["headers"]["clock"] == "MPI_Wtime"
    assert {(s["call"], s["algorithm"], s["msize"]) for s in run["series"]} == {
        ("MPI_Allreduce", a, m) for a in ("default", "allreduce_as_reduce_bcast") for m in (8, 1024)}
    assert [b["msize"] for b in run["barrier"]] == [8, 1024]
    sid = next(s["id"] for s in run["series"] if s["algorithm"] == "default" and s["msize"] == 1024)
    timings = client.get(f"/api/v1/series/{sid}", headers=seeded["viewer"]).json["timings"]
    expected = [float(f"{1e-5 + k * 1e-7 + 1024 * 1e-9:.10f}") for k in range(7)]
    assert np.allclose(timings, expected, rtol=0, atol=1e-15)
    runs = client.get("/api/v1/runs?machine=m1&library=openmpi", headers=seeded["viewer"]).json["items"]
    assert [x["id"] for x in runs] == [run_id]
    assert client.get("/api/v1/runs?machine=m2", headers=seeded["viewer"]).json["items"] == []


def test_malformed_uploads_write_nothing(client, seeded, app):
    good = results_file()
    before = counts(app)
    cases = [
        (good.replace("MPI_Allreduce 3 8", "MPI_Allreduce 3 eight", 1), "run.txt:", "not a number"),
        (good.replace("#@machine=m1\n", ""), "run.txt:#@machine", "machine"),
        (good.replace("#@machine=m1", "#@machine=m2"), "run.txt:#@machine", "one machine"),
        ("hello\n", "run.txt:1", "column line"),
    ]
    for content, field, words in cases:
        body = {"upload_id": "bad", "files": [{"name": "ok.txt", "content": good},
                                              {"name": "run.txt", "content": content}]}
        r = client.post("/api/v1/uploads", headers=seeded["agent1"], json=body)
        assert r.status_code == 422, (field, r.json)
        assert r.json["error"]["field"].startswith(field) and words in r.json["error"]["message"], r.json
        assert counts(app) == before   # the good first file was not stored either
    r = client.post("/api/v1/uploads", headers=seeded["agent1"], json={"upload_id": "bad", "files": [
        {"name": "x.txt", "content": good.replace("#@machine=m1", "#@machine=nowhere")}]})
    assert r.status_code == 422 and r.json["error"]["field"] == "x.txt:#@machine" and "unknown machine" in \
        r.json["error"]["message"]
    line = next(i for i, l in enumerate(cases[0][0].splitlines(), 1) if "eight" in l)
    r = client.post("/api/v1/uploads", headers=seeded["agent1"],
                    json={"upload_id": "bad", "files": [{"name": "run.txt", "content": cases[0][0]}]})
    assert r.json["error"]["field"] == f"run.txt:{line}"
    for body, field in (({"files": []}, "upload_id"), ({"upload_id": "x", "files": []}, "files"),
                        ({"upload_id": "x", "files": [{"name": "a"}]}, "files.0")):
        r = client.post("/api/v1/uploads", headers=seeded["agent1"], json=body)
        assert r.status_code == 422 and r.json["error"]["field"] == field, r.json
    r = client.post("/api/v1/uploads", headers=seeded["agent1"], data="{not json", content_type="application/json")
    assert r.status_code == 400 and r.json["error"]["code"] == "invalid_json"
    assert counts(app) == before


@pytest.mark.parametrize("app_config", [{"MAX_CONTENT_LENGTH": 4096}])
def test_oversize_upload_413_writes_nothing(client, seeded, app, app_config):
    before = counts(app)
    body = {"upload_id": "big", "files": [{"name": "big.txt", "content": results_file(nrep=200)}]}
    r = client.post("/api/v1/uploads", headers=seeded["agent1"], json=body)
    assert r.status_code == 413 and r.json["error"]["code"] == "too_large"
    assert counts(app) == before
    small = {"upload_id": "small", "files": [{"name": "s.txt", "content": results_file(nrep=2, sizes=(8,))}]}
    assert client.post("/api/v1/uploads", headers=seeded["agent1"], json=small).status_code == 201


def _write_operations(client):
    doc = client.get("/api/v1/openapi.json").json
    for path, ops in doc["paths"].items():
        for method in ops:
            if method in ("post", "put", "patch", "delete"):
                yield method, path


def _concrete(path: str) -> str:
    return "/api/v1" + path.replace("{machine}", "m1").replace("{campaign}", "c1").replace("{job_key}", "j1") \
        .replace("{version_id}", "1")


def test_every_write_endpoint_refused_for_viewer_and_anonymous(client, seeded, app):
    assert client.post("/api/v1/campaigns", headers=seeded["admin"],
                       json={"name": "c1", "machine": "m1", "definition": {}}).status_code == 201
    bodies = {"/machines": {"name": "x", "nodes": 1, "cores_per_node": 1},
              "/machines/{machine}/libraries": {"name": "mpich", "version": "4.0.2"},
              "/campaigns": {"name": "c2", "machine": "m1", "definition": {}},
              "/campaigns/{campaign}/jobs/{job_key}": {"state": "PENDING"},
              "/uploads": {"upload_id": "v", "files": [{"name": "f", "content": results_file()}]},
              "/analyses": {"machine": "m1", "library": "openmpi"},
              "/profiles/{version_id}/validation": {"figures": []},
              "/native/validations": {"machine": "m1", "library": "openmpi", "version": "4.1.4",
                                      "name": "native.rules", "text": "1\n", "nprocs": 2, "figures": {}},
              "/native/candidates": {"machine": "m1", "library": "openmpi", "version": "4.1.4", "campaign": "c1"},
              "/native/candidates/{version_id}/job-failed": {"machine": "m1", "library": "openmpi",
                                                            "version": "4.1.4", "job": "slurm:1", "reason": "x"}}
    ops = list(_write_operations(client))
    assert len(ops) == len(bodies) == 10
    before = counts(app)
    for method, path in ops:
        for who, status in (("viewer", 403), (None, 401)):
            headers = seeded[who] if who else {}
            r = client.open(_concrete(path), method=method.upper(), headers=headers, json=bodies[path])
            assert r.status_code == status, (who, method, path, r.json)
    bogus = {"Authorization": "Bearer pgmpi_not-a-token"}
    assert client.post("/api/v1/machines", headers=bogus, json=bodies["/machines"]).status_code == 401
    assert counts(app) == before


def test_agent_refused_for_another_machine(client, seeded, app):
    a1, a2 = seeded["agent1"], seeded["agent2"]
    assert client.post("/api/v1/campaigns", headers=a1,
                       json={"name": "c1", "machine": "m1", "definition": {}}).status_code == 201
    before = counts(app)
    r = client.post("/api/v1/campaigns", headers=a2, json={"name": "c9", "machine": "m1", "definition": {}})
    assert r.status_code == 403 and "another machine" in r.json["error"]["message"]
    assert client.put("/api/v1/campaigns/c1/jobs/j1", headers=a2, json={"state": "RUNNING"}).status_code == 403
    r = client.post("/api/v1/uploads", headers=a2,
                    json={"upload_id": "x1", "files": [{"name": "f.txt", "content": results_file(machine="m1")}]})
    assert r.status_code == 403
    # agents do not register machines or libraries at all
    assert client.post("/api/v1/machines", headers=a1,
                       json={"name": "m3", "nodes": 1, "cores_per_node": 1}).status_code == 403
    assert counts(app) == before
    # the right agent may; an admin may for any machine
    assert client.put("/api/v1/campaigns/c1/jobs/j1", headers=a1, json={"state": "RUNNING"}).status_code == 201
    assert client.post("/api/v1/uploads", headers=seeded["admin"],
                       json={"upload_id": "x2", "files": [{"name": "f.txt", "content": results_file(machine="m2")}]}
                       ).status_code == 201


def test_revoked_token_is_refused(client, seeded, app):
    from service.auth import revoke_token
    assert client.get("/api/v1/me", headers=seeded["viewer"]).json["role"] == "viewer"
    with app.app_context():
        revoke_token(seeded["viewer_id"])
        db.session.commit()
    assert client.get("/api/v1/me", headers=seeded["viewer"]).status_code == 401
    assert client.get("/api/v1/me", headers=seeded["agent1"]).json == {
        "name": f"token:{seeded['agent1_id']}:agent1", "role": "agent", "machine": "m1"}


def test_upload_links_campaign_and_job(client, seeded, app):
    a1 = seeded["agent1"]
    client.post("/api/v1/campaigns", headers=a1, json={"name": "c1", "machine": "m1", "definition": {}})
    text = results_file(campaign="c1").replace("#@clock=", "#@job_key=j1\n#@clock=")
    client.put("/api/v1/campaigns/c1/jobs/j1", headers=a1, json={"state": "COMPLETED"})
    r = client.post("/api/v1/uploads", headers=a1, json={"upload_id": "u", "files": [{"name": "a", "content": text}]})
    assert r.status_code == 201
    assert r.json["campaign_id"] is not None
    assert [x["id"] for x in client.get("/api/v1/runs?campaign=c1", headers=a1).json["items"]] == r.json["runs"]
    with app.app_context():
        run = db.session.get(Run, r.json["runs"][0])
        assert run.job_id is not None


def test_violations_overview_reads_latest_analysis(client, seeded, app):
    from types import SimpleNamespace

    from service.store.analyses import store_result
    client.post("/api/v1/uploads", headers=seeded["agent1"],
                json={"upload_id": "u", "files": [{"name": "a", "content": results_file()}]})
    with app.app_context():
        m = db.session.scalar(select(Machine).where(Machine.name == "m1"))
        lib = db.session.scalar(select(MpiLibrary))
        data = SimpleNamespace(alpha=0.05, test="wilcoxon", fdr=True)
        v = {"collective": "allreduce", "mockup": "allreduce_as_reduce_bcast", "msize": 8, "nprocs": 2,
             "default_time": 2e-5, "mockup_time": 1e-5, "slowdown": 2.0, "p_value": 0.001}
        store_result(m, lib, None, data, "test", {"checked": 4, "violations": [v]})
        store_result(m, lib, None, data, "test", {"checked": 4, "violations": [v, {**v, "msize": 1024,
                                                                                    "slowdown": 3.0}],
                                                  "profiles": {"allreduce.prf": "x"}})
        db.session.commit()
    ov = client.get("/api/v1/violations/overview", headers=seeded["viewer"]).json["items"]
    assert len(ov) == 1 and ov[0]["n_violations"] == 2 and ov[0]["max_slowdown"] == 3.0
    assert ov[0]["by_collective"] == {"allreduce": {"violations": 2, "max_slowdown": 3.0}}
    assert [h[1] for h in ov[0]["history"]] == [1, 2]
    vs = client.get("/api/v1/violations", headers=seeded["viewer"]).json["items"]
    assert [x["msize"] for x in vs] == [1024, 8]
    profs = client.get("/api/v1/profiles", headers=seeded["viewer"]).json["items"]
    assert profs[0]["versions"][0]["state"] == "candidate" and profs[0]["versions"][0]["file_names"] == ["allreduce.prf"]


def test_analysis_finds_injected_violation_and_stores_candidate_profile(client, seeded, app):
    """Synthetic raw results (service/analysis/synthetic.py) with a mock-up 1.5x faster than the default at
    1024 bytes: POST /analyses verifies it and stores the violation and a candidate profile."""
    from service.analysis.synthetic import Design, simulate, to_text
    d = Design(collectives=["allreduce"], sizes=[8, 1024], mockups={"allreduce": ["allreduce_as_reduce_bcast"]},
               factors={("allreduce", "allreduce_as_reduce_bcast", 1024): 1 / 1.5}, nruns=6, nrep=20,
               machine="m1", campaign="c1", sigma_run=0.02, sigma_rep=0.02, p_outlier=0.0)
    files = [{"name": f"run{i}.txt", "content": to_text(r)} for i, r in enumerate(simulate(d, np.random.default_rng(7)))]
    r = client.post("/api/v1/uploads", headers=seeded["agent1"], json={"upload_id": "syn", "files": files})
    assert r.status_code == 201, r.json
    assert client.post("/api/v1/analyses", headers=seeded["agent2"],
                       json={"machine": "m1", "library": "openmpi"}).status_code == 403
    bad = client.post("/api/v1/analyses", headers=seeded["admin"],
                      json={"machine": "m1", "library": "openmpi", "test": "nope"})
    assert bad.status_code == 422 and bad.json["error"]["field"] == "test"
    r = client.post("/api/v1/analyses", headers=seeded["admin"],
                    json={"machine": "m1", "library": "openmpi", "alpha": 0.01, "test": "mannwhitney"})
    assert r.status_code == 201, r.json
    pattern = [v for v in r.json["violations"] if v["kind"] == "pattern"]
    assert [(v["collective"], v["mockup"], v["msize"], v["nprocs"]) for v in pattern] == \
        [("allreduce", "allreduce_as_reduce_bcast", 1024, 2)]
    assert 1.3 < pattern[0]["slowdown"] < 1.7
    # the effect with its 95 % interval over the 6 mpiruns, and what the figure rests on
    lo, hi = pattern[0]["ci95"]
    assert lo < pattern[0]["effect"] < hi and lo < 1.5 < hi and pattern[0]["ci_mpiruns"] == 6
    rep = pattern[0]["reporting"]
    assert rep["mpiruns"] == 6 and rep["repetitions"]["per_mpirun_min"] == 20 and rep["interval"]["level"] == 0.95
    assert r.json["summary"]["reporting"]["0"] == rep
    assert r.json["profiles"] and r.json["profiles"][0]["state"] == "candidate"
    assert any("allreduce_as_reduce_bcast" in text for text in r.json["profiles"][0]["files"].values())
    ov = client.get("/api/v1/violations/overview", headers=seeded["viewer"]).json["items"]
    assert ov[0]["analysis_id"] == r.json["id"] and ov[0]["n_violations"] == len(r.json["violations"])


def _candidate(client, seeded):
    from service.analysis.synthetic import Design, simulate, to_text
    d = Design(collectives=["allreduce"], sizes=[8, 1024], mockups={"allreduce": ["allreduce_as_reduce_bcast"]},
               factors={("allreduce", "allreduce_as_reduce_bcast", 1024): 1 / 1.5}, nruns=6, nrep=20,
               machine="m1", campaign="c1", sigma_run=0.02, sigma_rep=0.02, p_outlier=0.0)
    files = [{"name": f"run{i}.txt", "content": to_text(r)} for i, r in enumerate(simulate(d, np.random.default_rng(7)))]
    assert client.post("/api/v1/uploads", headers=seeded["agent1"],
                       json={"upload_id": "syn-v", "files": files}).status_code == 201
    r = client.post("/api/v1/analyses", headers=seeded["agent1"], json={"machine": "m1", "library": "openmpi"})
    assert r.status_code == 201, r.json
    return r.json["profiles"][0]


def test_validation_figures_decide_whether_a_candidate_is_validated(client, seeded, app):
    """The agent's validation job posts default-vs-tuned medians; the candidate becomes validated only
    when tuned is not slower at every size it redirects, and a validation upload is never analysed."""
    cand = _candidate(client, seeded)
    url = f"/api/v1/profiles/{cand['id']}/validation"
    fig = {"collective": "allreduce", "msize": 1024, "nprocs": 2, "default_time": 3e-5}
    slower = client.post(url, headers=seeded["agent1"], json={"job": "v1", "figures": [
        {**fig, "tuned_time": 4e-5}, {**fig, "msize": 8, "tuned_time": 3.05e-5}]})
    assert slower.status_code == 200, slower.json
    assert slower.json["validation"]["ok"] is False and slower.json["state"] == "candidate"
    assert slower.json["validation"]["state"] == "failed"
    assert [s["msize"] for s in slower.json["validation"]["slower"]] == [1024]
    # a size the candidate leaves alone (8 B) measured 30x apart: the run itself is noise, not a verdict
    noise = client.post(url, headers=seeded["agent1"], json={"job": "v1b", "figures": [
        {**fig, "tuned_time": 2e-5}, {**fig, "msize": 8, "tuned_time": 1e-6}]})
    assert noise.json["validation"]["state"] == "inconclusive" and noise.json["state"] == "candidate"
    assert "inconclusive" in noise.json["validation"]["state"]
    missing = client.post(url, headers=seeded["agent1"], json={"job": "v2", "figures": [
        {**fig, "msize": 8, "tuned_time": 1e-6}]})
    assert missing.json["validation"]["ok"] is False and missing.json["validation"]["missing"]
    assert client.post(url, headers=seeded["agent2"], json={"figures": []}).status_code == 403
    assert client.post(url, headers=seeded["viewer"], json={"figures": []}).status_code == 403
    ok = client.post(url, headers=seeded["agent1"], json={"job": "v3", "figures": [{**fig, "tuned_time": 2e-5}]})
    assert ok.json["validation"]["ok"] is True and ok.json["state"] == "validated", ok.json
    stored = client.get(f"/api/v1/profiles/{cand['id']}", headers=seeded["viewer"]).json
    assert stored["state"] == "validated"
    # A tagged validation file does not change what the analysis sees.
    before = client.post("/api/v1/analyses", headers=seeded["admin"], json={"machine": "m1", "library": "openmpi"})
    from service.analysis.synthetic import Design, simulate, to_text
    d = Design(collectives=["allreduce"], sizes=[8, 1024], mockups={"allreduce": ["allreduce_as_reduce_bcast"]},
               factors={("allreduce", "allreduce_as_reduce_bcast", 1024): 10.0}, nruns=3, nrep=20, machine="m1",
               campaign="c1", sigma_run=0.02, sigma_rep=0.02, p_outlier=0.0)
    vfiles = [{"name": f"val{i}.txt", "content": "#@pgmpi_validation=tuned\n" + to_text(r)}
              for i, r in enumerate(simulate(d, np.random.default_rng(3)))]
    up = client.post("/api/v1/uploads", headers=seeded["agent1"], json={"upload_id": "val", "files": vfiles})
    assert up.status_code == 201
    with app.app_context():      # their own record: the role, in the run's validation column
        assert {db.session.get(Run, i).validation for i in up.json["runs"]} == {"tuned"}
    after = client.post("/api/v1/analyses", headers=seeded["admin"], json={"machine": "m1", "library": "openmpi"})
    key = lambda r: sorted((v["collective"], v["mockup"], v["msize"]) for v in r.json["violations"])  # noqa: E731
    assert key(before) == key(after)


def test_json_upload_form(client, seeded, app):
    rows = [["MPI_Allreduce", r, 64, 1e-5 + r * 1e-7, "default"] for r in range(4)] + \
           [["MPI_Allreduce", r, 64, 2e-5, "allreduce_as_reduce_bcast"] for r in range(3)]
    hdr = {"machine": "m1", "mpi_library": "mpich", "mpi_version": "4.0.2", "nprocs": 4, "nodes": 1, "ppn": 4}
    r = client.post("/api/v1/uploads", headers=seeded["agent1"],
                    json={"upload_id": "j1", "files": [{"name": "json-run", "headers": hdr, "rows": rows}]})
    assert r.status_code == 201, r.json
    run = client.get(f"/api/v1/runs/{r.json['runs'][0]}", headers=seeded["viewer"]).json
    assert run["library"] == "mpich" and run["nprocs"] == 4
    assert sorted((s["algorithm"], s["n"]) for s in run["series"]) == [("allreduce_as_reduce_bcast", 3), ("default", 4)]
    before = counts(app)
    bad = client.post("/api/v1/uploads", headers=seeded["agent1"], json={"upload_id": "j2", "files": [
        {"name": "x", "headers": hdr, "rows": [["MPI_Allreduce", 0, -5, 1e-5, "default"]]}]})
    assert bad.status_code == 422 and bad.json["error"]["field"].startswith("x:"), bad.json
    both = client.post("/api/v1/uploads", headers=seeded["agent1"], json={"upload_id": "j3", "files": [
        {"name": "x", "content": "a", "rows": rows}]})
    assert both.status_code == 422 and "either content" in both.json["error"]["message"]
    assert counts(app) == before


def test_series_statistics_match_numpy(client, seeded, app):
    """The vectorised per-series n/median/mean/min equal numpy's on each series (odd and even n)."""
    for nrep, uid in ((7, "odd"), (8, "even")):
        text = results_file(nrep=nrep, sizes=(8, 64, 1024))
        r = client.post("/api/v1/uploads", headers=seeded["agent1"],
                        json={"upload_id": uid, "files": [{"name": "f", "content": text}]})
        assert r.status_code == 201
        for s in client.get(f"/api/v1/series?run={r.json['runs'][0]}&values=1", headers=seeded["viewer"]).json["items"]:
            v = np.array(s["timings"])
            assert s["n"] == nrep == len(v)
            assert s["median"] == pytest.approx(np.median(v), rel=1e-12)
            assert s["mean"] == pytest.approx(v.mean(), rel=1e-12) and s["min"] == v.min()
            assert list(v) == sorted(v)   # results_file's timings grow with nrep: stored in nrep order


def test_concurrent_first_uploads_of_a_new_library(client, seeded, app, backend):
    """Two uploads racing to register the same new library both succeed (real concurrency on PostgreSQL)."""
    import threading
    results = []

    def up(uid):
        c = app.test_client()
        r = c.post("/api/v1/uploads", headers=seeded["agent1"],
                   json={"upload_id": uid, "files": [{"name": f"{uid}.txt", "content": results_file(
                       library="newmpi", version="9.9", nrep=300)}]})
        results.append(r.status_code)

    threads = [threading.Thread(target=up, args=(f"race-{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # SQLite serialises writers (busy timeout); PostgreSQL makes the losers wait for the winner's library row
    assert sorted(results) == [201] * 4, results
    libs = client.get("/api/v1/machines/m1/libraries", headers=seeded["viewer"]).json["items"]
    assert [(x["name"], x["version"]) for x in libs] == [("newmpi", "9.9")]
    assert counts(app)["Upload"] == 4


def test_overview_history_windows(client, seeded, app):
    """History inside the summary's window and beyond it (read from analyses) agree."""
    from datetime import datetime, timedelta, timezone
    from types import SimpleNamespace

    from service.store.analyses import store_result
    from service.store.models import Analysis
    from service.store.queries import refresh_overview
    client.post("/api/v1/uploads", headers=seeded["agent1"],
                json={"upload_id": "u", "files": [{"name": "a", "content": results_file()}]})
    with app.app_context():
        m = db.session.scalar(select(Machine).where(Machine.name == "m1"))
        lib = db.session.scalar(select(MpiLibrary))
        data = SimpleNamespace(alpha=0.05, test="mannwhitney", fdr=False)
        now = datetime.now(timezone.utc)
        for k, age in enumerate((100, 50, 20, 1)):
            a = store_result(m, lib, None, data, "t", {"checked": 1, "violations": [
                {"collective": "bcast", "mockup": "bcast_as_scatter_allgather", "msize": 8, "nprocs": 2,
                 "default_time": 2.0, "mockup_time": 1.0, "slowdown": 2.0}] * (k + 1)})
            a.created_at = now - timedelta(days=age)
        refresh_overview(db.session)
        db.session.commit()
    get = lambda d: [h[1] for h in client.get(f"/api/v1/violations/overview?days={d}",
                                              headers=seeded["viewer"]).json["items"][0]["history"]]
    assert get(30) == [3, 4] and get(60) == [2, 3, 4] and get(365) == [1, 2, 3, 4]


def test_campaign_analysis_runs_paired_with_bh_and_shows_its_control_arm(client, seeded, campaign_with_runs):
    """A campaign's analysis: paired test, BH on by default; the control arm is tested but never stored as a
    violation; the campaign page shows 'control: k of n flagged; null ratio spread x %'."""
    from service.analysis.synthetic import MEASURED, Design, simulate, to_text
    d = Design(collectives=["allreduce"], sizes=[8, 1024, 65536], mockups={"allreduce": ["allreduce_as_reduce_bcast"]},
               factors={("allreduce", "allreduce_as_reduce_bcast", 1024): 1 / 1.3}, nruns=8, nrep=20,
               machine="m1", campaign="ctl", control=True, p_outlier=0.0, **MEASURED)
    campaign_with_runs([to_text(r) for r in simulate(d, np.random.default_rng(2))], "ctl", by="agent1")
    r = client.post("/api/v1/analyses", headers=seeded["agent1"],
                    json={"machine": "m1", "library": "openmpi", "campaign": "ctl"})
    assert r.status_code == 201, r.json
    assert r.json["test"] == "paired_t" and r.json["fdr"] is True
    assert all(v["mockup"] != "default_control" for v in r.json["violations"])
    assert [(v["mockup"], v["msize"]) for v in r.json["violations"] if v["kind"] == "pattern"] == \
        [("allreduce_as_reduce_bcast", 1024)]
    assert all("default_control" not in t for p in r.json["profiles"] for t in p["files"].values())
    page = client.get("/campaigns").get_data(as_text=True)
    assert "control: 0 of 3 flagged; null ratio spread" in page


def test_candidates_need_k_confirming_campaigns(client, seeded, campaign_with_runs):
    """confirmations=2: the first night that finds a redirection proposes nothing, the second proposes it."""
    from service.analysis.synthetic import MEASURED, Design, simulate, to_text
    fac = {("allreduce", "allreduce_as_reduce_bcast", 1024): 1 / 1.4}
    profiles = []
    for night in ("n1", "n2"):
        d = Design(collectives=["allreduce"], sizes=[8, 1024], mockups={"allreduce": ["allreduce_as_reduce_bcast"]},
                   factors=fac, nruns=6, nrep=20, machine="m1", campaign=night, control=True, p_outlier=0.0,
                   **MEASURED)
        campaign_with_runs([to_text(r) for r in simulate(d, np.random.default_rng(len(night) + ord(night[1])))],
                           night, by="agent1")
        r = client.post("/api/v1/analyses", headers=seeded["agent1"],
                        json={"machine": "m1", "library": "openmpi", "campaign": night, "confirmations": 2})
        assert r.status_code == 201, r.json
        assert [(v["mockup"], v["msize"]) for v in r.json["violations"] if v["kind"] == "pattern"] == \
            [("allreduce_as_reduce_bcast", 1024)]
        profiles.append(r.json["profiles"])
    assert profiles[0] == [] and len(profiles[1]) == 1


def test_native_candidate_requests_name_what_is_wrong(client, seeded, app):
    """POST /native/candidates (the nightly native chain): another machine's agent is refused, an unknown
    library or campaign and a refusal record of another library are named, nothing is stored."""
    from pgmpi_formats.prf import format_prf
    from service.workflows.native import _carried
    body = {"machine": "m1", "library": "openmpi", "version": "4.1.4", "campaign": "c1"}
    r = client.post("/api/v1/native/candidates", headers=seeded["agent2"], json=body)
    assert r.status_code == 403, r.json
    r = client.post("/api/v1/native/candidates", headers=seeded["agent1"], json=body)
    assert r.status_code == 404 and r.json["error"]["field"] == "library", r.json
    assert client.post("/api/v1/machines/m1/libraries", headers=seeded["admin"],
                       json={"name": "openmpi", "version": "4.1.4"}).status_code in (200, 201)
    r = client.post("/api/v1/native/candidates", headers=seeded["agent1"], json=body)
    assert r.status_code == 404 and "unknown campaign 'c1'" in r.json["error"]["message"], r.json
    r = client.post("/api/v1/native/candidates", headers=seeded["agent1"], json={**body, "library": "intelmpi"})
    assert r.status_code == 404, r.json
    # the live .prf profiles a new file leaves measured are carried; one whose mock-up calls a retuned
    # collective is left out
    live = {"allreduce_p2.prf": format_prf("MPI_Allreduce", 2, [(1024, 1024, "allreduce_as_reduce_bcast")]),
            "allgather_p2.prf": format_prf("MPI_Allgather", 2, [(64, 64, "allgather_as_gather_bcast")]),
            "native.rules": "old"}
    assert _carried(live, {"bcast"}) == ({}, ["allgather_p2.prf", "allreduce_p2.prf"])
    assert _carried(live, {"reduce_scatter"}) == ({n: live[n] for n in ("allgather_p2.prf", "allreduce_p2.prf")}, [])
    assert _carried(live, {"reduce"}) == ({"allgather_p2.prf": live["allgather_p2.prf"]}, ["allreduce_p2.prf"])


def test_the_nightly_chain_pairs_a_reduced_searchs_alone_confirmations(client, seeded, app, campaign_with_runs):
    """A reduced search's confirmations (native_driver: the default alone, the chosen variant alone, each round
    one #@mpirun_index) stored through the upload path become one paired run per round in the nightly chain's
    cells (service/workflows/native.campaign_cells), and the search's interleaved measurement of that variant
    no longer counts: here it made the variant look 5x faster, alone it is 1.3x slower."""
    from sqlalchemy import select as _select

    from service.store.models import Campaign, MpiLibrary
    from service.workflows.native import campaign_cells
    sbt = "native:split_binary_tree"

    def raw(index, medians):
        lines = ["#@pgmpi_format=1", "#@machine=m1", "#@mpi_library=openmpi", "#@mpi_version=4.1.4",
                 "#@module=openmpi/4.1.4", "#@nodes=1", "#@ppn=2", "#@nprocs=2", f"#@mpirun_index={index}",
                 "#@campaign=ns", "#@clock=MPI_Wtime", "test nrep msize runtime_sec algorithm"]
        for label, t in medians.items():
            lines += [f"MPI_Bcast {r} 512 {t * (1 + 0.001 * r):.10e} {label}" for r in range(5)]
        return "\n".join(lines) + "\n"
    files = {"search-0-bcast.txt": raw(0, {"default": 1e-6, sbt: 0.2e-6})}
    for i, k in enumerate([1.0, 1.02, 0.99]):
        files |= {f"search-0-confirm-{i}-0.txt": raw(i, {"default": 1e-6 * k}),
                  f"search-0-confirm-{i}-1.txt": raw(i, {sbt: 1.3e-6 * k})}
    campaign_with_runs(files, "ns", by="agent1")
    with app.app_context():
        lib = db.session.scalar(_select(MpiLibrary.id).where(MpiLibrary.name == "openmpi"))
        camp = db.session.scalar(_select(Campaign.id).where(Campaign.name == "ns"))
        runs = campaign_cells(lib, camp)[("bcast", 512, 2)]
    paired = [x for x in runs if x.alone]
    assert len(paired) == 3 and all(set(x) == {"default", sbt} for x in paired)
    assert all(abs(x[sbt] / x["default"] - 1.3) < 0.01 for x in paired)
    assert [set(x) for x in runs if not x.alone] == [{"default"}]


def test_analysis_without_a_working_checker_is_503_and_the_agent_says_why(client, seeded, app, monkeypatch,
                                                                          tmp_path, campaign_with_runs):
    """No pgmpitune-check the service can run (a tree where only another MPI's lib/ was built, a broken one):
    POST /analyses answers 503 naming the checker and how to build it and stores nothing, never a 500; the
    agent logs the service's reason, not "unreachable", and asks again later."""
    from scheduler.agent import Agent
    from scheduler.backends import make_backend
    from scheduler.campaign import parse_campaign
    from scheduler.uploader import ServiceClient
    from service.analysis.synthetic import Design, simulate, to_text
    from service.store.models import Analysis
    d = Design(collectives=["allreduce"], sizes=[8, 1024], mockups={"allreduce": ["allreduce_as_reduce_bcast"]},
               nruns=2, nrep=5, machine="m1", campaign="c1")
    campaign_with_runs([to_text(r) for r in simulate(d, np.random.default_rng(3))], by="agent1", schedule="manual")
    body = {"machine": "m1", "library": "openmpi", "campaign": "c1"}
    monkeypatch.setenv("PGMPITUNE_CHECK", str(tmp_path / "no-such-pgmpitune-check"))
    r = client.post("/api/v1/analyses", headers=seeded["agent1"], json=body)
    assert r.status_code == 503 and r.json["error"]["code"] == "analysis_unavailable", r.json
    assert "no-such-pgmpitune-check: cannot run" in r.json["error"]["message"]
    assert "deploy/build-lib.sh" in r.json["error"]["message"]
    broken = tmp_path / "pgmpitune-check"
    broken.write_text("#!/bin/sh\necho 'libmpi.so.12: cannot open shared object file' >&2\nexit 127\n")
    broken.chmod(0o755)
    monkeypatch.setenv("PGMPITUNE_CHECK", str(broken))
    r = client.post("/api/v1/analyses", headers=seeded["agent1"], json=body)
    assert r.status_code == 503 and "failed (127): libmpi.so.12: cannot open" in r.json["error"]["message"], r.json
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Analysis)) == 0
    # the agent of the campaign: its measure job done, the analysis asked for
    c = parse_campaign({"name": "c1", "machine": "m1", "backend": "local", "modules": [{"mpi": "openmpi"}],
                        "layouts": [{"nodes": 1, "ppn": 2}], "collectives": {"allreduce": {"sizes": [8, 1024]}},
                        "bench_root": str(tmp_path)})
    said: list[str] = []
    agent = Agent(c, tmp_path / "state", make_backend(c, "local"),
                  ServiceClient(app=app, token=seeded["agent1"]["Authorization"].split()[1]), log=said.append)
    with agent.state.tx():
        for row in agent.state.jobs("c1"):
            agent.state.update_job("c1", row["key"], state="COMPLETED", attempt_dir=str(tmp_path / "a"))
    assert agent.analyse() == {} and agent.state.campaign("c1")["state"] == "ACTIVE"    # asked again later
    assert len(said) == 1 and "unreachable" not in said[0], said
    assert said[0].startswith("analysis of openmpi: the service cannot analyse it now, asked again later: HTTP 503: ")
    assert "pgmpitune-check" in said[0] and "failed (127)" in said[0]
