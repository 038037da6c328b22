"""The local backend (mpirun directly, what `make demo` uses): a tiny campaign over both MPIs whose
results go straight into a Flask app (SQLite), plus cancel and walltime on local jobs."""
from __future__ import annotations

import os
import subprocess
import time

import pytest

from scheduler.runner import make_agent, run_local_campaign

from sched_helpers import ROOT, campaign_file

pytestmark = [pytest.mark.mpi]


def local_campaign(name, bench_root, **over):
    c = {"name": name, "machine": "demo-box", "backend": "local",
         "modules": [{"mpi": "openmpi"}, {"mpi": "mpich"}],
         "layouts": [{"nodes": 1, "ppn": 2}],
         "collectives": {"allreduce": {"sizes": [8, 1024]}, "bcast": {"sizes": [8, 1024]},
                         "allgather": {"sizes": [8]}},
         "repetitions": {"nrep": 5}, "mpiruns": 2, "bench_root": str(bench_root),
         "validation": {"enabled": False}}
    c.update(over)
    return c


@pytest.fixture
def sqlite_app(tmp_path):
    import flask_migrate
    from service.app import create_app
    from service.auth import create_token
    from service.store.db import db
    from service.store.models import Machine
    app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'svc.sqlite'}", "SECRET_KEY": "t",
                      "INSTANCE_PATH": str(tmp_path / "instance")})
    with app.app_context():
        flask_migrate.upgrade(directory=str(ROOT / "migrations"))
        db.session.add(Machine(name="demo-box", nodes=1, cores_per_node=2, interconnect="shm", notes=""))
        db.session.flush()
        _, secret = create_token("demo-agent", "agent", "demo-box", actor="test")
        db.session.commit()
    return app, secret


def test_local_campaign_into_app(tmp_path, bench_root, sqlite_app):
    app, token = sqlite_app
    cfile = campaign_file(tmp_path / "demo.yaml", **local_campaign("demo1", bench_root))
    s = run_local_campaign(cfile, tmp_path / "state", app=app, token=token, log=None, timeout=300)
    assert s["done"] and s["rejected"] == 0 and s["states"] == {"COMPLETED": 2}, s
    # 2 MPIs x R=2 x 2 size groups = 8 raw files, each uploaded once
    assert len(s["result_files"]) == 8 and s["uploaded"] == 8
    from sqlalchemy import func, select
    from service.store.db import db
    from service.store.models import Job, Run
    with app.app_context():
        libs = db.session.execute(select(Run.mpirun_index, func.count()).group_by(Run.mpirun_index)).all()
        assert dict(libs) == {0: 4, 1: 4}
        states = db.session.scalars(select(Job.state)).all()
        assert sorted(states) == ["COMPLETED", "COMPLETED"]
    # a second run of the same campaign resumes: nothing is rerun, nothing uploaded again
    s2 = run_local_campaign(cfile, tmp_path / "state", app=app, token=token, log=None, timeout=60)
    assert s2["uploaded"] == 8
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Run)) == 8


def test_local_cancel_and_walltime(tmp_path, bench_root):
    c = local_campaign("lc", bench_root, modules=[{"mpi": "openmpi", "prologue": ["sleep 120"]},
                                                  {"mpi": "mpich", "label": "slow", "prologue": ["sleep 120"]}],
                       slurm={"walltime": "00:00:03"})
    agent = make_agent(campaign_file(tmp_path / "lc.yaml", **c), tmp_path / "state", log=None)
    agent.run_once()
    rows = {r["key"]: r for r in agent.state.jobs("lc")}
    assert all(r["state"] in ("PENDING", "RUNNING") for r in rows.values())
    # walltime: both are killed by `timeout` after 3 s and recorded as TIMEOUT (retried per policy)
    s = agent.run(interval=0.5, timeout=60)
    assert s["done"]
    rows = {r["key"]: r for r in agent.state.jobs("lc")}
    assert {r["state"] for r in rows.values()} == {"TIMEOUT"}, [dict(r) for r in rows.values()]
    assert all(r["attempt"] == 3 for r in rows.values())       # default retry: 3 attempts on TIMEOUT
    for r in rows.values():
        pid = int(r["backend_id"].split("-")[1])
        assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"


def test_local_cancel(tmp_path, bench_root):
    c = local_campaign("cx", bench_root, modules=[{"mpi": "openmpi", "prologue": ["sleep 120"]}])
    agent = make_agent(campaign_file(tmp_path / "cx.yaml", **c), tmp_path / "state", log=None)
    agent.run_once()
    bid = agent.state.jobs("cx")[0]["backend_id"]
    t0 = time.time()
    assert agent.cancel() == 1
    assert time.time() - t0 < 10
    row = agent.state.jobs("cx")[0]
    assert row["state"] == "CANCELLED"
    pid = int(bid.split("-")[1])
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"
    # nothing of the job survives (timeout runs the script in its own process group)
    script = row["attempt_dir"] + "/job.sh"
    left = subprocess.run(["pgrep", "-f", script], capture_output=True, text=True).stdout.split()
    assert left == [], left


def test_local_native_campaign_records_the_libraries_algorithms(tmp_path, bench_root, sqlite_app):
    """A campaign that measures the MPI libraries' own algorithms next to the default: each job discovers
    them first (pgmpi-bench --list-native), the campaign keeps the lists, the raw files carry the labels and
    reach the service."""
    from pgmpi_formats import native
    app, token = sqlite_app
    spec = local_campaign("native1", bench_root, mpiruns=1,
                          collectives={"allreduce": {"sizes": [1024], "algorithms": ["default", "native:all"]},
                                       "bcast": {"sizes": [1024], "algorithms": ["default", "native:binomial"]}})
    cfile = campaign_file(tmp_path / "native.yaml", **spec)
    s = run_local_campaign(cfile, tmp_path / "state", app=app, token=token, log=None, timeout=300)
    assert s["done"] and s["states"] == {"COMPLETED": 2}, s
    for mpi in ("openmpi", "mpich"):
        rec = native.Discovery.from_json(__import__("json").loads(
            (tmp_path / "state" / "campaigns" / "native1" / f"native-{mpi}.json").read_text()))
        assert rec.library == mpi and rec.algorithms == native.FALLBACK[mpi].algorithms
    from sqlalchemy import select
    from service.store.db import db
    from service.store.models import Series
    with app.app_context():
        algs = set(db.session.scalars(select(Series.algorithm)).all())
    assert {"default", "native:binomial", "native:recursive_doubling", "native:rabenseifner",
            "native:reduce_scatter_allgather"} <= algs
