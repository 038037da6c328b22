"""`pgmpi agent|campaign`: the nightly campaign agent.

    pgmpi campaign submit nightly.yaml [--dry-run] [--watch]   plan, print node-hours, submit
    pgmpi campaign status <name|file> [--watch] [--json]       jobs, states, reasons, spool; exit code:
                                                               0 done, 3 in progress, 4 failed, 1 error
    pgmpi campaign cancel <name|file>                          scancel everything still queued/running
    pgmpi agent run-once [--campaign f.yaml ...]               one cycle over the campaigns in the state dir
    pgmpi agent nightly --campaign f.yaml [...]                tonight's campaign(s) <name>-<YYYYMMDD>, to the end
"""
from __future__ import annotations

import json
import sys
import time
import typing
from pathlib import Path

import click

from . import backends
from .campaign import Campaign, CampaignError, SyncMethod, load_campaign

STATE_OPT = click.option("--state-dir", type=click.Path(file_okay=False), default=None, envvar="PGMPI_AGENT_STATE",
                         help="agent state (SQLite + job folders); default $PGMPI_AGENT_STATE or /var/lib/pgmpi-agent")


def _state_dir(v):
    from .runner import default_state_dir
    return Path(v) if v else default_state_dir()


def _load(path: str) -> Campaign:
    try:
        return load_campaign(path)
    except CampaignError as exc:
        raise click.ClickException(str(exc)) from None


def _campaign_from_state(state_dir: Path, ref: str) -> tuple[Campaign, str | None]:
    if Path(ref).is_file():
        return _load(ref), ref
    from .state import State
    st = State(state_dir)
    row = st.campaign(ref)
    st.close()
    if row is None:
        raise click.ClickException(f"no campaign {ref!r} in {state_dir} (and no such file)")
    return Campaign.model_validate(json.loads(row["definition"])), row["source"]


def _table(agent):
    from rich.table import Table
    rows = agent.state.jobs(agent.c.name)
    s = agent.summary()
    t = Table(title=f"campaign {agent.c.name} on {agent.c.machine}: "
                    + ", ".join(f"{k} {v}" for k, v in sorted(s["states"].items()))
                    + f" | uploaded {s['uploaded']}, spooled {s['spooled']}")
    for col in ("job", "kind", "try", "state", "id", "elapsed", "reason"):
        t.add_column(col, overflow="fold")
    now = time.time()
    colours = {"COMPLETED": "green", "RUNNING": "cyan", "PENDING": "yellow", "FAILED": "red",
               "TIMEOUT": "red", "NODE_FAIL": "red", "CANCELLED": "magenta"}
    for r in rows:
        el = ""
        if r["started_at"]:
            el = f"{(r['ended_at'] or now) - r['started_at']:.0f} s"
        st = r["state"]
        t.add_row(r["key"], r["kind"], str(r["attempt"]), f"[{colours.get(st, 'white')}]{st}[/]",
                  r["backend_id"] or "", el, (r["reason"] or "")[:160])
    return t


def _drive(agent, watch: bool, interval: float, timeout: float | None):
    """Run agent cycles with a live table until the campaign is done (or once without --watch)."""
    from rich.console import Console
    from rich.live import Live
    console = Console(stderr=False)
    if not watch:
        s = agent.run_once()
        console.print(_table(agent))
        return s
    end = time.time() + timeout if timeout else None
    with Live(_table(agent), console=console, refresh_per_second=4, transient=False) as live:
        while True:
            s = agent.run_once()
            live.update(_table(agent))
            if s["done"] or (end and time.time() > end):
                return s
            time.sleep(interval)


def _agent(campaign, state_dir, backend=None, service_url=None, token_file=None, source=None, quiet=False):
    from .runner import make_agent
    log = (lambda *_: None) if quiet else (lambda m: click.echo(f"[agent] {m}", err=True))
    try:
        return make_agent(campaign, _state_dir(state_dir), backend=backend, service_url=service_url,
                          token_file=token_file, log=log, source=source)
    except RuntimeError as exc:
        raise click.ClickException(str(exc)) from None


@click.group("agent")
def agent() -> None:
    """Run the campaign agent (nightly, or once)."""


@click.group("campaign")
def campaign() -> None:
    """Submit, follow and cancel benchmark campaigns."""


@campaign.command("submit")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@STATE_OPT
@click.option("--backend", type=click.Choice(backends.names()), default=None, help="override the file's backend")
@click.option("--service-url", default=None, help="override service.url")
@click.option("--token-file", default=None, help="override service.token_file")
@click.option("--dry-run", is_flag=True, help="plan and estimate only; submit nothing")
@click.option("--force", is_flag=True, help="submit even above budget.node_hours")
@click.option("--watch/--no-watch", default=False, help="stay and show live progress until the campaign is done")
@click.option("--interval", default=2.0, show_default=True, help="seconds between cycles with --watch")
def campaign_submit(file, state_dir, backend, service_url, token_file, dry_run, force, watch, interval):
    """Plan FILE, print the node-hour estimate, then submit its jobs."""
    from .planner import check_budget, describe, estimate, plan
    from .preflight import module_problems
    c = _load(file)
    problems = module_problems(c)
    if problems:
        raise click.ClickException(f"{file}: " + "; ".join(problems) + " (nothing submitted)")
    jobs = plan(c)
    est = estimate(c, jobs)
    click.echo(describe(jobs))
    click.echo(f"estimate: {est.text()}")
    over = check_budget(c, est)
    if over and not force:
        raise click.ClickException(over + " (or --force)")
    if dry_run:
        return
    a = _agent(c, state_dir, backend, service_url, token_file, source=str(Path(file).resolve()))
    s = _drive(a, watch, interval, None)
    if watch and not s["done"]:
        sys.exit(1)


# `pgmpi campaign status` exit codes, for scripts (docs/admin-guide.md): 1 stays click's "error" (unknown
# campaign, bad state dir), 2 its usage error.
STATUS_DONE, STATUS_RUNNING, STATUS_FAILED = 0, 3, 4


def status_code(summary: dict, jobs) -> int:
    """0 every job COMPLETED and nothing left to upload; 3 jobs still queued/running or results still
    spooled; 4 a job ended FAILED/TIMEOUT/NODE_FAIL/CANCELLED for good or the service rejected an upload."""
    from .state import FINAL
    states = [r["state"] for r in jobs]
    if any(st not in FINAL for st in states):
        return STATUS_RUNNING
    if any(st != "COMPLETED" for st in states) or summary.get("rejected"):
        return STATUS_FAILED
    if summary.get("spooled", 0) > summary.get("rejected", 0):
        return STATUS_RUNNING
    return STATUS_DONE


@campaign.command("list")
@STATE_OPT
@click.option("--json", "as_json", is_flag=True, help="a JSON list of objects instead of the table")
def campaign_list(state_dir, as_json):
    """The campaigns of the agent's state dir: name, state, jobs (done of all), created."""
    from .state import FINAL, State
    sd = _state_dir(state_dir)
    if not (Path(sd) / "agent.db").exists():       # State() would create one: a listing creates nothing
        raise click.ClickException(f"no agent state in {sd} (--state-dir or $PGMPI_AGENT_STATE)")
    st = State(sd)
    try:
        rows = []
        for c in st.campaigns():
            jobs = st.jobs(c["name"])
            rows.append({"campaign": c["name"], "state": c["state"],
                         "jobs": f"{sum(j['state'] in FINAL for j in jobs)}/{len(jobs)}",
                         "created": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(c["created_at"]))
                         if c["created_at"] else None})
    finally:
        st.close()
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    click.echo("\t".join(["campaign", "state", "jobs", "created"]))
    for r in rows:
        click.echo("\t".join(str(v) if v is not None else "-" for v in r.values()))
    if not rows:
        click.echo(f"no campaigns in {sd}", err=True)


@campaign.command("status")
@click.argument("ref")
@STATE_OPT
@click.option("--watch", is_flag=True, help="keep driving the agent and refresh until done")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@click.option("--interval", default=2.0, show_default=True)
def campaign_status(ref, state_dir, watch, as_json, interval):
    """Jobs of a campaign (by name in the state dir, or by its file).

    Exit code: 0 done (every job completed, everything uploaded), 3 still in progress, 4 failed
    (a job failed for good or an upload was rejected), 1 error (e.g. no such campaign)."""
    sd = _state_dir(state_dir)
    if not as_json:
        click.echo(f"state dir: {sd} (--state-dir or $PGMPI_AGENT_STATE to read another)", err=True)
    c, source = _campaign_from_state(sd, ref)
    from .agent import Agent
    from .backends import make_backend
    if watch:
        a = _agent(c, state_dir, source=source, quiet=True)
        s = _drive(a, True, interval, None)
        sys.exit(status_code(s, a.state.jobs(c.name)))
    a = Agent(c, sd, make_backend(c), None, source=source, log=None)
    summary = a.summary()
    code = status_code(summary, a.state.jobs(c.name))
    if as_json:
        out = dict(summary, state_dir=str(sd), exit_code=code)
        out["jobs_detail"] = [{k: r[k] for k in r.keys() if k != "spec"} for r in a.state.jobs(c.name)]
        out["spool"] = [{"id": r["id"], "kind": r["kind"], "tries": r["tries"], "last_error": r["last_error"]}
                        for r in a.state.outbox(c.name)]
        click.echo(json.dumps(out, indent=1, default=str))
    else:
        from rich.console import Console
        Console().print(_table(a))
    sys.exit(code)


@campaign.command("cancel")
@click.argument("ref")
@STATE_OPT
def campaign_cancel(ref, state_dir):
    """Cancel every queued or running job of a campaign (its results so far stay)."""
    c, source = _campaign_from_state(_state_dir(state_dir), ref)
    a = _agent(c, state_dir, source=source)
    n = a.cancel()
    a.upload()
    click.echo(f"cancelled {n} job(s) of {c.name}")


@campaign.command("search-report")
@click.argument("exhaustive")
@click.argument("reduced", nargs=-1)
@STATE_OPT
@click.option("--lookahead", default=2, show_default=True, help="replayed mgd/smgd: steps past a minimum")
@click.option("--prune", default=0.5, show_default=True, help="replayed smgd: prune methods slower than (1+prune) x best")
def campaign_search_report(exhaustive, reduced, state_dir, lookahead, prune):
    """Native searches against the EXHAUSTIVE campaign's results: MGD/SMGD replayed on them and the REDUCED
    campaigns' own searches, with experiments, measuring time and loss per collective (scheduler/search_report.py)."""
    from .search_report import report
    try:
        click.echo(report(_state_dir(state_dir), exhaustive, list(reduced), lookahead, prune))
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from None


@agent.command("run-once")
@STATE_OPT
@click.option("--campaign", "files", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="campaign file(s) to add; the campaigns already in the state dir are driven too")
def agent_run_once(state_dir, files):
    """One cycle: submit, track, collect, upload (for cron or a systemd timer)."""
    from .state import State
    sd = _state_dir(state_dir)
    seen = set()
    rc = 0
    for f in files:
        a = _agent(_load(f), state_dir, source=str(Path(f).resolve()))
        s = a.run_once()
        seen.add(a.c.name)
        click.echo(json.dumps(s))
    st = State(sd)
    active = [r for r in st.campaigns() if r["state"] in ("ACTIVE", "ANALYSED") and r["name"] not in seen]
    st.close()
    for row in active:
        c = Campaign.model_validate(json.loads(row["definition"]))
        a = _agent(c, state_dir, source=row["source"])
        s = a.run_once()
        if s["done"]:
            with a.state.tx():
                a.state.set_campaign_state(c.name, "DONE")
        click.echo(json.dumps(s))
    sys.exit(rc)


@agent.command("nightly")
@STATE_OPT
@click.option("--campaign", "files", multiple=True, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--interval", default=10.0, show_default=True, help="seconds between cycles")
@click.option("--max-hours", default=20.0, show_default=True, help="give up tracking after this long")
@click.option("--date", "day", default=None, help="campaign date YYYYMMDD (default: today, UTC)")
def agent_nightly(state_dir, files, interval, max_hours, day):
    """Tonight's campaign(s): <name>-<YYYYMMDD>, submitted once, tracked, collected, analysed, validated.
    A file saying `cells: from-usage` gives tonight's campaigns of the cells holding the users' time within
    its node-hour budget; cells decided recently keep their verdict (its plan.txt is in the state dir).

    Safe to start twice or after a crash: the state dir makes it resume, never resubmit."""
    from datetime import datetime, timezone
    from .from_usage import FromUsageError
    from .runner import nightly_campaigns
    from .uploader import Rejected, Unreachable
    when = datetime.strptime(day, "%Y%m%d").replace(tzinfo=timezone.utc) if day else None
    tonight = []
    for f in files:     # a `cells: from-usage` file: tonight's cells from the users' usage, within its budget
        try:
            tonight += nightly_campaigns(f, _state_dir(state_dir), when,
                                         log=lambda m: click.echo(f"[agent] {m}", err=True))
        except (CampaignError, FromUsageError, Unreachable, Rejected, RuntimeError) as exc:
            raise click.ClickException(str(exc)) from None
    agents = [_agent(c, state_dir, source=src) for c, src in tonight]
    end = time.time() + max_hours * 3600
    pending = list(agents)
    while pending and time.time() < end:
        for a in list(pending):
            s = a.run_once()
            if s["done"]:
                with a.state.tx():
                    a.state.set_campaign_state(a.c.name, "DONE")
                click.echo(json.dumps(s))
                pending.remove(a)
        if pending:
            time.sleep(interval)
    from .runner import night_ledger
    for f in night_ledger(_state_dir(state_dir), tonight):      # a from-usage night: what ran, against its plan
        click.echo(f"[agent] {f}: {f.read_text().splitlines()[0]}", err=True)
    if pending:
        click.echo(f"nightly: {len(pending)} campaign(s) not finished after {max_hours} h; "
                   "`pgmpi agent run-once` continues them", err=True)
        sys.exit(1)


@agent.command("usage-upload")
@click.option("--spool", default=None, type=click.Path(file_okay=False),
              help="the modules' PGMPITUNE_USAGE_DIR (default: usage_dir of the site file, docs/configuration.md)")
@click.option("--machine", required=True, help="the machine the records come from (the token's machine)")
@click.option("--service-url", required=True, help="the service, e.g. https://pgmpi.example.org")
@click.option("--token-file", required=True, help="a file holding the agent token of that machine")
def agent_usage_upload(spool, machine, service_url, token_file):
    """Upload the complete usage records of a spool (idempotent, resumable); exit 3 when the service was
    unreachable and records wait, 1 when one was refused (it is in <spool>/rejected/ with the reason)."""
    from pgmpi_formats.site import read_site_config, site_config_path
    from .uploader import ServiceClient, read_token, upload_usage
    if spool is None:
        spool = read_site_config().get("usage_dir")
        if not spool:
            raise click.ClickException(f"no --spool and no usage_dir in {site_config_path()}: usage recording is "
                                       "off at this site (docs/configuration.md)")
    if not Path(spool).is_dir():
        raise click.ClickException(f"{spool}: no such spool directory (PGMPITUNE_USAGE_DIR of the pgmpitunelib module)")
    try:
        client = ServiceClient(url=service_url, token=read_token(token_file))
    except RuntimeError as exc:
        raise click.ClickException(str(exc)) from None
    out = upload_usage(client, Path(spool), machine, log=lambda m: click.echo(f"[agent] {m}", err=True))
    click.echo(f"usage: {out['sent']} sent, {out['duplicates']} already stored, {out['rejected']} refused, "
               f"{out['pending']} waiting, {out['stale_removed']} stale temporaries removed")
    raise SystemExit(3 if out["unreachable"] else 1 if out["rejected"] else 0)


@campaign.command("from-usage")
@click.argument("base", type=click.Path(exists=True, dir_okay=False))
@click.option("--out-dir", required=True, type=click.Path(file_okay=False), help="where tonight's files go")
@click.option("--night", type=int, default=None, help="the night's number (rotation of the sample); default: days since 2000")
@click.option("--service-url", default=None, help="override the base file's service.url")
@click.option("--token-file", default=None, help="override the base file's service.token_file")
def campaign_from_usage(base, out_dir, night, service_url, token_file):
    """Tonight's campaign files of a `cells: from-usage` base: the cells holding the users' time, within the
    night's node-hour budget (scheduler/from_usage.py); then `pgmpi campaign submit` each of them."""
    import datetime
    import yaml
    from .from_usage import FromUsageError, fetch_usage, write_tonight
    from .uploader import Rejected, ServiceClient, Unreachable, read_token
    try:
        b = yaml.safe_load(Path(base).read_text()) or {}
    except yaml.YAMLError as e:
        raise click.ClickException(f"{base}: {e}") from None
    svc = b.get("service") or {}
    url, tok = service_url or svc.get("url"), token_file or svc.get("token_file")
    if not url:
        raise click.ClickException(f"{base}: service.url is needed to read the users' usage (or --service-url)")
    client = ServiceClient(url=url, token=read_token(tok))
    try:
        usage, states, nodes = fetch_usage(client, b)
    except (Unreachable, Rejected) as e:
        raise click.ClickException(str(e)) from None
    night = night if night is not None else (datetime.date.today() - datetime.date(2000, 1, 1)).days
    try:
        paths, text = write_tonight(Path(base), usage, Path(out_dir), machine_nodes=nodes, night=night,
                                    module_states=states)
    except FromUsageError as e:
        raise click.ClickException(str(e)) from None
    click.echo(text, nl=False)
    for p in paths:
        click.echo(f"wrote {p}")


COMMANDS = [agent, campaign]


@agent.command("native-validate")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--machine", required=True)
@click.option("--mpi", "mpi", required=True, help="MPI library id (deploy/mpi-libraries.tsv) whose family "
              "has a native decision file: openmpi, mpich, openmpi5, mpich5, intelmpi")
@click.option("--mpi-version", required=True)
@click.option("--mpi-module", required=True, help="the MPI's Lmod module, e.g. openmpi/4.1.4")
@click.option("--tunelib-module", required=True, help="the pgmpitunelib module users load, e.g. pgmpitunelib/0.1.0")
@click.option("--modulepath", multiple=True, help="extra MODULEPATH entries")
@click.option("--nprocs", default=2, show_default=True)
@click.option("--rounds", default=6, show_default=True, help="pairs of mpiruns (file arm, forced arm)")
@click.option("--nrep", default=50, show_default=True)
@click.option("--workdir", type=click.Path(file_okay=False), required=True)
@click.option("--service-url", required=True)
@click.option("--token-file", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--backend", "backend_name", default="slurm", show_default=True,
              help="where the job runs: a backend of scheduler/backends/")
@click.option("--sync", type=click.Choice(typing.get_args(SyncMethod)), default="auto", show_default=True,
              help="the measurement method of both arms, as a campaign's sync: (pgmpi-bench --proc-sync; auto = "
                   "dissem on the job's one node): give the method the decision was measured with")
@click.option("--window-size-us", type=click.FloatRange(0, min_open=True), default=None,
              help="--sync window only: the window in microseconds (a campaign's window_size_us)")
def native_validate(file, machine, mpi, mpi_version, mpi_module, tunelib_module, modulepath, nprocs, rounds, nrep,
                    workdir, service_url, token_file, backend_name, sync, window_size_us):
    """Validate a native decision file (native.rules / native.json / native.impi) in a Slurm job that loads it
    through the module, and have the service judge and record it.  A file its readers refuse is not submitted.
    Both arms measure with --sync, as the nightly chain's validation measures with the campaign's sync:.
    Exit 0 passed, 4 failed."""
    from .native_validation import NativeValidationJob, post, precheck
    from .planner import proc_sync_argv
    from .uploader import Rejected, ServiceClient, Unreachable, read_token
    if window_size_us is not None and sync != "window":
        raise click.BadParameter(f"belongs to --sync window (--sync is {sync})", param_hint="--window-size-us")
    name, text = Path(file).name, Path(file).read_text()
    try:
        cells = precheck(name, text, mpi, nprocs, mpi_version)
    except ValueError as exc:
        raise click.ClickException(f"refused before submitting: {exc}") from None
    job = NativeValidationJob(Path(workdir), machine, mpi, mpi_version, name, text, mpi_module, tunelib_module,
                              list(modulepath), nprocs=nprocs, rounds=rounds, nrep=nrep, cells=cells,
                              sync_argv=proc_sync_argv(sync, window_size_us, 1))     # the job runs on one node
    from .backends import make_backend
    try:
        backend = make_backend(None, backend_name)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--backend") from None
    job.write(backend)
    try:
        job_id = job.submit(backend=backend)
        verdict = post(ServiceClient(service_url, read_token(token_file)), job, job.figures(), job_id)
    except (RuntimeError, Unreachable, Rejected) as exc:
        raise click.ClickException(str(exc)) from None
    # kept with the job: `pgmpi analyze native-files --validation <workdir>/verdict.json` drops what failed
    (Path(workdir) / "verdict.json").write_text(json.dumps(verdict, indent=1) + "\n")
    click.echo(f"{name}: {verdict['state']} (service record {verdict.get('id')}; {Path(workdir) / 'verdict.json'})")
    for p in verdict.get("problems", []):
        click.echo(f"  {p}")
    sys.exit(0 if verdict.get("ok") else 4)
