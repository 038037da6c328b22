"""The alerts: what changed since the last night, per machine x library, for the alerts page, the feed
(/alerts.json, /api/v1/alerts) and the notifications (service/workflows/notify.py). Plain functions over a session.

An alert is one of
- new_violation / unconfirmed_violation: a mock-up violation of the latest analysis that the previous analysis
  of that library did not have (data.KIND_WORDS: a verified check of kind "pattern");
- contradicted_violation: a violation the paired validation measured slower (news whenever it stands);
- regression: the library's default at a (collective, size, p) slower over the last two nights than its
  reference band (service/analysis/nightly.py: known false-alarm rate, 5 % within two nights).
Each says what changed since the last night (`since`, `change`) and whether a live profile covers it
(`covered`: service/profiles/live.py; a redirect serving that size means users do not run the slow default).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import func, select

from pgmpi_formats import arms
from service.analysis import nightly
from service.dashboards.data import defects_of, latest_analyses, nights_label, status_counts, status_label
from service.store.models import Analysis, Campaign, MpiLibrary, Run, Series, ValidationFigure, Violation
from service.workflows.notify import TYPES  # noqa: F401  (the alert types; data.TYPES for the pages)

ALERT_TYPE = {"verified": "new_violation", "unconfirmed": "unconfirmed_violation",
              "contradicted": "contradicted_violation"}

_ALERTS_CACHE: dict[str, tuple] = {}


def alerts(s, root=None) -> list[dict[str, Any]]:
    """Every alert of every library (the feed). With the profile root, `covered` says whether a live profile
    serves the cell. Cached until a new analysis, run or validation figure arrives."""
    key = (s.scalar(select(func.max(Analysis.id))), s.scalar(select(func.max(Run.id))),
           s.scalar(select(func.max(ValidationFigure.id))), str(root))
    hit = _ALERTS_CACHE.get("v")
    if hit and hit[0] == key:
        return hit[1]
    out = []
    by_lib = latest_analyses(s, per_library=2)
    libs = {l.id: l for l in s.scalars(select(MpiLibrary)).all()}
    ids = [a.id for al in by_lib.values() for a in al]
    viols: dict[int, dict] = defaultdict(dict)
    if ids:
        for v in s.scalars(select(Violation).where(Violation.analysis_id.in_(ids), Violation.kind == "pattern")):
            viols[v.analysis_id][(v.collective, v.mockup, v.msize, v.nprocs)] = v
    camp_names = dict(s.execute(select(Campaign.id, Campaign.name)).all())
    live = _live_of(s, libs.values(), root)
    for lib_id, al in by_lib.items():
        lib, cur = libs[lib_id], al[0]
        prev = al[1] if len(al) > 1 else None
        before = viols.get(prev.id, {}) if prev is not None else {}
        since = camp_names.get(prev.campaign_id) if prev is not None else None
        for k, v in sorted(viols.get(cur.id, {}).items()):
            st = status_label(v)
            # a contradiction is news whenever it stands; verified / unconfirmed ones when they are new
            if k not in before or st == "contradicted":
                change = ("contradicted by validation" if st == "contradicted" else
                          f"new since {since}" if since else "new: the first analysis of this library")
                out.append({"type": ALERT_TYPE[st], "status": st, "machine": lib.machine.name,
                            "library": lib.name, "version": lib.version, "collective": v.collective,
                            "mockup": v.mockup, "msize": v.msize, "nprocs": v.nprocs, "slowdown": v.slowdown,
                            "p_value": v.p_value, "why": v.status_why, "nights": nights_label(v) or None,
                            "analysis_id": cur.id, "at": cur.created_at.isoformat(),
                            "campaign": camp_names.get(cur.campaign_id), "since": since, "change": change,
                            **_covered(live.get(lib.id), v.collective, v.nprocs, v.msize)})
    for r in regressions(s):
        out.append({**r, **_covered(live.get(r["library_id"]), r["collective"], r["nprocs"], r["msize"])})
    _ALERTS_CACHE["v"] = (key, out)
    return out


def _live_of(s, libs, root) -> dict[int, dict]:
    if root is None:
        return {}
    from service.workflows.live import tuned_now
    return {l.id: tuned_now(s, l, root) for l in libs}


def _covered(now: dict | None, collective: str, nprocs: int, msize: int) -> dict[str, Any]:
    """covered: True when a live range serves the cell (users run the redirect, not the slow default), with
    the words the page and the mail print."""
    if now is None:
        return {"covered": None, "covered_by": None}
    from service.workflows.live import covering
    hit = covering(now["live"], collective, nprocs, msize)
    if hit is None:
        return {"covered": False, "covered_by": "no live profile covers it" + (
            f" (live: version {now['live_version']})" if now.get("live_version") is not None else
            " (nothing is live for this library)")}
    return {"covered": True, "covered_by": f"live version {now['live_version']} redirects it to {hit['algorithm']}"}


def library_status(s) -> list[dict[str, Any]]:
    """Per library, its latest analysis' violations by status (status_counts) and its library defects: the
    figures the overview shows, for the alerts feed."""
    latest = {lid: al[0] for lid, al in latest_analyses(s).items()}
    counts = status_counts(s, [a.id for a in latest.values()])
    out = []
    for lib in s.scalars(select(MpiLibrary).where(MpiLibrary.id.in_(list(latest))).order_by(MpiLibrary.id)):
        a = latest[lib.id]
        out.append({"machine": lib.machine.name, "library": lib.name, "version": lib.version,
                    "analysis_id": a.id, **counts[a.id], "defects": defects_of(a)})
    return out


def nightly_series(s, lib: MpiLibrary, nights: int) -> tuple[list[Campaign], dict[tuple, list[float]]]:
    """The library's last `nights` campaigns (oldest first) and per (call, msize, p) the default's median per
    campaign (median over its runs' series); a cell missing a night is left out (the chart needs every night)."""
    cids = s.scalars(select(Run.campaign_id).where(Run.library_id == lib.id, Run.campaign_id.is_not(None))
                     .distinct()).all()
    camps = sorted(s.scalars(select(Campaign).where(Campaign.id.in_(cids))).all(),
                   key=lambda c: (c.created_at, c.id))[-nights:] if cids else []
    if not camps:
        return [], {}
    q = (select(Run.campaign_id, Run.nprocs, Series.call, Series.msize, Series.median)
         .join(Run, Run.id == Series.run_id)
         .where(Run.library_id == lib.id, Run.campaign_id.in_([c.id for c in camps]),
                Series.algorithm == arms.DEFAULT, Series.call != "MPI_Barrier"))
    per: dict[tuple, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for cid, p, call, m, med in s.execute(q):
        if med and med > 0:
            per[(call, m, p)][cid].append(float(med))
    import statistics
    series = {cell: [statistics.median(d[c.id]) for c in camps] for cell, d in per.items()
              if all(c.id in d for c in camps)}
    return camps, series


def regressions(s) -> list[dict[str, Any]]:
    """The defaults slower over the last two nights than their reference band (service/analysis/nightly.py),
    per library; one alarm per cell and episode is the notifications' business (service/workflows/notify.py)."""
    out = []
    need = nightly.REFERENCE + 2
    for lib in s.scalars(select(MpiLibrary).order_by(MpiLibrary.id)).all():
        camps, series = nightly_series(s, lib, need)
        if len(camps) < need:
            continue
        for a in nightly.detect(series):
            call, m, p = a.cell
            out.append({"type": "regression", "machine": lib.machine.name, "library": lib.name,
                        "library_id": lib.id, "version": lib.version, "collective": call, "algorithm": "default",
                        "msize": m, "nprocs": p, "ratio": a.ratio, "campaign": camps[-1].name,
                        "previous_night": camps[-2].name,
                        "since": camps[-3].name,
                        "change": (f"{100 * (a.ratio - 1):.1f} % slower over the nights {camps[-2].name} and "
                                   f"{camps[-1].name} than its reference band of {nightly.REFERENCE} nights "
                                   f"({camps[0].name} .. {camps[-3].name}; band ±{100 * (a.band[1] - 1):.1f} %)"),
                        "before_s": series[a.cell][-3], "after_s": series[a.cell][-1],
                        "band": list(a.band), "t": a.t, "threshold": a.threshold})
    return out
