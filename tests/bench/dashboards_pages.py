#!/usr/bin/env python3
"""Server time of each dashboard page on a one-year database; prints p50/p95/max per page.

    .venv/bin/python tests/bench/dashboards_pages.py [--url URL] [--keep] [--days 365] [--reps 30]

Without --url, a scratch PostgreSQL database is created on the server of deploy/postgres.sh, filled
with a generated year and dropped at the end (--keep keeps it and prints its URL; pass it back with
--url --no-gen to time again).  If the service's generator tests/bench/service_gen_year.py exists and
has `generate(url, days=...)`, it fills the database; otherwise the generator below does:
2 machines x 2 MPI libraries, one nightly campaign per day, p in {4, 16}, 3 mpiruns each,
10 collectives x (default + mock-ups) x 8 sizes, 20 timings per series (1 run = 1 file),
barrier rows, 2 jobs per campaign and library, one analysis per campaign and library with its
violations, profile candidates.  Server time = the time Flask takes to answer the request in
process (test client), which is what a page costs the server; the machine is shared by several
helpers, so figures carry their noise.
"""
from __future__ import annotations

import argparse
import importlib.util
import io
import json
import math
import os
import statistics
import subprocess
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

ALGS = {
    "MPI_Allgather": ["default", "allgather_as_alltoall", "allgather_as_gather_bcast"],
    "MPI_Allreduce": ["default", "allreduce_as_reduce_bcast", "allreduce_as_reducescatterblock_allgather"],
    "MPI_Alltoall": ["default", "alltoall_as_alltoallv"],
    "MPI_Bcast": ["default", "bcast_as_scatter_allgather"],
    "MPI_Gather": ["default", "gather_as_allgather"],
    "MPI_Reduce": ["default", "reduce_as_allreduce", "reduce_as_reducescatterblock_gather"],
    "MPI_Reduce_scatter_block": ["default", "reducescatterblock_as_reduce_scatter"],
    "MPI_Reduce_scatter": ["default", "reducescatter_as_reduce_scatterv"],
    "MPI_Scan": ["default", "scan_as_exscan_reducelocal"],
    "MPI_Scatter": ["default", "scatter_as_bcast"],
}
SIZES = [8, 64, 512, 4096, 32768, 262144, 1048576, 4194304]
PS = [4, 16]
MPIRUNS = 3
NT = 20


def pg_url() -> str:
    return subprocess.check_output([str(ROOT / "deploy/postgres.sh"), "url"], text=True).strip()


def create_db(base: str) -> str:
    import psycopg
    from sqlalchemy.engine import make_url
    u = make_url(base)
    name = f"pgmpi_dashbench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(host=u.host, port=u.port, user=u.username, password=u.password, dbname=u.database,
                         autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    return u.set(database=name).render_as_string(hide_password=False)


def drop_db(url: str) -> None:
    import psycopg
    from sqlalchemy.engine import make_url
    u = make_url(url)
    with psycopg.connect(host=u.host, port=u.port, user=u.username, password=u.password, dbname="postgres",
                         autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{u.database}" WITH (FORCE)')


def generate(app, days: int) -> dict:
    """Fill the database through service/store/models.py's tables (SQLAlchemy Core + COPY for the big tables)."""
    from sqlalchemy import insert
    from service.store.db import db
    from service.store.models import (Analysis, AuditLog, Campaign, Job, Machine, MpiLibrary, ProfileSet,
                                ProfileVersion, Run, Upload, Violation)
    rng = np.random.default_rng(1)
    t0 = time.time()
    start = datetime(2025, 11, 22, 2, 0, tzinfo=timezone.utc)
    counts = {"series": 0, "runs": 0}
    with app.app_context():
        conn = db.session.connection()
        mids = []
        for mi in range(2):
            mids.append(conn.execute(insert(Machine).returning(Machine.id), [dict(
                name=f"cluster{mi + 1}", nodes=64, cores_per_node=48, interconnect="ib", notes="",
                created_at=start)]).scalar())
        libs = []  # (lib id, machine id, speed factor)
        for mid in mids:
            for name, ver, f in (("openmpi", "4.1.4", 1.0), ("mpich", "4.0.2", 1.2)):
                lid = conn.execute(insert(MpiLibrary).returning(MpiLibrary.id), [dict(
                    machine_id=mid, name=name, version=ver, module=f"{name}/{ver}", created_at=start)]).scalar()
                libs.append((lid, mid, f))
        db.session.commit()
        for day in range(days):
            conn = db.session.connection()
            raw = conn.connection.driver_connection  # psycopg connection for COPY
            at = start + timedelta(days=day)
            drift = 1.25 if day >= days * 2 // 3 else 1.0   # a library "upgrade": shift in the last third
            for mid in mids:
                cid = conn.execute(insert(Campaign).returning(Campaign.id), [dict(
                    name=f"nightly-cluster{mid}-{at:%Y-%m-%d}", machine_id=mid, definition={"jobs": 4},
                    schedule="02:00 daily", state="completed", created_at=at)]).scalar()
                upk = conn.execute(insert(Upload).returning(Upload.id), [dict(
                    upload_id=uuid.uuid4().hex, machine_id=mid, campaign_id=cid, actor="agent", n_files=0,
                    n_timings=0, created_at=at)]).scalar()
                for lid, lmid, f in libs:
                    if lmid != mid:
                        continue
                    job_ids = conn.execute(insert(Job).returning(Job.id), [dict(
                        campaign_id=cid, job_key=f"{lid}-p{p}", slurm_job_id=str(10000 + day * 10 + p), library="x",
                        module="", nodes=1, ppn=p, state="COMPLETED", reason="", submitted_at=at, started_at=at,
                        ended_at=at + timedelta(minutes=20), log_tail="ok\n", updated_at=at) for p in PS]).scalars().all()
                    run_rows = [dict(upload_pk=upk, machine_id=mid, library_id=lid, campaign_id=cid,
                                     job_id=job_ids[PS.index(p)], file_name=f"p{p}_{i}.txt", slurm_job_id="",
                                     mpirun_index=i, nodes=1, ppn=p, nprocs=p, state="COMPLETED", reason="",
                                     started_at=at, ended_at=at, created_at=at, headers={}, footer=[])
                                for p in PS for i in range(MPIRUNS)]
                    rids = conn.execute(insert(Run).returning(Run.id, Run.nprocs), run_rows).all()
                    counts["runs"] += len(rids)
                    buf = io.StringIO()
                    bbuf = io.StringIO()
                    for rid, p in rids:
                        for call, algs in ALGS.items():
                            for ai, alg in enumerate(algs):
                                for s in SIZES:
                                    base = f * (3e-6 * math.log2(p) + s * 4e-10 * math.log2(p))
                                    if alg == "default" and call == "MPI_Allreduce":
                                        base *= drift
                                    if ai:
                                        base *= 0.8 + 0.5 * ((hash((call, alg, s)) % 7) / 7)
                                    v = base * (1 + 0.05 * rng.random(NT))
                                    buf.write(f"{rid}\t{call}\t{alg}\t{s}\t{NT}\t{float(np.median(v))!r}\t{float(v.mean())!r}\t"
                                              f"{float(v.min())!r}\t\\\\x{v.astype('<f8').tobytes().hex()}\n")
                                    counts["series"] += 1
                        for s in SIZES:
                            v = 2e-6 * (1 + 0.05 * rng.random(NT))
                            bbuf.write(f"{rid}\t{s}\t{NT}\t{float(np.median(v))!r}\t\\\\x{v.tobytes().hex()}\n")
                    with raw.cursor() as cur:
                        with cur.copy("COPY series (run_id, call, algorithm, msize, n, median, mean, minimum, "
                                      "timings) FROM STDIN") as cp:
                            cp.write(buf.getvalue())
                        with cur.copy("COPY barrier_series (run_id, msize, n, median, timings) FROM STDIN") as cp:
                            cp.write(bbuf.getvalue())
                    nviol = int(8 + 4 * rng.random() + (6 if drift > 1 else 0))
                    aid = conn.execute(insert(Analysis).returning(Analysis.id), [dict(
                        machine_id=mid, library_id=lid, campaign_id=cid, alpha=0.05, test="mannwhitney", fdr=True,
                        state="done", actor="agent", created_at=at + timedelta(hours=1), n_checked=16 * 8 * 2,
                        n_violations=nviol, max_slowdown=1.6, summary={})]).scalar()
                    conn.execute(insert(Violation), [dict(
                        analysis_id=aid, collective="allreduce", mockup="allreduce_as_reduce_bcast",
                        msize=SIZES[k % 8], nprocs=PS[k % 2], default_time=1e-4, mockup_time=8e-5, slowdown=1.25,
                        p_value=0.001) for k in range(nviol)])
            db.session.commit()
            if day % 30 == 29:
                print(f"  generated {day + 1} days: {counts['runs']} runs, {counts['series']} series, "
                      f"{time.time() - t0:.0f} s", flush=True)
        conn = db.session.connection()
        for lid, mid, _ in libs:
            ps = conn.execute(insert(ProfileSet).returning(ProfileSet.id), [dict(
                machine_id=mid, library_id=lid, created_at=start)]).scalar()
            conn.execute(insert(ProfileVersion), [dict(
                profile_set_id=ps, number=n + 1, state="candidate" if n == 51 else "rolled-back",
                files={"allreduce_p4.prf": "MPI_Allreduce\n4\n1\n1 allreduce_as_reduce_bcast\n1\n8 8 1\n"},
                created_at=start + timedelta(days=7 * n), actor="agent", notes="") for n in range(52)])
        conn.execute(insert(AuditLog), [dict(at=start + timedelta(hours=k), actor="agent", action="upload",
                                             entity="upload", entity_id=str(k), details={}) for k in range(5000)])
        db.session.commit()
        db.session.execute(db.text("ANALYZE"))
        db.session.commit()
    counts["seconds"] = round(time.time() - t0, 1)
    return counts


def login(client, user, password):
    import re
    page = client.get("/auth/login").get_data(as_text=True)
    tok = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', page).group(1)
    r = client.post("/auth/login", data={"username": user, "password": password, "csrf_token": tok})
    assert r.status_code == 302, r.status_code


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url")
    ap.add_argument("--no-gen", action="store_true")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--own-generator", action="store_true",
                    help="use this script's generator (more series per run) even if the service's exists")
    args = ap.parse_args()
    import logging
    logging.disable(logging.INFO)
    import flask_migrate
    from service.app import create_app
    url = args.url or create_db(pg_url())
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"dashbench-{uuid.uuid4().hex[:6]}"
    app = create_app({"SQLALCHEMY_DATABASE_URI": url, "SECRET_KEY": "bench", "INSTANCE_PATH": str(tmp),
                      "PGMPI_PROFILE_ROOT": str(tmp / "profiles")})
    try:
        if not args.no_gen:
            with app.app_context():
                flask_migrate.upgrade(directory=str(ROOT / "migrations"))
            gen = ROOT / "tests/bench/service_gen_year.py"
            spec = importlib.util.spec_from_file_location("service_gen_year", gen) if gen.exists() else None
            mod = None
            if spec:
                mod = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(mod)
            if mod is not None and hasattr(mod, "generate") and not args.own_generator:
                print(f"generating with {gen.name}")
                counts = mod.generate(url, days=args.days)
            else:
                print(f"generating {args.days} days with this script's generator")
                counts = generate(app, args.days)
            print("database:", json.dumps(counts, default=str))
        from service.auth import add_user
        from service.store.db import db
        with app.app_context():
            from sqlalchemy import select
            from service.store.models import MpiLibrary, ProfileSet, User
            if not db.session.scalar(select(User).where(User.username == "bench")):
                add_user("bench", "bench-password", "admin")
                db.session.commit()
            from sqlalchemy import func
            from service.store.models import Run, Series
            lib_id = db.session.scalar(select(Run.library_id).order_by(Run.id.desc()).limit(1))
            lib = db.session.get(MpiLibrary, lib_id)
            lk = f"{lib.machine.name}/{lib.name}-{lib.version}"
            other = db.session.scalars(select(MpiLibrary).where(MpiLibrary.machine_id == lib.machine_id,
                                                                MpiLibrary.id != lib.id)).first() or lib
            p = db.session.scalar(select(func.max(Run.nprocs)).where(Run.library_id == lib.id))
            last_run = db.session.scalar(select(func.max(Run.id)).where(Run.library_id == lib.id))
            call, msize = db.session.execute(select(Series.call, Series.msize).where(
                Series.run_id == last_run, Series.algorithm == "default").order_by(Series.msize).limit(1)).one()
            from service.dashboards.data import coll_key
            key = coll_key(call)
            ps_id = db.session.scalar(select(ProfileSet.id).order_by(ProfileSet.id))
        c = app.test_client()
        login(c, "bench", "bench-password")
        pages = {
            "overview": "/",
            "heatmap": f"/m/{lk}/heatmap?p={p}",
            "heatmap side by side (2 libraries)": f"/m/{lk}/heatmap?p={p}&vs_lib={other.name}-{other.version}",
            "detail": f"/m/{lk}/detail/{key}?p={p}",
            "detail CSV": f"/m/{lk}/detail/{key}?p={p}&format=csv",
            "trends (a year of campaigns)": f"/m/{lk}/trends?key={key}&msize={msize}&algorithm=default&p={p}",
            "native algorithms (a year of campaigns)": f"/m/{lk}/native?key={key}&p={p}",
            "alerts.json": "/alerts.json",
            "campaigns": "/campaigns",
            "profiles": "/profiles",
            "profile set": f"/profiles/{ps_id}",
            "glossary": "/glossary",
        }
        print(f"pages of {lk}, p={p}, {key} (trend at {msize} B); load average before: "
              f"{os.getloadavg()[0]:.1f}")
        print(f"{'page':40s} {'p50 ms':>8s} {'p95 ms':>8s} {'max ms':>8s}  bytes")
        worst = 0.0
        for name, path in pages.items():
            c.get(path)  # warm-up (templates compiled, connection pool)
            ts = []
            for _ in range(args.reps):
                t = time.perf_counter()
                r = c.get(path)
                ts.append((time.perf_counter() - t) * 1000)
                assert r.status_code == 200, (path, r.status_code)
            ts.sort()
            p95 = ts[min(len(ts) - 1, math.ceil(0.95 * len(ts)) - 1)]
            worst = max(worst, p95)
            print(f"{name:40s} {statistics.median(ts):8.1f} {p95:8.1f} {ts[-1]:8.1f}  {len(r.data)}")
        print(f"worst p95: {worst:.1f} ms (target <= 200 ms); load average after: {os.getloadavg()[0]:.1f}"
              f" on {os.cpu_count()} cores (shared with other work: figures include that noise)")
    finally:
        if args.keep or args.url:
            print("database kept:", url)
        else:
            with app.app_context():
                from service.store.db import db
                db.session.remove()
                db.engine.dispose()
            drop_db(url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
