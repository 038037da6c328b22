"""The numbers of the library pages (overview, heatmap, detail, trends): plain functions over a session.
Shared lookups and counts are in service/dashboards/data.py."""
from __future__ import annotations

import statistics
from collections import defaultdict
from datetime import timedelta
from typing import Any

import numpy as np
from sqlalchemy import func, select

from pgmpi_formats import arms

from service.dashboards.data import (COLL_ORDER, STATUSES, _on_layout, _violation_on_layout, analysis_counts,
                                     barrier_flags, change_points, coll_key, coll_mpi, defects_of, kind_counts,
                                     latest_analyses,
                                     latest_analysis, medians, nights_label, replication_of, size_label,
                                     status_counts, status_label, violations_phrase)
from service.store.models import Analysis, Campaign, Machine, MpiLibrary, Run, Series, Violation


def overview(s, root=None) -> dict[str, Any]:
    """Per machine x library its latest analysis' counts and (with the profile root) what is live."""
    machines = s.scalars(select(Machine).order_by(Machine.name)).all()
    libs = s.scalars(select(MpiLibrary).order_by(MpiLibrary.name, MpiLibrary.version)).all()
    latest = {lid: al[0] for lid, al in latest_analyses(s).items()}
    week = {}
    if latest:   # per library the newest analysis at least a week older than its latest: two queries
        lo = min(a.created_at for a in latest.values()) - timedelta(days=21)
        hi = max(a.created_at for a in latest.values()) - timedelta(days=7)
        cand = s.execute(select(Analysis.id, Analysis.library_id, Analysis.created_at)
                         .where(Analysis.library_id.in_(list(latest)), Analysis.created_at >= lo,
                                Analysis.created_at <= hi)).all()
        best: dict[int, tuple] = {}
        for aid, lid, at in cand:
            if at <= latest[lid].created_at - timedelta(days=7) and (lid not in best or (at, aid) > best[lid]):
                best[lid] = (at, aid)
        if best:
            rows = {a.id: a for a in s.scalars(select(Analysis).where(
                Analysis.id.in_([aid for _, aid in best.values()])))}
            week = {lid: rows[aid] for lid, (_, aid) in best.items()}
    flags = barrier_flags(s, list(latest.values()) + list(week.values()))
    kinds = kind_counts(s, [a.id for a in latest.values()])
    statuses = status_counts(s, [a.id for a in list(latest.values()) + list(week.values())])
    replication = replication_of(s, [a.id for a in latest.values()])
    cids = [a.campaign_id for a in latest.values() if a.campaign_id]
    campaigns = {c.id: c.name for c in s.scalars(select(Campaign).where(Campaign.id.in_(cids)))} if cids else {}
    lib_names = sorted({(l.name, l.version) for l in libs})
    rows = []
    for m in machines:
        cells = {}
        for l in [l for l in libs if l.machine_id == m.id]:
            cell: dict[str, Any] = {"library": l, "latest": None, "week_delta": None, "now": None}
            if root is not None:
                from service.workflows.live import tuned_now
                cell["now"] = tuned_now(s, l, root)
            if l.id in latest:
                lat = analysis_counts(latest[l.id], flags, statuses)
                lat["campaign"] = campaigns.get(latest[l.id].campaign_id)
                lat["replication"] = replication.get(latest[l.id].id, [])
                lat["kinds"] = kinds[latest[l.id].id]
                lat["phrase"] = violations_phrase(kinds[latest[l.id].id])
                cell["latest"] = lat
                if l.id in week:
                    pc = analysis_counts(week[l.id], flags, statuses)
                    cell["week_delta"] = {"brave": lat["brave"] - pc["brave"],
                                          "cautious": lat["cautious"] - pc["cautious"],
                                          "quality": (lat["quality"] - pc["quality"])
                                          if lat["quality"] is not None and pc["quality"] is not None else None}
            cells[(l.name, l.version)] = cell
        rows.append({"machine": m, "cells": cells})
    return {"rows": rows, "libraries": lib_names}


_RANK = {"verified": 0, "unconfirmed": 1, "contradicted": 2}


def significant(s, lib: MpiLibrary, campaign: Campaign | None, p: int,
                a: Analysis | None = None, layout: str | None = None) -> dict[tuple[str, int], list[Violation]]:
    """(collective key, msize) -> the pattern violations of the latest analysis of that campaign at p, the one
    the cell shows first (verified before unconfirmed before contradicted, then the strongest)."""
    a = a or latest_analysis(s, lib, campaign)
    if a is None:
        return {}
    out: dict[tuple[str, int], list[Violation]] = defaultdict(list)
    for v in s.scalars(_violation_on_layout(select(Violation).where(
            Violation.analysis_id == a.id, Violation.nprocs == p, Violation.kind == "pattern"), layout)):
        out[(coll_key(v.collective), v.msize)].append(v)
    for vs in out.values():
        vs.sort(key=lambda v: (_RANK.get(status_label(v), 0), -v.slowdown))
    return out


def heatmap(s, lib: MpiLibrary, campaign: Campaign | None, p: int, layout: str | None = None,
            live: list[dict] | None = None) -> dict[str, Any]:
    """Per collective x size the speed-up of the fastest mock-up (pgmpi_formats.arms: never an arm), its status
    mark, and `live`: the algorithm a live range (service/workflows/live.py) runs there, or None."""
    from service.workflows.live import covering
    med = medians(s, lib, campaign, p, layout=layout)
    by = defaultdict(dict)  # (call, msize) -> alg -> median of medians
    for (c, a, m), vals in med.items():
        by[(c, m)][a] = statistics.median(vals)
    calls = sorted({c for c, _ in by}, key=lambda c: (COLL_ORDER.get(c, 99), c))
    sizes = sorted({m for _, m in by})
    a = latest_analysis(s, lib, campaign)
    sig = significant(s, lib, campaign, p, a, layout)
    z, text, best, marks, states, notes, lives = [], [], [], [], [], [], []
    for c in calls:
        zr, tr, br, mr, sr, nr, lr = [], [], [], [], [], [], []
        for m in sizes:
            hit = covering(live or [], c, p, m)
            lr.append(hit["algorithm"] if hit else None)
            algs = by.get((c, m), {})
            d = algs.get("default")
            # the control and validation arms are the default measured again, never a mock-up
            mocks = {a: t for a, t in algs.items() if arms.is_mockup(a) and t > 0}
            vs = sig.get((coll_key(c), m), [])
            st = status_label(vs[0]) if vs else None
            sr.append(st)
            nr.append("; ".join(f"{v.mockup}: {status_label(v)}" + (f", {nights_label(v)}" if nights_label(v) else "")
                                for v in vs))
            if d and mocks:
                ba = min(mocks, key=mocks.get)
                sp = d / mocks[ba]
                zr.append(round(float(np.log2(sp)), 4))
                br.append(ba)
                mr.append(st == "verified")
                tr.append(f"{sp:.2f}x{MARK.get(st, '')}{LIVE_MARK if hit else ''}")
            else:
                zr.append(None), br.append(None), mr.append(False), tr.append("")
        z.append(zr), text.append(tr), best.append(br), marks.append(mr), states.append(sr), notes.append(nr)
        lives.append(lr)
    at_p = {st: sum(status_label(v) == st for vs in sig.values() for v in vs) for st in STATUSES}
    return {"calls": calls, "colls": [coll_key(c) for c in calls], "sizes": sizes, "z": z, "text": text,
            "best": best, "significant": marks, "status": states, "notes": notes, "live": lives,
            "size_labels": [size_label(m) for m in sizes],
            "n_significant": at_p["verified"], "at_p": at_p,
            "analysis_id": a.id if a is not None else None,
            "totals": status_counts(s, [a.id])[a.id] if a is not None else None,
            "kinds": kind_counts(s, [a.id])[a.id] if a is not None else None,
            "zmin": -SCALE_LOG2, "zmax": SCALE_LOG2,
            "defects": defects_of(a), "trustworthy": ((a.summary or {}).get("control") or {}).get(
                "trustworthy", True) if a is not None else True}


# The colour scale of every heatmap (and both panels side by side): log2 of the speed-up from -2 to 2, i.e. ¼×
# (deep blue) to 4× (deep red), 1× white; beyond it a cell keeps the extreme colour (its text says the value).
SCALE_LOG2 = 2.0

LIVE_MARK = " ▸"     # a live range redirects this cell (the tuned-now page says to what, with its gain)

# the mark a heatmap cell carries after its speed-up: verified, unconfirmed, contradicted
MARK = {"verified": " *", "unconfirmed": " ?", "contradicted": " ✗"}


def detail(s, lib: MpiLibrary, campaign: Campaign | None, key: str, p: int,
           layout: str | None = None) -> dict[str, Any]:
    call = coll_mpi(key)
    med = medians(s, lib, campaign, p, call=call, layout=layout)
    algs = sorted({a for _, a, _ in med}, key=lambda a: (a != "default", a))
    series = []
    rows = []
    for a in algs:
        pts = sorted((m, v) for (_, aa, m), v in med.items() if aa == a)
        xs, ys, lo, hi, nr = [], [], [], [], []
        for m, vals in pts:
            arr = np.asarray(vals)
            md = float(np.median(arr))
            xs.append(m), ys.append(md), nr.append(len(vals))
            lo.append(md - float(arr.min())), hi.append(float(arr.max()) - md)
            rows.append({"collective": key, "algorithm": a, "msize": m, "nprocs": p, "layout": layout or "",
                         "mpiruns": len(vals),
                         "median_s": md, "min_s": float(arr.min()), "max_s": float(arr.max())})
        series.append({"algorithm": a, "x": xs, "y": ys, "err_minus": lo, "err_plus": hi, "mpiruns": nr})
    a = latest_analysis(s, lib, campaign)
    viols = []
    if a is not None:
        viols = [{"kind": v.kind, "ref_msize": v.ref_msize, "barrier_warning": v.barrier_warning,
                  "mockup": v.mockup, "msize": v.msize, "default_s": v.default_time, "mockup_s": v.mockup_time,
                  "slowdown": v.slowdown, "p_value": v.p_value, "status": status_label(v),
                  "status_why": v.status_why, "nights": nights_label(v), "ci": _ci_text(v), "effect": v.effect,
                  "ci95": [v.ci_low, v.ci_high] if _ci_text(v) else None, "ci_mpiruns": v.ci_mpiruns}
                 for v in s.scalars(_violation_on_layout(select(Violation).where(
                     Violation.analysis_id == a.id, Violation.nprocs == p, Violation.collective.in_([key, call])),
                     layout).order_by(Violation.msize, Violation.mockup))]
    counts = {st: sum(v["status"] == st for v in viols) for st in STATUSES}
    return {"call": call, "key": key, "p": p, "layout": layout, "series": series, "rows": rows, "violations": viols,
            "analysis": a, "counts": counts, "reporting": _reporting_text(a, p, layout),
            "reporting_fields": reporting_fields(a, p, layout),
            "guidelines": _guideline_rows(a, key, p, layout),
            "defects": [d for d in defects_of(a) if d["collective"] == key and d["nprocs"] in (p, None)]}


def _ci_text(v) -> str:
    """'1.42× (95 % CI 1.31–1.55×, 10 mpiruns)' from the stored interval; '' for rows stored without one."""
    vals = (v.effect, v.ci_low, v.ci_high)
    if not all(isinstance(x, (int, float)) and np.isfinite(x) for x in vals):
        return ""
    return f"{v.effect:.2f}× (95 % CI {v.ci_low:.2f}–{v.ci_high:.2f}×, {v.ci_mpiruns or '?'} mpiruns)"


def _guideline_rows(a, key: str, p: int, layout: str | None) -> list[dict]:
    """PGMPI's table for this collective at p (analysis summary's guideline_summary): per guideline tested,
    violated, cautious, worst factor with its interval. Stored values are checked (no value may break a page)."""
    summ = (a.summary or {}) if a is not None else {}
    cfgs = summ.get("configs") or []
    out = []
    for r in summ.get("guideline_summary") or []:
        if not isinstance(r, dict) or r.get("collective") != key:
            continue
        c = r.get("cfg")
        cf = cfgs[c] if isinstance(c, int) and 0 <= c < len(cfgs) and isinstance(cfgs[c], dict) else {}
        if cf.get("nprocs") != p or (layout is not None and (cf.get("layout") or "") != layout):
            continue
        wf, ci = r.get("worst_factor"), r.get("worst_ci95")
        num = lambda x: isinstance(x, (int, float)) and np.isfinite(x)
        out.append({"guideline": str(r.get("guideline", "")), "tested": r.get("tested"),
                    "violated": r.get("violated"), "cautious": r.get("cautious"),
                    "worst": f"{wf:.2f}×" if num(wf) else "–",
                    "ci": (f"{ci[0]:.2f}–{ci[1]:.2f}×" if isinstance(ci, list) and len(ci) == 2 and all(map(num, ci))
                           else "–"), "where": str(r.get("worst_at") or "")})
    return out


def reporting_fields(a, p: int, layout: str | None) -> dict:
    """The reporting fields of the analysis' config at p (and layout), as analysis/reporting.py stored them
    ({} when the analysis has none; a stored value of another shape is left out, never breaks the page)."""
    summ = (a.summary or {}) if a is not None else {}
    rep, cfgs = summ.get("reporting") or {}, summ.get("configs") or []
    if not isinstance(rep, dict) or not isinstance(cfgs, list):
        return {}
    for i, c in enumerate(cfgs):
        if isinstance(c, dict) and c.get("nprocs") == p and (layout is None or (c.get("layout") or "") == layout):
            r = rep.get(str(i))
            return r if isinstance(r, dict) else {}
    return {}


def _reporting_text(a, p: int, layout: str | None) -> str:
    """The reporting fields of the analysis' config at p (and layout): analysis/reporting.py's line."""
    from service.analysis.reporting import line
    try:
        return line(reporting_fields(a, p, layout))
    except (KeyError, TypeError, ValueError, AttributeError):
        return ""


VERDICT_COLUMNS = ["guideline", "status", "msize", "against", "nprocs", "layout", "default_s", "other_s",
                   "slowdown", "effect", "ci95_low", "ci95_high", "ci_mpiruns", "p_value", "sync", "clock",
                   "mpiruns", "meas_per_mpirun", "nrep_policy", "nrep_source", "summary_statistic",
                   "interval_method", "excluded"]


def verdict_rows(d: dict) -> list[dict]:
    """The verdicts of a detail page as export rows: each with its effect and 95 % interval over mpiruns and
    the reporting fields it rests on (the CSV of the verdict page)."""
    r = d.get("reporting_fields") or {}
    rp = r.get("repetitions") if isinstance(r.get("repetitions"), dict) else {}
    ex = r.get("exclusions") if isinstance(r.get("exclusions"), dict) else {}
    iv = r.get("interval") if isinstance(r.get("interval"), dict) else {}
    lo, hi = rp.get("per_mpirun_min"), rp.get("per_mpirun_max")
    common = {"nprocs": d["p"], "layout": d.get("layout") or "", "sync": r.get("sync"), "clock": r.get("clock"),
              "mpiruns": r.get("mpiruns"), "meas_per_mpirun": (f"{lo}" if lo == hi else f"{lo}-{hi}") if rp else None,
              "nrep_policy": rp.get("nrep_policy"), "nrep_source": rp.get("source"),
              "summary_statistic": r.get("statistic"),
              "interval_method": (f"{100 * iv['level']:.0f} % {iv.get('method', '')}"
                                  if isinstance(iv.get("level"), (int, float)) else None),
              "excluded": (f"{ex.get('results_check_failures')} results-check failures; "
                           f"{ex.get('cells_in_one_mpirun')} cells in one mpirun; control arm: "
                           f"{ex.get('control_arm')}") if ex else None}
    out = []
    for v in d["violations"]:
        ci = v.get("ci95") or [None, None]
        out.append({"guideline": v["kind"], "status": v["status"], "msize": v["msize"],
                    "against": v["mockup"] if v["mockup"] != "default" else f"default at {v['ref_msize']}",
                    "default_s": v["default_s"], "other_s": v["mockup_s"], "slowdown": v["slowdown"],
                    "effect": v["effect"] if v.get("ci95") else None, "ci95_low": ci[0], "ci95_high": ci[1],
                    "ci_mpiruns": v["ci_mpiruns"] if v.get("ci95") else None, "p_value": v["p_value"], **common})
    return out


_TREND_CACHE: dict[tuple, dict] = {}


def trend(s, lib: MpiLibrary, key: str, msize: int, algorithm: str, p: int,
          layout: str | None = None) -> dict[str, Any]:
    """Median per campaign of (collective, size, algorithm) and change points found by jumpavg.
    Cached (in this process) until the library gets a new run."""
    newest = s.scalar(select(func.max(Run.id)).where(Run.library_id == lib.id))
    ck = (lib.id, key, msize, algorithm, p, layout, newest)
    if ck in _TREND_CACHE:
        return _TREND_CACHE[ck]
    out = _trend(s, lib, key, msize, algorithm, p, layout)
    if len(_TREND_CACHE) > 256:
        _TREND_CACHE.clear()
    _TREND_CACHE[ck] = out
    return out


def _trend(s, lib: MpiLibrary, key: str, msize: int, algorithm: str, p: int,
           layout: str | None = None) -> dict[str, Any]:
    call = coll_mpi(key)
    q = _on_layout(select(Campaign.id, Campaign.name, Campaign.created_at, Series.median)
                   .join(Run, Run.campaign_id == Campaign.id).join(Series, Series.run_id == Run.id)
                   .where(Run.library_id == lib.id, Run.nprocs == p, Series.call == call,
                          Series.msize == msize, Series.algorithm == algorithm), layout)
    per: dict[int, dict] = {}
    for cid, name, at, med in s.execute(q):
        per.setdefault(cid, {"campaign": name, "at": at, "vals": []})["vals"].append(med)
    pts = sorted(per.values(), key=lambda d: (d["at"], d["campaign"]))
    xs = [d["at"].isoformat() if d["at"] else d["campaign"] for d in pts]
    ys = [float(np.median(d["vals"])) for d in pts]
    shifts = change_points(ys, [d["vals"] for d in pts])
    for sh in shifts:
        sh["campaign"] = pts[sh["index"]]["campaign"]
        sh["at"] = xs[sh["index"]]
    return {"call": call, "key": key, "msize": msize, "algorithm": algorithm, "p": p, "layout": layout,
            "x": xs, "y": ys,
            "campaigns": [d["campaign"] for d in pts], "shifts": shifts}
