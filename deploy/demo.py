"""`make demo` (deploy/demo.sh runs `python deploy/demo.py run`): the whole product on this machine, with the
embedded defaults.  It lives in deploy/ because it is the one place that drives the agent and the service in
one process; neither package imports the other (tests/python/formats/test_import_graph.py).

One short local tuning campaign per MPI library (local mpirun, no Slurm) goes
through the same code a site runs nightly:

    campaign file -> scheduler agent (local backend) -> pgmpi-bench under mpirun
    -> upload into the service (SQLite file) -> analysis -> candidate profile
    -> validation run (tuned vs default) -> publish into a local profile root
    -> Lmod modulefiles pointing at it -> dashboard served on 127.0.0.1

Everything lives under --workdir (default demo/). A second run reuses what is
there: the agent's state makes finished jobs count as done, so only the server
is restarted.
"""
from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
MPIS = ("openmpi", "mpich")
ADMIN = "admin"

CAMPAIGN = """\
# The demo campaign: short, 2 ranks, both MPI libraries, local mpirun.
name: {name}
machine: {machine}
backend: local
modules:
  - mpi: openmpi
  - mpi: mpich
layouts:
  - {{nodes: 1, ppn: 2}}
collectives:
  allreduce: {{sizes: [8, 1024, 16384, 131072]}}
  bcast: {{sizes: [8, 1024, 16384, 131072]}}
  allgather: {{sizes: [8, 1024, 16384]}}
  scatter: {{sizes: [8, 1024, 16384]}}
  reduce: {{sizes: [8, 1024, 16384, 131072]}}
  # MPICH 4.0.2's MPI_Scan at 2 ranks loses to Exscan + Reduce_local by 1.5-2x on these VMs (measured
  # 2026-11-22): a genuine violation, so the demo usually ends with a validated, published profile.
  scan: {{sizes: [8, 1024, 16384, 131072]}}
algorithms: all
repetitions: {{policy: fixed, nrep: 30}}
mpiruns: 5
# validation: default and tuned interleaved in each mpirun, paired (service/analysis/validation.py)
validation: {{enabled: true, nrep: 30, mpiruns: 5, interleaved: true}}
"""


def _log(msg: str) -> None:
    click.echo(f"demo: {msg}", err=False)


def _mpi_version(mpi: str) -> str:
    """Version of Debian's MPI as pgmpi-bench reports it in #@mpi_version."""
    try:
        out = subprocess.run([f"mpirun.{mpi}", "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    for tok in out.replace("(", " ").replace(")", " ").split():
        if tok[:1].isdigit() and "." in tok:
            return tok.strip(",")
    return "unknown"


def _free_port(preferred: int) -> int:
    for port in [preferred, *range(preferred + 1, preferred + 50)]:
        with socket.socket() as s:
            # gunicorn binds with SO_REUSEADDR too: a port in TIME_WAIT from the last demo is free for it
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise click.ClickException(f"no free port near {preferred}")


def _stop_server(workdir: Path) -> None:
    pidfile = workdir / "server.pid"
    if not pidfile.exists():
        return
    try:
        pid = int(pidfile.read_text().strip())
        os.killpg(pid, signal.SIGTERM)
        for _ in range(50):
            os.kill(pid, 0)
            time.sleep(0.1)
    except (ValueError, ProcessLookupError, PermissionError):
        pass
    pidfile.unlink(missing_ok=True)


def _write_modules(workdir: Path, profile_root: Path, machine: str, versions: dict[str, str]) -> Path:
    """Plain Lmod modulefiles, one per MPI, as a site without Spack/EasyBuild would have."""
    tree = workdir / "modules"
    for mpi, version in versions.items():
        prefix = ROOT / "build" / "install" / mpi
        mdir = tree / "pgmpitunelib"
        mdir.mkdir(parents=True, exist_ok=True)
        (mdir / f"{mpi}.lua").write_text(f"""\
-- pgmpitunelib for Debian's {mpi} {version} (written by `make demo`)
whatis("libpgmpitune: redirects violated MPI collectives to faster equivalents")
family("pgmpitunelib")
local root = os.getenv("PGMPI_SITE_PROFILE_ROOT") or "{profile_root}"
setenv("PGMPITUNE_PROFILE_DIR", pathJoin(root, "{machine}", "{mpi}-{version}", "current"))
prepend_path("PATH", "{prefix}/bin")
-- Only launched ranks get the library: mpirun -x LD_PRELOAD=$PGMPITUNE_PRELOAD ..., or srun via SRUN_EXPORT_ENV
setenv("PGMPITUNE_PRELOAD", "{prefix}/lib/libpgmpitune.so")
""")
    return tree


@click.command("demo")
@click.option("--workdir", default=str(ROOT / "demo"), show_default=True, type=click.Path(file_okay=False))
@click.option("--port", default=8050, show_default=True, type=int, help="preferred port on 127.0.0.1")
@click.option("--no-serve", is_flag=True, help="stop after publishing; do not start the dashboard")
def demo(workdir: str, port: int, no_serve: bool) -> None:
    """Run a short local tuning campaign end to end and serve the dashboard."""
    from scheduler.runner import run_local_campaign
    from service.profiles import publish as pub
    from service.app import create_app
    from service.auth import add_user, create_token
    from service.store.db import db
    from service.store.models import Machine, MpiLibrary, ProfileSet, ProfileVersion, User
    from sqlalchemy import select
    import flask_migrate

    t0 = time.time()
    work = Path(workdir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    _stop_server(work)
    db_url = f"sqlite:///{work / 'pgmpi.sqlite'}"
    profile_root = work / "profiles"
    machine = "demo-" + socket.gethostname().split(".")[0].lower()
    versions = {mpi: _mpi_version(mpi) for mpi in MPIS}

    app = create_app({"SQLALCHEMY_DATABASE_URI": db_url, "INSTANCE_PATH": str(work / "instance"),
                      "PGMPI_PROFILE_ROOT": str(profile_root)})
    with app.app_context():
        flask_migrate.upgrade(directory=str(ROOT / "migrations"))
        pw_file = work / "admin-password.txt"
        if db.session.scalar(select(User).where(User.username == ADMIN)) is None:
            password = secrets.token_urlsafe(12)
            add_user(ADMIN, password, "admin")
            pw_file.write_text(password + "\n")
            pw_file.chmod(0o600)
        if db.session.scalar(select(Machine).where(Machine.name == machine)) is None:
            m = Machine(name=machine, nodes=1, cores_per_node=os.cpu_count() or 2,
                        interconnect="shared memory", notes="created by make demo")
            db.session.add(m)
        db.session.commit()
        _row, admin_token = create_token("demo-admin", "admin", actor="demo")
        db.session.commit()

    name = "demo"
    cfile = work / "campaign.yaml"
    cfile.write_text(CAMPAIGN.format(name=name, machine=machine))
    _log(f"campaign {cfile} (machine {machine}; Open MPI {versions['openmpi']}, MPICH {versions['mpich']})")
    summary = run_local_campaign(cfile, state_dir=work / "agent", app=app, token=admin_token,
                                 log=lambda s: _log(s))
    _log(f"campaign done: {json.dumps({k: v for k, v in summary.items() if k != 'result_files'}, default=str)[:400]}")

    # Publish every validated candidate (the agent measured tuned vs default with it) through the same
    # path as the profile page, so the dashboard shows it as published.
    from service.profiles.lifecycle import publish_candidate
    with app.app_context():
        for mpi in MPIS:
            lib = db.session.scalar(select(MpiLibrary).join(Machine).where(
                Machine.name == machine, MpiLibrary.name == mpi).order_by(MpiLibrary.id.desc()))
            if lib is None:
                _log(f"{mpi}: no results stored")
                continue
            versions[mpi] = lib.version
            from service.store.models import Analysis
            an = db.session.scalars(select(Analysis).where(Analysis.library_id == lib.id)
                                    .order_by(Analysis.id.desc())).first()
            if an is not None:
                summ = an.summary or {}
                _log(f"{mpi}: analysis {an.id} ({an.test}{' + BH' if an.fdr else ''}, alpha {an.alpha}): "
                     f"{an.n_violations} violation(s) of {an.n_checked} checks; "
                     + ((summ.get("control") or {}).get("line") or "control: none measured"))
                for d in (summ.get("defects") or [])[:10]:
                    _log(f"{mpi}: library defect: {d['call']} {d['msize']} B {d['algorithm']} failed the results "
                         f"check ({d['why']})")
            cand = db.session.scalars(select(ProfileVersion).join(ProfileSet)
                                      .where(ProfileSet.library_id == lib.id)
                                      .order_by(ProfileVersion.id.desc())).first()
            if cand is None:
                _log(f"{mpi}: the analysis found nothing worth redirecting; the library keeps its defaults")
                continue
            if cand.state == "published":
                _log(f"{mpi}: candidate {cand.id} is already published ({cand.published_path})")
                continue
            for f in sorted(cand.figures, key=lambda f: (f.collective, f.msize)):
                _log(f"{mpi}: validation {f.collective} {f.msize} B: default/tuned {f.speedup:.2f}x"
                     + (f" (per mpirun {', '.join(f'{r:.2f}' for r in (f.details or {}).get('run_ratios') or [])})"
                        if (f.details or {}).get("run_ratios") else ""))
            if cand.state != "validated":
                _log(f"{mpi}: candidate {cand.id} not published: {cand.notes or 'no validation run reported'}")
                continue
            _log(f"{mpi}: candidate {cand.id} {cand.notes}")
            try:
                res = publish_candidate(cand, profile_root, actor="demo")
                _log(f"{mpi}: published profile version {res.version} -> {res.target}/current")
                from pgmpi_formats.prf import parse_prf
                for fname, text in sorted((cand.files or {}).items()):
                    prf = parse_prf(text, fname)
                    _log(f"{mpi}: published {prf['mpi_name']} p={prf['nprocs']}: " + ", ".join(
                        f"{lo}-{hi} B -> {alg}" for lo, hi, alg in prf["ranges"] if alg != "default"))
            except pub.PublishError as exc:
                _log(f"{mpi}: not published: {exc}")
    # what the campaign found, what validation kept and dropped, what was published, the control arm's figures
    from service.profiles.lifecycle import campaign_report, report_lines
    with app.app_context():
        for line in report_lines(campaign_report(name, machine)):
            _log(f"report: {line}")
    modules = _write_modules(work, profile_root, machine, versions)
    _log(f"modules: `module use {modules}` then `module load pgmpitunelib/openmpi` (or /mpich); launch with "
         "`mpirun -x LD_PRELOAD=$PGMPITUNE_PRELOAD ...` (MPICH: `-genv LD_PRELOAD $PGMPITUNE_PRELOAD`), "
         "PGMPITUNE_VERBOSE=1 prints which algorithm served each call")

    if no_serve:
        _log(f"done in {time.time() - t0:.0f} s")
        return
    port = _free_port(port)
    env = dict(os.environ, DATABASE_URL=db_url, PGMPI_INSTANCE=str(work / "instance"),
               PGMPI_PROFILE_ROOT=str(profile_root))
    log = open(work / "server.log", "ab")
    proc = subprocess.Popen([str(Path(sys.executable).parent / "pgmpi"), "serve", "--host", "127.0.0.1",
                             "--port", str(port), "--workers", "2"],
                            env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
    (work / "server.pid").write_text(str(proc.pid))
    url = f"http://127.0.0.1:{port}/"
    for _ in range(120):
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(0.5)
    else:
        raise click.ClickException(f"the dashboard did not answer at {url}; see {work / 'server.log'}")
    _log(f"ready in {time.time() - t0:.0f} s")
    click.echo(f"\n  Dashboard: {url}\n  Log in as {ADMIN}, password in {work / 'admin-password.txt'}\n"
               f"  Stop it with: make demo-stop\n")


@click.command("demo-stop")
@click.option("--workdir", default=str(ROOT / "demo"), show_default=True, type=click.Path(file_okay=False))
def demo_stop(workdir: str) -> None:
    """Stop the dashboard that `make demo` started."""
    _stop_server(Path(workdir).resolve())
    _log("dashboard stopped")


@click.group()
def main() -> None:
    """The pgmpi-site demo: `run` it, `stop` its dashboard."""


main.add_command(demo, "run")
main.add_command(demo_stop, "stop")

if __name__ == "__main__":
    main()
