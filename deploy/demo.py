"""`make demo` (deploy/demo.sh runs `python deploy/demo.py run`): the whole product on this machine, with the
embedded defaults.  It lives in deploy/ because it is the one place that drives the agent and the service in
one process; neither package imports the other (tests/python/formats/test_import_graph.py).

One short local tuning campaign per MPI library (local mpirun, no Slurm) goes
through the same code a site runs nightly:

    campaign file -> scheduler agent (local backend) -> pgmpi-bench under mpirun
    -> upload into the service (SQLite file) -> analysis -> candidate profile
    -> validation run (tuned vs default) -> publish into a local profile root
    -> Lmod modulefiles pointing at it -> dashboard served on 127.0.0.1

and a second, native one (NATIVE_CAMPAIGN, native_step): the libraries' own algorithms of bcast and
allreduce searched -> the nightly chain's own workflow (service/workflows/native.py): the decision written
for each library's exact version as a candidate -> a validation job that loads it through the module, at
the sizes the decision measured -> settled, and published next to the .prf profiles where it passed.

Everything lives under --workdir (default demo/). A second run reuses what is
there and says so: the agent's state makes finished jobs count as done, so only
the server is restarted. --fresh (`make demo FRESH=1`) measures a new campaign
demo-2, demo-3, ... next to the earlier ones.
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

# What both demo campaigns share: the machine, the local backend, both Debian MPIs, one node of 2 ranks.
_CAMPAIGN_HEAD = """\
name: {name}
machine: {machine}
backend: local
modules:
  - mpi: openmpi
  - mpi: mpich
layouts:
  - {{nodes: 1, ppn: 2}}
"""

CAMPAIGN = """\
# The demo campaign: short, 2 ranks, both MPI libraries, local mpirun.
""" + _CAMPAIGN_HEAD + """\
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
# validation: default and tuned interleaved in each mpirun, paired (service/analysis/validation.py); nrep 100
# because a mock-up's first ~40 calls in a process can be 5x slower than its steady state (MPICH's Bcast 16 KiB
# as Scatter + Allgather here, docs/verdicts-evidence.md): a median of 30 would measure only that warm-up
validation: {{enabled: true, nrep: 100, mpiruns: 5, interleaved: true}}
"""


# The native step: the MPI libraries' own algorithms of two collectives at one size each, searched
# exhaustively (every algorithm, one segment size, interleaved with the default in one mpirun per collective
# and sweep): one size each keeps the demo within its 90 s (two sizes and two segments took 3-4 min loaded).
# Open MPI 4.1.4's bcast at 4 KiB (split_binary_tree with 2 KiB segments) and MPICH 4.0.2's allreduce at
# 32 B (recursive_doubling) beat their defaults here and passed validation before (scheduler/README.md).
NATIVE_CAMPAIGN = """\
# The demo's native search: the MPI libraries' own algorithms, 2 ranks, local mpirun.
""" + _CAMPAIGN_HEAD + """\
collectives:
  bcast: {{sizes: [4096], search: exhaustive, segments: [2048]}}
  allreduce: {{sizes: [32], search: exhaustive}}
repetitions: {{policy: fixed, nrep: 30}}
mpiruns: 3
validation: {{enabled: false}}
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
    """Plain Lmod modulefiles, one per MPI, as a site without Spack/EasyBuild would have: everything
    deploy/site/INSTALL.md promises (link and include paths too), plus a bin/ of that MPI's compiler
    wrapper and launcher, so `mpicc app.c -lpgmpitune` and `mpirun` are the loaded MPI's."""
    tree = workdir / "modules"
    for mpi, version in versions.items():
        prefix = ROOT / "build" / "install" / mpi
        shims = tree / "shims" / mpi / "bin"
        shims.mkdir(parents=True, exist_ok=True)
        tools = {t: f"{t}.{mpi}" for t in ("mpicc", "mpicxx", "mpifort", "mpirun", "mpiexec")}
        if mpi == "mpich":      # hydra starts its proxy from the directory its mpiexec was found in
            tools.update({t: t for t in ("mpiexec.hydra", "hydra_pmi_proxy", "hydra_nameserver", "hydra_persist")})
        for tool, target in tools.items():
            link = shims / tool
            if Path("/usr/bin", target).exists() and not link.is_symlink():
                link.symlink_to(Path("/usr/bin", target))
        preload = (f"mpirun -x LD_PRELOAD={prefix}/lib/libpgmpitune.so" if mpi == "openmpi"
                   else f"mpirun -genv LD_PRELOAD {prefix}/lib/libpgmpitune.so")
        mdir = tree / "pgmpitunelib"
        mdir.mkdir(parents=True, exist_ok=True)
        site_lua = ROOT / "spack-repo" / "packages" / "pgmpitunelib" / "pgmpitune-site.lua"
        (mdir / f"{mpi}.lua").write_text(f"""\
-- pgmpitunelib for Debian's {mpi} {version} (written by `make demo`)
whatis("libpgmpitune: redirects violated MPI collectives to faster equivalents")
family("pgmpitunelib")
local prefix = "{prefix}"
-- the site's own rules (spack-repo/packages/pgmpitunelib/pgmpitune-site.lua): a site file named by
-- $PGMPI_SITE_CONFIG (the demo's pgmpi.env, or a native validation job's staged set) wins
local site = loadfile("{site_lua}")()
local conf = os.getenv("PGMPI_SITE_CONFIG") and site.site_config() or {{}}
local root = conf.profile_root or os.getenv("PGMPI_SITE_PROFILE_ROOT") or "{profile_root}"
local dir = pathJoin(root, conf.machine or "{machine}", "{mpi}-{version}", "current")
setenv("PGMPITUNE_PROFILE_DIR", dir)
-- the MPI library's own decision file of the same set (native.rules / native.json), read by the library
for k, v in pairs(site.native_env_at(dir)) do setenv(k, v) end
setenv("PGMPITUNE_ROOT", prefix)
prepend_path("PATH", "{shims}")
prepend_path("PATH", pathJoin(prefix, "bin"))
-- mpicc app.c -lpgmpitune (tuned mode, linked) finds the library and pgmpitune.h; the ranks find it at run time
prepend_path("LIBRARY_PATH", pathJoin(prefix, "lib"))
prepend_path("LD_LIBRARY_PATH", pathJoin(prefix, "lib"))
prepend_path("CPATH", pathJoin(prefix, "include"))
-- An unmodified binary gets the library only in the launched ranks: $PGMPITUNE_MPIRUN -np N ./app
setenv("PGMPITUNE_PRELOAD", pathJoin(prefix, "lib", "libpgmpitune.so"))
setenv("PGMPITUNE_MPIRUN", "{preload}")
-- Without the library in the ranks nothing of ours runs in the job, so the job cannot warn: say it once,
-- when the module is loaded (once per job script), not on every launch.
if mode() == "load" then
  LmodMessage("pgmpitunelib: ranks are tuned only with the library in them: link with -lpgmpitune, or "
              .. "launch with $PGMPITUNE_MPIRUN -np N ./app; PGMPITUNE_VERBOSE=1 shows what served each call")
end
""")
    return tree


LMOD_INIT = "/usr/share/lmod/lmod/init/bash"     # Debian's lmod package


def write_env(work: Path, db_url: str, profile_root: Path, modules: Path) -> Path:
    """<workdir>/pgmpi.env, for `. demo/pgmpi.env` in a shell: where the demo's database, profile root
    (through a site.conf of its own, pgmpi_formats.site), agent state and module tree are, and Lmod's
    `module` function when the shell has none. Every `pgmpi` command and the printed next steps then
    find the demo without options."""
    conf = work / "site.conf"
    conf.write_text(f"# written by `make demo`: the demo's own site settings (pgmpi_formats/site.py)\n"
                    f"profile_root = {profile_root}\n")
    env = work / "pgmpi.env"
    env.write_text(f"""\
# written by `make demo`; use it with:  . {env}
export DATABASE_URL={db_url}
export PGMPI_SITE_CONFIG={conf}
export PGMPI_AGENT_STATE={work / 'agent'}
export MODULEPATH={modules}${{MODULEPATH:+:$MODULEPATH}}
export PATH={ROOT / '.venv' / 'bin'}:$PATH
type module >/dev/null 2>&1 || . {LMOD_INIT}
""")
    return env


def launch_line(mpi: str, exe: str = "./app", preload: bool = False) -> str:
    """One line that runs as root and as a user: Open MPI refuses root without its two variables, which
    are harmless for a user (and MPICH ignores them)."""
    run = "$PGMPITUNE_MPIRUN" if preload else "mpirun"
    asroot = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " if mpi == "openmpi" else ""
    return f"{asroot}PGMPITUNE_VERBOSE=1 {run} -np 2 {exe}"


def _quiet_migrations() -> None:
    """Alembic's INFO lines are for admins running `pgmpi db upgrade`, not for the demo's reader:
    migrations/env.py leaves logging alone when the caller configured it."""
    import logging
    logging.basicConfig(level=logging.WARNING, format="demo: %(name)s: %(message)s")


def _size(n: int) -> str:
    for unit, f in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f and n % f == 0:
            return f"{n // f} {unit}"
    return f"{n} B"


def _pick_campaign(state_dir: Path, fresh: bool) -> tuple[str, str | None]:
    """(campaign name, why it is reused or None). The first is `demo`; FRESH=1 starts demo-2, demo-3, ...
    so earlier results stay on the dashboards (the trends page compares campaigns)."""
    from scheduler.state import State
    if not (state_dir / "agent.db").exists():
        return "demo", None
    st = State(state_dir)
    try:
        rows = [r for r in st.campaigns() if r["name"] == "demo" or (r["name"].startswith("demo-")
                                                                     and not r["name"].endswith("-native"))]
        if not rows:
            return "demo", None
        last = rows[-1]
        if fresh:
            return f"demo-{len(rows) + 1}", None
        jobs = st.jobs(last["name"])
        done = sum(1 for r in jobs if r["state"] == "COMPLETED")
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(last["created_at"]))
        return last["name"], (f"reusing campaign {last['name']} measured {when} ({done} of {len(jobs)} job(s) "
                              f"completed, state in {state_dir}); `make demo FRESH=1` measures again")
    finally:
        st.close()


class Progress:
    """One line whenever the count of finished mpiruns changes (at most every 5 s), per job."""

    def __init__(self, t0: float):
        self.t0, self.last, self.shown = t0, "", 0.0

    def __call__(self, agent, _summary) -> None:
        parts = []
        for r in agent.state.jobs(agent.c.name):
            total = len(json.loads(r["spec"]).get("launches") or [])
            if r["state"] == "COMPLETED":
                done = total
            elif r["attempt_dir"] and Path(r["attempt_dir"]).is_dir():
                done = len(list(Path(r["attempt_dir"]).glob("*.txt")))
            else:
                done = 0
            parts.append(f"{r['key']} {done}/{total}")
        line = ", ".join(parts)
        if line and line != self.last and (time.time() - self.shown > 5 or "/" not in self.last):
            _log(f"[{time.time() - self.t0:4.0f} s] mpiruns: {line}")
            self.last, self.shown = line, time.time()


def _facts(app, machine: str, campaign: str, profile_root: Path, versions: dict[str, str],
           publish: bool) -> dict[str, dict]:
    """What the campaign found, validated, dropped and published per MPI (from the service's database),
    publishing the validated candidates on the way, through the profile page's path."""
    from pgmpi_formats.prf import parse_prf
    from service.profiles import publish as pub
    from service.workflows.publish import publish_candidate
    from service.store.db import db
    from service.store.models import Analysis, Campaign, Machine, MpiLibrary, ProfileSet, ProfileVersion
    from sqlalchemy import select
    out: dict[str, dict] = {}
    with app.app_context():
        for mpi in MPIS:
            f: dict = {"version": versions[mpi]}
            out[mpi] = f
            lib = db.session.scalar(select(MpiLibrary).join(Machine).where(
                Machine.name == machine, MpiLibrary.name == mpi).order_by(MpiLibrary.id.desc()))
            if lib is None:
                f["missing"] = "no results stored"
                continue
            f["version"] = versions[mpi] = lib.version
            an = db.session.scalars(select(Analysis).join(Campaign, Analysis.campaign_id == Campaign.id)
                                    .where(Analysis.library_id == lib.id, Campaign.name == campaign)
                                    .order_by(Analysis.id.desc())).first()
            if an is not None:
                summ = an.summary or {}
                f["analysis"] = (f"{an.n_violations} violation(s) in {an.n_checked} comparisons "
                                 f"({an.test}{' + Benjamini-Hochberg' if an.fdr else ''}, alpha {an.alpha})")
                f["control"] = (summ.get("control") or {}).get("line")
                f["defects"] = [f"{d['call']} {_size(d['msize'])} {d['algorithm']} ({d['why']})"
                                for d in (summ.get("defects") or [])[:5]]
            # this campaign's candidate only: an earlier campaign's stays what it was
            cand = db.session.scalars(select(ProfileVersion).join(ProfileSet)
                                      .where(ProfileSet.library_id == lib.id,
                                             ProfileVersion.analysis_id == (an.id if an else -1))
                                      .order_by(ProfileVersion.id.desc())).first()
            if cand is None:
                current = db.session.scalars(select(ProfileVersion).join(ProfileSet).where(
                    ProfileSet.library_id == lib.id, ProfileVersion.state == "published")
                    .order_by(ProfileVersion.id.desc())).first()
                f["candidate"] = ("no candidate from this campaign (nothing worth redirecting)"
                                  + (f"; the profile published earlier (candidate {current.id}) stays"
                                     if current else ": the library keeps its defaults"))
                continue
            f["validation"] = [f"{x.collective} {_size(x.msize)} {x.speedup:.2f}x"
                               for x in sorted(cand.figures, key=lambda x: (x.collective, x.msize))]
            f["verdict"] = cand.notes or cand.state
            if cand.state == "validated" and publish:
                try:
                    res = publish_candidate(cand, profile_root, actor="demo")
                    f["published_now"] = f"version {res.version} -> {res.target}/current"
                except pub.PublishError as exc:
                    f["not_published"] = str(exc)
            if cand.state in ("published", "superseded"):     # superseded: a later publication is current
                f["published"] = []
                for fname, text in sorted((cand.files or {}).items()):
                    prf = parse_prf(text, fname)
                    f["published"] += [f"{prf['mpi_name']} p={prf['nprocs']} "
                                       f"{_size(lo)}{'' if lo == hi else '-' + _size(hi)} -> {alg}"
                                       for lo, hi, alg in prf["ranges"] if alg != "default"]
                f["published_path"] = cand.published_path
            elif cand.state != "validated":
                f["not_published"] = f"candidate {cand.id} is {cand.state}: {cand.notes or 'no validation run'}"
    return out


def native_step(app, work: Path, machine: str, campaign: str, versions: dict[str, str], profile_root: Path,
                modules: Path, log=_log) -> dict[str, dict]:
    """The native half through the nightly chain's own workflow (service/workflows/native.py): the campaign
    `campaign` (NATIVE_CAMPAIGN, measured and stored already) -> native_candidate (the decision per cell, the
    library's own file for its exact version, a candidate version carrying the cells it decided on) -> a
    validation job that loads the file through the demo's pgmpitunelib module as a user does, at those cells
    (scheduler/native_validation.py, local backend) -> the service's record (validate.record_native_validation)
    -> settle (validated and published, or failed); a failed candidate's record goes back as `refused` once.
    A file already live, or validated before, is not measured again.  Returns per library what it got."""
    from scheduler.backends import make_backend
    from scheduler.native_validation import NativeValidationJob
    from scheduler.state import State
    from service.analysis.native_decision import runs_from_files
    from service.profiles import publish as pub
    from service.workflows import native as chain, validate
    st = State(work / "agent")
    try:
        jobs = {json.loads(r["spec"])["module"]["mpi"]: r for r in st.jobs(campaign) if r["state"] == "COMPLETED"}
    finally:
        st.close()
    out: dict[str, dict] = {}
    for mpi in MPIS:
        f: dict = {}
        out[mpi] = f
        row = jobs.get(mpi)
        if row is None:
            f["native"] = "no completed search job"
            continue
        files = sorted(Path(row["attempt_dir"]).glob("search-*.txt"))
        cells = runs_from_files(files)
        f["searched"] = (f"{len(cells)} cells ({', '.join(sorted({k for k, _, _ in cells}))}), "
                         f"{sum(len({a for r in runs for a in r}) - 2 for runs in cells.values())} variants, "
                         f"{len(files)} mpiruns")
        refused: list[int] = []
        for attempt in (1, 2):
            with app.app_context():
                try:
                    v, why = chain.native_candidate(machine, mpi, versions[mpi], campaign, refused, profile_root,
                                                    "demo")
                except chain.NativeChainError as exc:
                    f["native"] = f"no decision file: {exc}"
                    break
                if v is None:
                    f["native"] = (f"{why.split(' (')[0]}" + (" after validation dropped the rest" if refused else "")
                                   + ": nothing to publish")
                    break
                vid, state, decided = v.id, v.state, v.decided_at
                name = next(n for n in v.files if n in pub.NATIVE_FILES)
                text = v.files[name]
                rec = validate.recorded_native_validation(machine, mpi, versions[mpi], {name: text})
            live = pub.status(profile_root, machine, mpi, versions[mpi])["files"]
            job = NativeValidationJob(work / "native-validate" / f"{campaign}-{mpi}-{attempt}", machine, mpi,
                                      versions[mpi], name, text, None, f"pgmpitunelib/{mpi}", [str(modules)],
                                      nprocs=2, rounds=5, nrep=30, decided_at=decided)
            try:
                job.stage()
            except (ValueError, OSError) as exc:     # the agent's own readers refuse it: never measured
                f["native"] = f"candidate {vid} refused before validating: {exc}"
                break
            f["file"] = f"{name}: " + ", ".join(f"{c.key} {_size(c.msize)} {c.label}" for c in job.cells
                                                if c.label != "default")
            if state in ("published", "superseded"):  # the same file was published before (a later .prf keeps it live)
                if live.get(name) == text:
                    f["published"] = f"live already (candidate {vid}): {f['file']}"
                else:
                    f["not_published"] = f"published earlier as candidate {vid}, no longer live (rolled back)"
                break
            if rec:
                verdict = {"ok": True, "state": "passed", "id": rec[name]["native_validation"], "problems": []}
            else:
                log(f"native: validating {mpi}'s {f['file']} (a job that loads it through the module, as a user)")
                backend = make_backend(None, "local")
                job.write(backend)
                try:
                    job_id = job.submit(backend=backend, timeout=300)
                except RuntimeError as exc:        # the demo goes on; the summary says why nothing was published
                    with app.app_context():
                        chain.job_failed(vid, machine, mpi, versions[mpi], "local", str(exc), "demo")
                    f["validation"] = f"the validation job failed: {exc} ({job.directory})"
                    break
                with app.app_context():
                    verdict = validate.record_native_validation(machine, mpi, versions[mpi], name, text, 2,
                                                                job.figures(), f"local:{job_id}", "demo",
                                                                decided_at=decided)
            f["validation"] = (f"record {verdict['id']} {verdict['state']}"
                               + (": " + "; ".join(verdict["problems"][:3]) if verdict["problems"] else ""))
            with app.app_context():
                cand = chain.candidate_of(vid, machine, mpi, versions[mpi], name, text)
                kept = set(cand.files)
                settled = chain.settle(cand, verdict, True, profile_root, "demo")
            if settled["published"]:
                left = sorted(set(live) - kept - set(pub.NATIVE_FILES))
                f["published"] = (f"{f['file']} (version {settled['published']['version']} -> "
                                  f"{settled['published']['path']})"
                                  + (f"; leaves out the live {', '.join(left)}: its mock-ups call a collective the "
                                     "file retunes, measured under the library's old choice" if left else ""))
            elif verdict["state"] == "passed":
                f["not_published"] = settled["why"] or f"candidate {vid} is {settled['state']}"
            if verdict["state"] == "passed":
                break
            refused.append(verdict["id"])
    return out


def _summary(campaign: str, reused: str | None, run: dict, facts: dict, modules: Path, url: str | None,
             work: Path, seconds: float, env: Path | None = None) -> str:
    names = {"openmpi": "Open MPI", "mpich": "MPICH"}
    states = run.get("states") or {}
    lines = ["", f"== pgmpi-site demo: campaign {campaign} "
                 + (f"(REUSED: {reused.split(' (')[0].removeprefix('reusing campaign ')}; nothing measured now, "
                    "make demo FRESH=1 measures again) ==" if reused else f"(measured now in {seconds:.0f} s) ==")]
    lines.append(f"  measured   {run.get('measure_jobs', 0)} measurement job(s) and {run.get('validate_jobs', 0)} "
                 f"validation job(s), 2 ranks each: "
                 + ", ".join(f"{n} {k.lower()}" for k, n in sorted(states.items()))
                 + f"; {run.get('uploaded', 0)} result file(s) in the service")
    for mpi, f in facts.items():
        head = f"  {names[mpi]} {f['version']}:"
        if f.get("missing"):
            lines.append(f"{head} {f['missing']}")
            continue
        lines.append(f"{head}")
        lines.append(f"    found      {f.get('analysis', 'no analysis yet')}")
        if f.get("control"):
            lines.append(f"    control    {f['control'].removeprefix('control: ')}")
        for d in f.get("defects") or []:
            lines.append(f"    defect     {d}: failed the results check, never used")
        if f.get("candidate"):
            lines.append(f"    candidate  {f['candidate']}")
            continue
        lines.append("    validated  tuned vs default, paired, per size (default/tuned > 1 = faster): "
                     + ", ".join(f.get("validation") or ["no figures"]))
        lines.append(f"    verdict    {f.get('verdict')}")
        if f.get("published"):
            lines.append(f"    published  {'; '.join(f['published'])}"
                         + (f" ({f['published_now']})" if f.get("published_now") else " (earlier)"))
        elif f.get("not_published"):
            lines.append(f"    not published: {f['not_published']}")
    for mpi, f in facts.items():
        n = f.get("native_facts")
        if not n:
            continue
        head = f"  {names[mpi]} {f['version']} own algorithms:"
        lines.append(head + (f" searched {n['searched']}" if n.get("searched") else ""))
        for k, what in (("file", "decision"), ("validation", "validated"), ("published", "published"),
                        ("not_published", "not published"), ("native", "result")):
            if n.get(k) and not (k == "file" and n.get("published")):
                lines.append(f"    {what:10} {n[k]}")
    lines.append("")
    lines.append("  Next:")
    if url:
        lines.append(f"    dashboard      {url}  (log in as {ADMIN}, password in {work / 'admin-password.txt'})")
    # suggest the MPI that has a published profile, so the first tuned run shows a redirected call
    mpi = next((m for m, f in facts.items() if f.get("published")), "openmpi")
    if env is not None:
        lines.append(f"    this shell     . {env}   (database, profile root, agent state, module path, Lmod for "
                     "every pgmpi command below)")
        lines.append(f"    use a profile  module load pgmpitunelib/{mpi}")
    else:
        lines.append(f"    use a profile  module use {modules}; module load pgmpitunelib/{mpi}")
    lines.append("    compile, run   mpicc app.c -o app -lpgmpitune && " + launch_line(mpi))
    lines.append("    unmodified app " + launch_line(mpi, preload=True))
    lines.append("                   (the report at the end names the algorithm that served each call; "
                 "docs/user-guide.md)")
    for other, f in facts.items():      # the other MPI's line too: it runs as root, and says why nothing is tuned
        if other != mpi:
            lines.append(f"    {names[other]:<14} module load pgmpitunelib/{other} && {launch_line(other)}   ("
                         + ("published too" if f.get("published") else "nothing published: the library keeps its "
                            "defaults, the report says so") + ")")
    lines.append(f"    campaign jobs  pgmpi campaign status {campaign}" if env is not None else
                 f"    campaign jobs  .venv/bin/pgmpi campaign status {campaign} --state-dir {work / 'agent'}")
    if env is not None:
        lines.append("    what is live   pgmpi profile list;  pgmpi profile status --machine "
                     f"{next(iter(facts.values()), {}).get('machine', '<machine>')} --mpi {mpi} --mpi-version "
                     f"{facts.get(mpi, {}).get('version', '<version>')}")
    lines.append("    measure again  make demo FRESH=1;  stop the dashboard: make demo-stop")
    return "\n".join(lines)


@click.command("demo")
@click.option("--workdir", default=str(ROOT / "demo"), show_default=True, type=click.Path(file_okay=False))
@click.option("--port", default=8050, show_default=True, type=int, help="preferred port on 127.0.0.1")
@click.option("--no-serve", is_flag=True, help="stop after publishing; do not start the dashboard")
@click.option("--fresh", is_flag=True, envvar="FRESH", help="measure again instead of reusing the last campaign "
              "(make demo FRESH=1)")
def demo(workdir: str, port: int, no_serve: bool, fresh: bool) -> None:
    """Run a short local tuning campaign end to end and serve the dashboard."""
    from scheduler.runner import run_local_campaign
    from service.app import create_app
    from service.auth import add_user, create_token, revoke_token
    from service.store.db import db
    from service.store.models import ApiToken, Machine, User
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

    _quiet_migrations()
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
        # The agent's token lives for this run only: a run that died before revoking its own is cleaned up.
        for old in db.session.scalars(select(ApiToken).where(ApiToken.name == "demo-admin",
                                                             ApiToken.revoked_at.is_(None))):
            revoke_token(old.id, actor="demo")
        token_row, admin_token = create_token("demo-admin", "admin", actor="demo")
        token_id = token_row.id
        db.session.commit()
    _log(f"database {work / 'pgmpi.sqlite'} ready")

    name, reused = _pick_campaign(work / "agent", fresh)
    cfile = work / "campaign.yaml" if name == "demo" else work / f"{name}.yaml"
    cfile.write_text(CAMPAIGN.format(name=name, machine=machine))
    if reused:
        _log(reused)
    else:
        _log(f"measuring campaign {name} ({cfile}) on {machine}: Open MPI {versions['openmpi']}, "
             f"MPICH {versions['mpich']}; about a minute on 2 idle cores")
    try:
        run = run_local_campaign(cfile, state_dir=work / "agent", app=app, token=admin_token,
                                 log=lambda s: None if reused and s.startswith("plan:") else _log(s),
                                 on_cycle=None if reused else Progress(t0))
        from scheduler.state import State
        st = State(work / "agent")
        jobs = st.jobs(name)
        st.close()
        run["measure_jobs"] = sum(1 for r in jobs if r["kind"] != "validate")
        run["validate_jobs"] = sum(1 for r in jobs if r["kind"] == "validate")
    finally:
        with app.app_context():
            revoke_token(token_id, actor="demo")
            db.session.commit()

    facts = _facts(app, machine, name, profile_root, versions, publish=True)
    modules = _write_modules(work, profile_root, machine, versions)
    # the native half: the libraries' own algorithms, searched, validated as users load them, published
    nname = f"{name}-native"
    nfile = work / f"{nname}.yaml"
    nfile.write_text(NATIVE_CAMPAIGN.format(name=nname, machine=machine))
    with app.app_context():
        token_row, native_token = create_token("demo-native", "admin", actor="demo")
        native_token_id = token_row.id
        db.session.commit()
    try:
        nrun = run_local_campaign(nfile, state_dir=work / "agent", app=app, token=native_token,
                                  log=lambda s: None if reused and s.startswith("plan:") else _log(s))
    finally:
        with app.app_context():
            revoke_token(native_token_id, actor="demo")
            db.session.commit()
    for mpi, n in native_step(app, work, machine, nname, versions, profile_root, modules).items():
        facts[mpi]["native_facts"] = n
    run["uploaded"] = run.get("uploaded", 0) + nrun.get("uploaded", 0)
    env_file = write_env(work, db_url, profile_root, modules)
    url = None
    if not no_serve:
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
    for f in facts.values():
        f.setdefault("machine", machine)
    click.echo(_summary(name, reused, run, facts, modules, url, work, time.time() - t0, env_file))
    # per range: what validation kept and dropped with its figures, the nights, the refused redirections
    from service.workflows.publish import campaign_report, report_lines
    with app.app_context():
        details = report_lines(campaign_report(name, machine))
    if details:
        click.echo("  Details (the campaign report; service/analysis/README.md):")
        for line in details:
            click.echo(f"    {line}")


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
