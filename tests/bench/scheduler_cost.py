#!/usr/bin/env python3
"""Figures of the scheduler (prints them; no assertions):
  1. wall time of the integration campaign (Open MPI + MPICH Lmod modules, 1 node x 2 ranks, 2 calls x
     3 sizes, all mock-ups, nrep 10, R=2) on the real Slurm, results uploaded to the service on PostgreSQL;
  2. the agent's own cost per job: plan + submit + track + collect + upload (goal <= 2 s), and its parts.
Needs `deploy/postgres.sh up`, `deploy/slurm.sh up`, `deploy/build-lib.sh all`.
Usage: .venv/bin/python tests/bench/scheduler_cost.py [--jobs-layouts N]"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "python" / "scheduler"))

from sched_helpers import LiveService, add_machine, campaign_file, tiny_campaign, write_mpi_modules  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layouts", type=int, default=1, help="layouts (1 node x 2 ranks each) -> jobs = 2 x this")
    args = ap.parse_args()
    env = dict(os.environ)
    env["SLURM_CONF"] = env.get("SLURM_CONF") or str(ROOT / ".state/slurm/etc/slurm.conf")
    os.environ["SLURM_CONF"] = env["SLURM_CONF"]
    pg = subprocess.check_output([str(ROOT / "deploy/postgres.sh"), "url"], text=True).strip()
    import flask_migrate
    import psycopg
    from sqlalchemy.engine import make_url
    from service.app import create_app
    from scheduler.runner import make_agent
    u = make_url(pg)
    info = f"host={u.host} port={u.port} user={u.username} password={u.password} dbname={u.database}"
    dbname = f"pgmpi_schedbench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(info, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{dbname}"')
    tmp = Path(tempfile.mkdtemp(prefix="pgmpi-sched-bench-"))
    live = None
    try:
        app = create_app({"SQLALCHEMY_DATABASE_URI": u.set(database=dbname).render_as_string(hide_password=False),
                          "SECRET_KEY": "bench", "INSTANCE_PATH": str(tmp / "instance")})
        with app.app_context():
            flask_migrate.upgrade(directory=str(ROOT / "migrations"))
        live = LiveService(app).start()
        token = add_machine(live, "benchbox")
        (tmp / "token").write_text(token)
        modpath = write_mpi_modules(tmp / "lmod")
        layouts = [{"nodes": 1, "ppn": 2}] * 1
        cdef = tiny_campaign("bench", "benchbox", modpath, ROOT / "build" / "install",
                             service={"url": live.url, "token_file": str(tmp / "token")})
        if args.layouts > 1:   # more jobs: same layout under distinct module labels
            mods = []
            for i in range(args.layouts):
                for m in cdef["modules"]:
                    mods.append(dict(m, label=f"{m['mpi']}-{i}"))
            cdef["modules"] = mods
        cfile = campaign_file(tmp / "bench.yaml", **cdef)

        t0 = time.perf_counter()
        agent = make_agent(cfile, tmp / "state", env=env, log=None)
        t_plan = time.perf_counter() - t0
        cycles = []
        while True:
            c0 = time.perf_counter()
            s = agent.run_once()
            cycles.append(time.perf_counter() - c0)
            if s["done"]:
                break
            time.sleep(0.5)
        wall = time.perf_counter() - t0
        njobs = s["jobs"]
        rows = agent.state.jobs("bench")
        # the parts, measured once more on their own
        from scheduler.backends.slurm import SlurmBackend
        b = SlurmBackend(env=env)
        polls = []
        ids = {r["backend_id"]: Path(r["attempt_dir"]) for r in rows}
        for _ in range(5):
            p0 = time.perf_counter()
            b.poll(ids)
            polls.append(time.perf_counter() - p0)
        own = t_plan + sum(cycles)
        print(f"integration campaign: {njobs} jobs ({', '.join(r['key'] for r in rows)}), "
              f"{s['uploaded']} uploads, states {s['states']}")
        print(f"  wall time, plan to last upload:        {wall:7.2f} s")
        print(f"  job run time in Slurm (start..end):    " + ", ".join(
            f"{r['ended_at'] - r['started_at']:.1f} s" for r in rows if r['started_at'] and r['ended_at']))
        print(f"agent's own cost: plan {t_plan * 1000:.0f} ms; {len(cycles)} cycles, "
              f"sum {sum(cycles):.2f} s (median cycle {statistics.median(cycles) * 1000:.0f} ms)")
        print(f"  per job (plan + submit + track + collect + upload): {own / njobs:.3f} s   (goal <= 2 s)")
        print(f"  of which recorded per job (submit + collect):        " + ", ".join(
            f"{r['cost'] * 1000:.0f} ms" for r in rows))
        print(f"  one poll of all jobs (scontrol show job -o):         {statistics.median(polls) * 1000:.0f} ms")
        print(f"  upload drain total:                                  {agent.costs.get('_upload', 0) * 1000:.0f} ms")
        print("note: 2 shared cores, other helpers running: timings are noisy")
    finally:
        if live:
            live.stop()
        with psycopg.connect(info, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


if __name__ == "__main__":
    main()
