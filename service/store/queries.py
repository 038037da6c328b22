"""Read queries shared by the API and the dashboards (plain SQLAlchemy, no Flask)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Iterable, Optional

from sqlalchemy import delete, func, insert, select
from sqlalchemy.orm import Session

from service.store.models import Analysis, LibraryOverview, Machine, MpiLibrary, Violation

HISTORY_KEEP_DAYS = 35   # the summary keeps this much history; longer windows read analyses (indexed)


def _utc(dt: Optional[datetime]) -> Optional[datetime]:
    if dt is not None and dt.tzinfo is None:
        return dt.replace(tzinfo=timezone.utc)   # SQLite hands back naive datetimes
    return dt


def refresh_overview(session: Session, library_ids: Optional[Iterable[int]] = None) -> int:
    """Recompute the library_overview rows of these libraries (all when None) from analyses and
    violations. Called in the same transaction that stores an analysis. Returns the rows written."""
    q = select(Analysis.library_id, func.max(Analysis.id)).group_by(Analysis.library_id)
    if library_ids is not None:
        library_ids = list(library_ids)
        q = q.where(Analysis.library_id.in_(library_ids))
    latest = dict(session.execute(q).all())
    if library_ids is None:
        session.execute(delete(LibraryOverview))
    else:
        session.execute(delete(LibraryOverview).where(LibraryOverview.library_id.in_(library_ids)))
    if not latest:
        return 0
    heads = {row[0]: row for row in session.execute(
        select(Analysis.id, Analysis.machine_id, Analysis.created_at, Analysis.n_checked, Analysis.n_violations,
               Analysis.max_slowdown).where(Analysis.id.in_(list(latest.values()))))}
    per_coll: dict[int, dict] = {}
    # "violations" counts the verified ones; contradicted and unconfirmed are counted apart (models.py,
    # VIOLATION_STATES), so the API and the pages give the same figures
    for aid, coll, status, n, worst in session.execute(
            select(Violation.analysis_id, Violation.collective, Violation.status, func.count(),
                   func.max(Violation.slowdown))
            .where(Violation.analysis_id.in_(list(latest.values())))
            .group_by(Violation.analysis_id, Violation.collective, Violation.status)):
        e = per_coll.setdefault(aid, {}).setdefault(coll, {"violations": 0, "max_slowdown": None})
        if status == "verified":
            e["violations"], e["max_slowdown"] = n, worst
        else:
            e[status] = e.get(status, 0) + n
    rows = []
    for lib_id, aid in latest.items():
        _, mid, at, nc, nv, ms = heads[aid]
        newest = _utc(at) or datetime.now(timezone.utc)
        since = newest - timedelta(days=HISTORY_KEEP_DAYS)
        hist = [[_utc(t).isoformat(), n] for t, n in session.execute(
            select(Analysis.created_at, Analysis.n_violations)
            .where(Analysis.library_id == lib_id, Analysis.created_at >= since).order_by(Analysis.created_at))]
        rows.append({"library_id": lib_id, "machine_id": mid, "analysis_id": aid, "analysed_at": at,
                     "n_checked": nc, "n_violations": nv, "max_slowdown": ms,
                     "by_collective": per_coll.get(aid, {}), "history": hist})
    session.execute(insert(LibraryOverview), rows)
    return len(rows)


def violations_overview(session: Session, machine: Optional[str] = None, library: Optional[str] = None,
                        history_days: int = 30) -> list[dict]:
    """One row per machine x MPI library: its latest analysis (counts, worst slowdown, violations per
    collective) and the number of violations per analysis over the last `history_days` (counted back
    from now).  Reads only the summary table library_overview (one row per library)."""
    q = (select(LibraryOverview.analysis_id, LibraryOverview.analysed_at, LibraryOverview.n_checked,
                LibraryOverview.n_violations, LibraryOverview.max_slowdown, LibraryOverview.by_collective,
                LibraryOverview.history, MpiLibrary.name, MpiLibrary.version, MpiLibrary.module, Machine.name)
         .join(MpiLibrary, MpiLibrary.id == LibraryOverview.library_id)
         .join(Machine, Machine.id == LibraryOverview.machine_id))
    if machine:
        q = q.where(Machine.name == machine)
    if library:
        q = q.where(MpiLibrary.name == library)
    since_dt = datetime.now(timezone.utc) - timedelta(days=history_days)
    since = since_dt.isoformat()
    out = []
    for aid, at, nc, nv, ms, byc, hist, lname, lver, lmod, mname in session.execute(
            q.order_by(Machine.name, MpiLibrary.name, MpiLibrary.version)):
        out.append({"machine": mname, "library": lname, "version": lver, "module": lmod, "analysis_id": aid,
                    "analysed_at": _utc(at).isoformat() if at else None, "n_checked": nc, "n_violations": nv,
                    "n_contradicted": sum(e.get("contradicted", 0) for e in (byc or {}).values()),
                    "n_unconfirmed": sum(e.get("unconfirmed", 0) for e in (byc or {}).values()),
                    "max_slowdown": ms, "by_collective": byc or {},
                    "history": [h for h in (hist or []) if h[0] >= since]})
    if history_days > HISTORY_KEEP_DAYS and out:   # longer than the summary keeps: ix_analyses_library_created
        longer: dict[int, list] = {}
        for aid, lib_id, at, n in session.execute(
                select(LibraryOverview.analysis_id, Analysis.library_id, Analysis.created_at, Analysis.n_violations)
                .join(Analysis, Analysis.library_id == LibraryOverview.library_id)
                .where(LibraryOverview.analysis_id.in_([o["analysis_id"] for o in out]), Analysis.created_at >= since_dt)
                .order_by(Analysis.library_id, Analysis.created_at)):
            longer.setdefault(aid, []).append([_utc(at).isoformat(), n])
        for o in out:
            o["history"] = longer.get(o["analysis_id"], [])
    return out
