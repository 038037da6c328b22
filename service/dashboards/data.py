"""The numbers every dashboard area shares (lookups, layouts, medians, violation counts, change points),
computed from the database through service/store/models.py; each area's own numbers are in its
`<area>/data.py` (library, campaigns, profiles, alerts, native, datatypes).

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

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from pgmpi_formats.collectives import COLLECTIVES as _COLLS
from pgmpi_formats.layouts import sort_key as layout_sort_key
from service.store.models import Analysis, BarrierSeries, Campaign, Machine, MpiLibrary, Run, Series, Violation

COLL_ORDER = {c.mpi_name: c.id for c in _COLLS}     # the one table of collectives (collectives.def)
KEY_OF = {c.mpi_name: c.key for c in _COLLS}
MPI_OF = {c.key: c.mpi_name for c in _COLLS}


def coll_key(name: str) -> str:
    return KEY_OF.get(name, name.lower().replace("mpi_", "").replace("_", ""))


def coll_mpi(key: str) -> str:
    return MPI_OF.get(key, key)


# ----------------------------------------------------------------- analyses and their violation counts

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


# The one definition of "a violation" every page, the API, the alerts feed and the CLI use: a verified check
# of the latest analysis, of one of three kinds. Only a mock-up violation ("pattern": a mock-up is faster) is
# a heatmap cell and can become a redirect; split-guideline and monotony hits are counted apart and named.
KIND_WORDS = {"pattern": "mock-up faster", "split": "split-guideline hit", "monotony": "monotony hit"}


def kind_counts(s, analysis_ids) -> dict[int, dict[str, int]]:
    """analysis id -> {pattern, split, monotony}: its verified violations by kind (status_counts' verified)."""
    ids = list(analysis_ids)
    out = {aid: {k: 0 for k in KIND_WORDS} for aid in ids}
    if ids:
        for aid, kind, n in s.execute(select(Violation.analysis_id, Violation.kind, func.count())
                                      .where(Violation.analysis_id.in_(ids), Violation.status == "verified")
                                      .group_by(Violation.analysis_id, Violation.kind)):
            out[aid][kind if kind in KIND_WORDS else "pattern"] += n
    return out


def violations_phrase(by_kind: dict[str, int]) -> str:
    """'6 verified: 4 mock-up faster, 2 split-guideline hits' (the words of KIND_WORDS, kinds with none left out)."""
    total = sum(by_kind.values())
    parts = [f"{n} {KIND_WORDS[k]}{'s' if n != 1 and k != 'pattern' else ''}" for k, n in by_kind.items() if n]
    return f"{total} verified" + (f": {', '.join(parts)}" if parts else "")


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


# ----------------------------------------------------------------- libraries, campaigns, layouts, medians

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
    # pgmpi-dtbench's cases (calls named dt_<pattern>_...) have their own pages (service/dashboards/datatypes/data.py)
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


def size_label(n: int) -> str:
    """Bytes as the tables print them (B, KiB, MiB, GiB when exact), also used for chart ticks."""
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f and n % f == 0:
            return f"{n // f} {unit}"
    return f"{n} B"


# ----------------------------------------------------------------- change points (trends, regressions)


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


# the functions that moved into the areas' modules, still reachable as data.<name> for callers written
# before the split (imported on first use: the areas import this module)
_MOVED = {"overview": "library", "significant": "library", "heatmap": "library", "MARK": "library",
          "detail": "library", "trend": "library", "alerts": "alerts", "ALERT_TYPE": "alerts",
          "library_status": "alerts", "regressions": "alerts", "campaigns": "campaigns",
          "shown_state": "campaigns", "campaign_verdict": "campaigns", "control_figures": "campaigns",
          "profile_sets": "profiles", "history": "profiles"}


def __getattr__(name: str):
    if name in _MOVED:
        import importlib
        return getattr(importlib.import_module(f"service.dashboards.{_MOVED[name]}.data"), name)
    raise AttributeError(name)
