#!/usr/bin/env python3
"""The derived-datatype chain on this machine, from a campaign file to an application run (prints figures):

    tests/bench/dt_chain.py campaign OUT [--mpiruns R] [--nrep N] [--validate] [--name NAME] [--small]
        a datatype campaign (pgmpi-dtbench) on both MPIs at p = 2 through the agent on the real one-node Slurm
        (deploy/slurm.sh env) into a service on a database of the shared PostgreSQL (kept: OUT/db_url); the
        agent uploads, the service analyses (GL1-GL4 verdicts, repair profiles); with --validate the agent
        also validates the candidates (the service records the figures); prints the verdict table as the
        datatype pages show it (service/dashboards/datatypes/data.py)
    tests/bench/dt_chain.py report OUT            the verdict table and the candidate profiles again
    tests/bench/dt_chain.py publish OUT           publish each validated candidate into OUT/profiles (the
                                                  versioned profile set; prints the files)
    tests/bench/dt_chain.py app OUT [--pairs K]   the application tests/bench/dt_chain_app.c (a violating layout in
                                                  MPI_Bcast / MPI_Allgather) without and with the published
                                                  profile, K interleaved pairs of mpiruns per MPI: paired
                                                  ratios and the checksums (identical results)

Timing figures at 2 ranks; `uptime` is printed next to them (a "loaded machine" above 1.2).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "python" / "scheduler"))
sys.path.insert(0, str(ROOT / "tests" / "bench"))

MACHINE = "dtvm"
MODULES = {"openmpi": "openmpi/4.1.4", "mpich": "mpich/4.0.2"}


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def slurm_env() -> dict:
    """The running one-node Slurm's client environment (`eval "$(deploy/slurm.sh env)"` before this script)."""
    if not os.environ.get("SLURM_CONF"):
        sys.exit('dt_chain.py: SLURM_CONF is not set: eval "$(deploy/slurm.sh env)" first (of the checkout '
                 'that started Slurm)')
    return dict(os.environ)


def app_for(out: Path):
    from service.app import create_app
    url = (out / "db_url").read_text().strip()
    return create_app({"SQLALCHEMY_DATABASE_URI": url, "SECRET_KEY": "dt-chain", "INSTANCE_PATH": str(out / "inst"),
                       "PGMPI_PROFILE_ROOT": str(out / "profiles")})


def ensure_db(out: Path) -> None:
    if (out / "db_url").exists():
        return
    import psycopg
    from service_common import _conninfo, migrate, server_url
    from sqlalchemy.engine import make_url
    name = f"pgmpi_dtchain_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(_conninfo(server_url()), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = make_url(server_url()).set(database=name).render_as_string(hide_password=False)
    migrate(url)
    (out / "db_url").write_text(url + "\n")


def campaign(args) -> None:
    from sched_helpers import LiveService, campaign_file, write_mpi_modules
    from scheduler.runner import make_agent
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    ensure_db(out)
    app = app_for(out)
    app.config["PGMPI_VALIDATION_TOLERANCE"] = args.tolerance
    live = LiveService(app).start()
    try:
        from service.auth import create_token
        from service.store.db import db
        from service.store.models import Machine
        from sqlalchemy import select
        with app.app_context():
            if db.session.scalar(select(Machine).where(Machine.name == MACHINE)) is None:
                db.session.add(Machine(name=MACHINE, nodes=1, cores_per_node=2, interconnect="shm", notes="dt_chain"))
                db.session.flush()
            _, secret = create_token(f"dt-chain-{uuid.uuid4().hex[:6]}", "admin", None, actor="dt_chain")
            db.session.commit()
        (out / "token").write_text(secret)
        modpath = write_mpi_modules(out / "lmod")
        name = args.name or f"dt-{time.strftime('%H%M%S')}"
        dts = {"patterns": ["pingpong", "bcast", "allgather"],
               "layouts": ["contiguous", "tiled", "block", "bucket", "alternating", "altrep"],
               "variants": [1], "blocksizes": [2, 100], "sizes": [3200, 262144], "basetypes": ["MPI_INT"]}
        if args.small:      # the profiles' evidence again (a second night): the patterns a profile can tune
            dts.update(patterns=["bcast", "allgather"])
        if args.gl4:        # the GL4 replacements' evidence: the tiled descriptions of one type map
            dts.update(patterns=["bcast", "allgather"], layouts=["tiled"], blocksizes=[2],
                       descriptions=["typed", "vector", "nested", "indexed", "indexed_block", "struct_flat"])
        cdef = {"name": name, "machine": MACHINE, "backend": "slurm",
                # the launches at the lowest CPU priority on a shared machine (the module's mpirun)
                "modules": [{"name": MODULES[m], "mpi": m, "modulepath": [str(modpath)],
                             **({"mpirun": "nice -n 19 mpirun"} if args.nice else {})} for m in args.mpi],
                "layouts": [{"nodes": 1, "ppn": 2}], "datatypes": dts,
                "repetitions": {"policy": "fixed", "nrep": args.nrep}, "mpiruns": args.mpiruns,
                "slurm": {"partition": "debug", "walltime": "01:00:00"},
                "validation": {"enabled": args.validate, "nrep": args.nrep, "mpiruns": args.val_mpiruns,
                               "interleaved": True},
                "service": {"url": live.url, "token_file": str(out / "token")},
                "bench_root": str(ROOT / "build" / "install")}
        f = campaign_file(out / f"{name}.yaml", **cdef)
        print(f"campaign file {f}; load before: {uptime()}", flush=True)
        t0 = time.time()
        agent = make_agent(f, out / "state", env=slurm_env(), log=lambda m: print("  agent:", m, flush=True))
        s = agent.run(interval=2.0, timeout=args.timeout)
        print(f"campaign {name}: {s['states']} in {time.time() - t0:.0f} s; load after: {uptime()}", flush=True)
        if not args.validate:       # the agent analyses only with validation on: ask the service as it would
            import requests
            for mpi in args.mpi:
                r = requests.post(f"{live.url}/api/v1/analyses", json={"machine": MACHINE, "library": mpi,
                                  "campaign": name}, headers={"Authorization": f"Bearer {secret}"}, timeout=600)
                print(f"analysis of {mpi}: HTTP {r.status_code} id {r.json().get('id')}", flush=True)
        (out / "last_campaign").write_text(name)
    finally:
        live.stop()
    report(args)


def report(args) -> None:
    from service.dashboards.datatypes import data as dt_data
    from service.store.db import db
    from service.store.models import Campaign, MpiLibrary, ProfileVersion
    from sqlalchemy import select
    out = Path(args.out).resolve()
    app = app_for(out)
    name = (out / "last_campaign").read_text().strip() if (out / "last_campaign").exists() else None
    with app.app_context():
        camp = db.session.scalar(select(Campaign).where(Campaign.name == name)) if name else None
        for lib in db.session.scalars(select(MpiLibrary).order_by(MpiLibrary.id)):
            a = dt_data.dt_analysis(db.session, lib, camp)
            if a is None:
                continue
            print(f"\n== {lib.name}-{lib.version}, analysis {a.id} (campaign {name}), {a.test}"
                  f"{' + BH' if a.fdr else ''}, alpha {a.alpha}")
            ctl = ((a.summary or {}).get("datatypes") or {}).get("control") or {}
            print("  " + str(ctl.get("line", "control: none")))
            print(f"  {'guideline':8} {'pattern':10} {'viol/tested':>11}  largest violation")
            for r in dt_data.table(dt_data.verdicts(db.session, a)):
                w = r["worst"]
                txt = (f"{w.dt_layout} {w.msize} B: {w.slower} {w.ratio:.2f}x slower than {w.faster} "
                       f"(p = {w.p_value:.2g}, {w.runs} mpiruns)") if w else ("holds" if r["tested"] else "n/a")
                print(f"  {r['guideline']:8} {r['pattern']:10} {r['violated']:>4} / {r['tested']:<4}  {txt}")
            for v in db.session.scalars(select(ProfileVersion).where(ProfileVersion.analysis_id == a.id)):
                print(f"  candidate profile version {v.id} ({v.state}"
                      f"{', validated' if v.validated_at else ''}): {', '.join(sorted(v.files))}")
                for fn, text in sorted(v.files.items()):
                    print("    " + text.replace("\n", "\n    ").rstrip())
                for fig in v.figures:
                    print(f"    validation figure {fig.collective} {fig.msize} B p={fig.nprocs}: default/tuned "
                          f"{fig.speedup:.3f}x {json.dumps((fig.details or {}).get('case', ''))}")
                if v.notes:
                    print(f"    notes: {v.notes[:400]}")


def publish(args) -> None:
    """Publish every validated candidate (the service's own record decides, service/workflows/publish.py)."""
    from service.workflows import publish as publishing
    from service.store.db import db
    from service.store.models import ProfileVersion
    from sqlalchemy import select
    out = Path(args.out).resolve()
    app = app_for(out)
    with app.app_context():
        vs = db.session.scalars(select(ProfileVersion).where(ProfileVersion.state == "validated")
                                .order_by(ProfileVersion.id)).all()
        if not vs:
            print("no validated candidate to publish")
        for v in vs:
            lib = v.profile_set.library
            res = publishing.publish_candidate(v, out / "profiles", actor="dt_chain")
            print(f"published version {v.id} of {lib.name}-{lib.version} as {res.target}/versions/{res.version} "
                  f"(current -> {res.version}); files {', '.join(sorted(v.files))}; notes: {v.notes[:300]}")
            for fn, text in sorted(v.files.items()):
                print(f"  --- {fn}\n    " + text.replace("\n", "\n    ").rstrip())


def app_run(args) -> None:
    """The application without and with the published profile after `module load pgmpitunelib/<mpi>`
    (deploy/demo.py's modulefiles over OUT/profiles): K pairs of mpiruns, alternating the order."""
    import importlib.util
    out = Path(args.out).resolve()
    spec = importlib.util.spec_from_file_location("demo", ROOT / "deploy" / "demo.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    versions = {"openmpi": "4.1.4", "mpich": "4.0.2"}
    tree = demo._write_modules(out / "apprun", out / "profiles", MACHINE, versions)
    lmod = "/usr/share/lmod/lmod/init/bash"
    print(f"load before: {uptime()}")
    for mpi in args.mpi:
        exe = out / "apprun" / f"dt_chain_app.{mpi}"
        subprocess.run([f"mpicc.{mpi}", "-O2", "-o", str(exe), str(ROOT / "tests" / "bench" / "dt_chain_app.c")], check=True)
        cur = out / "profiles" / MACHINE / f"{mpi}-{versions[mpi]}" / "current"
        print(f"\n== {mpi}: published profile set {cur} ({', '.join(sorted(p.name for p in cur.glob('*'))) if cur.exists() else 'none'})")
        for pattern, desc, nbytes in args.cases:
            argv = f"{exe} {pattern} {desc} {nbytes} {args.iter}"
            plain = f"OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun.{mpi} -np 2 {argv}"
            tuned = (f". {lmod}; module use {tree}; module load pgmpitunelib/{mpi} >/dev/null 2>&1; "
                     f"OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PGMPITUNE_VERBOSE=1 "
                     f"$PGMPITUNE_MPIRUN -np 2 {argv}")
            ratios, sums, report = [], set(), ""
            for k in range(args.pairs):
                res = {}
                for arm in (("plain", "tuned") if k % 2 == 0 else ("tuned", "plain")):
                    r = subprocess.run(["bash", "-c", plain if arm == "plain" else tuned], capture_output=True, text=True)
                    line = next((x for x in r.stdout.splitlines() if x.startswith("median_sec=")), None)
                    if r.returncode != 0 or line is None:
                        sys.exit(f"{mpi} {arm} run failed ({r.returncode}): {r.stdout[-800:]} {r.stderr[-800:]}")
                    kv = dict(x.split("=", 1) for x in line.split())
                    res[arm] = float(kv["median_sec"])
                    sums.add(kv["checksum"])
                    if arm == "tuned":
                        report = "\n".join(x for x in r.stdout.splitlines()
                                            if x.startswith("#@pgmpi") and ("alg" in x or "dtreplace" in x
                                                                            or "datatypes" in x))
                ratios.append(res["plain"] / res["tuned"])
            gm = statistics.geometric_mean(ratios)
            print(f"  {pattern} {desc} {nbytes} B: plain / tuned per pair (median of {args.iter} calls each) "
                  f"{' '.join(f'{r:.2f}' for r in ratios)}; median {statistics.median(ratios):.2f}x, "
                  f"geometric mean {gm:.2f}x, "
                  f"{sum(r > 1 for r in ratios)} of {len(ratios)} pairs faster; checksums "
                  f"{'identical' if len(sums) == 1 else 'DIFFER: ' + ' '.join(sorted(sums))} ({next(iter(sums))})")
            if report:
                print("    tuned run's report: " + report.replace("\n", "\n    tuned run's report: "))
    print(f"load after: {uptime()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("campaign")
    c.add_argument("out")
    c.add_argument("--mpiruns", type=int, default=6)
    c.add_argument("--nrep", type=int, default=20)
    c.add_argument("--validate", action="store_true")
    c.add_argument("--val-mpiruns", type=int, default=4)
    c.add_argument("--tolerance", type=float, default=0.10)
    c.add_argument("--name")
    c.add_argument("--small", action="store_true")
    c.add_argument("--gl4", action="store_true")
    c.add_argument("--no-nice", dest="nice", action="store_false", help="launch without nice -n 19")
    c.add_argument("--mpi", nargs="+", default=["openmpi", "mpich"])
    c.add_argument("--timeout", type=float, default=5400)
    r = sub.add_parser("report")
    r.add_argument("out")
    p = sub.add_parser("publish")
    p.add_argument("out")
    a = sub.add_parser("app")
    a.add_argument("out")
    a.add_argument("--pairs", type=int, default=10)
    a.add_argument("--iter", type=int, default=200)
    a.add_argument("--mpi", nargs="+", default=["openmpi", "mpich"])
    a.add_argument("--case", dest="cases", nargs=3, action="append", metavar=("PATTERN", "DESC", "BYTES"),
                   help="bcast|allgather typed|nested bytes (default: bcast typed 262144, bcast nested 3200)")
    args = ap.parse_args()
    if args.cmd == "app" and not args.cases:
        args.cases = [("bcast", "typed", "262144"), ("allgather", "typed", "262144"), ("bcast", "nested", "3200"),
                      ("allgather", "nested", "3200")]
    {"campaign": campaign, "report": report, "publish": publish, "app": app_run}[args.cmd](args)


if __name__ == "__main__":
    main()
