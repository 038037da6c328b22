"""Numbers behind the dashboard pages, computed from the database through service/store/models.py.

Every function takes the SQLAlchemy session and returns plain dicts/lists, so pages, the JSON
downloads and the timing script share one code path.  Queries aggregate the per-series summary
columns (median of each run x call x algorithm x size), never the raw timing bytes, except the
detail page's spread, which needs one row per run anyway.

Definitions (stated on the pages):
- brave: every violation of the analysis; cautious: those without a barrier warning (the barrier
  measured next to that size took at least as long as the faster of the two times compared),
  as in the pgchecker thesis, ch. 4.  When the analysis summary carries `brave`/`cautious`
  counts (service/analysis), those are shown.
- quality score: 100 x (1 - brave / guidelines checked), or the summary's `quality` when present.
- speed-up of a mock-up = median(default) / median(mock-up), medians over the per-mpirun medians.
- status of a violation (service/store/models.py VIOLATION_STATES): verified, unconfirmed (found by fewer
  campaigns than the candidate rule requires, or in a campaign whose control arm is untrustworthy) or
  contradicted (its range was measured slower by the paired validation).  brave / cautious count the verified
  ones only; every page counts the three with status_counts, so the pages and the alerts feed agree.
"""
from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
from sqlalchemy import func, select

from pgmpi_formats.collectives import COLLECTIVES as _COLLS
from pgmpi_formats.layouts import sort_key as layout_sort_key
from service.store.models import (Analysis, AuditLog, BarrierSeries, Campaign, Job, Machine, MpiLibrary,
                            ProfileSet, ProfileVersion, Run, Series, ValidationFigure, Violation)

COLL_ORDER = {c.mpi_name: c.id for c in _COLLS}     # the one table of collectives (collectives.def)
KEY_OF = {c.mpi_name: c.key for c in _COLLS}
MPI_OF = {c.key: c.mpi_name for c in _COLLS}


def coll_key(name: str) -> str:
    return KEY_OF.get(name, name.lower().replace("mpi_", "").replace("_", ""))


def coll_mpi(key: str) -> str:
    return MPI_OF.get(key, key)


# ----------------------------------------------------------------- overview

def latest_analyses(s, per_library: int = 1) -> dict[int, list[Analysis]]:
    """library id -> its newest analyses, newest first (index ix_analyses_library_created)."""
    rn = func.row_number().over(partition_by=Analysis.library_id,
                                order_by=(Analysis.created_at.desc(), Analysis.id.desc())).label("rn")
    sub = select(Analysis.id, rn).subquery()
    ids = [r[0] for r in s.execute(select(sub.c.id).where(sub.c.rn <= per_library))]
    out: dict[int, list[Analysis]] = defaultdict(list)
    if ids:
        rows = s.scalars(select(Analysis).where(Analysis.id.in_(ids))
                         .order_by(Analysis.created_at.desc(), Analysis.id.desc())).all()
        for a in rows:
            out[a.library_id].append(a)
    return out


STATUSES = ("verified", "unconfirmed", "contradicted")


def status_counts(s, analysis_ids) -> dict[int, dict[str, int]]:
    """analysis id -> {verified, unconfirmed, contradicted}: the one count of violations every page shows."""
    ids = list(analysis_ids)
    out = {aid: {st: 0 for st in STATUSES} for aid in ids}
    if ids:
        for aid, st, n in s.execute(select(Violation.analysis_id, Violation.status, func.count())
                                    .where(Violation.analysis_id.in_(ids))
                                    .group_by(Violation.analysis_id, Violation.status)):
            out[aid][st if st in STATUSES else "verified"] += n
    return out


def nights_label(v) -> str:
    """'confirmed 3 of 4 nights' for a pattern violation (replication across campaigns), '' otherwise."""
    if v.nights_confirmed is None:
        return ""
    tested = v.nights_confirmed + (v.nights_contradicted or 0)
    return f"confirmed {v.nights_confirmed} of {tested} night{'s' if tested != 1 else ''}"


def status_label(v) -> str:
    """The status a page shows for one violation: 'verified', 'unconfirmed' or 'contradicted'."""
    return v.status if v.status in STATUSES else "verified"


def defects_of(a: Analysis | None) -> list[dict]:
    """The library defects an analysis recorded: algorithms (the library's own default included) whose result
    failed pgmpi-bench's results check, per (collective, size, p, algorithm)."""
    if a is None:
        return []
    out = []
    for d in (a.summary or {}).get("defects") or []:
        out.append({"call": d.get("call"), "collective": coll_key(d.get("call") or ""), "msize": d.get("msize"),
                    "nprocs": d.get("nprocs"), "algorithm": d.get("algorithm"), "why": d.get("why")})
    return out


def barrier_flags(s, analyses: list[Analysis]) -> dict[int, int]:
    """analysis id -> number of its verified violations with a barrier warning (two queries for all)."""
    pairs = {(a.campaign_id, a.library_id) for a in analyses if a.campaign_id is not None}
    out = {a.id: 0 for a in analyses}
    if not pairs:
        return out
    bq = (select(Run.campaign_id, Run.library_id, Run.nprocs, BarrierSeries.msize, func.min(BarrierSeries.median))
          .join(Run, Run.id == BarrierSeries.run_id)
          .where(Run.campaign_id.in_({c for c, _ in pairs}), Run.library_id.in_({l for _, l in pairs}))
          .group_by(Run.campaign_id, Run.library_id, Run.nprocs, BarrierSeries.msize))
    barrier = {(c, l, p, m): t for c, l, p, m, t in s.execute(bq)}
    if not barrier:
        return out
    by_id = {a.id: a for a in analyses}
    for aid, p, m, d, mk, bw in s.execute(select(Violation.analysis_id, Violation.nprocs, Violation.msize,
                                                 Violation.default_time, Violation.mockup_time,
                                                 Violation.barrier_warning)
                                          .where(Violation.analysis_id.in_(list(by_id)),
                                                 Violation.status == "verified")):
        if bw is not None:
            out[aid] += bool(bw)
            continue
        a = by_id[aid]
        b = barrier.get((a.campaign_id, a.library_id, p, m))
        if b is not None and b >= min(d, mk):
            out[aid] += 1
    return out


def analysis_counts(a: Analysis, flags: dict[int, int], statuses: dict[int, dict[str, int]] | None = None
                    ) -> dict[str, Any]:
    """brave/cautious/quality of an analysis: brave = its verified violations (status_counts), cautious =
    those without a barrier warning (barrier_flags); contradicted and unconfirmed apart. Quality is the score
    of service/analysis/quality.py per p and layout (the worst shown); None when the analysis stored none."""
    summ = a.summary if isinstance(a.summary, dict) else {}
    counts = summ.get("counts") if isinstance(summ.get("counts"), dict) else {}
    allc = counts.get("all") if isinstance(counts.get("all"), dict) else {}
    st = (statuses or {}).get(a.id) or {"verified": a.n_violations, "unconfirmed": 0, "contradicted": 0}
    brave = st["verified"]
    cautious = brave - flags.get(a.id, 0)
    per_p = {Sel(int(e["nprocs"]), e.get("layout") or None).label: float(e["score"])
             for e in summ.get("quality") or [] if e.get("score") is not None}
    quality = min(per_p.values()) if per_p else None
    layouts = sorted({Sel(int(c.get("nprocs") or 0), c.get("layout") or None) for c in summ.get("configs") or []
                      if isinstance(c, dict) and c.get("nprocs")},
                     key=lambda x: (x.p, layout_sort_key(x.layout or "")))
    return {"layouts": layouts, "analysis_id": a.id, "campaign_id": a.campaign_id, "at": a.created_at, "brave": brave,
            "cautious": cautious, "contradicted": st["contradicted"], "unconfirmed": st["unconfirmed"],
            "checked": allc.get("checks", a.n_checked), "quality": quality,
            "quality_per_p": per_p, "max_slowdown": a.max_slowdown, "defects": defects_of(a),
            "trustworthy": ((summ.get("control") or {}).get("trustworthy", True))}


def overview(s) -> dict[str, Any]:
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
    statuses = status_counts(s, [a.id for a in list(latest.values()) + list(week.values())])
    replication = replication_of(s, [a.id for a in latest.values()])
    cids = [a.campaign_id for a in latest.values() if a.campaign_id]
    campaigns = {c.id: c.name for c in s.scalars(select(Campaign).where(Campaign.id.in_(cids)))} if cids else {}
    lib_names = sorted({(l.name, l.version) for l in libs})
    rows = []
    for m in machines:
        cells = {}
        for l in [l for l in libs if l.machine_id == m.id]:
            cell: dict[str, Any] = {"library": l, "latest": None, "week_delta": None}
            if l.id in latest:
                lat = analysis_counts(latest[l.id], flags, statuses)
                lat["campaign"] = campaigns.get(latest[l.id].campaign_id)
                lat["replication"] = replication.get(latest[l.id].id, [])
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


def replication_of(s, analysis_ids: list[int]) -> dict[int, list[dict]]:
    """analysis id -> its pattern violations with status and replication across nights, strongest first."""
    out: dict[int, list[dict]] = defaultdict(list)
    if analysis_ids:
        for v in s.scalars(select(Violation).where(Violation.analysis_id.in_(analysis_ids),
                                                   Violation.kind == "pattern")
                           .order_by(Violation.slowdown.desc(), Violation.id)):
            out[v.analysis_id].append({"collective": v.collective, "mockup": v.mockup, "msize": v.msize,
                                       "nprocs": v.nprocs, "status": status_label(v), "why": v.status_why,
                                       "nights": nights_label(v), "slowdown": v.slowdown})
    return out


# ----------------------------------------------------------------- campaign medians

def library(s, machine: str, lib: str) -> tuple[Machine, MpiLibrary]:
    """lib = '<name>-<version>' or a library id."""
    m = s.scalar(select(Machine).where(Machine.name == machine))
    if m is None:
        raise LookupError(f"unknown machine {machine!r}")
    libs = s.scalars(select(MpiLibrary).where(MpiLibrary.machine_id == m.id)).all()
    for l in libs:
        if f"{l.name}-{l.version}" == lib or str(l.id) == lib:
            return m, l
    raise LookupError(f"unknown library {lib!r} on {machine}; known: "
                      + ", ".join(f"{l.name}-{l.version}" for l in libs))


def campaigns_of(s, lib: MpiLibrary) -> list[Campaign]:
    ids = select(Run.campaign_id).where(Run.library_id == lib.id, Run.campaign_id.is_not(None)).distinct()
    return s.scalars(select(Campaign).where(Campaign.id.in_(ids)).order_by(Campaign.created_at.desc(),
                                                                         Campaign.id.desc())).all()


def latest_campaign(s, lib: MpiLibrary) -> Campaign | None:
    cid = s.scalar(select(Run.campaign_id).where(Run.library_id == lib.id, Run.campaign_id.is_not(None))
                   .order_by(Run.campaign_id.desc()).limit(1))
    return s.get(Campaign, cid) if cid else None


def nprocs_of(s, lib: MpiLibrary, campaign: Campaign | None) -> list[int]:
    q = select(Run.nprocs).where(Run.library_id == lib.id).distinct()
    if campaign is not None:
        q = q.where(Run.campaign_id == campaign.id)
    return sorted(s.scalars(q).all())


@dataclass(frozen=True)
class Sel:
    """What the layout switch selects: p and its layout (pgmpi_formats.layouts; None: every layout of p)."""
    p: int
    layout: str | None

    @property
    def label(self) -> str:
        return f"p={self.p} {self.layout}" if self.layout else f"p={self.p}"


def layouts_of(s, lib: MpiLibrary, campaign: Campaign | None) -> list[Sel]:
    """The (p, layout) pairs measured, by p, then node count: the pills of the layout switch."""
    q = select(Run.nprocs, Run.layout).where(Run.library_id == lib.id).distinct()
    if campaign is not None:
        q = q.where(Run.campaign_id == campaign.id)
    return sorted((Sel(p, lay) for p, lay in s.execute(q)), key=lambda x: (x.p, layout_sort_key(x.layout or "")))


def choose_layout(sels: list[Sel], layout: str | None, p: int | None) -> Sel | None:
    """The selection of a page: ?layout= (at ?p= when both fit), else the first layout of ?p=, else the last
    pair measured. Raises ValueError naming the valid layouts for a layout that was not measured."""
    if layout:
        hits = [x for x in sels if x.layout == layout]
        if hits:
            return next((x for x in hits if x.p == p), hits[0])
        raise ValueError(f"layout {layout!r}" + (f" at p={p}" if p else "") + " was not measured here; valid: "
                         + (", ".join(x.label for x in sels) or "none"))
    if p:
        return next((x for x in sels if x.p == p), Sel(p, None))
    return sels[-1] if sels else None


def _on_layout(q, layout: str | None):
    return q if layout is None else q.where(Run.layout == layout)


def _violation_on_layout(q, layout: str | None):
    # violations stored before layouts were recorded have "" and are shown under every layout of their p
    return q if layout is None else q.where(Violation.layout.in_([layout, ""]))


def medians(s, lib: MpiLibrary, campaign: Campaign | None, p: int, call: str | None = None,
            layout: str | None = None):
    """(call, algorithm, msize) -> per-run medians, for one campaign (or all), p and layout (None: all)."""
    # pgmpi-dtbench's cases (calls named dt_<pattern>_...) have their own pages (service/dashboards/dt_data.py)
    q = _on_layout(select(Series.call, Series.algorithm, Series.msize, Series.median)
                   .join(Run, Run.id == Series.run_id)
                   .where(Run.library_id == lib.id, Run.nprocs == p, ~Series.call.startswith("dt_")), layout)
    if campaign is not None:
        q = q.where(Run.campaign_id == campaign.id)
    if call is not None:
        q = q.where(Series.call == call)
    out: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    for c, a, m, med in s.execute(q):
        out[(c, a, m)].append(med)
    return out


def latest_analysis(s, lib: MpiLibrary, campaign: Campaign | None) -> Analysis | None:
    q = select(Analysis).where(Analysis.library_id == lib.id)
    if campaign is not None:
        q = q.where(Analysis.campaign_id == campaign.id)
    return s.scalar(q.order_by(Analysis.created_at.desc(), Analysis.id.desc()).limit(1))


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


def heatmap(s, lib: MpiLibrary, campaign: Campaign | None, p: int, layout: str | None = None) -> dict[str, Any]:
    med = medians(s, lib, campaign, p, layout=layout)
    by = defaultdict(dict)  # (call, msize) -> alg -> median of medians
    for (c, a, m), vals in med.items():
        by[(c, m)][a] = statistics.median(vals)
    calls = sorted({c for c, _ in by}, key=lambda c: (COLL_ORDER.get(c, 99), c))
    sizes = sorted({m for _, m in by})
    a = latest_analysis(s, lib, campaign)
    sig = significant(s, lib, campaign, p, a, layout)
    z, text, best, marks, states, notes = [], [], [], [], [], []
    for c in calls:
        zr, tr, br, mr, sr, nr = [], [], [], [], [], []
        for m in sizes:
            algs = by.get((c, m), {})
            d = algs.get("default")
            mocks = {a: t for a, t in algs.items() if a != "default" and t > 0}
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
                tr.append(f"{sp:.2f}x{MARK.get(st, '')}")
            else:
                zr.append(None), br.append(None), mr.append(False), tr.append("")
        z.append(zr), text.append(tr), best.append(br), marks.append(mr), states.append(sr), notes.append(nr)
    at_p = {st: sum(status_label(v) == st for vs in sig.values() for v in vs) for st in STATUSES}
    return {"calls": calls, "colls": [coll_key(c) for c in calls], "sizes": sizes, "z": z, "text": text,
            "best": best, "significant": marks, "status": states, "notes": notes,
            "size_labels": [size_label(m) for m in sizes],
            "n_significant": at_p["verified"], "at_p": at_p,
            "analysis_id": a.id if a is not None else None,
            "totals": status_counts(s, [a.id])[a.id] if a is not None else None,
            "defects": defects_of(a), "trustworthy": ((a.summary or {}).get("control") or {}).get(
                "trustworthy", True) if a is not None else True}


# the mark a heatmap cell carries after its speed-up: verified, unconfirmed, contradicted
MARK = {"verified": " *", "unconfirmed": " ?", "contradicted": " ✗"}


def size_label(n: int) -> str:
    """Bytes as the tables print them (B, KiB, MiB, GiB when exact), also used for chart ticks."""
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f and n % f == 0:
            return f"{n // f} {unit}"
    return f"{n} B"


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
                  "status_why": v.status_why, "nights": nights_label(v)}
                 for v in s.scalars(_violation_on_layout(select(Violation).where(
                     Violation.analysis_id == a.id, Violation.nprocs == p, Violation.collective.in_([key, call])),
                     layout).order_by(Violation.msize, Violation.mockup))]
    counts = {st: sum(v["status"] == st for v in viols) for st in STATUSES}
    return {"call": call, "key": key, "p": p, "layout": layout, "series": series, "rows": rows, "violations": viols,
            "analysis": a, "counts": counts,
            "defects": [d for d in defects_of(a) if d["collective"] == key and d["nprocs"] in (p, None)]}


# ----------------------------------------------------------------- trends

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


MAX_GROUPS = 48   # jumpavg's classification is quadratic in the number of groups


def _classify(values: list) -> list[tuple[int, int, float, float | None, str]]:
    """jumpavg groups as (first index, length, average, previous average, comment)."""
    import jumpavg
    out, i = [], 0
    for g in jumpavg.classify(values):
        out.append((i, len(g.run_list), float(g.stats.avg), None if g.prev_avg is None else float(g.prev_avg),
                    g.comment))
        i += len(g.run_list)
    return out


def change_points(medians_: list[float], runs: list[list[float]] | None = None) -> list[dict]:
    """Campaign indices where jumpavg's bit-counting classification starts a new group (a significant
    shift, judged against the spread of the values, not a fixed threshold).

    Long histories are classified in chunks of consecutive campaigns (each chunk an indivisible
    sample list for jumpavg, at most MAX_GROUPS chunks); every boundary found is then placed exactly
    by classifying the campaigns of the two chunks around it."""
    n = len(medians_)
    if n < 3:
        return []
    scale = max(medians_) or 1.0
    per = [[v / scale for v in r] for r in runs] if runs else [[m / scale] for m in medians_]
    if n <= MAX_GROUPS:
        bounds = [(i, prev, avg) for i, _, avg, prev, c in _classify(per)
                  if i > 0 and c in ("regression", "progression")]
    else:
        k = -(-n // MAX_GROUPS)
        chunks = [sum(per[j:j + k], []) for j in range(0, n, k)]
        bounds = []
        for ci, _, avg, prev, c in _classify(chunks):
            if ci == 0 or c not in ("regression", "progression"):
                continue
            lo, hi = (ci - 1) * k, min(n, (ci + 1) * k)
            local = [(i, p_, a_) for i, _, a_, p_, cc in _classify(per[lo:hi])
                     if i > 0 and cc in ("regression", "progression")]
            if local:
                i, p_, a_ = max(local, key=lambda t: abs(t[2] - (t[1] or t[2])))
                bounds.append((lo + i, prev, avg))
            else:
                bounds.append((ci * k, prev, avg))
    out = []
    for i, prev, avg in bounds:
        before = prev * scale if prev is not None else None
        after = avg * scale
        # jumpavg's words are about a higher-is-better metric; for a time, higher is a regression
        kind = "regression" if before is not None and after > before else "improvement"
        out.append({"index": i, "kind": kind, "before_s": before, "after_s": after,
                    "ratio": after / before if before else None})
    return out


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


# ----------------------------------------------------------------- campaigns, profiles

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
    out = []
    for c in cs:
        js = jobs.get(c.id, [])
        done = sum(j.state in ("COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "CANCELLED") for j in js)
        expected = (c.definition or {}).get("jobs") if isinstance(c.definition, dict) else None
        total = max(len(js), expected if isinstance(expected, int) else 0)
        out.append({"campaign": c, "jobs": js, "done": done, "total": total, "runs": nruns.get(c.id, 0),
                    "state": shown_state(c.state, js, done, total),
                    "failed": sum(j.state in ("FAILED", "TIMEOUT", "NODE_FAIL") for j in js),
                    "verdicts": [campaign_verdict(a) for a in analyses.get(c.id, {}).values()]})
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


def campaign_verdict(a: Analysis) -> dict[str, Any]:
    """What a campaign's analysis is worth: the control arm's line (service/analysis/verdicts.py)."""
    ctrl = (a.summary or {}).get("control") or {}
    return {"analysis": a, "library": a.library.name, "test": a.test, "fdr": a.fdr,
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


def profile_sets(s) -> list[dict[str, Any]]:
    from sqlalchemy.orm import selectinload
    sets = s.scalars(select(ProfileSet).options(selectinload(ProfileSet.versions),
                                                selectinload(ProfileSet.machine),
                                                selectinload(ProfileSet.library))).all()
    out = []
    for ps in sets:
        out.append({"set": ps, "machine": ps.machine, "library": ps.library, "versions": list(ps.versions)})
    out.sort(key=lambda d: (d["machine"].name, d["library"].name, d["library"].version))
    return out


def history(s, entity_ids: list[str], limit: int = 50) -> list[AuditLog]:
    if not entity_ids:
        return []
    return s.scalars(select(AuditLog).where(AuditLog.entity == "profile", AuditLog.entity_id.in_(entity_ids))
                     .order_by(AuditLog.at.desc(), AuditLog.id.desc()).limit(limit)).all()
