"""Wiring for the CLI, the nightly job and `make demo`.

    from scheduler.runner import run_local_campaign
    summary = run_local_campaign("demo.yaml", state_dir="demo/agent", app=flask_app)   # or service_url=..., token=...

runs the campaign with the local backend (mpirun directly), uploads every result file and returns
the agent's summary (jobs, states, uploaded, result_files=[paths]).
"""
from __future__ import annotations

import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

from .agent import Agent
from .backends import make_backend
from .campaign import Campaign, load_campaign
from .planner import check_budget, estimate
from .uploader import ServiceClient, read_token


def default_state_dir() -> Path:
    env = os.environ.get("PGMPI_AGENT_STATE")
    if env:
        return Path(env)
    if os.geteuid() == 0:
        return Path("/var/lib/pgmpi-agent")
    return Path.home() / ".local" / "state" / "pgmpi-agent"


def make_client(c: Campaign, service_url: str | None = None, token: str | None = None,
                token_file: str | None = None, app=None) -> ServiceClient | None:
    url = service_url or c.service.url
    if token is None:
        token = os.environ.get("PGMPI_TOKEN") or read_token(token_file or c.service.token_file)
    if app is None and not url:
        return None
    return ServiceClient(url=url, token=token, app=app)


def make_agent(c: Campaign | str | Path, state_dir: str | Path | None = None, backend: str | None = None,
               service_url: str | None = None, token: str | None = None, token_file: str | None = None,
               app=None, log=print, env=None, source: str | None = None) -> Agent:
    if not isinstance(c, Campaign):
        source = source or str(c)
        c = load_campaign(c)
    return Agent(c, state_dir or default_state_dir(), make_backend(c, backend, env),
                 make_client(c, service_url, token, token_file, app), source=source, log=log)


def nightly_name(c: Campaign, when: datetime | None = None) -> Campaign:
    """The campaign of one night: <name>-<YYYYMMDD> (UTC), so every night is a new campaign."""
    day = (when or datetime.now(timezone.utc)).strftime("%Y%m%d")
    return c.model_copy(update={"name": f"{c.name}-{day}"[:100]})


def night_number(when: datetime | None = None) -> int:
    """The night's number (days since 2000-01-01, UTC): rotates the sample of a from-usage campaign."""
    day = (when or datetime.now(timezone.utc)).date()
    return (day - datetime(2000, 1, 1).date()).days


def nightly_campaigns(path: str | Path, state_dir: str | Path, when: datetime | None = None,
                      client: ServiceClient | None = None, log=print) -> list[tuple[Campaign, str]]:
    """Tonight's campaigns of one campaign file, with their source: an ordinary file gives <name>-<YYYYMMDD>;
    a `cells: from-usage` file gives the campaign files scheduler/from_usage.py plans from the users' usage and
    the cells' last verdicts (read from the service, within the night's budget), written once per night
    under <state dir>/from-usage/<name>-<YYYYMMDD>/ with plan.txt, so a restarted agent resumes them."""
    import yaml
    from .from_usage import FromUsageError, fetch_usage, write_tonight
    path = Path(path).resolve()
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise FromUsageError(f"{path}: {e}") from None
    if not isinstance(raw, dict) or raw.get("cells") != "from-usage":
        return [(nightly_name(load_campaign(path), when), str(path))]
    day = (when or datetime.now(timezone.utc)).strftime("%Y%m%d")
    out = Path(state_dir) / "from-usage" / f"{raw.get('name', path.stem)}-{day}"
    if not (out / "plan.txt").exists():
        svc = raw.get("service") or {}
        if client is None:
            if not svc.get("url"):
                raise FromUsageError(f"{path}: service.url is needed to read the users' usage")
            client = ServiceClient(url=svc["url"], token=os.environ.get("PGMPI_TOKEN") or read_token(svc.get("token_file")))
        usage, states, nodes = fetch_usage(client, raw)
        tmp = out.with_name(out.name + ".planning")
        shutil.rmtree(tmp, ignore_errors=True)      # a plan a crash left half-written
        _, text = write_tonight(path, usage, tmp, machine_nodes=nodes, night=night_number(when), module_states=states)
        tmp.rename(out)             # the night's plan appears whole or not at all
        log(f"from-usage {path.name}: {text.splitlines()[0]}")
    return [(load_campaign(f), str(f)) for f in sorted(out.glob("*.yaml"))]


def night_ledger(state_dir: str | Path, campaigns: list[tuple[Campaign, str]]) -> list[Path]:
    """What tonight's from-usage campaigns ran, charged against the night's budget: <plan dir>/spent.txt next to
    plan.txt (which says what the plan reserved: every look of every cell). Node-hours are the jobs' nodes x
    (end - start) as the backend reported them (scheduler/looks.node_hours), measure and validation jobs."""
    import json
    from . import looks
    from .state import State
    by_dir: dict[Path, list[Campaign]] = {}
    for c, src in campaigns:
        d = Path(src).parent
        if (d / "plan.txt").exists():
            by_dir.setdefault(d, []).append(c)
    out = []
    st = State(state_dir)
    try:
        for d, camps in by_dir.items():
            lines, total = [], 0.0
            for c in camps:
                rows = st.jobs(c.name)
                ran = {k: sum(looks.node_hours(r) for r in rows if r["kind"] == k) for k in ("measure", "validate")}
                total += sum(ran.values())
                stops = []
                rep = Path(state_dir) / "campaigns" / c.name / "looks.json"
                if rep.exists():
                    for chain in json.loads(rep.read_text()):
                        for cell in chain["cells"]:
                            stops.append(f"{cell['collective']} {cell['msize']} B after {cell['mpiruns']} mpiruns "
                                         f"({cell['decision']}{' ' + cell['winner'] if cell['winner'] else ''})")
                lines.append(f"  {c.name}: measured {ran['measure']:.3g}, validated {ran['validate']:.3g} node-hours"
                             + (f"; {'; '.join(stops)}" if stops else ""))
            planned = (d / "plan.txt").read_text().splitlines()[0]
            text = (f"ran {total:.3g} node-hours (jobs' nodes x run time); planned, every look of every cell "
                    f"reserved: {planned}\n" + "\n".join(lines) + "\n")
            tmp = d / "spent.txt.tmp"
            tmp.write_text(text)
            tmp.replace(d / "spent.txt")
            out.append(d / "spent.txt")
    finally:
        st.close()
    return out


def run_local_campaign(campaign: Campaign | str | Path, state_dir: str | Path, service_url: str | None = None,
                       token: str | None = None, app=None, timeout: float = 3600, interval: float = 0.5,
                       log=print, on_cycle=None) -> dict:
    """For `make demo`: campaign -> local mpirun runs -> raw result files -> upload (URL or app)."""
    log = log or (lambda *_: None)
    agent = make_agent(campaign, state_dir, backend="local", service_url=service_url, token=token, app=app,
                       log=log)
    est = estimate(agent.c)
    log(f"plan: {est.text()}")
    msg = check_budget(agent.c, est)
    if msg:
        raise RuntimeError(msg)
    # on_cycle(agent, summary) after every cycle: `make demo` shows its progress from it
    summary = agent.run(interval=interval, timeout=timeout,
                        on_cycle=(lambda s: on_cycle(agent, s)) if on_cycle else None)
    files = []
    for row in agent.state.jobs(agent.c.name, ("COMPLETED",)):
        adir = Path(row["attempt_dir"])
        files += sorted(str(p) for p in adir.glob("*.txt"))
    summary["result_files"] = files
    summary["state_dir"] = str(state_dir)
    agent.state.close()
    return summary
