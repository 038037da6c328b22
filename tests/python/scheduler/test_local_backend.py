"""The local backend (mpirun directly, what `make demo` uses): a tiny campaign over both MPIs whose
results go straight into a Flask app (SQLite), plus cancel and walltime on local jobs."""
from __future__ import annotations

import os
from pathlib import Path
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


@pytest.mark.lmod
def test_demo_native_step_decides_validates_through_the_module_and_publishes_only_what_passed(tmp_path, sqlite_app):
    """make demo's native half (deploy/demo.py native_step) on one MPI: a search campaign -> the decision for
    the library's exact version -> when it chose anything, a validation job that loaded the file through the
    demo's module (the job refuses to measure otherwise) and a record in the service -> published next to
    the live set exactly when that record passed; the summary facts say which."""
    import importlib.util
    import json as _json
    from sqlalchemy import select
    from service.store.db import db
    from service.store.models import NativeValidation
    spec = importlib.util.spec_from_file_location("pgmpi_demo", ROOT / "deploy" / "demo.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    app, token = sqlite_app
    c = {"name": "d-native", "machine": "demo-box", "backend": "local", "modules": [{"mpi": "mpich"}],
         "layouts": [{"nodes": 1, "ppn": 2}], "repetitions": {"nrep": 20}, "mpiruns": 2,
         "collectives": {"allreduce": {"sizes": [32, 1024], "search": "exhaustive"}}, "validation": {"enabled": False}}
    s = run_local_campaign(campaign_file(tmp_path / "n.yaml", **c), tmp_path / "agent", app=app, token=token,
                           log=None, timeout=300)
    assert s["states"] == {"COMPLETED": 1}, s
    versions = {"openmpi": "4.1.4", "mpich": "4.0.2"}
    modules = demo._write_modules(tmp_path, tmp_path / "profiles", "demo-box", versions)
    facts = demo.native_step(app, tmp_path, "demo-box", "d-native", versions, tmp_path / "profiles", modules,
                             log=lambda _m: None)
    assert facts["openmpi"] == {"native": "no completed search job"}
    f = facts["mpich"]
    assert f["searched"].startswith("2 cells (allreduce), ") and f["searched"].endswith(", 2 mpiruns")
    live = tmp_path / "profiles" / "demo-box" / "mpich-4.0.2" / "current" / "native.json"
    with app.app_context():
        recs = db.session.scalars(select(NativeValidation).order_by(NativeValidation.id)).all()
    if "file" not in f:                       # nothing beat the default: no job, nothing published
        assert f["native"].endswith("nothing to publish") and not recs and not live.exists()
        return
    assert recs and f["validation"].startswith(f"record {recs[-1].id} {recs[-1].state}")
    # through the nightly workflow: a native candidate of the set, validated at the sizes its decision measured
    from service.store.models import ProfileVersion
    from service.workflows.native import NATIVE_NOTE
    with app.app_context():
        cands = [v for v in db.session.scalars(select(ProfileVersion)) if (v.notes or "").startswith(NATIVE_NOTE)]
        assert cands and cands[-1].decided_at == [["allreduce", 32, 2], ["allreduce", 1024, 2]]
    assert {c["msize"] for r in recs for c in r.verdict["cells"]} <= {32, 1024}, [r.verdict for r in recs]
    jobdir = sorted((tmp_path / "native-validate").iterdir())[-1]
    assert "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE=" in (jobdir / "native-env.txt").read_text()
    assert live.exists() == (recs[-1].state == "passed") == ("published" in f)
    if live.exists():
        from service.workflows.validate import native_digest
        assert native_digest(live.read_text()) == recs[-1].digest
    _json.dumps(f)


def test_next_night_measures_with_the_previous_nights_repetitions(tmp_path, bench_root):
    """Campaign-wide NREP from the previous night (scheduler/nrep_history.py): night 1 of a predict campaign
    has its pilot; night 2, in the same agent state, measures every mpirun of the cells night 1 measured with
    night 1's count per cell (no pilot) and its raw files name the night; a size new on night 2 gets its own
    pilot; other repetition rules find no earlier night."""
    from datetime import datetime, timezone

    from pgmpi_formats.footer import Nrep, records
    from pgmpi_formats.results import read_file
    from scheduler import nrep_history
    from scheduler.campaign import load_campaign
    from scheduler.runner import nightly_name
    rep = {"policy": "predict", "rules": ["rse"], "min_nrep": 10, "max_nrep": 60, "step": 5}
    one = local_campaign("nrep", bench_root, modules=[{"mpi": "openmpi"}], repetitions=rep, control=False,
                         collectives={"allreduce": {"sizes": [8, 4096]}})
    two = {**one, "collectives": {**one["collectives"], "bcast": {"sizes": [64]}}}     # bcast 64 B new on night 2
    state = tmp_path / "state"

    def night(cdef, day):
        c = nightly_name(load_campaign(campaign_file(tmp_path / f"{day}.yaml", **cdef)),
                         datetime.strptime(day, "%Y%m%d").replace(tzinfo=timezone.utc))
        agent = make_agent(c, state, log=None)
        s = agent.run(interval=0.3, timeout=300)
        assert s["done"] and s["states"] == {"COMPLETED": 1}, s
        adir = Path(agent.state.jobs(c.name)[0]["attempt_dir"])
        agent.state.close()
        runs = {p.name: read_file(p) for p in sorted(adir.glob("run-*.txt"))}
        return runs, {n: {(r.call, r.msize): r.n for r in records(run.pgmpi_lines, Nrep)} for n, run in runs.items()}

    runs1, counts1 = night(one, "20261124")
    assert runs1["run-0.txt"].header["nrep_policy"].startswith("predict:")
    assert runs1["run-1.txt"].header["nrep_policy"] == "from:run-0.txt"
    runs2, counts2 = night(two, "20261125")
    copy = state / "campaigns" / "nrep-20261125" / "nrep" / "nrep-20261124" / "openmpi-n1x2.txt"
    same = [n for n, r in runs2.items() if "MPI_Allreduce" in {c for c, _ in counts2[n]}]
    assert len(same) == 2 and all(runs2[n].header["nrep_policy"] == f"from:{copy.resolve()}" for n in same)
    assert all(counts2[n] == counts1["run-0.txt"] for n in same), (counts1, counts2)
    new = sorted(n for n in runs2 if n not in same)            # bcast 64 B: not measured on night 1, own pilot
    assert [runs2[n].header["nrep_policy"].split(":")[0] for n in new] == ["predict", "from"]
    assert runs2[new[1]].header["nrep_policy"].startswith("from:run-0")
    # other rules (a higher max) are another prediction: no earlier night qualifies
    from scheduler.state import State
    other = load_campaign(campaign_file(tmp_path / "o.yaml", **{**one, "name": "other",
                                                                 "repetitions": {**rep, "max_nrep": 80}}))
    assert nrep_history.find(State(state), other, tmp_path / "o") == {}



def test_search_under_predict_takes_the_campaign_wide_counts_else_max_nrep(tmp_path, bench_root):
    """Native searches in a `repetitions: predict` campaign (scheduler/README.md "Searches under predict"):
    pgmpi-bench --serve measures each cell with a fixed count, so a searched cell takes its campaign-wide
    count (here nrep_from: an earlier run's 24 per cell) and one without any the policy's max_nrep; a race's
    first stage is a sixth of that count, its second stage 3 times the first.  Before, the search got the
    predict options, with which every --serve mpirun refused to start and the whole job failed."""
    from collections import Counter

    from pgmpi_formats.results import read_file

    def job(cdef):
        agent = make_agent(campaign_file(tmp_path / f"{cdef['name']}.yaml", **cdef), tmp_path / "state", log=None)
        s = agent.run(interval=0.3, timeout=120)
        assert s["done"] and s["states"] == {"COMPLETED": 1}, s
        adir = Path(agent.state.jobs(cdef["name"])[0]["attempt_dir"])
        agent.state.close()
        return adir

    earlier = job(local_campaign("pse", bench_root, modules=[{"mpi": "mpich"}], repetitions={"nrep": 24},
                                 mpiruns=1, control=False,
                                 collectives={"allreduce": {"sizes": [1024]}, "bcast": {"sizes": [1024]}}))
    rep = {"policy": "predict", "rules": ["rse"], "min_nrep": 10, "max_nrep": 300, "step": 5,
           "nrep_from": [str(earlier / "run-0.txt")]}
    adir = job(local_campaign("psr", bench_root, modules=[{"mpi": "mpich"}], repetitions=rep, control=False,
                              collectives={"allreduce": {"sizes": [1024], "search": "race"},
                                           "bcast": {"sizes": [1024, 2048], "search": "smgd"}}))  # 2048 B: no count

    def rows(name):
        r = read_file(adir / name)
        return Counter((int(m), r.algorithms[a]) for m, a in zip(r.msize, r.algorithm))
    race = rows("search-0-allreduce.txt")       # every variant 24 // 6 = 4; the (up to) two kept 4 + 3 x 4
    assert 4 in race.values() and set(race.values()) <= {4, 16}, race
    smgd = rows("search-0-bcast.txt")           # each round: 24 repetitions at 1024 B, max_nrep 300 at 2048 B
    assert {n % 24 for (size, _), n in smgd.items() if size == 1024} == {0}, smgd
    assert all(n < 300 for (size, lab), n in smgd.items() if size == 1024 and lab != "default"), smgd
    assert {n % 300 for (size, _), n in smgd.items() if size == 2048} == {0}, smgd
