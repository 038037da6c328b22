#!/usr/bin/env python3
"""Issue 33's demonstration on the virtual multi-node cluster, with real figures (the quick test with a virtual
clock is tests/python/scheduler/test_usage_demo.py):

  1. three applications with known collective mixes (tests/python/usage_demo_steps.py, tests/bench/usage_app.c) run
     as Slurm jobs on 2 virtual nodes after `module load openmpi/4.1.4 pgmpitunelib`, usage recording switched
     on by the site file;
  2. `pgmpi agent usage-upload` sends their records; the usage page ranks the cells;
  3. `pgmpi agent nightly` on a `cells: from-usage` campaign plans tonight's cells within the budget, measures
     them through Slurm, has them analysed and the candidate validated (real clock: the validation may fail on
     a loaded machine; then nothing is published and the script says so);
  4. the validated profile is published where the module reads it;
  5. the applications run again in --pairs paired, interleaved mpiruns (library default against the module's
     profile, order alternating); per application: median seconds of each arm, the paired ratios
     default / profile (median, min-max), checksums identical or not;
  6. the reruns' records uploaded: the page's lost and gained node-hours.

    .venv/bin/python tests/bench/usage_demo.py [--pairs 6] [--scale 3] [--plant-ms 5] [--mpiruns 10] [--keep DIR]

--plant-ms N (default 5): a test-only interposer (tests/python/delay_interposer.py, real clock) makes the
library's own MPI_Allreduce sleep N ms at 1 KiB, so that there is a violation to find whatever this machine's
Open MPI does (a planted violation, said so in the output); --plant-ms 0 runs the library as it is (on a
loaded 2-core machine, nothing may be found: then the script reports that). Every figure is from a loaded
machine: `uptime`'s load is printed before and after each step. Needs the services of deploy/ (PostgreSQL,
the virtual cluster, Lmod) and build/install/openmpi (deploy/build-lib.sh openmpi).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for p in (ROOT / "tests" / "python" / "scheduler", ROOT / "tests" / "python", ROOT / "tests" / "bench", ROOT):
    sys.path.insert(0, str(p))

import delay_interposer  # noqa: E402
import usage_demo_steps as usage_demo  # noqa: E402
from plain_module import module_tree  # noqa: E402
from sched_helpers import LiveService, add_machine, campaign_file, write_mpi_modules  # noqa: E402
from service_common import migrate, scratch_database  # noqa: E402

MACHINE = "vcdemo"
PLANTED = 1024


def load() -> str:
    return open("/proc/loadavg").read().split()[0]


def step(msg: str, t0: float) -> None:
    print(f"[{time.time() - t0:6.1f} s, load {load()}] {msg}", flush=True)


def cluster_env() -> dict:
    env = dict(os.environ, PGMPI_STATE_DIR=os.environ.get("PGMPI_STATE_DIR", "/work/main/.state"))
    if subprocess.run([str(ROOT / "deploy/cluster.sh"), "status"], env=env).returncode != 0:
        sys.exit("the virtual cluster is not up: PGMPI_STATE_DIR=/work/main/.state deploy/cluster.sh up")
    for line in subprocess.check_output([str(ROOT / "deploy/cluster.sh"), "env"], text=True, env=env).splitlines():
        for word in shlex.split(line)[1:]:
            k, _, v = word.partition("=")
            env[k] = v
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def get(url: str, token: str) -> dict:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def upload(spool: Path, service: LiveService, token_file: Path) -> str:
    from click.testing import CliRunner
    from scheduler.cli import agent
    res = CliRunner().invoke(agent, ["usage-upload", "--spool", str(spool), "--machine", MACHINE,
                                     "--service-url", service.url, "--token-file", str(token_file)])
    return res.output.strip()


def print_page(page: dict, n: int = 8) -> None:
    print(f"  {page['jobs']} job(s), {page['collective_rank_seconds']:.3f} rank-seconds in collectives")
    print(f"  {'collective':<14} {'bytes':>11} {'p':>2} {'layout':>6} {'calls':>7} {'share':>7} {'verdict':>10} "
          f"{'lost node-h':>12} {'gained node-h':>13}")
    for c in page["cells"][:n]:
        v = c["verdict"]["state"] + f" ({c['verdict']['age_nights']} n)" if c["verdict"] else "-"
        print(f"  {c['collective']:<14} {c['bytes_lo']:>5}-{c['bytes_hi']:<5} {c['p']:>2} {c['layout'] or '-':>6} "
              f"{c['calls']:>7} {100 * c['share']:>6.1f}% {v:>10} {c['lost_node_hours']:>12.3g} "
              f"{c['gained_node_hours']:>13.3g}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=6, help="paired, interleaved reruns of each application")
    ap.add_argument("--scale", type=int, default=3, help="iterations of each application x this")
    ap.add_argument("--plant-ms", type=int, default=5, help="the library's MPI_Allreduce sleeps this long at 1 KiB "
                    "(a planted violation; 0: none)")
    ap.add_argument("--mpiruns", type=int, default=10, help="mpiruns of the from-usage campaign (5 left a 2x planted "
                    "effect unconfirmed at load 16: one mpirun at 11x, BH over 30 checks)")
    ap.add_argument("--keep", type=Path, default=None, help="work in this directory and keep it")
    args = ap.parse_args()
    import logging
    logging.disable(logging.INFO)        # werkzeug's request lines and alembic's, not figures
    t0 = time.time()
    env = cluster_env()
    for k, v in env.items():
        os.environ[k] = v          # the agent's Slurm backend reads the process environment
    work = args.keep or Path(tempfile.mkdtemp(prefix="usage-demo-"))
    work.mkdir(parents=True, exist_ok=True)
    apps = {a: (it * args.scale, mix) for a, (it, mix) in usage_demo.APPS.items()}
    print(f"usage demonstration on the virtual cluster (2 virtual nodes x 1 rank, Open MPI 4.1.4), work dir {work}")
    print(f"machine: {os.cpu_count()} cores shared by every engineer; load {load()} at the start")
    mpirun = "mpirun"
    if args.plant_ms:
        so = delay_interposer.build(work, "openmpi", delay_ms=args.plant_ms, clock="real")
        mpirun = f"mpirun -x LD_PRELOAD={so} -x PGMPI_TEST_DELAY_BYTES={PLANTED}"
        print(f"PLANTED: the library's own MPI_Allreduce sleeps {args.plant_ms} ms at {PLANTED} B "
              "(tests/python/delay_interposer.py, real clock); every figure below is real time")
    exe = usage_demo.build_app(work)
    mpimods = write_mpi_modules(work / "lmod")
    mods = module_tree(work / "tunelib", "openmpi")
    spool, root, empty = work / "spool", work / "profiles", work / "no-profile"
    for d in (spool, empty):
        d.mkdir(exist_ok=True)
    site = work / "site.conf"
    site.write_text(f"profile_root = {root}\nmachine = {MACHINE}\nusage_dir = {spool}\nusage_period = 16\n")
    env["PGMPI_SITE_CONFIG"] = str(site)
    modules = "openmpi/4.1.4 pgmpitunelib"
    with scratch_database("usagedemo") as url:
        migrate(url)
        from service.app import create_app
        app = create_app({"SQLALCHEMY_DATABASE_URI": url, "SECRET_KEY": "bench", "INSTANCE_PATH": str(work / "inst")})
        service = LiveService(app).start()
        try:
            token = add_machine(service, MACHINE)
            (work / "token").write_text(token)

            def _shape():
                from service.store.db import db
                from service.store.models import Machine
                m = db.session.scalar(db.select(Machine).where(Machine.name == MACHINE))
                m.nodes, m.cores_per_node = 3, 4
                db.session.commit()
            service.query(_shape)

            step("1. the three applications as Slurm jobs under the module (usage recording from site.conf)", t0)
            for a, (it, mix) in apps.items():
                print(f"  {a}: {it} iterations of {' '.join(mix)}")
            first = [("first", 0, None)]
            usage_demo.sbatch(usage_demo.job_script(work, exe, [mpimods, mods], modules, first, mpirun, apps), env)
            runs = usage_demo.read_runs(work, first, apps)
            for r in runs:
                print(f"  {r.app}: {r.seconds:.3f} s, checksum {r.checksum}")
            step("2. the agent uploads the records; the usage page", t0)
            print("  " + upload(spool, service, work / "token"))
            api = f"{service.url}/api/v1/machines/{MACHINE}/libraries/openmpi-4.1.4/usage"
            print_page(get(api, token))

            step("3. tonight's from-usage campaign by `pgmpi agent nightly`", t0)
            base = campaign_file(
                work / "usage.yaml", name="usage", machine=MACHINE, backend="slurm", cells="from-usage",
                usage={"share": 0.9, "sample": 0.1, "refresh_nights": 7}, budget={"node_hours_per_night": 0.1},
                modules=[{"name": "openmpi/4.1.4", "mpi": "openmpi", "modulepath": [str(mpimods)], "mpirun": mpirun}],
                algorithms="all", mpiruns=args.mpiruns, repetitions={"policy": "fixed", "nrep": 30},
                slurm={"partition": "vc", "walltime": "00:20:00"},
                validation={"enabled": True, "nrep": 30, "mpiruns": 3},
                bench_root=str(ROOT / "build" / "install"),
                service={"url": service.url, "token_file": str(work / "token")})
            from click.testing import CliRunner
            from scheduler.cli import agent
            day = datetime.now(timezone.utc)
            res = CliRunner().invoke(agent, ["nightly", "--state-dir", str(work / "agent"), "--campaign", str(base),
                                             "--interval", "1", "--max-hours", "1", "--date", f"{day:%Y%m%d}"])
            plan_dir = work / "agent" / "from-usage" / f"usage-{day:%Y%m%d}"
            print("  " + (plan_dir / "plan.txt").read_text().replace("\n", "\n  ").rstrip())
            if res.exit_code != 0:
                print(res.output)
                return 1
            from scheduler.state import State
            st = State(work / "agent")
            versions = []
            for f in sorted(plan_dir.glob("*.yaml")):
                a = json.loads(st.campaign(f.stem)["analysis"] or "{}").get("openmpi-4.1.4", {})
                versions += a.get("profiles") or []
            st.close()

            def _violations():
                from service.store.db import db
                from service.store.models import Analysis, Violation
                return [(v.kind, v.collective, v.msize, v.mockup, v.slowdown, v.status) for v in db.session.scalars(
                    db.select(Violation).join(Analysis, Analysis.id == Violation.analysis_id).order_by(Violation.id))]
            found = service.query(_violations)
            print(f"  analysis: {len(found)} violation(s), candidate profile(s) {versions}")
            for kind, coll, msize, mockup, slow, status in found:
                print(f"    {kind} {coll} {msize} B {mockup}: {slow:.3g}x ({status})")

            step("4. publish what the validation confirmed", t0)

            def _publish():
                from service.store.db import db
                from service.store.models import ProfileVersion
                from service.workflows.publish import publish_candidate
                out = []
                for vid in versions:
                    v = db.session.get(ProfileVersion, vid)
                    figs = [(f.collective, f.msize, f.default_time, f.tuned_time) for f in v.figures]
                    if v.state != "validated":
                        out.append((vid, v.state, figs, None))
                        continue
                    out.append((vid, v.state, figs, list(v.files)))
                    publish_candidate(v, root, "usage-demo")
                return out
            published = False
            for vid, state, figs, files in service.query(_publish):
                print(f"  candidate {vid}: {state}" + (f", published {files}" if files else ", NOT published"))
                for c, m, d, t in figs:
                    print(f"    validation {c} {m} B: default {d * 1e6:.1f} us, tuned {t * 1e6:.1f} us")
                published |= files is not None
            if not published:
                print("  nothing validated, nothing published: the reruns would compare the default with itself")
                return 0

            step(f"5. the applications again: {args.pairs} paired, interleaved pairs (default vs the module's profile)", t0)
            arms = usage_demo.paired_arms(args.pairs, empty)
            usage_demo.sbatch(usage_demo.job_script(work, exe, [mpimods, mods], modules, arms, mpirun, apps), env,
                              timeout=3600)
            again = usage_demo.read_runs(work, arms, apps)
            print(f"  {'app':<7} {'default s (median)':>19} {'profile s (median)':>19} {'ratio default/profile':>22} "
                  f"{'min-max':>13} {'checksums':>10}  redirected")
            for a in apps:
                d = {r.pair: r for r in again if r.app == a and r.arm == "default"}
                p = {r.pair: r for r in again if r.app == a and r.arm == "profile"}
                ratios = [d[i].seconds / p[i].seconds for i in d]
                same = len({r.checksum for r in again if r.app == a} | {r.checksum for r in runs if r.app == a}) == 1
                redir = f"MPI_Allreduce {PLANTED} allreduce_as_reduce_bcast" in p[0].text
                print(f"  {a:<7} {statistics.median(r.seconds for r in d.values()):>19.4f} "
                      f"{statistics.median(r.seconds for r in p.values()):>19.4f} {statistics.median(ratios):>22.3f} "
                      f"{min(ratios):>6.3f}-{max(ratios):<6.3f} {'identical' if same else 'DIFFER':>10}  "
                      f"{'yes' if redir else 'no'}")
            step("6. the reruns' records uploaded; the page", t0)
            print("  " + upload(spool, service, work / "token"))
            page = get(api, token)
            print_page(page)
            print(f"  lost {sum(c['lost_node_hours'] for c in page['cells']):.3g} node-hours, gained "
                  f"{sum(c['gained_node_hours'] for c in page['cells']):.3g} node-hours (virtual nodes of 1 rank "
                  f"each here; ppn of the machine record: 4)")
            step("done", t0)
        finally:
            service.stop()
            from service.store.db import db
            with app.app_context():
                db.engine.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
