"""The numbers of the alerts feed: new violations, contradicted ones and regressions of defaults, and each
library's latest counts. Plain functions over a session."""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import func, select

from service.dashboards.data import (change_points, defects_of, latest_analyses, nights_label, status_counts,
                                     status_label)
from service.store.models import Analysis, Campaign, MpiLibrary, Run, Series, ValidationFigure, Violation


def alerts(s) -> list[dict[str, Any]]:
    """New violations (in the latest analysis of a library, absent from its previous one) and
    regressions of defaults in the latest campaign.  Cached until a new analysis or run arrives."""
    # a validation changes statuses without a new analysis or run: its figures are part of the key
    key = (s.scalar(select(func.max(Analysis.id))), s.scalar(select(func.max(Run.id))),
           s.scalar(select(func.max(ValidationFigure.id))))
    hit = _ALERTS_CACHE.get("v")
    if hit and hit[0] == key:
        return hit[1]
    out = []
    by_lib = latest_analyses(s, per_library=2)
    libs = {l.id: l for l in s.scalars(select(MpiLibrary)).all()}
    ids = [a.id for al in by_lib.values() for a in al]
    viols: dict[int, dict] = defaultdict(dict)
    if ids:
        for v in s.scalars(select(Violation).where(Violation.analysis_id.in_(ids))):
            viols[v.analysis_id][(v.collective, v.mockup, v.msize, v.nprocs)] = v
    for lib_id, al in by_lib.items():
        lib, cur = libs[lib_id], al[0]
        before = viols.get(al[1].id, {}) if len(al) > 1 else {}
        for k, v in sorted(viols.get(cur.id, {}).items()):
            st = status_label(v)
            # a contradiction is news whenever it stands; verified / unconfirmed ones when they are new
            if k not in before or st == "contradicted":
                out.append({"type": ALERT_TYPE[st], "status": st, "machine": lib.machine.name,
                            "library": lib.name, "version": lib.version, "collective": v.collective,
                            "mockup": v.mockup, "msize": v.msize, "nprocs": v.nprocs, "slowdown": v.slowdown,
                            "p_value": v.p_value, "why": v.status_why, "nights": nights_label(v) or None,
                            "analysis_id": cur.id, "at": cur.created_at.isoformat()})
    out.extend(regressions(s))
    _ALERTS_CACHE["v"] = (key, out)
    return out


ALERT_TYPE = {"verified": "new_violation", "unconfirmed": "unconfirmed_violation",
              "contradicted": "contradicted_violation"}


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


_ALERTS_CACHE: dict[str, tuple] = {}


def regressions(s, window: int = 30) -> list[dict[str, Any]]:
    """Defaults whose median shifted up in the latest campaign (jumpavg over the last `window` campaigns)."""
    out = []
    for lib in s.scalars(select(MpiLibrary)).all():
        cids = s.scalars(select(Run.campaign_id).where(Run.library_id == lib.id, Run.campaign_id.is_not(None))
                         .distinct().order_by(Run.campaign_id.desc()).limit(window)).all()
        if len(cids) < 3:
            continue
        q = (select(Run.campaign_id, Run.nprocs, Series.call, Series.msize, func.avg(Series.median))
             .join(Run, Run.id == Series.run_id)
             .where(Run.library_id == lib.id, Run.campaign_id.in_(cids), Series.algorithm == "default")
             .group_by(Run.campaign_id, Run.nprocs, Series.call, Series.msize))
        ser: dict[tuple, dict[int, float]] = defaultdict(dict)
        for cid, p, c, m, v in s.execute(q):
            ser[(c, m, p)][cid] = float(v)
        last = max(cids)
        for (c, m, p), d in ser.items():
            order = sorted(d)
            if len(order) < 3 or order[-1] != last:
                continue
            ys = [d[k] for k in order]
            # a shift up AT the latest campaign needs the latest median above every earlier one; only
            # those candidates (few) go through jumpavg, which decides whether the shift is significant
            if ys[-1] <= max(ys[:-1]):
                continue
            for sh in change_points(ys):
                if sh["index"] == len(ys) - 1 and sh["kind"] == "regression":
                    camp = s.get(Campaign, last)
                    out.append({"type": "regression", "machine": lib.machine.name, "library": lib.name,
                                "version": lib.version, "collective": c, "algorithm": "default", "msize": m,
                                "nprocs": p, "before_s": sh["before_s"], "after_s": sh["after_s"],
                                "ratio": sh["ratio"], "campaign": camp.name if camp else None})
    return out
