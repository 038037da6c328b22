"""Wiring for the CLI, the nightly job and `make demo`.

    from scheduler.runner import run_local_campaign
    summary = run_local_campaign("demo.yaml", state_dir="demo/agent", app=flask_app)   # or service_url=..., token=...

runs the campaign with the local backend (mpirun directly), uploads every result file and returns
the agent's summary (jobs, states, uploaded, result_files=[paths]).
"""
from __future__ import annotations

import os
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
