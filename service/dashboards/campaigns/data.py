"""The numbers of the campaigns page: jobs, runs and the verdict of each campaign's analyses."""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import func, select

from service.dashboards.data import defects_of, kind_counts, violations_phrase
from service.store.models import Analysis, Campaign, Job, ProfileVersion, Run


def campaigns(s, limit: int = 50) -> list[dict[str, Any]]:
    from sqlalchemy.orm import selectinload
    cs = s.scalars(select(Campaign).options(selectinload(Campaign.machine)).order_by(Campaign.created_at.desc(), Campaign.id.desc()).limit(limit)).all()
    ids = [c.id for c in cs]
    jobs = defaultdict(list)
    if ids:
        for j in s.scalars(select(Job).where(Job.campaign_id.in_(ids)).order_by(Job.job_key)):
            jobs[j.campaign_id].append(j)
    nruns = dict(s.execute(select(Run.campaign_id, func.count(Run.id)).where(Run.campaign_id.in_(ids))
                           .group_by(Run.campaign_id)).all()) if ids else {}
    analyses = defaultdict(dict)      # campaign -> library id -> its latest analysis
    if ids:
        for a in s.scalars(select(Analysis).where(Analysis.campaign_id.in_(ids)).order_by(Analysis.id)):
            analyses[a.campaign_id][a.library_id] = a
    aids = [a.id for per in analyses.values() for a in per.values()]
    kinds = kind_counts(s, aids)
    published = {}     # analysis id -> its candidate versions' states ("v1 published", "v2 candidate")
    if aids:
        for v in s.scalars(select(ProfileVersion).where(ProfileVersion.analysis_id.in_(aids))
                           .order_by(ProfileVersion.id)):
            published.setdefault(v.analysis_id, []).append(f"profile v{v.number} {v.state}")
    out = []
    for c in cs:
        js = jobs.get(c.id, [])
        done = sum(j.state in ("COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "CANCELLED") for j in js)
        expected = (c.definition or {}).get("jobs") if isinstance(c.definition, dict) else None
        total = max(len(js), expected if isinstance(expected, int) else 0)
        out.append({"campaign": c, "jobs": js, "done": done, "total": total, "runs": nruns.get(c.id, 0),
                    "state": shown_state(c.state, js, done, total),
                    "failed": sum(j.state in ("FAILED", "TIMEOUT", "NODE_FAIL") for j in js),
                    "verdicts": [campaign_verdict(a, kinds.get(a.id), published.get(a.id))
                                 for a in analyses.get(c.id, {}).values()]})
    return out


def shown_state(stored: str, jobs: list, done: int, total: int) -> str:
    """The state a reader can trust: the agent registers a campaign as "planned" and reports its jobs,
    so the jobs say whether it is running or finished when the stored state lags behind them."""
    if stored not in ("planned", "submitted", "running") or not jobs:
        return stored
    if total and done >= total:
        return "finished" if not any(j.state in ("FAILED", "TIMEOUT", "NODE_FAIL") for j in jobs) \
            else "finished with failures"
    return "running" if any(j.state in ("RUNNING", "COMPLETED") for j in jobs) else stored


def campaign_verdict(a: Analysis, kinds: dict | None = None, profiles: list | None = None) -> dict[str, Any]:
    """What a campaign's analysis found and did: its verified violations by kind (data.violations_phrase),
    its candidate profiles' states, and what it is worth (the control arm's line, service/analysis/verdicts.py)."""
    ctrl = (a.summary or {}).get("control") or {}
    return {"analysis": a, "library": a.library.name, "test": a.test, "fdr": a.fdr,
            "found": violations_phrase(kinds) + " violation(s)" if kinds is not None else None,
            "profiles": ", ".join(profiles or []) or "no candidate profile",
            "control": ctrl.get("line") or "control: none measured",
            "control_figures": control_figures(ctrl),
            "trustworthy": ctrl.get("trustworthy", True), "defects": len(defects_of(a)),
            "defect_list": defects_of(a)}


def control_figures(ctrl: dict) -> str | None:
    """'control: k of n flagged; null ratio spread x %' from a stored ControlSummary (None: no control arm)."""
    if not ctrl or not ctrl.get("tested"):
        return None
    spread = ctrl.get("null_spread")
    return (f"control: {ctrl.get('flagged', 0)} of {ctrl['tested']} flagged; null ratio spread "
            + (f"{100 * spread:.1f} %" if spread is not None else "n/a"))
