"""Helpers of the dashboard tests (module name unique across test areas): app, users, login, raw
results, uploads through the API, analysis."""
from __future__ import annotations

import math
import os
import re
import uuid
from pathlib import Path

import importlib.util

import flask_migrate
import psycopg
import pytest
from sqlalchemy.engine import make_url

from service.app import create_app
from service.store.db import db

ROOT = Path(__file__).resolve().parents[3]
MIGRATIONS = str(ROOT / "migrations")


def make_app(database_url: str, instance: Path, **extra):
    cfg = {"SQLALCHEMY_DATABASE_URI": database_url, "TESTING": True, "SECRET_KEY": "test-secret",
           "INSTANCE_PATH": str(instance), "WTF_CSRF_ENABLED": True,
           "PGMPI_PROFILE_ROOT": str(instance / "profiles")}
    cfg.update(extra)
    app = create_app(cfg)
    with app.app_context():
        flask_migrate.upgrade(directory=MIGRATIONS)
    return app


def _conninfo(url: str) -> str:
    u = make_url(url)
    return f"host={u.host} port={u.port or 5432} user={u.username} password={u.password} dbname={u.database}"


def add_users_and_tokens(app) -> dict:
    from service.auth import add_user, create_token
    out = {}
    with app.app_context():
        add_user("admin1", "admin-password", "admin")
        add_user("viewer1", "viewer-password", "viewer")
        _, secret = create_token("dash-admin", "admin", actor="test")
        out["admin"] = {"Authorization": f"Bearer {secret}"}
        _, secret = create_token("dash-viewer", "viewer", actor="test")
        out["viewer"] = {"Authorization": f"Bearer {secret}"}
        db.session.commit()
    return out


def login(client, username: str, password: str):
    page = client.get("/auth/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page) or \
        re.search(r'name="csrf_token"[^>]*value="([^"]+)"', page)
    r = client.post("/auth/login", data={"username": username, "password": password,
                                         "csrf_token": token.group(1)})
    assert r.status_code == 302, r.get_data(as_text=True)[:500]
    return client


def csrf_of(html: str) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)


# ----------------------------------------------------------------- synthetic raw results

SPEEDUP = {  # (mock-up, size) -> how much faster than default the mock-up is (default / mock-up)
    ("allreduce_as_reduce_bcast", 65536): 1.6,
    ("allreduce_as_reduce_bcast", 1048576): 1.4,
}


def raw_file(machine, library, version, nprocs, mpirun, campaign, sizes=(8, 1024, 65536, 1048576),
             nrep=12, seed=0, scale=1.0, nodes=1) -> str:
    """A raw-results file (docs/contracts.md, 2) with a known violation of Allreduce <= Reduce + Bcast,
    measured on `nodes` nodes x nprocs/nodes ranks."""
    import random
    # a string seed: hash() of a tuple holding a str changes with PYTHONHASHSEED, i.e. with every process,
    # which made the planted effect's median 1.58-1.62x from one pytest run to the next
    rnd = random.Random(f"{seed}/{nprocs}/{mpirun}/{library}")
    lines = ["#@pgmpi_format=1", f"#@machine={machine}", f"#@mpi_library={library}", f"#@mpi_version={version}",
             f"#@module={library}/{version}", f"#@nodes={nodes}", f"#@ppn={nprocs // nodes}", f"#@nprocs={nprocs}",
             f"#@mpirun_index={mpirun}", "#@slurm_job_id=", f"#@campaign={campaign}", "#@clock=MPI_Wtime",
             "test nrep msize runtime_sec algorithm"]
    algs = [("MPI_Allreduce", "default"), ("MPI_Allreduce", "allreduce_as_reduce_bcast"),
            ("MPI_Bcast", "default"), ("MPI_Bcast", "bcast_as_scatter_allgather")]
    for call, alg in algs:
        for s in sizes:
            base = scale * (5e-6 + s * 2e-9 * math.log2(nprocs + 1))
            if alg != "default":
                base = base / SPEEDUP.get((alg, s), 0.8)
            for r in range(nrep):
                lines.append(f"{call} {r} {s} {base * (1 + 0.03 * rnd.random()):.10f} {alg}")
    for s in sizes:
        for r in range(nrep):
            lines.append(f"MPI_Barrier {r} {s} {1e-6 * (1 + 0.05 * rnd.random()):.10f} default")
    return "\n".join(lines) + "\n"


def upload(client, headers, files: dict[str, str], campaign: str | None = None):
    r = client.post("/api/v1/uploads", headers=headers,
                    json={"upload_id": uuid.uuid4().hex, "campaign": campaign,
                          "files": [{"name": k, "content": v} for k, v in files.items()]})
    assert r.status_code in (200, 201), r.get_data(as_text=True)
    return r.get_json()


def analyse(app, client, headers, machine: str, library: str, campaign: str | None = None) -> int:
    """Analysis of a campaign through POST /api/v1/analyses (service/analysis through service/workflows/analyse.py).  While the analysis's
    module is not installed yet that endpoint answers 4xx/5xx; then the violations are computed here
    with scipy's Mann-Whitney U test on the per-mpirun medians (default slower than a mock-up,
    alpha 0.05) and stored with service/store/models.py, plus one candidate profile per library."""
    r = client.post("/api/v1/analyses", headers=headers,
                    json={"machine": machine, "library": library, "campaign": campaign, "alpha": 0.05,
                          "test": "mannwhitney", "fdr": False})
    if r.status_code == 201:
        return r.get_json()["id"]
    import numpy as np
    from scipy.stats import mannwhitneyu
    from sqlalchemy import select
    from service.store.models import (Analysis, Campaign, Machine, MpiLibrary, ProfileSet, ProfileVersion, Run,
                                Series, Violation)
    with app.app_context():
        m = db.session.scalar(select(Machine).where(Machine.name == machine))
        lib = db.session.scalar(select(MpiLibrary).where(MpiLibrary.machine_id == m.id, MpiLibrary.name == library))
        camp = db.session.scalar(select(Campaign).where(Campaign.name == campaign)) if campaign else None
        q = select(Run.nprocs, Series.call, Series.algorithm, Series.msize, Series.median).join(
            Run, Run.id == Series.run_id).where(Run.library_id == lib.id)
        if camp is not None:
            q = q.where(Run.campaign_id == camp.id)
        med: dict = {}
        for p, call, alg, s, v in db.session.execute(q):
            med.setdefault((p, call, s), {}).setdefault(alg, []).append(v)
        a = Analysis(machine_id=m.id, library_id=lib.id, campaign_id=camp.id if camp else None, alpha=0.05,
                     test="mannwhitney", fdr=False, actor="test", n_checked=0, n_violations=0)
        db.session.add(a)
        db.session.flush()
        ranges: dict = {}
        for (p, call, s), algs in sorted(med.items()):
            d = algs.get("default")
            for alg, vals in algs.items():
                if alg == "default" or not d:
                    continue
                a.n_checked += 1
                if len(d) >= 2 and len(vals) >= 2 and np.median(d) > 1.1 * np.median(vals):
                    pv = float(mannwhitneyu(d, vals, alternative="greater").pvalue)
                    if pv <= 0.05:
                        sd = float(np.median(d) / np.median(vals))
                        db.session.add(Violation(analysis_id=a.id, collective=call.replace("MPI_", "").lower(),
                                                 mockup=alg, msize=s, nprocs=p, default_time=float(np.median(d)),
                                                 mockup_time=float(np.median(vals)), slowdown=sd, p_value=pv))
                        a.n_violations += 1
                        a.max_slowdown = max(a.max_slowdown or 0, sd)
                        ranges.setdefault((call, p), []).append((s, alg))
        ps = db.session.scalar(select(ProfileSet).where(ProfileSet.library_id == lib.id)) or \
            ProfileSet(machine_id=m.id, library_id=lib.id)
        db.session.add(ps)
        db.session.flush()
        files = {}
        for (call, p), rs in sorted(ranges.items()):
            key = call.replace("MPI_", "").replace("_", "").lower()
            names = sorted({alg for _, alg in rs})
            lines = ["# pgtune profile", "#@pgmpi profile_version 1", f"#@pgmpi machine {machine}", call, str(p),
                     str(len(names))] + [f"{i + 1} {n}" for i, n in enumerate(names)] + [str(len(rs))]
            lines += [f"{s} {s} {names.index(alg) + 1}" for s, alg in sorted(rs)]
            files[f"{key}_p{p}.prf"] = "\n".join(lines) + "\n"
        n = len(ps.versions) + 1
        db.session.add(ProfileVersion(profile_set_id=ps.id, number=n, state="candidate", analysis_id=a.id,
                                      files=files))
        db.session.commit()
        return a.id


_spec = importlib.util.spec_from_file_location("pgmpi_root_conftest", ROOT / "tests/python/conftest.py")
_root = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_root)
mpirun_cmd = _root.mpirun_cmd
mpi_install = _root.mpi_install


def measured_candidate(ps):
    """The newest candidate version of the measured process counts (a span between measured counts is a
    version of its own after it: service/store/analyses.py)."""
    return [v for v in ps.versions if not (v.notes or "").startswith("span:")][-1]
